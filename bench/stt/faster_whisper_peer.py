"""faster-whisper (CTranslate2, int8) on one file, as bench/stt.sh's peer.
Usage: faster_whisper_peer.py MODEL_DIR AUDIO OUT_TEXT [THREADS, default 2]
[LANGUAGE, default en] [vad: its Silero voice-activity filter on].
BEAM (environment) sets the beam size (default 5, the library's default).
Prints key=value: the time, the audio's length, and what the decoding did:
windows decoded (distinct window starts among the segments), text tokens
generated and windows that fell back to sampling (temperature above 0)."""
import os
import sys
import time

from faster_whisper import WhisperModel

model_dir, audio, out = sys.argv[1:4]
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
language = sys.argv[5] if len(sys.argv) > 5 else "en"
vad = len(sys.argv) > 6 and sys.argv[6] == "vad"
model = WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=threads)
t0 = time.perf_counter()
segments, info = model.transcribe(audio, language=language, beam_size=int(os.environ.get("BEAM", "5")),
                                  vad_filter=vad)
segments = list(segments)
text = " ".join(s.text.strip() for s in segments)
elapsed = time.perf_counter() - t0
open(out, "w").write(text)
windows = {s.seek for s in segments}
fallbacks = {s.seek for s in segments if s.temperature > 0}
tokens = sum(len(s.tokens) for s in segments)
print(f"seconds={elapsed:.2f} audio={info.duration:.1f} rtf={elapsed / info.duration:.4f} "
      f"windows={len(windows)} tokens={tokens} fallbacks={len(fallbacks)}")
