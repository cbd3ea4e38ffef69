"""The peer: the `piper-tts` PyPI package (Python + onnxruntime + linked
espeak-ng) on the same model and sentences, one synthesis per sentence after
one warm-up. Usage: piper_peer.py MODEL.onnx SENTENCES_FILE"""
import sys
import time

from piper import PiperVoice

voice = PiperVoice.load(sys.argv[1])
lines = [l.strip() for l in open(sys.argv[2]) if l.strip()]
rate = voice.config.sample_rate


def speak(text):
    return sum(len(chunk.audio_int16_bytes) // 2 for chunk in voice.synthesize(text)) / rate


speak(lines[0])
start = time.perf_counter()
audio = sum(speak(line) for line in lines)
compute = time.perf_counter() - start
print(f"compute_s={compute:.3f} audio_s={audio:.3f} rtf={compute / audio:.4f}")
