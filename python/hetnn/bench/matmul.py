"""GEMM benchmark: GFLOP/s of hetnn.matmul per device, and of peers run in the same process (NumPy, a raw oneDNN
C++ loop, CLBlast on each OpenCL device, PyTorch/CuPy/JAX where importable), with the share of the device's
measured peak and the error against a float64 reference."""
from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._array import asarray, empty
from .._check import check_records
from .._device import Device
from .._loader import _core
from .._ops import matmul
from .._oscounters import quiesce
from .._precision import compute_mode
from .._threads import get_num_threads
from .._measurement import spread_pct
from .._timing import Case, interleave
from .grouping import by_bytes
from .progress import expect
from .peak import check_ceiling, fp32_peak_gflops, share
from .peers import ARRAY_PEERS, find_peers
from .stats import flags_text, ratio_interval, row_pair

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
    """Lets other libraries' thread pools go idle before a timed run (at most ``seconds``). OpenBLAS (NumPy) and
    OpenMP workers spin for a while after each call; on a small machine they steal the cores of whatever is timed
    next (measured on 2 cores: hetnn's 512^3 matmul ran 4-6x slower right after a NumPy matmul)."""
    quiesce(max_wait=seconds)


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
        check_ceiling(row, "gflops", row.get("peak_gflops"), "FP32 FMA ceiling", "pct_peak")
    return row


# A result further than this from float64 NumPy (max |C - C64| / max |C64|) is wrong: the row enters no ratio.
# tf32: float32 data at precision "high", the inputs rounded to 10 mantissa bits where a device has TF32 units.
AGREEMENT_TOLERANCE = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2, "bfloat16": 1e-1, "tf32": 5e-3}


def data_dtype(dtype: str) -> str:
    """The arrays' dtype of a row dtype (tf32 rows multiply float32 arrays)."""
    return "float32" if dtype == "tf32" else dtype


def _row(base: Dict[str, Any], flops: float, times: Sequence[float], peak: Optional[float], **extra: Any):
    t = float(np.median(times))
    g = flops / t / 1e9
    return _checked({**base, "wall_ms": t * 1e3, "gflops": g, "pct_peak": 100 * share(g, peak), "peak_gflops": peak,
                     "spread_pct": spread_pct(times), "repeats": len(times), **extra})


def excluded(row: Dict[str, Any]) -> str:
    """Why a row enters no ratio or aggregate ('' when it does): a figure above the ceiling, a wrong result, or a
    measurement dominated by preemption."""
    if row.get("flagged"):
        return "above the ceiling"
    if row.get("wrong"):
        return "wrong result"
    if row.get("unreliable"):
        return "unreliable"
    return ""


def _result_row(base: Dict[str, Any], flops: float, r: Any, peak: Optional[float], result: np.ndarray,
                ref: np.ndarray, **extra: Any) -> Dict[str, Any]:
    err = max_rel_error(result, ref)
    row = _row(base, flops, r.wall_times, peak, max_rel_err=err, times_ms=[t * 1e3 for t in r.wall_times],
               rounds=[int(i) for i in r.rounds],
               **{k: r.noise.get(k, 0) for k in ("preempted", "unreliable", "noise", "runqueue_pct", "steal_pct",
                                                 "others_pct", "rerun")},
               first_call_ms=r.first_use.get("call_s", math.nan) * 1e3, first_use=r.first_use_text,
               built=r.first_use.get("built"),
               disk_hits=r.first_use.get("disk_hits"), **extra)
    if not err <= AGREEMENT_TOLERANCE[base["dtype"]]:
        row["wrong"] = True
        row["noise"] = "; ".join(x for x in (row["noise"], f"WRONG: error {err:.1e}") if x)
    return row


