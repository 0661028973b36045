"""GEMM benchmark: GFLOP/s of hetnn.matmul per device, and of NumPy, with the error against a float64 reference."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._array import asarray, empty
from .._device import Device
from .._ops import matmul
from .._timing import benchmark


def settle(seconds: float = 0.3) -> None:
    """Lets other libraries' thread pools go idle before a timed run. OpenBLAS (NumPy) and OpenMP workers spin
    for a while after each call; on a small machine they steal the cores of whatever is timed next (measured on
    2 cores: hetnn's 512^3 matmul ran 4-6x slower right after a NumPy matmul)."""
    import time

    time.sleep(seconds)

Shape = Tuple[str, int, int, int]  # label, M, N, K

# ResNet-50 v1.5 convolutions as GEMMs at batch 1: M = output pixels, N = output channels, K = C_in*kh*kw.
_RESNET_QUICK: List[Shape] = [
    ("resnet50 conv2_x 3x3", 56 * 56, 64, 64 * 9),
    ("resnet50 conv4_x 3x3", 14 * 14, 256, 256 * 9),
]
MATMUL_SHAPES: Dict[str, List[Shape]] = {
    "quick": [("512^3", 512, 512, 512), ("1024^3", 1024, 1024, 1024), *_RESNET_QUICK],
    "square": [(f"{n}^3", n, n, n) for n in (128, 256, 512, 1024, 2048)],
}


def max_rel_error(result: np.ndarray, reference: np.ndarray) -> float:
    """max|result - reference| / max|reference| (norm-wise relative error; 0 for an all-zero reference)."""
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    err = float(np.max(np.abs(result.astype(np.float64) - reference))) if reference.size else 0.0
    return err / scale if scale else err


def run_matmul(shapes: Sequence[Shape], devices: Sequence[Device], *, dtype: str = "float32",
               compare: Sequence[str] = ("numpy",), n_warmup: int = 3, n_repeat: int = 20,
               max_duration: Optional[float] = 2.0, seed: int = 0,
               progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """One row per (shape, device or peer library): median times, GFLOP/s and the error against float64 NumPy.

    Operands live on the device before timing (transfers are not part of the figure); the output is preallocated.
    """
    rng = np.random.default_rng(seed)
    rows: List[Dict[str, Any]] = []
    for label, m, n, k in shapes:
        a = rng.uniform(-1, 1, (m, k)).astype(dtype)
        b = rng.uniform(-1, 1, (k, n)).astype(dtype)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        flops = 2.0 * m * n * k
        settle()
        base = {"shape": label, "M": m, "N": n, "K": k, "dtype": dtype}
        for dev in devices:
            if progress:
                progress(f"{label} on {dev.id}")
            if dtype == "float64" and not dev.fp64:
                rows.append({**base, "device": dev.id, "library": "hetnn", "note": "no fp64"})
                continue
            A, B = asarray(a, device=dev), asarray(b, device=dev)
            C = empty((m, n), dtype=dtype, device=dev)
            r = benchmark(matmul, (A, B), {"out": C}, n_warmup=n_warmup, n_repeat=n_repeat,
                          max_duration=max_duration, flops=flops, device=dev, name="matmul")
            rows.append({**base, "device": dev.id, "device_name": dev.name, "library": "hetnn",
                         "wall_ms": r.median * 1e3, "device_ms": r.device["median"] * 1e3,
                         "wall_std_ms": r.std * 1e3, "gflops": r.gflops, "gflops_device": r.gflops_device,
                         "repeats": r.n_repeat, "max_rel_err": max_rel_error(C.numpy(), ref)})
        if "numpy" in compare:
            if progress:
                progress(f"{label} on numpy")
            settle()
            out = np.empty((m, n), dtype=dtype)
            r = benchmark(np.matmul, (a, b), {"out": out}, n_warmup=n_warmup, n_repeat=n_repeat,
                          max_duration=max_duration, flops=flops, device=[], name="numpy.matmul")
            rows.append({**base, "device": "host", "device_name": "NumPy " + np.__version__, "library": "numpy",
                         "wall_ms": r.median * 1e3, "wall_std_ms": r.std * 1e3, "gflops": r.gflops,
                         "repeats": r.n_repeat, "max_rel_err": max_rel_error(out, ref)})
    return rows


MATMUL_COLUMNS = [("shape", "shape", ""), ("M", "M", "d"), ("N", "N", "d"), ("K", "K", "d"),
                  ("library", "library", ""), ("device", "device", ""), ("wall_ms", "wall ms", ".3f"),
                  ("device_ms", "device ms", ".3f"), ("gflops", "GFLOP/s", ".1f"),
                  ("max_rel_err", "max rel err", ".1e"), ("repeats", "n", "d")]
