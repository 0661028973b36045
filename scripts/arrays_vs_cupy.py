"""Arrays on a GPU: hetnn (OpenCL) against CuPy, interleaved in one run, float32, each result checked against the
other's: element-wise ops and reductions on 64 MiB (GB/s, and the share of the device's measured memory ceiling from
`bench peak`) and on 1 KiB (time per call, as a loop of calls synchronised at its end), and pi by Monte Carlo with
1e8 samples (a user ElementwiseKernel and a sum against CuPy's).

    python scripts/arrays_vs_cupy.py [--rounds 15] [--samples 100000000]

The issue's targets: >= 0.8x the memory ceiling at 64 MiB, per call <= 2x CuPy's at 1 KiB, pi >= 0.8x CuPy."""
import argparse

import cupy as cp
import numpy as np

import hetnn
from hetnn import Case, interleave
from hetnn.bench import ratio
from hetnn.bench.peak import mem_peak_gbps

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=15)
ap.add_argument("--samples", type=int, default=100_000_000)
ap.add_argument("--device", default="gpu")
args = ap.parse_args()
dev = hetnn.device(args.device)
ceiling = mem_peak_gbps(dev)
print("device:", dev.id, dev.name, "| memory ceiling:", ceiling, "GB/s")
sync = cp.cuda.Device().synchronize
saxpy_h = hetnn.ElementwiseKernel("T x, T y", "T z", "z = 2 * x + y", "saxpy_vs_cupy")
saxpy_c = cp.ElementwiseKernel("T x, T y", "T z", "z = 2 * x + y", "saxpy_vs_cupy")
OPS = {  # name: (hetnn call, CuPy call, bytes moved per element, result is an element-wise output)
    "add": (lambda A, B, C: hetnn.add(A, B, out=C), lambda a, b, c: cp.add(a, b, out=c), 12),
    "exp": (lambda A, B, C: hetnn.exp(A, out=C), lambda a, b, c: cp.exp(a, out=c), 8),
    "sum": (lambda A, B, C: hetnn.sum(A), lambda a, b, c: a.sum(), 4),
    "saxpy kernel": (lambda A, B, C: saxpy_h(A, B, C), lambda a, b, c: saxpy_c(a, b, c), 12),
    "add transposed": (lambda A, B, C: hetnn.add(A.mT, B, out=C), lambda a, b, c: cp.add(a.T, b, out=c), 12),
}
for nbytes, calls in ((64 << 20, 1), (1 << 10, 200)):
    n = nbytes // 4
    side = 1 << ((n.bit_length() - 1) // 2)
    for name, (fh, fc, moved) in OPS.items():
        shape = (side, n // side) if name == "add transposed" else (n,)
        x = np.random.default_rng(n).uniform(-1, 1, shape).astype(np.float32)
        y = np.random.default_rng(n + 1).uniform(-1, 1, shape[::-1]).astype(np.float32)
        if name != "add transposed":
            y = y.reshape(shape)
        A, B, C = hetnn.asarray(x, device=dev), hetnn.asarray(y, device=dev), hetnn.empty(y.shape, device=dev,
                                                                                          dtype="float32")
        a, b, c = cp.asarray(x), cp.asarray(y), cp.empty(y.shape, cp.float32)
        rh, rc = fh(A, B, C), fc(a, b, c)
        got = (C.numpy() if name != "sum" else rh.numpy()).astype(np.float64)
        want = (cp.asnumpy(c) if name != "sum" else cp.asnumpy(rc)).astype(np.float64)
        scale = np.abs(x).sum() if name == "sum" else max(np.abs(want).max(), 1e-30)
        assert np.abs(got - want).max() / scale < 1e-5, f"{name}: hetnn and CuPy disagree"

        def loop_h(fh=fh, A=A, B=B, C=C):
            for _ in range(calls):
                r = fh(A, B, C)
            return r

        def loop_c(fc=fc, a=a, b=b, c=c):
            for _ in range(calls):
                fc(a, b, c)
            sync()

        res = interleave([Case("hetnn", loop_h, devices=[dev]), Case("cupy", loop_c)], n_warmup=3,
                         n_repeat=args.rounds)
        h, c_ = res
        if calls == 1:
            gh, gc = moved * n / h.median / 1e9, moved * n / c_.median / 1e9
            share = f"{gh / ceiling:.2f}x" if ceiling else "?"
            print(f"{name:15} 64 MiB: hetnn {gh:7.1f} GB/s ({share} of the ceiling), CuPy {gc:7.1f} GB/s")
        else:
            print(f"{name:15} 1 KiB: hetnn {h.median / calls * 1e6:6.2f} us, CuPy {c_.median / calls * 1e6:6.2f} us "
                  f"per call")
        print("  " + ratio(f"{name} {nbytes} B: hetnn / CuPy (speed)", h, c_))

inside_h = hetnn.ElementwiseKernel("T x, T y", "int32 hit", "hit = x * x + y * y <= 1 ? 1 : 0", "inside_vs_cupy")
inside_c = cp.ElementwiseKernel("T x, T y", "int32 hit", "hit = x * x + y * y <= 1 ? 1 : 0", "inside_vs_cupy")
N = args.samples


def pi_h():
    g = hetnn.random.default_rng(1)
    return 4 * int(hetnn.sum(inside_h(g.random(N, dtype="float32", device=dev),
                                      g.random(N, dtype="float32", device=dev)))) / N


def pi_c():
    g = cp.random.default_rng(1)
    return 4 * int(inside_c(g.random(N, dtype=cp.float32), g.random(N, dtype=cp.float32)).sum()) / N


for f in (pi_h, pi_c):
    assert abs(f() - np.pi) < 6 * 4 * np.sqrt(np.pi / 4 * (1 - np.pi / 4) / N), f"{f.__name__} is off"
h, c_ = interleave([Case("hetnn", pi_h, devices=[dev]), Case("cupy", pi_c)], n_warmup=2, n_repeat=args.rounds)
print(f"pi, {N:,} samples: hetnn {h.median * 1e3:.1f} ms, CuPy {c_.median * 1e3:.1f} ms")
print("  " + ratio(f"pi, {N:,} samples: hetnn / CuPy (speed)", h, c_))
