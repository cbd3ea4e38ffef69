"""Reference embeddings for crates/speakers/tests/encoder.rs, made with
Resemblyzer's own code (run once; its output is ge2e_reference.json):

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install torch resemblyzer librosa "setuptools<81"
    /tmp/ref/bin/python ge2e_reference.py > ge2e_reference.json

The inputs are made by a formula the test repeats: 3 s of a voiced
"vowel" (harmonics of f0 shaped by two formants, at a syllable rate).
"""
import json
import math

import numpy as np
import resemblyzer
from resemblyzer import audio

RATE = 16000
SIGNALS = [(120.0, 700.0, 1200.0), (220.0, 500.0, 1800.0), (95.0, 600.0, 1000.0)]


def signal(f0, f1, f2, seconds=3.0):
    t = np.arange(int(seconds * RATE), dtype=np.float64) / RATE
    x = np.zeros_like(t)
    k = 1
    while k * f0 < 7000:
        f = k * f0
        a = math.exp(-(((f - f1) / 300.0) ** 2)) + 0.6 * math.exp(-(((f - f2) / 400.0) ** 2)) + 0.1 / k
        x += a * np.sin(2 * math.pi * f * t)
        k += 1
    envelope = 0.55 + 0.45 * np.sin(2 * math.pi * 3.0 * t)
    x = x * envelope
    return (0.3 * x / np.max(np.abs(x))).astype(np.float32)


encoder = resemblyzer.VoiceEncoder("cpu", verbose=False)
out = []
for f0, f1, f2 in SIGNALS:
    wav = audio.normalize_volume(signal(f0, f1, f2), -30, increase_only=True)
    e = encoder.embed_utterance(wav)
    out.append({"f0": f0, "f1": f1, "f2": f2, "embedding": [round(float(v), 7) for v in e]})
print(json.dumps({"resemblyzer": "0.1.4", "signals": out}))
