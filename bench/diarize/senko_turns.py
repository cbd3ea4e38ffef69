"""Senko (PyPI `senko`, MIT) on WAV files, as `score.py engine` reads our
diarizer: for each file given, its turns as `start end speaker_N` lines and
a `seconds=` line with the diarization's own time (models loaded and warmed
up first, not counted). On CPU Senko runs Silero's VAD (its pyannote VAD
needs CUDA or CoreML), then CAM++ on 1.5-s subsegments and its clustering.

Usage: python senko_turns.py FILE.wav [FILE.wav ...]   (in a venv with senko)
"""
import sys

import senko

diarizer = senko.Diarizer(device="cpu", vad="silero", warmup=True, quiet=True)
for path in sys.argv[1:]:
    result = diarizer.diarize(path)
    turns = result["merged_segments"] if result else []
    for t in turns:
        print(f"{t['start']:8.2f} {t['end']:8.2f}  speaker_{str(t['speaker']).split('_')[-1]}")
    took = result["timing_stats"]["total_time"] if result else 0.0
    print(f"seconds={took:.3f}")
