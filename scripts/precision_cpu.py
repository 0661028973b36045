"""The CPU device's 16-bit arithmetic against float32 on this processor, in one run: matrix products (square and
ResNet-50 shapes) in float32, float16 and bfloat16 through the path in force, and each 16-bit type also forced
through the converted path (operands widened to float32, float32's GEMM, one rounding); then ResNet-50 convolutions
(batch 8) in the three types. Interleaved per round (the order reversed every other round), hetnn.benchmark with 2
warm-ups and 5 repeats a case, 8 rounds; the ratio to float32 per round: median and range over the rounds.

    python scripts/precision_cpu.py [--rounds 8]
"""
import argparse

import numpy as np

import hetnn
from hetnn import _core

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=8)
args = ap.parse_args()
cpu = hetnn.device("cpu")
rng = np.random.default_rng(0)
print(f"{cpu.name}; float16 {cpu.float16_mode}; bfloat16 {cpu.bfloat16_mode}")
SIXTEEN = ("float16", "bfloat16")


def line(name, res, base):
    f32 = np.array(res[base])
    parts = [f"{name}: {base[0] if isinstance(base, tuple) else base} {np.median(f32):.0f} GFLOP/s"]
    for case, g in res.items():
        if case == base:
            continue
        q = np.array(g) / f32
        label = f"{case[0]} {'converted' if case[1] else 'in force'}" if isinstance(case, tuple) else case
        parts.append(f"{label} {np.median(g):.0f} ({np.median(q):.2f}x, {q.min():.2f}-{q.max():.2f})")
    print("; ".join(parts), flush=True)


for m, n, k in [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (3136, 64, 576), (784, 128, 1152),
                (196, 256, 2304), (49, 512, 4608), (3136, 256, 64), (64, 512, 128)]:
    ops = {}
    for dt in ("float32",) + SIXTEEN:
        ops[dt] = (hetnn.asarray(rng.uniform(-1, 1, (m, k)).astype(dt), device=cpu),
                   hetnn.asarray(rng.uniform(-1, 1, (k, n)).astype(dt), device=cpu),
                   hetnn.empty((m, n), dtype=dt, device=cpu))
    cases = [("float32", False)] + [(dt, False) for dt in SIXTEEN] + [(dt, True) for dt in SIXTEEN]
    res = {c: [] for c in cases}
    try:
        for rnd in range(args.rounds):
            for case in (cases if rnd % 2 == 0 else cases[::-1]):
                _core._force_cpu_half_conversion(case[1])
                a, b, c = ops[case[0]]
                r = hetnn.benchmark(hetnn.matmul, (a, b), {"out": c}, n_warmup=2, n_repeat=5, flops=2 * m * n * k)
                res[case].append(2 * m * n * k / r.median / 1e9)
    finally:
        _core._force_cpu_half_conversion(False)
    line(f"matmul {m}x{n}x{k}", res, ("float32", False))

for n, c, h, o, k in [(8, 64, 56, 64, 3), (8, 128, 28, 128, 3), (8, 256, 14, 256, 3), (8, 256, 56, 64, 1)]:
    ops = {dt: (hetnn.asarray(rng.uniform(-1, 1, (n, c, h, h)).astype(dt), device=cpu),
                hetnn.asarray(rng.uniform(-1, 1, (o, c, k, k)).astype(dt), device=cpu))
           for dt in ("float32",) + SIXTEEN}
    fl = 2.0 * n * o * h * h * c * k * k
    res = {dt: [] for dt in ops}
    order = list(ops)
    for rnd in range(args.rounds):
        for dt in (order if rnd % 2 == 0 else order[::-1]):
            r = hetnn.benchmark(hetnn.conv2d, ops[dt], {"padding": k // 2}, n_warmup=2, n_repeat=5, flops=fl)
            res[dt].append(fl / r.median / 1e9)
    line(f"conv2d {n}x{c}@{h}^2 k{k} -> {o}", res, "float32")
