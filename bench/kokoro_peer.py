"""The peer: the `kokoro-onnx` PyPI package (Python, onnxruntime, espeak-ng
through phonemizer) on the same int8 model and voice, one call per sentence
after one warm-up. Usage: kokoro_peer.py MODELS_DIR SENTENCES_FILE VOICE"""
import os
import sys
import tempfile
import time

import numpy as np
from kokoro_onnx import Kokoro

models, sentences, voice = sys.argv[1:4]
styles = np.fromfile(os.path.join(models, "kokoro", "voices", f"{voice}.bin"), dtype=np.float32).reshape(510, 1, 256)
voices = os.path.join(tempfile.mkdtemp(), "voices.npz")
np.savez(voices, **{voice: styles})
kokoro = Kokoro(os.path.join(models, "kokoro", "kokoro-v1.0.int8.onnx"), voices)
lines = [l.strip() for l in open(sentences) if l.strip()]


def speak(text):
    samples, rate = kokoro.create(text, voice=voice, lang="en-us")
    return len(samples) / rate


speak(lines[0])
start = time.perf_counter()
audio = sum(speak(line) for line in lines)
compute = time.perf_counter() - start
print(f"compute_s={compute:.3f} audio_s={audio:.3f} rtf={compute / audio:.4f}")
