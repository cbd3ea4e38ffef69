"""onnxruntime's own Conv on the shapes of crates/kernels/examples/conv_bench.rs
(Piper's residual blocks without their activation and sum, and its flow's input
layers): GFLOP/s at the fastest run, one and two threads, to set beside
`cargo run --release -p mediagen-kernels --example conv_bench`.
Usage: conv_ort.py [SECONDS_PER_SHAPE]   (a Python with onnx and onnxruntime,
e.g. target/bench/piper-venv after `pip install onnx`)"""
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

BUDGET = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
SHAPES = [  # c_out, c_in, kernel, dilation, length
    (32, 32, 7, 12, 75_520),
    (32, 32, 3, 1, 75_520),
    (64, 64, 5, 6, 18_880),
    (128, 128, 3, 2, 2_360),
    (384, 192, 5, 1, 295),
]


def session(c_out, c_in, kernel, dilation, threads):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c_out, c_in, kernel)) * 0.1).astype(np.float32)
    b = rng.standard_normal(c_out).astype(np.float32)
    pad = dilation * (kernel - 1) // 2
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], dilations=[dilation],
                            pads=[pad, pad], kernel_shape=[kernel])
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", 1, [1, c_in, None])],
                              [helper.make_tensor_value_info("y", 1, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


for threads in (1, 2):
    for c_out, c_in, kernel, dilation, length in SHAPES:
        s = session(c_out, c_in, kernel, dilation, threads)
        x = np.random.default_rng(1).standard_normal((1, c_in, length)).astype(np.float32)
        s.run(None, {"x": x})
        best, start = float("inf"), time.perf_counter()
        while time.perf_counter() - start < BUDGET:
            t = time.perf_counter()
            s.run(None, {"x": x})
            best = min(best, time.perf_counter() - t)
        flops = 2 * c_out * c_in * kernel * length
        print(f"{c_out}x{c_in} k{kernel} d{dilation} len {length}, {threads} thread(s): "
              f"{best * 1e3:.2f} ms, {flops / best / 1e9:.1f} GFLOP/s")
