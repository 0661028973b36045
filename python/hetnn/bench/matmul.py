"""GEMM benchmark: GFLOP/s of hetnn.matmul per device, and of peers run in the same process (NumPy, a raw oneDNN
C++ loop, CLBlast on each OpenCL device, PyTorch/CuPy/JAX where importable), with the share of the device's measured peak and the error against a
float64 reference."""
from __future__ import annotations

import json
import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._array import asarray, empty
from .._device import Device
from .._loader import _core
from .._ops import matmul
from .._timing import benchmark, spread_pct
from .peak import check_ceiling, fp32_peak_gflops, share
from .peers import ARRAY_PEERS, find_peers, time_calls

Shape = Tuple[str, int, int, int]  # label, M, N, K

# ResNet-50 v1.5 convolutions as GEMMs (im2col) at batch 1: M = output pixels, N = output channels,
# K = C_in * kh * kw. Scaled by the batch size along M.
RESNET50_BS1: List[Tuple[int, int, int]] = [
    (12544, 64, 147), (3136, 64, 64), (3136, 64, 576), (3136, 256, 64), (3136, 64, 256), (3136, 128, 256),
    (784, 128, 1152), (784, 512, 128), (784, 512, 256), (784, 128, 512), (784, 256, 512), (196, 256, 2304),
    (196, 1024, 256), (196, 1024, 512), (196, 256, 1024), (196, 512, 1024), (49, 512, 4608), (49, 2048, 512),
    (49, 2048, 1024), (49, 512, 2048),
]


def resnet50_shapes(batch: int = 1) -> List[Shape]:
    return [(f"rn50 {m * batch}x{n}x{k}", m * batch, n, k) for m, n, k in RESNET50_BS1]


MATMUL_SHAPES: Dict[str, List[Shape]] = {
    "quick": [("512^3", 512, 512, 512), ("1024^3", 1024, 1024, 1024),
              ("rn50 3136x64x576", 3136, 64, 576), ("rn50 196x256x2304", 196, 256, 2304)],
    "square": [(f"{n}^3", n, n, n) for n in (256, 512, 1024, 2048)],
    "resnet50": resnet50_shapes(1),
}

PEERS = ("numpy", "onednn", "clblast") + ARRAY_PEERS


def settle(seconds: float = 0.3) -> None:
    """Lets other libraries' thread pools go idle before a timed run. OpenBLAS (NumPy) and OpenMP workers spin
    for a while after each call; on a small machine they steal the cores of whatever is timed next (measured on
    2 cores: hetnn's 512^3 matmul ran 4-6x slower right after a NumPy matmul)."""
    time.sleep(seconds)


def max_rel_error(result: np.ndarray, reference: np.ndarray) -> float:
    """max|result - reference| / max|reference| (norm-wise relative error; 0 for an all-zero reference; inf for a
    result of the wrong shape)."""
    if np.shape(result) != np.shape(reference):
        return math.inf
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    err = float(np.max(np.abs(result.astype(np.float64) - reference))) if reference.size else 0.0
    return err / scale if scale else err


def clblast_params(path: Optional[str]) -> List[Tuple[str, int]]:
    """Xgemm parameters from a JSON file written by CLBlast's clblast_tuner_xgemm (its "best_parameters")."""
    if not path:
        return []
    with open(path) as f:
        data = json.load(f)
    best = data.get("best_parameters") or data.get("results", [{}])[0].get("parameters", {})
    if isinstance(best, str):  # "GEMMK=0 KREG=1 ..." in CLBlast's JSON
        best = dict(kv.split("=") for kv in best.split())
    params = [(k, int(v)) for k, v in best.items() if k != "PRECISION"]
    if not params:
        raise ValueError(f"{path}: no best_parameters found in this CLBlast tuner output")
    return params


def _checked(row: Dict[str, Any]) -> Dict[str, Any]:
    # The measured ceiling is FP32 FMA throughput: it bounds float32 and float64 products (float64 runs at half the
    # rate or less); 16-bit products may use wider units (AMX, tensor cores) that it does not bound.
    if row.get("dtype") in ("float32", "float64"):
        check_ceiling(row, "gflops", row.get("peak_gflops"), "FP32 FMA ceiling")
    return row


def _row(base: Dict[str, Any], flops: float, times: Sequence[float], peak: Optional[float], **extra: Any):
    t = float(np.median(times))
    g = flops / t / 1e9
    return _checked({**base, "wall_ms": t * 1e3, "gflops": g, "pct_peak": 100 * share(g, peak), "peak_gflops": peak,
                     "spread_pct": spread_pct(times), "repeats": len(times), **extra})


