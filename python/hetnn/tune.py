"""GEMM auto-tuner: ``python -m hetnn tune gemm --device SPEC [--sizes ...] [--budget SECONDS]``.

Searches the kernel family's parameters on one OpenCL device: every candidate is built, checked against a float64
NumPy reference on each size (a wrong or failing candidate is discarded, never timed), then timed with synchronized
repeats. The fastest correct candidate (total time over the sizes) is stored in the tuning cache and used by every
later process on that device and driver."""
from __future__ import annotations

import itertools
import random
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _tuning
from ._array import asarray, empty
from ._device import Device
from ._errors import CompileError, OpenCLError
from ._loader import _core
from ._matmul import matmul
from ._timing import benchmark


class _Slow(Exception):
    """A candidate abandoned part-way because it is already far slower than the best one."""


def _params(device: Device, dtype: str) -> Tuple[str, str]:
    """(parameters, source) in force on an OpenCL device."""
    got = _core.gemm_params(device._dev, dtype)
    if got is None:
        raise ValueError(f"tune gemm: {device.id} is not an OpenCL device")
    return got


def candidates(device: Device, dtype: str) -> List[str]:
    """Parameter strings to try, the database's choice first."""
    current, _ = _params(device, dtype)
    packed: List[str] = []
    tiled: List[str] = []
    for rm, vw, nv, lx, pa, pb in itertools.product((4, 6, 8, 12, 16), (8, 16), (1, 2, 3, 4), (0, 4, 16), (0, 1),
                                                    (0, 1)):
        if rm * nv <= 32 and vw * nv <= 64:
            ly = 4 if lx == 4 else 1
            packed.append(f"family=packed rm={rm} vw={vw} nv={nv} lx={lx} ly={ly} pack_a={pa} pack_b={pb}")
    for ts_m, ts_n, ts_k, wm, wn in itertools.product((32, 64, 128), (32, 64, 128), (8, 16, 32), (2, 4, 8), (2, 4, 8)):
        wg = (ts_m // wm) * (ts_n // wn)
        if ts_m % wm or ts_n % wn or wg > device.max_work_group_size or wg < 16:
            continue
        if 2 * ts_k * (ts_m + ts_n) * (8 if dtype == "float64" else 4) > device.local_mem:
            continue
        tiled.append(f"family=tiled ts_m={ts_m} ts_n={ts_n} ts_k={ts_k} wpt_m={wm} wpt_n={wn}")
    rng = random.Random(0)
    rng.shuffle(packed)
    rng.shuffle(tiled)
    # The family shaped for the device first: packed for CPU devices, tiled for GPUs.
    out = packed + tiled if device.type == "cpu" else tiled + packed
    return [current] + [c for c in out if c != current]


def tune_gemm(device: Device, sizes: Sequence[Tuple[int, int, int]], *, dtype: str = "float32",
              budget: float = 120.0, max_candidates: Optional[int] = None,
              progress: Optional[Callable[[str], None]] = None, save: bool = True) -> Dict[str, Any]:
    """Returns {"params", "gflops", "baseline_gflops", "tried", "rejected", "path"} and stores the winner."""
    if device.kind != "opencl":
        raise ValueError(f"tune gemm: {device.id} is not an OpenCL device (the CPU device runs oneDNN)")
    if dtype == "float64" and not device.fp64:
        raise TypeError(f"tune gemm: {device.id} has no fp64")
    rng = np.random.default_rng(1)
    problems = []
    for m, n, k in sizes:
        a = rng.uniform(-1, 1, (m, k)).astype(dtype)
        b = rng.uniform(-1, 1, (k, n)).astype(dtype)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        problems.append((asarray(a, device=device), asarray(b, device=device), empty((m, n), dtype, device),
                         ref, 2.0 * m * n * k))
    flops = sum(p[4] for p in problems)
    tol = 1e-4 if dtype == "float32" else 1e-10
    original, original_source = _params(device, dtype)
    restore = "" if original_source.startswith(("database", "default")) else original  # "" = back to the database
    results: List[Tuple[float, str]] = []
    rejected = 0
    start = time.perf_counter()
    cands = candidates(device, dtype)
    if max_candidates:
        cands = cands[:max_candidates]
    try:
        for i, params in enumerate(cands):
            if time.perf_counter() - start > budget and results:
                break
            try:
                _core.set_gemm_params(device._dev, dtype, params, "tuning")
                params = _params(device, dtype)[0]  # canonical spelling, as stored and compared
                total = 0.0
                best_so_far = min((t for t, _ in results), default=None)
                for A, B, C, ref, _ in problems:
                    if best_so_far is not None and total > 1.5 * best_so_far:
                        raise _Slow(f"already {total / best_so_far:.1f}x slower than the best")
                    matmul(A, B, out=C)
                    got = C.numpy().astype(np.float64)
                    err = np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)
                    if not np.isfinite(err) or err > tol:
                        raise ValueError(f"wrong result (relative error {err:.1e})")
                    r = benchmark(matmul, (A, B), {"out": C}, n_warmup=1, n_repeat=5, max_duration=1.0,
                                  device=device)
                    total += r.median
                results.append((total, params))
                if progress:
                    progress(f"[{i + 1}/{len(cands)}] {params}: {flops / total / 1e9:.1f} GFLOP/s")
            except _Slow as exc:
                rejected += 1
                if progress:
                    progress(f"[{i + 1}/{len(cands)}] {params}: dropped ({exc})")
            except (CompileError, OpenCLError, ValueError, MemoryError) as exc:
                rejected += 1
                if progress:
                    progress(f"[{i + 1}/{len(cands)}] {params}: rejected ({str(exc).splitlines()[0][:80]})")
    finally:
        _core.set_gemm_params(device._dev, dtype, restore, original_source)
    if not results:
        raise RuntimeError("tune gemm: no candidate produced a correct result")
    results.sort()
    best_t, best = results[0]
    baseline = next((t for t, p in results if p == original), None)
    entry: Dict[str, Any] = {"params": best, "gflops": flops / best_t / 1e9, "sizes": [list(s) for s in sizes],
             "baseline_params": original, "baseline_gflops": flops / baseline / 1e9 if baseline else None,
             "tried": len(results) + rejected, "rejected": rejected, "date": time.strftime("%Y-%m-%d")}
    if save:
        entry["path"] = _tuning.save_entry(device, dtype, {k: v for k, v in entry.items() if k != "path"})
        _core.set_gemm_params(device._dev, dtype, best, "tuned " + entry["date"])
    return entry
