"""The peer for bench/diffusion.sh: the same tiny ONNX models run the way a
Python user would without diffusers (onnxruntime + numpy): text encoder once
per prompt, an Euler loop with classifier-free guidance (two UNet runs a
step), the VAE decoder. Prints per-step and total times in milliseconds.

Usage: python diffusion_peer.py MODEL_DIR SIZE STEPS
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort

model_dir, size, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
opts = ort.SessionOptions()
opts.intra_op_num_threads = 2
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
load = lambda part: ort.InferenceSession(f"{model_dir}/{part}/model.onnx", opts, providers=["CPUExecutionProvider"])
text, unet, vae = load("text_encoder"), load("unet"), load("vae_decoder")

t0 = time.perf_counter()
ids = np.full((1, 77), 1, dtype=np.int32)  # the pipeline's timing does not depend on the words
ids[0, :6] = [0, 500, 501, 502, 503, 1]
cond = text.run(None, {"input_ids": ids})[0]
uncond = text.run(None, {"input_ids": np.array([[0] + [1] * 76], dtype=np.int32)})[0]
t_text = time.perf_counter() - t0

# Euler, SD's scaled-linear schedule, trailing spacing.
betas = np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000) ** 2
ac = np.cumprod(1 - betas)
all_sigmas = ((1 - ac) / ac) ** 0.5
ts = np.round(np.arange(1000, 0, -1000 / steps)) - 1
sigmas = np.append(np.interp(ts, np.arange(1000), all_sigmas), 0.0)
rng = np.random.default_rng(1)
lat = rng.standard_normal((1, 4, size // 8, size // 8)).astype(np.float32) * sigmas[0]
t0 = time.perf_counter()
for i, t in enumerate(ts):
    x = (lat / (sigmas[i] ** 2 + 1) ** 0.5).astype(np.float32)
    tt = np.array([int(t)], dtype=np.int64)
    c = unet.run(None, {"sample": x, "timestep": tt, "encoder_hidden_states": cond})[0]
    u = unet.run(None, {"sample": x, "timestep": tt, "encoder_hidden_states": uncond})[0]
    eps = u + 7.5 * (c - u)
    lat = lat + eps * (sigmas[i + 1] - sigmas[i])
t_loop = time.perf_counter() - t0
t0 = time.perf_counter()
img = vae.run(None, {"latent_sample": (lat / 0.18215).astype(np.float32)})[0]
pixels = (np.clip(img / 2 + 0.5, 0, 1) * 255).round().astype(np.uint8)
t_dec = time.perf_counter() - t0
print(json.dumps({"text": t_text * 1e3, "perStep": t_loop * 1e3 / steps, "decode": t_dec * 1e3,
                  "total": (t_text + t_loop + t_dec) * 1e3}))
