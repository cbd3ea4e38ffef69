"""Diarization on real recordings with reference speaker turns (RTTM):
speaker count, diarization error rate and speaker changes inside sentences.

  score.py engine BIN DIR [THRESHOLD]   our diarizer alone (the `diarize` example)
  score.py api PORT KEY DIR             POST /v1/speech-to-text with diarize=true,
                                        its changes of speaker inside a word, and its
                                        time beside the same request without diarize

DIR holds NAME.wav and NAME.rttm (and NAME.uem: the scored part; else all).
DER is frame-based (10 ms), no collar, overlapping reference speech counted
for each speaker, with the best one-to-one mapping of our speakers to the
reference's. Prints a table row per clip and the totals."""
import itertools
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "stt"))

STEP = 0.01


def rttm(path):
    turns = []
    for line in open(path):
        f = line.split()
        if f and f[0] == "SPEAKER":
            start, dur = float(f[3]), float(f[4])
            turns.append((start, start + dur, f[7]))
    return turns


def uem(path, default_end):
    if not os.path.exists(path):
        return (0.0, default_end)
    f = open(path).read().split()
    return (float(f[2]), float(f[3]))


def frames(turns, lo, hi):
    n = int(round((hi - lo) / STEP))
    out = [set() for _ in range(n)]
    for start, end, who in turns:
        a, b = max(0, int(round((start - lo) / STEP))), min(n, int(round((end - lo) / STEP)))
        for i in range(a, b):
            out[i].add(who)
    return out


def der(ref, hyp):
    """(DER, speakers in hyp, [missed, false alarm, confusion]) for frame
    sets ref and hyp."""
    rs = sorted({s for f in ref for s in f})
    hs = sorted({s for f in hyp for s in f})
    overlap = {(r, h): 0 for r in rs for h in hs}
    for fr, fh in zip(ref, hyp):
        for r in fr:
            for h in fh:
                overlap[(r, h)] += 1
    best, mapping = -1, {}
    if len(hs) <= len(rs):
        candidates = (dict(zip(hs, p)) for p in itertools.permutations(rs, len(hs)))
    else:
        candidates = ({h: r for r, h in zip(rs, p)} for p in itertools.permutations(hs, len(rs)))
    for m in candidates:
        score = sum(overlap[(r, h)] for h, r in m.items())
        if score > best:
            best, mapping = score, m
    total = miss = false_alarm = confusion = 0
    for fr, fh in zip(ref, hyp):
        mapped = {mapping.get(h, "?" + h) for h in fh}
        total += len(fr)
        miss += max(0, len(fr) - len(fh))
        false_alarm += max(0, len(fh) - len(fr))
        confusion += min(len(fr), len(fh)) - len(fr & mapped)
    parts = [x / max(total, 1) for x in (miss, false_alarm, confusion)]
    return sum(parts), len(hs), parts


def changes_inside_sentences(segments, ref_turns):
    """Speaker changes of ours (between consecutive words) that fall inside a
    reference turn of one speaker with no other speaker's turn near (0.3 s):
    a change where the reference has none."""
    words = [w for s in segments for w in s.get("words", [])]
    bad = 0
    for a, b in zip(words, words[1:]):
        if a.get("speaker") == b.get("speaker"):
            continue
        t = (a["end"] + b["start"]) / 2
        near = {who for s, e, who in ref_turns if s - 0.3 <= t <= e + 0.3}
        if len(near) == 1:
            bad += 1
    return bad


def changes_inside_words(segments):
    """Changes of speaker (a segment starting with another speaker than the
    one before it) that fall strictly inside a word the recogniser heard."""
    words = [w for s in segments for w in s.get("words", [])]
    bad = 0
    for a, b in zip(segments, segments[1:]):
        if a.get("speaker") == b.get("speaker"):
            continue
        t = b["start"]
        bad += any(w["start"] + 0.01 < t < w["end"] - 0.01 for w in words)
    return bad


def engine(binary, wav, threshold):
    """The turns a diarizer program prints (`start end speaker_N` lines),
    and the time it reports for the diarization (`seconds=`)."""
    env = dict(os.environ)
    if threshold:
        env["THRESHOLD"] = threshold
    out = subprocess.run([binary, wav], capture_output=True, text=True, env=env, check=True).stdout
    turns, took = [], None
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2].startswith("speaker_"):
            turns.append((float(f[0]), float(f[1]), f[2]))
        for token in f:
            if token.startswith("seconds="):
                took = float(token[len("seconds="):])
    return turns, took


