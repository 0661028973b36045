"""GEMM auto-tuner: ``python -m hetnn tune gemm --device SPEC [--sizes ...] [--budget SECONDS]``.

Searches the kernel family's parameters on one OpenCL device: every candidate is built, checked against a float64
NumPy reference on each size (a wrong or failing candidate is discarded, never timed), then timed with synchronized
repeats. Small and large problems are tuned apart (a tile that fills a GPU at 4096^3 leaves it idle at batch 1); in
each class the candidate with the best geometric mean of GFLOP/s over its sizes wins. The winners are stored in the
tuning cache and used by every later process on that device and driver."""
from __future__ import annotations

import itertools
import random
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _cache
from ._array import asarray, empty
from ._device import Device
from ._errors import CompileError, OpenCLError
from ._loader import _core
from ._ops import matmul
from ._timing import Case, benchmark, interleave


class _Slow(Exception):
    """A candidate abandoned part-way because it is already far slower than the best one on some size."""


def _params(device: Device, dtype: str, macs: int = -1) -> Tuple[str, str]:
    """(parameters, source) in force on an OpenCL device for a problem of ``macs`` multiply-adds (-1: any size)."""
    got = _core.gemm_params(device._dev, dtype, macs)
    if got is None:
        raise ValueError(f"tune gemm: {device.id} is not an OpenCL device")
    return got


# vtiled members tried first on GPUs, in this order: the register tiles and work-group shapes the fast SIMT SGEMMs
# use (128x128 tiles of 8x8 per work item, then narrower and smaller ones for fewer output tiles).
_VTILED_FIRST = ["128 128 16 8 8 4 4", "128 128 8 8 8 4 4", "128 64 16 8 4 4 4", "64 128 16 4 8 4 4",
                 "64 64 16 4 4 4 4", "64 64 16 8 4 4 4", "128 128 16 8 4 4 4", "256 128 8 8 8 4 4",
                 "128 256 8 8 8 4 4", "64 64 32 4 4 4 4", "32 64 32 4 2 2 2", "64 32 32 4 2 4 2"]


# mma members (float16/bfloat16 on matrix units) tried first, in this order: the best of the five measured on an H200
# (docs/gpu.md), then the others of that run.
# Each also with its fragments loaded by ldmatrix (lm=1). tf32 (4-byte values): the same tiles half as deep.
_MMA_FIRST = ["64 64 32 2 2", "64 64 32 2 2 1", "128 128 32 2 2", "128 128 32 2 2 1", "256 128 16 4 2",
              "256 128 16 4 2 1", "128 128 32 2 4", "128 256 16 2 4"]
_TF32_FIRST = ["64 64 16 2 2", "64 64 16 2 2 1", "128 128 16 2 2", "128 128 16 2 2 1", "128 64 16 2 2",
               "128 128 16 2 4", "256 128 8 4 2", "64 64 32 2 2"]


def _mma(spec: str) -> str:
    ts_m, ts_n, ts_k, wm, wn, *lm = spec.split()
    return f"family=mma ts_m={ts_m} ts_n={ts_n} ts_k={ts_k} wm={wm} wn={wn}" + (" lm=1" if lm == ["1"] else "")


# The pipelined members an H200 measured fastest (2026-11-30; the sm_90 database entries), and the warpgroup members
# (wgmma, tried where Device.float16_mode names it) in the order of that run: 256 x 128 and 128 x 256 tiles of two
# warpgroups, then 128 x 128 of one with a ring of six 16-deep slices; last 64 x 128 (few registers: four
# work-groups, four rings, to a compute unit).
_MMA_MEASURED = ["family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=2 lm=1 st=2",
                 "family=mma ts_m=64 ts_n=64 ts_k=32 wm=2 wn=2 lm=1 st=4"]