def _shape_cases(a: np.ndarray, b: np.ndarray, ref: np.ndarray, base: Dict[str, Any], devices: Sequence[Device],
                 compare: Sequence[str], peer_targets: Sequence[Any], peaks: Dict[str, Optional[float]],
                 cpu_peak: Optional[float], threads: int, dtype: str,
                 rows: List[Dict[str, Any]]) -> Tuple[List[Case], List[Callable[[Any], Dict[str, Any]]]]:
    """hetnn on every device and every peer on one shape, as cases of one interleaved run, each with the function
    that makes its row from its result; a device without the dtype gets its row in ``rows`` at once."""
    (m, k), n = a.shape, b.shape[1]
    flops = 2.0 * m * n * k
    cases: List[Case] = []
    finish: List[Callable[[Any], Dict[str, Any]]] = []  # per case: its row from its BenchmarkResult
    data = data_dtype(dtype)
    precision = "high" if dtype == "tf32" else None  # None: the precision in force
    for dev in devices:
        if data not in dev.dtypes:
            rows.append({**base, "device": dev.id, "library": "hetnn", "note": f"no {dtype}"})
            continue
        A, B = asarray(a, device=dev), asarray(b, device=dev)
        C = empty((m, n), dtype=data, device=dev)
        cases.append(Case(f"hetnn {dev.id}", lambda A=A, B=B, C=C: matmul(A, B, out=C, precision=precision),  # type: ignore[misc]  # default-argument lambda (late binding)
                          devices=[dev], flops=flops))
        how = compute_mode(dev, dtype)
        finish.append(lambda r, dev=dev, C=C, how=how: _result_row(  # type: ignore[misc]  # default-argument lambda (late binding)
            {**base, "device": dev.id, "library": "hetnn", "compute": how}, flops, r, peaks[dev.id],
            C.numpy(), ref, device_ms=r.device["median"] * 1e3,
            threads=threads if dev.kind == "cpu" else None))
    if "onednn" in compare and dtype == "float32":
        a32, b32 = np.ascontiguousarray(a), np.ascontiguousarray(b)
        c32 = np.full((m, n), np.nan, dtype=np.float32)
        raw = _core._OnednnRawMatmul(a32, b32, c32)
        cases.append(Case("onednn-c++", raw.run, flops=flops))
        finish.append(lambda r, c32=c32: _result_row({**base, "device": "cpu", "library": "onednn-c++"}, flops,  # type: ignore[misc]  # default-argument lambda (late binding)
                                                     r, cpu_peak, c32, ref, threads=threads))
    if "numpy" in compare and dtype in ("float32", "float64", "float16"):
        # float16: NumPy has no BLAS for it and multiplies in element loops, single-threaded (the slow path the
        # published GEMM study shows); its rows say so
        out = np.full((m, n), np.nan, dtype=dtype)
        cases.append(Case("numpy", lambda out=out: np.matmul(a, b, out=out), flops=flops))  # type: ignore[misc]  # default-argument lambda (late binding)
        slow = {"compute": "emulated (no BLAS, slow)", "threads": 1} if dtype == "float16" else \
            {"threads": blas_threads()}
        finish.append(lambda r, out=out, slow=slow: _result_row({**base, "device": "host", "library": "numpy"},  # type: ignore[misc]  # default-argument lambda (late binding)
                                                                flops, r, cpu_peak, out, ref, **slow))
    for pt in peer_targets:
        if dtype not in pt.dtypes:
            continue
        pa, pb = pt.put(a, data), pt.put(b, data)
        res: List[Any] = [pt.empty((m, n), data) if pt.empty is not None else None]

        def call(pa: Any = pa, pb: Any = pb, res: List[Any] = res, pt: Any = pt) -> None:
            if dtype == "tf32":
                pt.tf32(True)
            try:
                if res[0] is not None and pt.matmul_out is not None:
                    pt.matmul_out(pa, pb, res[0])
                else:
                    res[0] = pt.matmul(pa, pb)
            finally:
                if dtype == "tf32":
                    pt.tf32(False)
        cases.append(Case(f"{pt.library} {pt.device}", call, sync=pt.sync, flops=flops))
        peak = cpu_peak if pt.device.startswith("cpu") else None
        notes = ["tf32 on"] if dtype == "tf32" else pt.notes
        finish.append(lambda r, pt=pt, res=res, peak=peak, notes=notes: _result_row(  # type: ignore[misc]  # default-argument lambda (late binding)
            {**base, "device": pt.device, "library": pt.library}, flops, r, peak, pt.get(res[0]), ref,
            note="; ".join(notes), threads=pt.threads()))
    return cases, finish