def transcribe(port, key, wav, diarize):
    import client

    fields = {"responseFormat": "verbose_json", "timestampGranularities": "word", "language": "en"}
    if diarize:
        fields["diarize"] = "true"
    body, ctype = client.multipart(wav, fields)
    t0 = time.perf_counter()
    status, data = client.request(port, "POST", "/v1/speech-to-text", key, body, ctype)
    took = time.perf_counter() - t0
    if status != 200:
        raise SystemExit(f"{wav}: {status} {data[:300]!r}")
    doc = json.loads(data)
    return doc.get("result", doc), took


def api(port, key, wav):
    """The request with diarize=true, and its time beside the same request
    without (alternated, the faster of two each)."""
    plain, with_speakers = [], []
    for _ in range(2):
        result, took = transcribe(port, key, wav, True)
        with_speakers.append(took)
        plain.append(transcribe(port, key, wav, False)[1])
    segments = result["segments"]
    # A segment the diarizer gave no speaker (no voice it could place) is nobody's.
    turns = [(s["start"], s["end"], s["speaker"]) for s in segments if "speaker" in s]
    return turns, (segments, min(with_speakers), min(plain))


def main():
    mode = sys.argv[1]
    directory = sys.argv[4] if mode == "api" else sys.argv[3]
    names = sorted(
        f[:-4]
        for f in os.listdir(directory)
        if f.endswith(".wav") and os.path.exists(os.path.join(directory, f[:-4] + ".rttm"))
    )
    print("| clip | scored | reference speakers | ours | DER | missed / false alarm / confusion | changes inside a turn | inside a word | request s, diarized / not |")
    print("|---|---|---|---|---|---|---|---|---|")
    sums = [0.0, 0.0, 0, 0, 0.0, 0.0, 0.0, 0]
    for name in names:
        wav = os.path.join(directory, name + ".wav")
        ref_turns = rttm(os.path.join(directory, name + ".rttm"))
        lo, hi = uem(os.path.join(directory, name + ".uem"), max(e for _, e, _ in ref_turns))
        if mode == "engine":
            hyp_turns, extra = engine(sys.argv[2], wav, sys.argv[4] if len(sys.argv) > 4 else None)
        else:
            hyp_turns, extra = api(sys.argv[2], sys.argv[3], wav)
        ref = frames(ref_turns, lo, hi)
        hyp = frames(hyp_turns, lo, hi)
        error, found, parts = der(ref, hyp)
        speakers = len({w for _, _, w in ref_turns})
        inside, in_word, times = "–", "–", "–"
        if isinstance(extra, tuple):
            inside = changes_inside_sentences(extra[0], ref_turns)
            in_word = changes_inside_words(extra[0])
            sums[5] += extra[1]
            sums[6] += extra[2]
            sums[7] += in_word
            times = f"{extra[1]:.2f} / {extra[2]:.2f}"
        if isinstance(extra, float):
            sums[4] += extra
        sums[0] += error * (hi - lo)
        sums[1] += hi - lo
        sums[2] += found == speakers
        sums[3] += 1
        split = " / ".join(f"{100 * p:.1f}" for p in parts)
        print(f"| {name} | {hi - lo:.0f} s | {speakers} | {found} | {100 * error:.1f} % | {split} | {inside} | {in_word} | {times} |")
    print(f"\nweighted DER {100 * sums[0] / sums[1]:.1f} %; speaker count right on {sums[2]} of {sums[3]} clips")
    if sums[4]:
        print(f"diarization time {sums[4]:.2f} s for {sums[1]:.0f} s of audio")
    if sums[6]:
        print(f"requests {sums[5]:.2f} s diarized, {sums[6]:.2f} s not (diarization adds {sums[5] - sums[6]:.2f} s, "
              f"{(sums[5] - sums[6]) / sums[6]:.2f} of the recognition's own time); "
              f"speaker changes inside a word: {sums[7]}")


if __name__ == "__main__":
    main()
