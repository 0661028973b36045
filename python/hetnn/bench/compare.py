"""``hetnn.bench.compare``: one op, run on hetnn and on every importable peer library in this process, timed the
same way (operands already on the device, synchronised around each repeat, after warm-up, interleaved in rounds)
and checked against a float64 NumPy reference and against hetnn's own result."""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _cpus
from .._array import _foreign_to_host, asarray, empty
from .._device import device as _resolve_device
from .._ops import matmul
from .._ops import max_pool2d
from .._measurement import spread_pct
from .._timing import Case, interleave
from .peak import check_ceiling, fp32_peak_gflops, share
from .matmul import AGREEMENT_TOLERANCE, max_rel_error
from .peers import ARRAY_PEERS, find_peers
from .stats import flags_text, ratio_interval, row_pair
from .report import environment, format_table
from .result import Report
from .._check import is_int

COMPARE_PEERS = ("numpy",) + ARRAY_PEERS


def _int(v: Any, name: str) -> int:
    if not is_int(v):
        raise TypeError(f"compare('max_pool2d'): {name} must be an int (square windows), got {type(v).__name__}")
    return int(v)


def _matmul_case(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    if len(args) != 2 or kwargs:
        raise TypeError("compare('matmul', a, b): two matrices and no options, got "
                        f"{len(args)} positional and {sorted(kwargs)} keyword argument(s)")
    a, b = (np.asarray(_foreign_to_host(x)) for x in args)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"compare('matmul'): expected a (M, K) and b (K, N), got {a.shape} and {b.shape}")
    if a.dtype != b.dtype or a.dtype.name not in ("float32", "float64", "float16", "bfloat16"):
        raise TypeError(f"compare('matmul'): a and b must share a float dtype, got {a.dtype} and {b.dtype}")
    m, k = a.shape
    n = b.shape[1]
    return {"operands": (a, b), "dtype": a.dtype.name, "flops": 2.0 * m * n * k, "shape": f"{m}x{k} @ {k}x{n}",
            "reference": a.astype(np.float64) @ b.astype(np.float64)}


