"""The peer for dubbing: the pipeline a user would script from the usual
open tools, stage by stage: faster-whisper (base, int8, 2 threads) for the
transcript, Apertium (eng-spa, one run for all lines) for the translation,
kokoro-onnx (the same int8 model, voice ef_dora) for each line, spoken
faster (up to 1.3x) when longer than its slot, mixed with numpy over the
original turned down under the lines, and ffmpeg to mux the new track into
the video with its picture copied.
Usage: dub_peer.py INPUT.mp4 OUTPUT.mp4 MODELS_DIR FASTER_WHISPER_DIR"""
import os
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np
from faster_whisper import WhisperModel
from kokoro_onnx import Kokoro

src, out, models, fw = sys.argv[1:5]
tmp = tempfile.mkdtemp()
timings = {}
clock = time.perf_counter()
start = clock


def lap(name):
    global clock
    now = time.perf_counter()
    timings[name] = round(now - clock, 3)
    clock = now


def pcm(rate):
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", src, "-ac", "1", "-ar", str(rate), "-f", "f32le", "-"],
        check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.float32).copy()


model = WhisperModel(fw, device="cpu", compute_type="int8", cpu_threads=2)
voice = "ef_dora"
styles = np.fromfile(os.path.join(models, "kokoro", "voices", f"{voice}.bin"), dtype=np.float32).reshape(510, 1, 256)
voices = os.path.join(tmp, "voices.npz")
np.savez(voices, **{voice: styles})
kokoro = Kokoro(os.path.join(models, "kokoro", "kokoro-v1.0.int8.onnx"), voices)
lap("load")

segments, _ = model.transcribe(pcm(16000), language="en", beam_size=5)
lines = [(s.start, s.end, s.text.strip()) for s in segments if s.text.strip()]
lap("transcribe")

joined = "\n".join(t for _, _, t in lines) + "\n"
translated = subprocess.run(["apertium", "-u", "eng-spa"], input=joined.encode(),
                            check=True, capture_output=True).stdout.decode().splitlines()
lap("translate")

original = pcm(24000)
dub = np.zeros_like(original)
for i, ((a, b), text) in enumerate(zip([(s, e) for s, e, _ in lines], translated)):
    samples, rate = kokoro.create(text, voice=voice, lang="es")
    slot = (lines[i + 1][0] if i + 1 < len(lines) else len(original) / 24000) - a
    if len(samples) / rate > slot:
        speed = min(1.3, len(samples) / rate / max(slot, 0.1))
        samples, rate = kokoro.create(text, voice=voice, lang="es", speed=speed)
    at = int(a * 24000)
    part = samples[: max(0, len(dub) - at)]
    dub[at: at + len(part)] += part
    original[int(a * 24000): int(b * 24000)] *= 0.3
lap("synthesize")

mixed = np.clip(original + dub, -1, 1)
track = os.path.join(tmp, "dub.wav")
with wave.open(track, "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(24000)
    w.writeframes((mixed * 32767).astype(np.int16).tobytes())
lap("mix")

subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", src, "-i", track, "-map", "0:v:0", "-map", "1:a:0",
                "-c:v", "copy", "-c:a", "aac", out], check=True)
lap("mux")
total = round(time.perf_counter() - start, 3)
# `work`: everything but loading the models (which our server did at start).
print(" ".join(f"{k}={v}" for k, v in timings.items()), f"total={total}",
      f"work={round(total - timings['load'], 3)}")
