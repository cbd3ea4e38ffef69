"""How Kokoro's sound changes when its vocoder is given fewer frames: cuts
the model where crates/speech/src/tts/kokoro.rs cuts it (onnx's extractor,
the same value names), then, on five sentences, compares (1) the vocoder run
from MARGIN frames before the speech with the vocoder on every frame (what
the engine does since session 29), and (2) the first 10 frames vocoded alone
with 4 frames of context after them (a stream's first piece, tried and not
used) with the same frames inside the whole run. Prints the level
difference and the mean spectral difference (dB, bins within 50 dB of the
peak); as a yardstick, dropping 2 silent frames at the end changes the
spectrum by about 2.7 dB. Then (3) why a first piece is quieter: the
generator's instance norms (mean and variance over the frames given, 88
ReduceMean nodes) are made inputs, and the first 16 frames are vocoded
with the whole sentence's statistics, with those of the first upsampling
stage only, and with those of the second only. Usage (a venv with onnx,
onnxruntime, numpy): python bench/kokoro_halves.py MODELS_DIR"""
import json
import re
import sys

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort

models = sys.argv[1]
src = f"{models}/kokoro/kokoro-v1.0.int8.onnx"
cut = ["/encoder/MatMul_1_output_0", "/encoder/Reshape_output_0", "/encoder/Reshape_1_output_0",
       "/decoder/decoder/generator/m_source/l_sin_gen/Mul_4_output_0"]
ex = onnx.utils.Extractor(onnx.load(src))
front = ex.extract_model(["tokens", "style", "speed"], cut + ["/encoder/Cast_output_0"])
back = ex.extract_model(["style"] + cut, ["audio"])
opts = ort.SessionOptions()
opts.intra_op_num_threads = 2
A = ort.InferenceSession(front.SerializeToString(), opts)
B = ort.InferenceSession(back.SerializeToString(), opts)
vocab = json.load(open(f"{models}/kokoro/config.json"))["vocab"]
styles = np.fromfile(f"{models}/kokoro/voices/af_heart.bin", dtype=np.float32).reshape(-1, 256)
sentences = ["həlˈO ðˈɛɹ.", "ðə ˈOld lˈIthaʊs kˈipəɹ klˈImd ðə stˈɛɹz ˈɛvɹi ˈivnɪŋ.",
             "hˈi lˈɪt ðə lˈæmp ænd wˈɑʧt ðə ʃˈɪps pˈæs ɪn ðə dˈɑɹk.", "wˈʌn, tˈu, θɹˈi.",
             "ˈæftəɹ ə lˈɔŋ dˈA, ʃi sˈæt dˈWn."]


def spectrum(x):
    w = np.hanning(512)
    return 20 * np.log10(np.array([np.abs(np.fft.rfft(x[i:i + 512] * w)) for i in range(0, len(x) - 512, 128)]) + 1e-4)


def compare(got, want):
    g, w = spectrum(got), spectrum(want)
    near = w > w.max() - 50
    return 10 * np.log10((got ** 2).mean() / (want ** 2).mean()), np.abs(g - w)[near].mean()


def predict(ph):
    """The front half on one sentence's phonemes: its style and the vocoder's inputs."""
    ids = [0] + [vocab[c] for c in ph if c in vocab] + [0]
    style = styles[len(ids) - 2][None, :]
    return (style, *A.run(None, {"tokens": np.array([ids]), "style": style,
                                 "speed": np.array([1.0], dtype=np.float32)}))


for margin in (3, 6, 10):
    rows = []
    for ph in sentences:
        style, asr, f0, n, phase, dur = predict(ph)
        frames = asr.shape[2]

        def vocode(lo, hi):
            return B.run(None, {"style": style, cut[0]: asr[:, :, lo:hi], cut[1]: f0[:, 2 * lo:2 * hi],
                                cut[2]: n[:, 2 * lo:2 * hi], cut[3]: phase[:, :, 2 * lo:2 * hi]})[0].reshape(-1)

        lead = int(dur.reshape(-1)[0])
        start = max(0, lead - margin)
        every, skipped = vocode(0, frames), vocode(start, frames)
        speech = slice((lead - start) * 600, None)
        level, spec = compare(skipped[speech], every[lead * 600:])
        first, _ = compare(vocode(start, start + 14)[:6000], skipped[:6000]) if margin == 6 else (0, 0)
        rows.append((lead, level, spec, first))
    r = np.array(rows)
    print(f"margin {margin}: leading pauses {r[:, 0].astype(int).tolist()} frames; level "
          f"{r[:, 1].min():+.2f} to {r[:, 1].max():+.2f} dB, spectral {r[:, 2].min():.1f}-{r[:, 2].max():.1f} dB")
    if margin == 6:
        print(f"  first 10 frames alone (4 of context): level {r[:, 3].min():+.1f} to {r[:, 3].max():+.1f} dB")


# (3) The generator's normalisation statistics, fed from the whole sentence.
model = onnx.load(src)
stats = [n.output[0] for n in model.graph.node
         if n.op_type == "ReduceMean" and n.name.startswith("/decoder/decoder/generator")]


def stage(name):
    m = re.search(r"/(noise_res|resblocks)\.(\d)/", name)
    first = m and ((m.group(1) == "noise_res" and m.group(2) == "0") or (m.group(1) == "resblocks" and int(m.group(2)) < 3))
    return "first" if first else "second"


ex = onnx.utils.Extractor(model)
G = ort.InferenceSession(ex.extract_model(["style"] + cut, ["audio"] + stats).SerializeToString(), opts)
frozen = {}
for part in ("all", "first", "second"):
    fed = [x for x in stats if part == "all" or stage(x) == part]
    frozen[part] = (ort.InferenceSession(ex.extract_model(["style"] + cut + fed, ["audio"]).SerializeToString(), opts), fed)
rows = []
for ph in sentences:
    style, asr, f0, n, phase, dur = predict(ph)
    lead = int(dur.reshape(-1)[0])
    s, t = max(0, lead - 6), asr.shape[2]

    def feeds(lo, hi):
        return {"style": style, cut[0]: asr[:, :, lo:hi], cut[1]: f0[:, 2 * lo:2 * hi],
                cut[2]: n[:, 2 * lo:2 * hi], cut[3]: phase[:, :, 2 * lo:2 * hi]}

    out = G.run(None, feeds(s, t))
    whole, own = out[0].reshape(-1), dict(zip(stats, out[1:]))
    if t - s < 24:
        continue
    speech = slice((lead - s) * 600, 16 * 600)
    level = lambda x: 10 * np.log10((x[speech] ** 2).mean() / (whole[speech] ** 2).mean())
    row = [level(G.run(None, feeds(s, s + 20))[0].reshape(-1))]
    for part in ("all", "first", "second"):
        sess, fed = frozen[part]
        row.append(level(sess.run(None, {**feeds(s, s + 20), **{x: own[x] for x in fed}})[0].reshape(-1)))
    rows.append(row)
r = np.array(rows)
for i, what in enumerate(["its own statistics", "the sentence's statistics", "the sentence's, first stage only",
                          "the sentence's, second stage only"]):
    print(f"first 16 frames (4 of context) with {what}: level {r[:, i].min():+.1f} to {r[:, i].max():+.1f} dB")