def run_matmul(shapes: Sequence[Shape], devices: Sequence[Device], *, dtype: str = "float32",
               compare: Sequence[str] = ("numpy",), n_warmup: int = 3, n_repeat: int = 20,
               max_duration: Optional[float] = 2.0, seed: int = 0, clblast_tuning: Optional[str] = None,
               progress: Optional[Callable[[str], None]] = None,
               notes: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """One row per (shape, device or peer): median time, GFLOP/s, % of the measured peak, error vs float64.

    Operands live on the device before timing (transfers are not part of the figure); outputs are preallocated
    (PyTorch/CuPy/JAX allocate theirs per call, as their users' code does). Peers that cannot run here (not
    installed, no device) are skipped with a line appended to ``notes``.
    """
    unknown = [c for c in compare if c not in PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {unknown}; available: {', '.join(PEERS)}")
    rng = np.random.default_rng(seed)
    cl_params = clblast_params(clblast_tuning) if "clblast" in compare else []
    peer_targets, peer_notes = find_peers(compare)
    if notes is not None:
        notes.extend(peer_notes)
    peaks = {d.id: fp32_peak_gflops(d) for d in devices}
    cpu_peak = fp32_peak_gflops(next(d for d in devices if d.kind == "cpu")) if any(
        d.kind == "cpu" for d in devices) else None
    rows: List[Dict[str, Any]] = []
    for label, m, n, k in shapes:
        a = rng.uniform(-1, 1, (m, k)).astype(dtype)
        b = rng.uniform(-1, 1, (k, n)).astype(dtype)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        flops = 2.0 * m * n * k
        base = {"shape": label, "M": m, "N": n, "K": k, "dtype": dtype}
        for dev in devices:
            settle()
            if progress:
                progress(f"{label} on {dev.id}")
            if dtype not in dev.dtypes:
                rows.append({**base, "device": dev.id, "library": "hetnn", "note": f"no {dtype}"})
                continue
            A, B = asarray(a, device=dev), asarray(b, device=dev)
            C = empty((m, n), dtype=dtype, device=dev)
            r = benchmark(matmul, (A, B), {"out": C}, n_warmup=n_warmup, n_repeat=n_repeat,
                          max_duration=max_duration, flops=flops, device=dev, name="matmul")
            how = {"float16": dev.float16_mode, "bfloat16": dev.bfloat16_mode}.get(dtype, "native")
            rows.append(_row({**base, "device": dev.id, "library": "hetnn", "compute": how}, flops, r.wall_times,
                             peaks[dev.id], device_ms=r.device["median"] * 1e3,
                             max_rel_err=max_rel_error(C.numpy(), ref)))
            if "clblast" in compare and dev.kind == "opencl" and dtype == "float32" and _core.have_clblast:
                settle()
                C2 = empty((m, n), dtype=dtype, device=dev)
                reps = max(1, min(n_repeat, int(max_duration / max(r.median, 1e-6)) if max_duration else n_repeat))
                t = _core._clblast_sgemm(A._a, B._a, C2._a, min(n_warmup, 1), reps, cl_params)
                rows.append(_row({**base, "device": dev.id, "library": "clblast" + ("-tuned" if cl_params else "")},
                                 flops, t, peaks[dev.id], max_rel_err=max_rel_error(C2.numpy(), ref)))
        if "onednn" in compare and dtype == "float32":
            settle()
            t = _core._onednn_raw_matmul(m, n, k, n_warmup, n_repeat)
            rows.append(_row({**base, "device": "cpu", "library": "onednn-c++"}, flops, t, cpu_peak))
        if "numpy" in compare and dtype in ("float32", "float64"):  # NumPy has no fast 16-bit matmul
            settle()
            if progress:
                progress(f"{label} on numpy")
            out = np.empty((m, n), dtype=dtype)
            r = benchmark(np.matmul, (a, b), {"out": out}, n_warmup=n_warmup, n_repeat=n_repeat,
                          max_duration=max_duration, flops=flops, device=[], name="numpy.matmul")
            rows.append(_row({**base, "device": "host", "library": "numpy"}, flops, r.wall_times, cpu_peak,
                             max_rel_err=max_rel_error(out, ref)))
        for pt in peer_targets:
            if dtype not in pt.dtypes:
                continue
            settle()
            if progress:
                progress(f"{label} on {pt.library} {pt.device}")
            pa, pb = pt.put(a, dtype), pt.put(b, dtype)
            res: List[Any] = [None]

            def call(pa: Any = pa, pb: Any = pb, res: List[Any] = res) -> None:
                res[0] = pt.matmul(pa, pb)
            t = time_calls(call, pt.sync, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration)
            peak = cpu_peak if pt.device.startswith("cpu") else None
            rows.append(_row({**base, "device": pt.device, "library": pt.library}, flops, t, peak,
                             max_rel_err=max_rel_error(pt.get(res[0]), ref), note="; ".join(pt.notes)))
            del pa, pb, res
    if len(shapes) > 1:
        rows.extend(aggregate(rows))
    return rows


def aggregate(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per (library, device): total FLOP over total median time across the shapes (the 'aggregate' rows)."""
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for r in rows:
        if "wall_ms" in r and not r.get("flagged"):  # a flagged figure is an error, not an input to totals
            groups.setdefault((r["library"], r["device"]), []).append(r)
    out = []
    for (lib, dev), rs in groups.items():
        flops = sum(2.0 * r["M"] * r["N"] * r["K"] for r in rs)
        secs = sum(r["wall_ms"] for r in rs) / 1e3
        g = flops / secs / 1e9
        peak = rs[0].get("peak_gflops")
        out.append(_checked({
            "shape": f"aggregate ({len(rs)})", "M": None, "N": None, "K": None, "dtype": rs[0]["dtype"],
            "device": dev, "library": lib, "wall_ms": secs * 1e3, "gflops": g, "pct_peak": 100 * share(g, peak),
            "peak_gflops": peak, "max_rel_err": max((r.get("max_rel_err", math.nan) for r in rs), default=math.nan)}))
    return out


def precision_table(rows: List[Dict[str, Any]], dtypes: Sequence[str]) -> List[Dict[str, Any]]:
    """The precision study: hetnn GFLOP/s per (shape, device) for each dtype, and each dtype's ratio to float32."""
    table: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for r in rows:
        if r["library"] != "hetnn" or "gflops" not in r:
            continue
        row = table.setdefault((r["shape"], r["device"]), {"shape": r["shape"], "device": r["device"]})
        row[r["dtype"]] = r["gflops"]
        if r["dtype"] in ("float16", "bfloat16"):
            row[f"{r['dtype']} compute"] = r.get("compute", "")
    for row in table.values():
        for dt in dtypes:
            if dt != "float32" and dt in row and "float32" in row:
                row[f"{dt}/float32"] = row[dt] / row["float32"]
    return list(table.values())


def ratios(rows: List[Dict[str, Any]]) -> List[str]:
    """The comparisons the README reports, from aggregate rows (or the single shape) of one run."""
    rows = [r for r in rows if not r.get("flagged")]  # measurement errors are not compared

    def g(lib: str, dev_pred: Callable[[str], bool]) -> Optional[float]:
        cand = [r for r in rows if r["library"] == lib and dev_pred(r["device"]) and r["shape"].startswith("aggregate")]
        if not cand:
            cand = [r for r in rows if r["library"] == lib and dev_pred(r["device"]) and "gflops" in r]
            if len(cand) != 1:
                return None
        return cand[0]["gflops"]

    is_cpu = lambda d: d == "cpu"  # noqa: E731
    is_cl = lambda d: d.startswith("opencl")  # noqa: E731
    out = []
    pairs = [("hetnn cpu / oneDNN C++ loop", g("hetnn", is_cpu), g("onednn-c++", is_cpu)),
             ("hetnn cpu / NumPy", g("hetnn", is_cpu), g("numpy", lambda d: d == "host")),
             ("hetnn opencl / hetnn cpu", g("hetnn", is_cl), g("hetnn", is_cpu)),
             ("hetnn opencl / CLBlast", g("hetnn", is_cl), g("clblast", is_cl) or g("clblast-tuned", is_cl))]
    for lib in ARRAY_PEERS:
        for dev in sorted({r["device"] for r in rows if r["library"] == lib}):
            y = g(lib, lambda d, dev=dev: d == dev)
            if dev.startswith("cpu"):
                pairs.append((f"hetnn cpu / {lib} {dev}", g("hetnn", is_cpu), y))
            else:
                for cl in sorted({r["device"] for r in rows if r["library"] == "hetnn" and is_cl(r["device"])}):
                    pairs.append((f"hetnn {cl} / {lib} {dev}", g("hetnn", lambda d, cl=cl: d == cl), y))
    for name, x, y in pairs:
        if x and y:
            out.append(f"{name}: {x / y:.2f}x ({x:.1f} / {y:.1f} GFLOP/s)")
    return out


MATMUL_COLUMNS = [("shape", "shape", ""), ("M", "M", "d"), ("N", "N", "d"), ("K", "K", "d"),
                  ("library", "library", ""), ("device", "device", ""), ("wall_ms", "wall ms", ".3f"),
                  ("device_ms", "device ms", ".3f"), ("gflops", "GFLOP/s", ".1f"), ("pct_peak", "% peak", ".0f"),
                  ("max_rel_err", "max rel err", ".1e"), ("spread_pct", "IQR %", ".0f"), ("repeats", "n", "d"),
                  ("note", "note", "")]