def _pool_case(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    from .maxpool import numpy_max_pool

    names = ("kernel_size", "stride", "padding")
    if not 2 <= len(args) <= 4 or set(kwargs) - set(names):
        raise TypeError("compare('max_pool2d', x, kernel_size, stride=None, padding=0): got "
                        f"{len(args)} positional and {sorted(kwargs)} keyword argument(s)")
    params = dict(zip(names, args[1:]), **kwargs)
    x = np.asarray(_foreign_to_host(args[0]))
    if x.ndim != 4:
        raise ValueError(f"compare('max_pool2d'): x must be 4-D (N, C, H, W), got shape {x.shape}")
    if x.dtype.name not in ("float32", "float64"):
        raise TypeError(f"compare('max_pool2d'): x must be float32 or float64, got {x.dtype}")
    k = _int(params["kernel_size"], "kernel_size")
    s = k if params.get("stride") is None else _int(params["stride"], "stride")
    p = _int(params.get("padding", 0), "padding")
    if k < 1 or s < 1 or p < 0 or p > k // 2 or min(x.shape[2:]) + 2 * p < k:
        raise ValueError(f"compare('max_pool2d'): kernel_size {k}, stride {s}, padding {p} do not fit x of shape "
                         f"{x.shape} (kernel >= 1, stride >= 1, 0 <= padding <= kernel // 2)")
    return {"operands": (x,), "window": (k, s, p), "dtype": x.dtype.name, "shape": "x".join(map(str, x.shape)),
            "reference": numpy_max_pool(x.astype(np.float64), k, s, p), "flops": None}


_CASES: Dict[str, Callable[[Tuple[Any, ...], Dict[str, Any]], Dict[str, Any]]] = {
    "matmul": _matmul_case, "max_pool2d": _pool_case}


def _hetnn_case(op: str, case: Dict[str, Any], dev: Any, flops: Optional[float]) -> Tuple[Case, Dict[str, Any]]:
    dtype = case["dtype"]
    if op == "matmul":
        A, B = (asarray(x, device=dev) for x in case["operands"])
        C = empty((A.shape[0], B.shape[1]), dtype=dtype, device=dev)
        return (Case("hetnn", lambda: matmul(A, B, out=C), devices=[dev], flops=flops),
                {"library": "hetnn", "device": dev.id, "peak": fp32_peak_gflops(dev) if flops else None,
                 "result": lambda: C.numpy()})
    k, s, p = case["window"]
    X = asarray(case["operands"][0], device=dev)
    box: List[Any] = [None]

    def pool() -> None:
        box[0] = max_pool2d(X, k, s, p)
    return (Case("hetnn", pool, devices=[dev]),
            {"library": "hetnn", "device": dev.id, "peak": None, "result": lambda: box[0].numpy()})


def _numpy_case(op: str, case: Dict[str, Any], flops: Optional[float],
                host_peak: Optional[float]) -> Tuple[Case, Dict[str, Any]]:
    if op == "matmul":
        a, b = case["operands"]
        out = np.full((a.shape[0], b.shape[1]), np.nan, dtype=case["dtype"])
        return (Case("numpy", lambda: np.matmul(a, b, out=out), flops=flops),
                {"library": "numpy", "device": "host", "peak": host_peak, "result": lambda: out})
    from .maxpool import numpy_max_pool

    x, (k, s, p) = case["operands"][0], case["window"]
    box: List[Any] = [None]

    def pool() -> None:
        box[0] = numpy_max_pool(x, k, s, p)
    return Case("numpy", pool), {"library": "numpy", "device": "host", "peak": host_peak, "result": lambda: box[0]}


def _peer_case(op: str, case: Dict[str, Any], pt: Any, flops: Optional[float],
               host_peak: Optional[float]) -> Tuple[Case, Dict[str, Any]]:
    """One array library on one of its devices (hetnn.bench.peers), inputs put there once."""
    ops = [pt.put(x, case["dtype"]) for x in case["operands"]]
    box: List[Any] = [None]
    if op == "matmul" and pt.empty is not None and pt.matmul_out is not None:
        box[0] = pt.empty((case["operands"][0].shape[0], case["operands"][1].shape[1]), case["dtype"])

        def call() -> None:
            pt.matmul_out(ops[0], ops[1], box[0])
    elif op == "matmul":
        def call() -> None:
            box[0] = pt.matmul(ops[0], ops[1])
    else:
        k, s, p = case["window"]

        def call() -> None:
            box[0] = pt.max_pool2d(ops[0], k, s, p, 1, False)
    return (Case(f"{pt.library} {pt.device}", call, sync=pt.sync, flops=flops),
            {"library": pt.library, "device": pt.device, "result": lambda: pt.get(box[0]),
             "peak": host_peak if pt.device.startswith("cpu") else None, "note": "; ".join(pt.notes),
             "threads": pt.threads()})


def _row(base: Dict[str, Any], e: Dict[str, Any], r: Any, flops: Optional[float], dtype: str, mine: np.ndarray,
         ref: np.ndarray) -> Dict[str, Any]:
    times = r.wall_times
    t = float(np.median(times))
    result = np.asarray(e["result"](), dtype=np.float64)
    row = {**base, "library": e["library"], "device": e["device"], "median_ms": t * 1e3,
           "min_ms": float(np.min(times)) * 1e3, "spread_pct": spread_pct(times), "repeats": len(times),
           "times_ms": [x * 1e3 for x in times], "rounds": [int(i) for i in r.rounds], **r.flags,
           **({"note": e["note"]} if e.get("note") else {}),
           **({"threads": e["threads"]} if e.get("threads") is not None else {})}
    if e["library"] == "hetnn":
        row["device_ms"] = r.device["median"] * 1e3
    if flops:
        row["gflops"] = flops / t / 1e9
        row["pct_peak"] = 100 * share(row["gflops"], e["peak"])
        if dtype in ("float32", "float64"):
            check_ceiling(row, "gflops", e["peak"], "FP32 FMA ceiling", "pct_peak")
    # hetnn's own row has nothing to differ from: its agreement is the error against float64
    row["max_rel_diff"] = max_rel_error(result, mine) if e["library"] != "hetnn" else math.nan
    row["max_rel_err"] = max_rel_error(result, ref)
    return row


def _ratio_lines(rows: List[Dict[str, Any]], dev: Any, dtype: str) -> List[str]:
    """Each peer's speed ratio to hetnn with its bootstrap interval; wrong or unreliable rows are not compared."""
    lines = []
    own = rows[0]
    for row in rows[1:]:
        name = f"hetnn {dev.id} / {row['library']} {row['device']}"
        bad = [x for x in (own, row) if not x["max_rel_err"] <= AGREEMENT_TOLERANCE.get(dtype, 0.0)]
        if bad:  # a wrong result is not a speed
            lines.append(f"{name}: not compared (wrong result: {bad[0]['library']} error "
                         f"{bad[0]['max_rel_err']:.1e} against float64)")
            continue
        if own.get("unreliable") or row.get("unreliable") or own.get("flagged") or row.get("flagged"):
            lines.append(f"{name}: not compared ({row.get('noise') or own.get('noise') or 'above the ceiling'})")
            continue
        ratio = ratio_interval([row_pair(own, row)])
        if ratio is not None:
            lines.append(ratio.text(name, flags_text([own, row])))
    return lines


_COLUMNS = [("library", "library", ""), ("device", "device", ""), ("median_ms", "median ms", ".4f"),
            ("min_ms", "min ms", ".4f"), ("spread_pct", "IQR %", ".0f")]
_FLOP_COLUMNS = [("gflops", "GFLOP/s", ".1f"), ("pct_peak", "% peak", ".0f")]
_CHECK_COLUMNS = [("max_rel_diff", "max rel diff vs hetnn", ".1e"), ("max_rel_err", "max rel err vs f64", ".1e"),
                  ("repeats", "n", "d"), ("noise", "flags", ""), ("note", "note", "")]


def compare(op: str, *args: Any, against: Sequence[str] = ("numpy", "cupy", "torch"), device: Any = None,
            n_warmup: int = 3, n_repeat: int = 20, max_duration: float = 1.0, threads: Any = "auto",
            **kwargs: Any) -> Report:
    """Runs ``op`` ("matmul": ``compare("matmul", a, b)``; "max_pool2d": ``compare("max_pool2d", x, kernel_size,
    stride=None, padding=0)``) on hetnn's ``device`` (default device if None) and on each library of ``against``
    that is importable (numpy, torch, cupy, jax; each on every device it sees), with the same host inputs (NumPy, or
    arrays of those libraries).

    ``threads``: "auto" (the CPUs found free now, every library alike, pinned; see :func:`hetnn.bench.free_cpus`),
    a count, or "default" (each library's own).
    All libraries are timed in interleaved rounds (:func:`hetnn.interleave`); ``.text`` ends with each peer's
    speed ratio to hetnn and its 95 % bootstrap interval over the rounds (unreliable rows are not compared).
    Returns a :class:`Report` whose rows hold per library and device: ``median_ms`` (synchronised wall time,
    operands already on the device, outputs preallocated where the library allows), ``times_ms``, ``noise``,
    ``gflops`` and ``pct_peak`` for matmul, ``max_rel_diff`` (max |result - hetnn's result| / max |hetnn's result|)
    and ``max_rel_err`` (against float64 NumPy). Peers that cannot run here are skipped with a note in ``.text``.
    """
    if not isinstance(op, str) or op not in _CASES:
        raise ValueError(f"hetnn.bench.compare: op must be one of {sorted(_CASES)}, got {op!r}")
    if isinstance(against, str):
        against = [a.strip() for a in against.split(",") if a.strip()]
    unknown = [a for a in against if a not in COMPARE_PEERS]
    if unknown:
        raise ValueError(f"hetnn.bench.compare: against: unknown peer(s) {unknown}; available: "
                         f"{', '.join(COMPARE_PEERS)}")
    case = _CASES[op](args, kwargs)
    dev = _resolve_device(device)
    dtype, flops = case["dtype"], case["flops"]
    if dtype not in dev.dtypes:
        raise TypeError(f"hetnn.bench.compare: device {dev.id} has no {dtype} (it takes {', '.join(dev.dtypes)})")
    host_peak = fp32_peak_gflops(_resolve_device("cpu")) if flops else None
    # Every library is one case of one interleaved run (rounds A B C / C B A): a drift of the machine reaches all
    # of them alike, and each ratio to hetnn gets a bootstrap interval over the rounds.
    pairs = [_hetnn_case(op, case, dev, flops)]
    if "numpy" in against and dtype in ("float32", "float64"):
        pairs.append(_numpy_case(op, case, flops, host_peak))
    targets, notes = find_peers([a for a in against if a in ARRAY_PEERS])
    for pt in targets:
        if dtype not in pt.dtypes:
            notes.append(f"{pt.library} {pt.device}: no {dtype}")
        elif op == "max_pool2d" and pt.max_pool2d is None:
            notes.append(f"{pt.library}: no max_pool2d in the peer adapter")
        else:
            pairs.append(_peer_case(op, case, pt, flops, host_peak))
    if threads == "default":
        plan = None
    elif threads == "auto" or (is_int(threads) and not isinstance(threads, bool) and int(threads) >= 1):
        plan = _cpus.plan(fixed=None if threads == "auto" else int(threads))
    else:
        raise ValueError(f"hetnn.bench.compare: threads must be 'auto', 'default' or a count >= 1, got {threads!r}")
    with _cpus.use(plan) if plan is not None else contextlib.nullcontext():
        results = interleave([c for c, _ in pairs], n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration)
    mine = pairs[0][1]["result"]().astype(np.float64)
    base = {"op": op, "shape": case["shape"], "dtype": dtype}
    rows = [_row(base, e, r, flops, dtype, mine, case["reference"]) for (_, e), r in zip(pairs, results)]
    text = [f"{op} {case['shape']} {dtype}: hetnn on {dev.id} ({dev.name}) against {', '.join(against) or 'nothing'}"]
    if plan is not None:
        text.append(plan.header())
        spin = _cpus.spin_note(plan.threads)
        if spin:
            text.append(spin)
    text += [f"note: {n}" for n in dict.fromkeys(notes)]
    text.append(format_table(rows, _COLUMNS + (_FLOP_COLUMNS if flops else []) + _CHECK_COLUMNS))
    text += ["  " + line for line in _ratio_lines(rows, dev, dtype)]
    return Report(f"compare:{op}", [{"suite": "compare", **r} for r in rows], "\n".join(text), environment())