def _clblast_rows(a: np.ndarray, b: np.ndarray, ref: np.ndarray, base: Dict[str, Any], devices: Sequence[Device],
                  peaks: Dict[str, Optional[float]], cl_params: Any, n_warmup: int,
                  n_repeat: int) -> List[Dict[str, Any]]:
    """CLBlast on each OpenCL device; it times itself in C++, after the interleaved rounds."""
    (m, k), n = a.shape, b.shape[1]
    flops, dtype, rows = 2.0 * m * n * k, "float32", []
    for dev in devices:
        if dev.kind != "opencl":
            continue
        settle()
        A, B = asarray(a, device=dev), asarray(b, device=dev)
        C2 = empty((m, n), dtype=dtype, device=dev)
        t = _core._clblast_sgemm(A._a, B._a, C2._a, min(n_warmup, 1), n_repeat, cl_params)
        rows.append(_row({**base, "device": dev.id, "library": "clblast" + ("-tuned" if cl_params else "")},
                         flops, t, peaks[dev.id], max_rel_err=max_rel_error(C2.numpy(), ref)))
    return rows


def run_matmul(shapes: Sequence[Shape], devices: Sequence[Device], *, dtype: str = "float32",
               compare: Sequence[str] = ("numpy",), n_warmup: int = 3, n_repeat: int = 20,
               max_duration: Optional[float] = 2.0, seed: int = 0, clblast_tuning: Optional[str] = None,
               progress: Optional[Callable[[str], None]] = None,
               notes: Optional[List[str]] = None, processes: int = 1) -> List[Dict[str, Any]]:
    """One row per (shape, device or peer): median time, GFLOP/s, % of the measured peak, error vs float64, and
    the OS's view of the repeats (preempted, unreliable). ``processes``: the repeats spread over that many
    processes run one after another (hetnn._workers), so that an interval covers what a rerun sees; ``n_repeat``
    and ``max_duration`` are over all of them.

    The shapes (as many as fit in memory together: hetnn.bench.grouping), hetnn on every device and every peer, are
    timed in one set of interleaved rounds (:func:`hetnn.interleave`); per shape all sides work on the same operands,
    already on the device, into preallocated outputs wherever the library can write into one (JAX cannot: its
    arrays are immutable, so its rows allocate, as noted). Every result is checked against
    float64; a wrong one is marked and enters no ratio. CLBlast times itself in C++ and runs after the rounds.
    Peers that cannot run here are skipped with a line appended to ``notes``.
    """
    unknown = [c for c in compare if c not in PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {unknown}; available: {', '.join(PEERS)}")
    check_records("run_matmul", "shapes", shapes, ("label", "M", "N", "K"), (1, 1, 1))
    if processes != 1:
        from .._workers import spread_call

        args = dict(shapes=shapes, devices=devices, dtype=dtype, compare=compare, n_warmup=n_warmup,
                    n_repeat=n_repeat, max_duration=max_duration, seed=seed, clblast_tuning=clblast_tuning,
                    progress=progress, notes=notes)
        return spread_call("hetnn.bench.matmul:run_matmul", args, processes)
    rng = np.random.default_rng(seed)
    cl_params = clblast_params(clblast_tuning) if "clblast" in compare else []
    peer_targets, peer_notes = find_peers(compare)
    if notes is not None:
        notes.extend(peer_notes)
        if any(pt.library == "jax" for pt in peer_targets):
            notes.append("jax: allocates its output on every call (immutable arrays); the others write into "
                         "preallocated outputs")
    peaks = {d.id: fp32_peak_gflops(d) for d in devices}
    cpu_peak = fp32_peak_gflops(next(d for d in devices if d.kind == "cpu")) if any(
        d.kind == "cpu" for d in devices) else None
    threads = get_num_threads()
    rows: List[Dict[str, Any]] = []
    # every side's A, B, C; C64
    per_element = np.dtype(data_dtype(dtype)).itemsize * (len(devices) + 2 + len(compare)) + 8
    groups = by_bytes(shapes, lambda sh: (sh[1] * sh[3] + sh[3] * sh[2] + sh[1] * sh[2]) * per_element)
    expect(progress, len(groups) * n_repeat)
    for group in groups:  # one interleaved run each (hetnn.bench.grouping says why)
        cases, finish, after = [], [], []
        for label, m, n, k in group:
            a = rng.uniform(-1, 1, (m, k)).astype(data_dtype(dtype))
            b = rng.uniform(-1, 1, (k, n)).astype(data_dtype(dtype))
            ref = a.astype(np.float64) @ b.astype(np.float64)
            base = {"shape": label, "M": m, "N": n, "K": k, "dtype": dtype}
            cs, fs = _shape_cases(a, b, ref, base, devices, compare, peer_targets, peaks, cpu_peak, threads, dtype,
                                  rows)
            cases += cs
            finish += fs
            after.append((a, b, ref, base))
        label = group[0][0] if len(group) == 1 else f"{len(group)} shapes"
        if cases:
            results = interleave(cases, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration,
                                 on_round=(lambda r, t, label=label: progress(f"{label}: round {r + 1}"))  # type: ignore[misc]
                                 if progress else None)
            rows.extend(f(r) for f, r in zip(finish, results))
        if "clblast" in compare and dtype == "float32" and _core.have_clblast:
            for a, b, ref, base in after:
                rows += _clblast_rows(a, b, ref, base, devices, peaks, cl_params, n_warmup, n_repeat)
    rows.sort(key=lambda r: [sh[0] for sh in shapes].index(r["shape"]))  # the shapes' order, as listed
    if len(shapes) > 1:
        rows.extend(aggregate(rows))
    return rows


def blas_threads() -> Optional[int]:
    """NumPy's BLAS thread count, as threadpoolctl reports it (None without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return counts[0] if counts else None


AGGREGATE_COVERAGE = 0.5  # an aggregate needs the shapes measured cleanly by every side to be at least this share


def aggregate(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per (library, device): total FLOP over total median time across the shapes (the 'aggregate' rows; large
    shapes weigh most), and ``mean_gflops``, the arithmetic mean of the shapes' GFLOP/s (the published GEMM study's
    aggregate; every shape weighs alike), per dtype. An aggregate compares libraries, so it covers only the shapes
    that every library and device measured cleanly (none above the ceiling, wrong or unreliable), and says so
    ("aggregate (17 of 20 shapes)"); with fewer than AGGREGATE_COVERAGE of the shapes left there is none."""
    out = []
    for dtype in dict.fromkeys(r.get("dtype") for r in rows if "wall_ms" in r):
        mine = [r for r in rows if "wall_ms" in r and r.get("dtype") == dtype and
                not str(r.get("shape")).startswith("aggregate")]
        shapes = list(dict.fromkeys(r["shape"] for r in mine))
        sides = list(dict.fromkeys((r["library"], r["device"]) for r in mine))
        clean = {(r["library"], r["device"], r["shape"]) for r in mine if not excluded(r)}
        common = [sh for sh in shapes if all((lib, dev, sh) in clean for lib, dev in sides)]
        if not common or len(common) < AGGREGATE_COVERAGE * len(shapes):
            continue
        cover = f"{len(common)} of {len(shapes)} shapes" if len(common) < len(shapes) else f"{len(common)}"
        for lib, dev in sides:
            rs = [r for r in mine if r["library"] == lib and r["device"] == dev and r["shape"] in common]
            flops = sum(2.0 * r["M"] * r["N"] * r["K"] for r in rs)
            secs = sum(r["wall_ms"] for r in rs) / 1e3
            g = flops / secs / 1e9
            peak = rs[0].get("peak_gflops")
            out.append(_checked({
                "shape": f"aggregate ({cover})", "M": None, "N": None, "K": None, "dtype": dtype, "device": dev,
                "library": lib, "wall_ms": secs * 1e3, "gflops": g, "pct_peak": 100 * share(g, peak),
                "mean_gflops": sum(r["gflops"] for r in rs) / len(rs), "peak_gflops": peak,
                "max_rel_err": max((r.get("max_rel_err", math.nan) for r in rs), default=math.nan),
                "shapes": [r["shape"] for r in rs], "coverage": f"{len(common)}/{len(shapes)}"}))
    return out


def aggregate_note(rows: List[Dict[str, Any]]) -> str:
    """Why a run with several shapes has no aggregate rows ('' when it has them or needs none)."""
    shapes = {r["shape"] for r in rows if "wall_ms" in r and not str(r["shape"]).startswith("aggregate")}
    if len(shapes) < 2 or any(str(r.get("shape")).startswith("aggregate") for r in rows):
        return ""
    return (f"no aggregate: fewer than {AGGREGATE_COVERAGE:.0%} of the {len(shapes)} shapes were measured cleanly "
            f"by every library and device (see the flags)")


def left_out_line(rows: List[Dict[str, Any]], verbose: bool = False) -> List[str]:
    """The rows kept out of ratios and aggregates, in one line (by reason and by library and device); with
    ``verbose``, one line each."""
    bad = [r for r in rows if excluded(r)]
    if not bad:
        return []
    if verbose:
        return [f"left out: {r['library']} {r['device']} {r['shape']} ({r.get('noise') or excluded(r)})"
                for r in bad]
    why: Dict[str, int] = {}
    who: Dict[str, int] = {}
    for r in bad:
        why[excluded(r)] = why.get(excluded(r), 0) + 1
        who[f"{r['library']} {r['device']}"] = who.get(f"{r['library']} {r['device']}", 0) + 1
    return [f"left out: {len(bad)} of {len(rows)} rows ({', '.join(f'{n} {k}' for k, n in why.items())}; "
            f"{', '.join(f'{k} x{n}' for k, n in who.items())}): see the flags column, or --verbose for the list"]


def precision_table(rows: List[Dict[str, Any]], dtypes: Sequence[str]) -> List[Dict[str, Any]]:
    """The precision study: hetnn GFLOP/s per (shape, device) for each dtype, and each dtype's ratio to float32."""
    table: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for r in rows:
        if r["library"] != "hetnn" or "gflops" not in r:
            continue
        row = table.setdefault((r["shape"], r["device"]), {"shape": r["shape"], "device": r["device"]})
        row[r["dtype"]] = r["gflops"]
        if r["dtype"] in ("float16", "bfloat16", "tf32"):
            row[f"{r['dtype']} compute"] = r.get("compute", "")
    for row in table.values():
        for dt in dtypes:
            if dt != "float32" and dt in row and "float32" in row:
                row[f"{dt}/float32"] = row[dt] / row["float32"]
    return list(table.values())


def ratios(rows: List[Dict[str, Any]], verbose: bool = False) -> List[str]:
    """The comparisons the README reports, over the shapes both sides measured reliably: the ratio of aggregate
    throughputs with its 95 % bootstrap interval over the interleaved rounds, e.g. "hetnn cpu / NumPy: 1.23x
    (1.15-1.31, 95% CI)"; an interval containing 1 says that no difference was shown. Rows above the ceiling, with
    a wrong result or dominated by preemption are left out, and the line says how many shapes it covers; with
    fewer than half of the shapes left, it draws no conclusion. The rows left out are summed up in one line
    (``verbose``: listed)."""
    shape_rows = [r for r in rows if "times_ms" in r]
    usable = [r for r in shape_rows if not excluded(r)]

    def times(lib: str, dev_pred: Callable[[str], bool]) -> Dict[str, Dict[str, Any]]:
        return {r["shape"]: r for r in usable if r["library"] == lib and dev_pred(r["device"])}

    is_cpu = lambda d: d == "cpu"  # noqa: E731
    is_cl = lambda d: d.startswith("opencl")  # noqa: E731
    pairs = [("hetnn cpu / oneDNN C++ loop", times("hetnn", is_cpu), times("onednn-c++", is_cpu)),
             ("hetnn cpu / NumPy", times("hetnn", is_cpu), times("numpy", lambda d: d == "host"))]
    cls = sorted({r["device"] for r in usable if r["library"] == "hetnn" and is_cl(r["device"])})
    pairs += [(f"hetnn {cl} / hetnn cpu", times("hetnn", lambda d, cl=cl: d == cl), times("hetnn", is_cpu))  # type: ignore[misc]  # default-argument lambda (late binding)
              for cl in cls]
    peer_libs = [lib for lib in dict.fromkeys(r["library"] for r in usable) if lib in ARRAY_PEERS or
                 lib.startswith(ARRAY_PEERS)]  # numba-parallel as well as numba
    for lib in peer_libs:
        for dev in sorted({r["device"] for r in usable if r["library"] == lib}):
            y = times(lib, lambda d, dev=dev: d == dev)  # type: ignore[misc]  # default-argument lambda (late binding)
            if dev.startswith("cpu"):
                pairs.append((f"hetnn cpu / {lib} {dev}", times("hetnn", is_cpu), y))
            else:
                pairs += [(f"hetnn {cl} / {lib} {dev}", times("hetnn", lambda d, cl=cl: d == cl), y) for cl in cls]  # type: ignore[misc]  # default-argument lambda (late binding)
    out = []
    total = len({r["shape"] for r in shape_rows})
    sides = {(r["library"], r["device"]) for r in shape_rows}
    for name, x, y in pairs:
        common = [sh for sh in x if sh in y]
        if common and 2 * len(common) < total:
            # an aggregate over a minority of the shapes is not the comparison that was asked for
            out.append(f"{name}: only {len(common)} of {total} shapes measured reliably by both: no conclusion "
                       f"from this run")
            continue
        r = ratio_interval([row_pair(x[sh], y[sh]) for sh in common]) if common else None
        if r is not None:
            cover = f" [{len(common)} of {total} shapes]" if len(common) < total else ""
            flags = flags_text([x[sh] for sh in common] + [y[sh] for sh in common])
            out.append(r.text(name) + cover + f"; flags: {flags}")
    for name, libs in (("hetnn cpu / NumPy", (("hetnn", "cpu"), ("numpy", "host"))),):
        if all(s in sides for s in libs) and not any(line.startswith(name + ":") for line in out):
            out.append(f"{name}: no shape measured reliably by both: no conclusion from this run")
    return out + left_out_line(shape_rows, verbose) + ([note] if (note := aggregate_note(rows)) else [])


# "detail": shown with -v (the shape's label names M, N and K; the header, the thread count)
MATMUL_COLUMNS = [("shape", "shape", ""), ("M", "M", "d", "detail"), ("N", "N", "d", "detail"),
                  ("K", "K", "d", "detail"), ("library", "library", ""), ("device", "device", ""),
                  ("wall_ms", "wall ms", ".3f"), ("device_ms", "device ms", ".3f", "detail"),
                  ("gflops", "GFLOP/s", ".1f"), ("mean_gflops", "mean GFLOP/s", ".1f"),
                  ("pct_peak", "% peak", ".0f"), ("max_rel_err", "max rel err", ".1e"), ("spread_pct", "IQR %", ".0f"),
                  ("repeats", "n", "d", "detail"), ("threads", "threads", "", "detail"),
                  ("first_use", "first use", ""), ("noise", "flags", ""), ("note", "note", "")]
