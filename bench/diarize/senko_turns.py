"""Senko (PyPI `senko` 0.2.2, MIT) on WAV files, as `score.py engine` reads
our diarizer: for each file given, its turns as `start end speaker_N` lines
and a `seconds=` line with the diarization's own time (models loaded and
warmed up first, not counted). SENKO_VAD picks its voice-activity setting:
`silero` (the default, what Senko runs on CPU: Silero's VAD, CAM++ on 1.5-s
subsegments and its clustering) or `pyannote` (its setting on CUDA:
pyannote's segmentation-3.0 as its VAD and its "accurate" 1.45-s
subsegments every third of one; Senko refuses it on CPU, so its own PyTorch
backend for that VAD is built here on the CPU device).

The wheel's C++ fbank extractor stops with an illegal instruction on CPUs
without the instructions it was built for (this AVX2-only EPYC), so its
fbank goes through the path it takes on CUDA with kaldifeat, with the same
Kaldi options computed here in PyTorch (80 bins from 20 Hz, 25-ms Povey
windows every 10 ms, pre-emphasis 0.97, DC removed, no dither, log power,
whole frames only), then Senko's own per-subsegment mean subtraction.

Usage: python senko_turns.py FILE.wav [FILE.wav ...]   (in a venv with senko)
"""
import math
import os
import sys

import torch
import senko

RATE, FRAME, SHIFT, FFT, BINS = 16000, 400, 160, 512, 80


def mel(hz):
    return 1127.0 * math.log(1.0 + hz / 700.0)


def mel_banks():
    low, high = mel(20.0), mel(RATE / 2)
    delta = (high - low) / (BINS + 1)
    freqs = torch.arange(FFT // 2 + 1, dtype=torch.float64) * RATE / FFT
    m = 1127.0 * torch.log1p(freqs / 700.0)
    banks = torch.zeros(BINS, FFT // 2 + 1, dtype=torch.float64)
    for b in range(BINS):
        left, centre, right = low + b * delta, low + (b + 1) * delta, low + (b + 2) * delta
        up = (m - left) / (centre - left)
        down = (right - m) / (right - centre)
        banks[b] = torch.clamp(torch.minimum(up, down), min=0.0)
    banks[:, FFT // 2] = 0.0  # Kaldi leaves out the Nyquist bin
    return banks.float()


BANKS = mel_banks()
WINDOW = torch.hann_window(FRAME, periodic=False).pow(0.85)


def fbank(segments):
    out = []
    for seg in segments:
        seg = seg.float()
        n = 1 + (seg.numel() - FRAME) // SHIFT if seg.numel() >= FRAME else 0
        if n == 0:
            out.append(torch.zeros(0, BINS))
            continue
        frames = seg.unfold(0, FRAME, SHIFT)[:n]
        frames = frames - frames.mean(dim=1, keepdim=True)
        previous = torch.cat([frames[:, :1], frames[:, :-1]], dim=1)
        frames = (frames - 0.97 * previous) * WINDOW
        power = torch.fft.rfft(frames, n=FFT).abs().pow(2)
        out.append(torch.clamp(power @ BANKS.T, min=torch.finfo(torch.float32).eps).log())
    return out


diarizer = senko.Diarizer(device="cpu", vad="silero", warmup=False, quiet=True)
diarizer.use_gpu_fbank = True
diarizer.torch_device = torch.device("cpu")
diarizer.kaldifeat_fbank = fbank
accurate = None
if os.environ.get("SENKO_VAD", "silero") == "pyannote":
    from senko import config
    from senko.vad_local_pyannote import LocalSegmentationVADCuda

    paths = config.resolve_model_paths(None, required_fields=config.RUNTIME_PYANNOTE_CUDA_MODEL_FIELDS)
    diarizer.vad_backend = LocalSegmentationVADCuda(
        checkpoint_path=paths.pyannote_segmentation_senko_model_path,
        torch_device=torch.device("cpu"),
    )
    diarizer.vad_model_type = "pyannote"
    accurate = True
diarizer.diarize(sys.argv[1], accurate=accurate)  # warm-up
for path in sys.argv[1:]:
    result = diarizer.diarize(path, accurate=accurate)
    turns = result["merged_segments"] if result else []
    for t in turns:
        print(f"{t['start']:8.2f} {t['end']:8.2f}  speaker_{str(t['speaker']).split('_')[-1]}")
    took = result["timing_stats"]["total_time"] if result else 0.0
    print(f"seconds={took:.3f}")
