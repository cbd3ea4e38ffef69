"""What one window costs on this machine, measured with CTranslate2 (the
library both we and faster-whisper run) on the `base` model, int8: the
encoding, and the decoding of the window's text with beam sizes 5, 2 and 1,
each on one and on two threads (best of two runs). Shows how much a second
thread gains each step, which decides how our engine shares the two cores
(docs/benchmarks.md, Speech-to-text; the full runs are in its git history).

Usage: decode_costs.py MODEL_DIR AUDIO [SECONDS, default 28]   (run with the
faster-whisper venv's python: bench/lib.sh stt_peer_and_builds makes it)."""
import sys
import time

import ctranslate2
import numpy as np
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor

model_dir, audio = sys.argv[1:3]
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 28.0
fe = FeatureExtractor()
pcm = decode_audio(audio)[: int(16000 * seconds)]
features = fe(pcm, padding=fe.n_samples)[:, :3000]
x = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None]))
start = [50258, 50259, 50359]  # start of transcript, English, transcribe


def best(f, runs=2):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


print(f"window of {len(pcm) / 16000:.1f} s of {audio}")
for threads in (1, 2):
    model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type="int8", intra_threads=threads)
    took, encoded = best(lambda: model.encode(x))
    print(f"threads={threads} encode_s={took:.2f}")
    for beam in (5, 2, 1):
        took, r = best(lambda: model.generate(encoded, [start], beam_size=beam))
        tokens = len(r[0].sequences_ids[0])
        print(f"threads={threads} beam={beam} decode_s={took:.2f} tokens={tokens} ms_per_token={1000 * took / tokens:.0f}")
