"""Convolution algorithms per layer on one OpenCL device: the device's own rule ("auto") against "benchmark"
(Device.set_conv_algorithm: per layer shape, the fastest algorithm timed at its first call) and each algorithm
forced, interleaved in one run (hetnn.interleave), float32, ResNet-50-like layers (NCHW), with the choices made.

    python scripts/conv_algorithms.py [--device opencl] [--batch 8] [--rounds 9] [--algorithms im2col,winograd4]
"""
import argparse

import numpy as np

import hetnn
from hetnn import Case, interleave
from hetnn.bench import ratio

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="opencl")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--algorithms", default="", help="comma-separated algorithms also timed forced for every layer")
args = ap.parse_args()
dev = hetnn.device(args.device)
print("device:", dev.id, dev.name)
rng = np.random.default_rng(0)
n = args.batch
layers = [(64, 56, 64, 3), (128, 28, 128, 3), (256, 14, 256, 3), (512, 7, 512, 3), (256, 56, 64, 1), (3, 32, 32, 5)]
names = ["auto", "benchmark"] + [a for a in args.algorithms.split(",") if a]
for c, h, o, k in layers:
    x = hetnn.asarray(rng.standard_normal((n, c, h, h)).astype(np.float32), device=dev)
    w = hetnn.asarray((rng.standard_normal((o, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32), device=dev)
    y = hetnn.empty((n, o, h, h), "float32", device=dev)  # padding k // 2: the input's size

    def run(a):
        dev.set_conv_algorithm(a)
        return hetnn.conv2d(x, w, None, 1, k // 2, out=y)

    cases = [Case(a, lambda a=a: run(a), devices=[dev], flops=2 * n * o * h * h * c * k * k) for a in names]
    res = {r.name: r for r in interleave(cases, n_warmup=1, n_repeat=args.rounds)}
    dev.set_conv_algorithm("auto")
    print(f"{n}x{c}x{h}^2 -> {o} k{k}:", ", ".join(f"{a} {np.median(r.wall_times) * 1e3:.1f} ms"
                                                for a, r in res.items()))
    for a in names[1:]:
        print("   ", ratio(f"{a} / auto", res[a], res["auto"]))
print("benchmark's choices (median ms of its 3 timed calls):")
for ch in dev.conv_choices():
    print(f"  {ch['shape']}: {ch['algorithm']}", {a: round(t, 2) for a, t in ch["ms"].items()})