_WG_FIRST = ["family=mma ts_m=256 ts_n=128 ts_k=16 wm=2 wn=1 st=4 wg=1",
             "family=mma ts_m=128 ts_n=256 ts_k=16 wm=2 wn=1 st=4 wg=1",
             "family=mma ts_m=128 ts_n=128 ts_k=16 wm=1 wn=1 st=6 wg=1",
             "family=mma ts_m=128 ts_n=128 ts_k=32 wm=2 wn=1 st=3 wg=1",
             "family=mma ts_m=64 ts_n=128 ts_k=32 wm=1 wn=1 st=4 wg=1"]


def _mma_candidates(tf32: bool = False, wgmma: bool = False) -> List[str]:
    """Warp tiles of whole 16 x 8 pieces, work-groups of 2-16 warps that move whole 16-byte vectors (8 values, 4
    for tf32) of each slice (the device's own limits are checked when a candidate is set); with ``wgmma`` the
    warpgroup members too."""
    out = []
    per_vec, depths = (4, (8, 16, 32)) if tf32 else (8, (16, 32, 64))
    for ts_m, ts_n, ts_k, wm, wn in itertools.product((32, 64, 128, 256), (32, 64, 128, 256), depths,
                                                     (1, 2, 4), (1, 2, 4)):
        lsize = 32 * wm * wn
        if (ts_m % (16 * wm) or ts_n % (8 * wn) or lsize < 64 or (ts_m * ts_k // per_vec) % lsize
                or (ts_n * ts_k // per_vec) % lsize):
            continue
        out += [_mma(f"{ts_m} {ts_n} {ts_k} {wm} {wn}"), _mma(f"{ts_m} {ts_n} {ts_k} {wm} {wn} 1")]
    rng = random.Random(0)
    rng.shuffle(out)
    first = [c for c in map(_mma, _TF32_FIRST if tf32 else _MMA_FIRST) if c in out]
    # each of the first four also with a ring of 2 and 3 slices filled by asynchronous copies (st; a tile the
    # device's local memory cannot hold three times is refused when set, and skipped)
    pipelined = [f"{c} st={st}" for c in first[:4] for st in (2, 3)]
    measured = [] if tf32 else _MMA_MEASURED
    ordered = measured + first[:4] + pipelined + (_WG_FIRST if wgmma and not tf32 else []) + first[4:]
    ordered = list(dict.fromkeys(ordered))
    return ordered + [c for c in out if c not in ordered]


def _vtiled(spec: str) -> str:
    ts_m, ts_n, ts_k, wm, wn, vm, vn = spec.split()
    return f"family=vtiled ts_m={ts_m} ts_n={ts_n} ts_k={ts_k} wpt_m={wm} wpt_n={wn} vwm={vm} vwn={vn}"


def candidates(device: Device, dtype: str, first: Optional[str] = None) -> List[str]:
    """Parameter strings to try, ``first`` (default: the entry in force for large problems) first."""
    current = first or _params(device, dtype)[0]
    if dtype == "tf32":  # only the matrix-unit members compute in tf32 (in force otherwise: float32's)
        mma = _mma_candidates(tf32=True)
        return ([current] if current.startswith("family=mma") else []) + [c for c in mma if c != current]
    real = 8 if dtype == "float64" else 4
    packed: List[str] = []
    tiled: List[str] = []
    vtiled: List[str] = []
    for rm, vw, nv, lx, pa, pb in itertools.product((4, 6, 8, 12, 16), (8, 16), (1, 2, 3, 4), (0, 4, 16), (0, 1),
                                                    (0, 1)):
        if rm * nv <= 32 and vw * nv <= 64:
            ly = 4 if lx == 4 else 1
            packed.append(f"family=packed rm={rm} vw={vw} nv={nv} lx={lx} ly={ly} pack_a={pa} pack_b={pb}")
    for ts_m, ts_n, ts_k, wm, wn in itertools.product((32, 64, 128), (32, 64, 128), (8, 16, 32), (2, 4, 8), (2, 4, 8)):
        wg = (ts_m // wm) * (ts_n // wn)
        if ts_m % wm or ts_n % wn or wg > device.max_work_group_size or wg < 16:
            continue
        if ts_k * (ts_m + ts_n) * real <= device.local_mem:
            tiled.append(f"family=tiled ts_m={ts_m} ts_n={ts_n} ts_k={ts_k} wpt_m={wm} wpt_n={wn}")
        # vtiled double-buffers: twice the local memory; its vectors are min(4, wpt) wide, or 2 / 1 as variants
        if 2 * ts_k * (ts_m + ts_n) * real > device.local_mem or (ts_m * ts_k) % wg or (ts_n * ts_k) % wg:
            continue
        for vm, vn in {(min(4, wm), min(4, wn)), (min(2, wm), min(2, wn)), (1, 1)}:
            vtiled.append(_vtiled(f"{ts_m} {ts_n} {ts_k} {wm} {wn} {vm} {vn}"))
    for spec in (256, 128, 8), (128, 256, 8):  # the 256-wide tiles, beyond the grid above
        ts_m, ts_n, ts_k = spec
        if 2 * ts_k * (ts_m + ts_n) * real <= device.local_mem and device.max_work_group_size >= 512:
            vtiled.append(_vtiled(f"{ts_m} {ts_n} {ts_k} 8 8 4 4"))
    rng = random.Random(0)
    rng.shuffle(packed)
    rng.shuffle(tiled)
    rng.shuffle(vtiled)
    first_vtiled = [c for c in map(_vtiled, _VTILED_FIRST) if c in vtiled]
    # each of the first four also with stream-K over 1 and 2 work-groups a compute unit (products whose tiles leave
    # a wave part idle; the sizes tuned over decide whether it pays)
    streamk = [f"{c} sk={sk}" for c in first_vtiled[:4] for sk in (1, 2)]
    vtiled = first_vtiled[:4] + streamk + first_vtiled[4:] + [c for c in vtiled if c not in first_vtiled]
    # The family shaped for the device first: packed for CPU devices, vtiled then tiled for GPUs; 16-bit data on
    # matrix units (the probe passed: Device.float16_mode) the mma members before all (elsewhere their instruction
    # is emulated, slowly, and they are not tried).
    out = packed + vtiled + tiled if device.type == "cpu" else vtiled + tiled + packed
    mode = {"float16": device.float16_mode, "bfloat16": device.bfloat16_mode}.get(dtype, "")
    if mode.startswith("tensor cores"):
        out = _mma_candidates(wgmma="wgmma" in mode) + out
    return [current] + [c for c in out if c != current]


def _data_type(dtype: str) -> str:
    return "float32" if dtype == "tf32" else dtype


def _run(dtype: str) -> Callable[..., Any]:
    """matmul as the tuned type computes: tf32 is float32 at precision "high"."""
    if dtype == "tf32":
        return lambda *args, **kw: matmul(*args, precision="high", **kw)
    return matmul


class _Problem:
    """One GEMM size on the device with its float64 reference."""

    def __init__(self, device: Device, dtype: str, m: int, n: int, k: int, rng: np.random.Generator) -> None:
        a = rng.uniform(-1, 1, (m, k)).astype(_data_type(dtype))
        b = rng.uniform(-1, 1, (k, n)).astype(_data_type(dtype))
        self.ref = a.astype(np.float64) @ b.astype(np.float64)
        self.A, self.B = asarray(a, device=device), asarray(b, device=device)
        self.C = empty((m, n), dtype, device)
        self.size, self.macs, self.flops = [m, n, k], m * n * k, 2.0 * m * n * k
        self.dtype = dtype


def _time_candidate(device: Device, problems: Sequence[_Problem], tol: float,
                    best: Optional[Sequence[float]], deadline: float) -> List[float]:
    """The median time of the parameters in force on each of ``problems``; ValueError when a result is wrong, _Slow
    as soon as one problem takes over 3x the time of the best candidate so far (``best``) on it, or, once there is
    a best, when the budget runs out (``deadline``, perf_counter seconds)."""
    times = []
    for i, p in enumerate(problems):
        if best is not None and time.perf_counter() > deadline:
            raise _Slow("the budget is spent")
        mm = _run(p.dtype)
        mm(p.A, p.B, out=p.C)
        err = np.max(np.abs(p.C.numpy().astype(np.float64) - p.ref)) / max(np.max(np.abs(p.ref)), 1e-30)
        if not np.isfinite(err) or err > tol:
            raise ValueError(f"wrong result (relative error {err:.1e})")
        times.append(benchmark(mm, (p.A, p.B), {"out": p.C}, n_warmup=1, n_repeat=5, max_duration=1.0,
                               device=device).median)
        if best is not None and times[-1] > 3 * best[i]:
            raise _Slow(f"{times[-1] / best[i]:.1f}x slower than the best on {'x'.join(map(str, p.size))}")
    return times


def _gflops(problems: Sequence[_Problem], times: Sequence[float]) -> float:
    """The geometric mean of the per-problem GFLOP/s: every size counts alike (a total over the sizes would be the
    largest size's figure, and would pick the tile that leaves the device idle on the smaller ones)."""
    return float(np.exp(np.mean([np.log(p.flops / t / 1e9) for p, t in zip(problems, times)])))


def _search(device: Device, dtype: str, problems: Sequence[_Problem], cands: Sequence[str], budget: float,
            progress: Optional[Callable[[str], None]]) -> Tuple[List[Tuple[float, str]], int]:
    """Every candidate (until the budget is spent) timed on ``problems``: ([(GFLOP/s, params)] best first, the
    number rejected)."""
    # relative to the largest result: float32 and float64 sums, one rounding of the result to 16 bits, or the
    # inputs' rounding to tf32's 10 mantissa bits
    tol = {"float32": 1e-4, "float64": 1e-10, "float16": 2e-3, "bfloat16": 1.6e-2, "tf32": 2e-3}[dtype]
    results: List[Tuple[float, str]] = []
    best_times: Optional[List[float]] = None
    rejected = 0
    start = time.perf_counter()
    for i, params in enumerate(cands):
        if time.perf_counter() - start > budget and results:
            break
        try:
            _core.set_gemm_params(device._dev, dtype, params, "tuning")
            params = _params(device, dtype)[0]  # canonical spelling, as stored and compared
            times = _time_candidate(device, problems, tol, best_times, start + budget)
            results.append((_gflops(problems, times), params))
            if results[-1][0] >= max(g for g, _ in results):
                best_times = times
            if progress:
                progress(f"[{i + 1}/{len(cands)}] {params}: {results[-1][0]:.1f} GFLOP/s")
        except _Slow as exc:
            rejected += 1
            if progress:
                progress(f"[{i + 1}/{len(cands)}] {params}: dropped ({exc})")
        except (CompileError, OpenCLError, ValueError, MemoryError) as exc:
            rejected += 1
            if progress:
                progress(f"[{i + 1}/{len(cands)}] {params}: rejected ({str(exc).splitlines()[0][:80]})")
    if not results:
        raise RuntimeError("tune gemm: no candidate produced a correct result")
    return sorted(results, reverse=True), rejected


def _confirm(device: Device, dtype: str, problems: Sequence[_Problem], baseline: str, winner: str,
             rounds: int = 15) -> Tuple[bool, float]:
    """Whether ``winner`` beats ``baseline`` when the two are timed interleaved, round by round over every problem,
    and the median per-round speed-up. The search times each candidate once, minutes apart, and the incumbent
    first: a GPU whose clock rises during the search flatters the later candidates (H100, ResNet-50 shapes: the
    search claimed 1.27x over the incumbent, the same two interleaved 0.97x). Kept only when the lower quartile of
    the per-round speed-ups is above 1."""
    def run(params: str) -> Callable[[], None]:
        def fn() -> None:
            _core.set_gemm_params(device._dev, dtype, params, "tuning")
            for p in problems:
                _run(dtype)(p.A, p.B, out=p.C)
        return fn

    res = interleave([Case("baseline", run(baseline), devices=[device]), Case("winner", run(winner), devices=[device])],
                     n_warmup=2, n_repeat=rounds, settle=False)
    n = min(len(res[0].wall_times), len(res[1].wall_times))
    ratios = np.asarray(res[0].wall_times[:n]) / np.asarray(res[1].wall_times[:n])
    low, median = np.percentile(ratios, [25, 50])
    return bool(low > 1.0), float(median)


def tune_gemm(device: Device, sizes: Sequence[Tuple[int, int, int]], *, dtype: str = "float32",
              budget: float = 120.0, max_candidates: Optional[int] = None,
              progress: Optional[Callable[[str], None]] = None, save: bool = True) -> Dict[str, Any]:
    """Tunes each size class apart (problems of at most GEMM_SMALL_MACS multiply-adds, and larger ones; the budget
    split between them), since the tile that wins on large problems can leave a GPU idle on small ones. Returns
    {"params", "gflops", "baseline_params", "baseline_gflops", "speedup_interleaved", "search_best", "sizes",
    "tried", "rejected", "date", "path"} for the
    larger class (or the only one), with "by_size": [{"max_macs", "params", ...}] for the small class when both are
    given, and stores it: every later process on that device and driver uses it."""
    if device.kind != "opencl":
        raise ValueError(f"tune gemm: {device.id} is not an OpenCL device (the CPU device runs oneDNN)")
    if dtype == "float64" and not device.fp64:
        raise TypeError(f"tune gemm: {device.id} has no fp64")
    if dtype == "tf32" and not device.tf32_mode.startswith("tensor cores"):
        raise ValueError(f"tune gemm --dtype tf32: {device.id} computes float32 products exactly at every precision "
                         f"({device.tf32_mode}): there is nothing to tune")
    rng = np.random.default_rng(1)
    problems = [_Problem(device, dtype, m, n, k, rng) for m, n, k in sizes]
    small = [p for p in problems if p.macs <= _core.GEMM_SMALL_MACS]
    large = [p for p in problems if p.macs > _core.GEMM_SMALL_MACS]
    classes = [c for c in (small, large) if c]
    original, original_source = _params(device, dtype)
    restore = "" if original_source.startswith(("database", "default", "tuned")) else original
    # each class's parameters in force before tuning, read before any candidate is set
    before = [_params(device, dtype, max(p.macs for p in cls) if cls is small else -1)[0] for cls in classes]
    found: List[Dict[str, Any]] = []
    try:
        for cls, first in zip(classes, before):
            cands = candidates(device, dtype, first)[:max_candidates or None]
            results, rejected = _search(device, dtype, cls, cands, budget / len(classes), progress)
            best, best_gflops = results[0][1], results[0][0]
            baseline_gflops = next((g for g, p in results if p == first), None)
            speedup: Optional[float] = None
            if best != first and baseline_gflops is not None:  # an incumbent that failed in the search is replaced
                kept, speedup = _confirm(device, dtype, cls, first, best)
                if not kept:
                    best, best_gflops = first, baseline_gflops
            found.append({"params": best, "gflops": best_gflops, "sizes": [p.size for p in cls],
                          "baseline_params": first, "baseline_gflops": baseline_gflops,
                          "speedup_interleaved": speedup, "search_best": results[0][1],
                          "tried": len(results) + rejected, "rejected": rejected})
    finally:
        _core.set_gemm_params(device._dev, dtype, restore, original_source)
    entry = dict(found[-1], date=time.strftime("%Y-%m-%d"))
    entry["tried"], entry["rejected"] = sum(f["tried"] for f in found), sum(f["rejected"] for f in found)
    if len(found) == 2:
        entry["by_size"] = [dict(found[0], max_macs=_core.GEMM_SMALL_MACS)]
    if save:
        entry["path"] = _cache.save_entry(device, dtype, entry)
        _core.set_gemm_params(device._dev, dtype, "", "")  # the stored entry, with its size classes, in force now
    return entry
