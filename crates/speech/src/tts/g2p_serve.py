# The serving loop of a phonemizer process, appended to the language's
# script (g2p_ja.py, g2p_zh.py), which defines `phonemize(text)`; run by
# crates/speech/src/tts/g2p.rs as `python -I -c <both>` in the environment
# scripts/g2p.sh makes.
#
# Framing: every request and every answer is a 4-byte big-endian length and
# that many bytes, so no text can end its frame early or start another. A
# request is UTF-8 text; an answer starts with "o" and the phonemes, or
# "e" and the kind of error (never the text). A request over MAX_REQUEST
# bytes ends the process.
import contextlib
import os
import struct
import sys

MAX_REQUEST = 1 << 16


def read(n):
    data = sys.stdin.buffer.read(n)
    if len(data) < n:
        sys.exit(0)
    return data


def serve():
    answers = sys.stdout.buffer
    # The supervisor keeps whatever a kept process writes to stderr for its
    # whole life: nothing a request makes the packages print may add to it.
    quiet = open(os.devnull, "w")
    sys.stderr = quiet
    while True:
        (size,) = struct.unpack(">I", read(4))
        if size > MAX_REQUEST:
            sys.exit(2)
        text = read(size).decode("utf-8", "replace")
        try:
            with contextlib.redirect_stdout(quiet):
                answer = b"o" + phonemize(text).encode("utf-8")
        except Exception as e:  # the kind only: never the text
            answer = b"e" + type(e).__name__.encode("ascii", "replace")
        answers.write(struct.pack(">I", len(answer)) + answer)
        answers.flush()


serve()
