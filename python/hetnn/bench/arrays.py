"""Arrays benchmark: element-wise ops and reductions on hetnn Arrays (every device) against NumPy, interleaved.

Two sizes answer two questions. A large array (beyond the host's last-level cache: 64 MiB per operand, more where
that cache is large, :func:`large_bytes`; the transposed add keeps 64 MiB) asks whether the op streams at the
device's memory bandwidth: GB/s counts each operand's bytes once (read or written) over the device's time, and
"% mem peak" sets it against the device's memory ceiling: for host-resident devices and NumPy a STREAM-style kernel
of the op's access pattern (triad: two arrays read, one written; copy: one and one; read: one read) over arrays of
the same size, timed as one more case of the same interleaved rounds (a ceiling measured minutes apart moves by a
fifth on a shared VM, and each pattern has its own: on a 2-vCPU VM a read-only stream reaches less than the
triad's reads and writes together); else the device's stored ceiling (`bench peak`).
A small one (1 KiB) asks what a call costs: CALLS_SMALL calls in a row timed
as one repeat (synchronised at its end), per call, against NumPy's: the per-call overhead. hetnn's operands live on
the device and element-wise results go into a preallocated output (``out=``), as NumPy's do; reductions return a new
(small) array on both sides. Each result is checked against NumPy in float64."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._device import Device
from .._timing import Case, interleave
from .peak import check_ceiling, host_cache_size, mem_peak_gbps, on_host, stream_gbps
from .progress import expect
from .stats import ratio, ratio_interval, row_pair

ARRAYS_COLUMNS = [
    ("op", "op", ""), ("size", "size", ""), ("library", "library", ""), ("device", "device", ""),
    ("us", "us/call", ".1f"), ("gbps", "GB/s", ".2f"), ("pct_peak", "% mem peak", ".0f"),
    ("max_rel_err", "rel err", ".1e"), ("noise", "flags", ""), ("iqr_pct", "IQR %", ".0f", "detail"),
]

# name -> (operands, bytes moved per element of x: inputs read + outputs written, the STREAM-style kernel of the
# same access pattern that is its ceiling)
# ("saxpy kernel": z = 2 x + y as a user ElementwiseKernel, against NumPy's two passes into one output;
# "add transposed": x.mT + y, x read through a transposed view by its strides, as NumPy reads x.T)
OPS: Dict[str, Tuple[int, int, str]] = {"add": (2, 3, "triad"), "exp": (1, 2, "copy"), "sum": (1, 1, "read"),
                                        "sum axis 0": (1, 1, "read"), "saxpy kernel": (2, 3, "triad"),
                                        "add transposed": (2, 3, "triad")}
ELEMENTWISE = ("add", "exp", "saxpy kernel", "add transposed")
STREAM = "stream"  # the library name of the ceilings' rows ("stream triad", ...)
STREAM_MOVED = {"triad": 3, "copy": 2, "read": 1}  # bytes per element, as STREAM counts them
SMALL_BYTES = 1 << 10
LARGE_BYTES = 64 << 20  # the large arrays' size where the last-level cache is at most 3/4 of it


def large_bytes(cache_bytes: Optional[int] = None) -> int:
    """Bytes per operand of the large arrays: LARGE_BYTES, or where the host's last-level cache (``cache_bytes``;
    by default the CPU device's figure) is larger than 3/4 of that, the power of two at or above 3/4 of the cache.
    A VM may see a large share of a server's cache: on one reporting 260 MiB, a 64 MiB sum read 57 GB/s, 128 MiB
    46 and 256 MiB 32 (the memory's rate; interleaved with the other libraries' rounds), and an add took 3.2 ms in
    a loop but 5.4-5.9 ms for its first calls after another library's turn, so the 64 MiB rows measured the cache
    as much as the memory."""
    if cache_bytes is None:
        cache_bytes = host_cache_size()
    need = 3 * max(0, int(cache_bytes)) // 4
    size = LARGE_BYTES
    while size < need:
        size *= 2
    return size
CALLS_SMALL = 200


def _repeat(fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
    if calls == 1:
        return fn

    def loop() -> Any:
        for _ in range(calls):
            r = fn()
        return r
    return loop


def _human(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def _shape(op: str, n: int) -> Tuple[int, ...]:
    if op == "add transposed":  # a square-ish matrix: x (r, c), y and the result (c, r)
        k = max(n.bit_length() - 1, 0) // 2
        return (n >> k, 1 << k)
    return (n // 1024, 1024) if op == "sum axis 0" and n >= 1024 else (n,)


def _other_shape(op: str, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """The shape of y and of the result."""
    return shape[::-1] if op == "add transposed" else shape


def _numpy_fn(op: str, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> Callable[[], Any]:
    if op == "add":
        return lambda: np.add(a, b, out=out)
    if op == "add transposed":
        return lambda: np.add(a.T, b, out=out)
    if op == "exp":
        return lambda: np.exp(a, out=out)
    if op == "sum":
        return lambda: a.sum()
    if op == "saxpy kernel":
        return lambda: np.add(np.multiply(a, np.float32(2), out=out), b, out=out)
    return lambda: a.sum(axis=0)


_SAXPY: List[Any] = []


def _hetnn_fn(op: str, A: Any, B: Any, C: Any) -> Callable[[], Any]:
    from .._elementwise import add, exp
    from .._reduction import sum as hsum
    from .._user_kernels import ElementwiseKernel

    if op == "saxpy kernel":
        if not _SAXPY:
            _SAXPY.append(ElementwiseKernel("T x, T y", "T z", "z = 2 * x + y", "bench_saxpy"))
        k = _SAXPY[0]
        return lambda: k(A, B, C)
    if op == "add":
        return lambda: add(A, B, out=C)
    if op == "add transposed":
        return lambda: add(A.mT, B, out=C)
    if op == "exp":
        return lambda: exp(A, out=C)
    if op == "sum":
        return lambda: hsum(A)
    return lambda: hsum(A, axis=0)


CHUNK = 1 << 20  # elements a reference is computed over at a time: float64 copies of 256 MiB arrays cost seconds


def _uniform(rng: np.random.Generator, shape: Tuple[int, ...]) -> np.ndarray:
    """float32 values in [-1, 1), drawn as float32 (a float64 draw and a cast take 4x as long at 256 MiB)."""
    x = rng.random(shape, dtype=np.float32)
    x *= 2
    x -= 1
    return x


def _blocks(shape: Tuple[int, ...]) -> List[slice]:
    """Slices of the leading axis, about CHUNK elements each."""
    per = max(1, CHUNK // max(1, int(np.prod(shape[1:]))))
    return [slice(i, min(i + per, shape[0])) for i in range(0, shape[0], per)] if shape[0] else []


def _elementwise_err(got: np.ndarray, ref: Callable[[slice], np.ndarray]) -> float:
    """max |got - ref| over the largest |ref|, ``ref(rows)`` the float64 reference of a block of got's rows."""
    diff = scale = 0.0
    for rows in _blocks(got.shape):
        r = ref(rows)
        diff = max(diff, float(np.max(np.abs(got[rows].astype(np.float64) - r))))
        scale = max(scale, float(np.max(np.abs(r))))
    return diff / scale if scale else 0.0


def _sum_err(got: Any, a: np.ndarray, axis: Optional[int]) -> float:
    """A sum against float64 over the largest sum of magnitudes (the cancellation in a sum is not the kernel's
    error), both summed a block of rows at a time."""
    ref = mags = 0.0
    for rows in _blocks(a.shape):
        blk = a[rows].astype(np.float64)
        ref = ref + blk.sum(axis=axis)
        mags = mags + np.abs(blk).sum(axis=axis)
    got = np.asarray(got, dtype=np.float64)
    scale = float(np.max(mags)) if np.size(mags) else 0.0
    return float(np.max(np.abs(got - ref))) / scale if scale else 0.0


def _rel_err(op: str, got: Any, a: np.ndarray, b: np.ndarray) -> float:
    """The result of ``op`` on (a, b) against float64."""
    if op.startswith("sum"):
        return _sum_err(got, a, None if op == "sum" or a.ndim == 1 else 0)
    got = np.asarray(got)
    f64 = np.float64
    refs: Dict[str, Callable[[slice], np.ndarray]] = {
        "add": lambda r: a[r].astype(f64) + b[r], "exp": lambda r: np.exp(a[r].astype(f64)),
        "saxpy kernel": lambda r: 2 * a[r].astype(f64) + b[r],
        "add transposed": lambda r: a[:, r].T.astype(f64) + b[r]}
    return _elementwise_err(got, refs[op])


def _result(op: str, fn: Callable[[], Any], out: Any) -> Any:
    r = fn()
    got = out if op in ELEMENTWISE else r
    return got.numpy() if hasattr(got, "numpy") else got


def _stream_case(kind: str, n: int, rng: np.random.Generator, calls: int) -> Tuple[Case, float]:
    """The host's memory ceiling for one access pattern as a timed case over fresh float32 arrays of n elements,
    and its error against float64."""
    import hetnn

    from .._loader import _core

    # in the CPU device's memory (NumPy views of it), as hetnn's operands: its large blocks ask for huge pages,
    # which a 64 MiB stream gains from (fewer TLB misses), so the ceiling has what the ops have
    cpu = hetnn.device("cpu")
    held = [hetnn.asarray(_uniform(rng, (n,)), device=cpu) for _ in range(3)]
    ta, tb, tc = (np.asarray(h) for h in held)
    got = _core._stream_kernel(kind, ta, tb, tc, 3.0)
    if kind == "read":
        err = _sum_err(got, tb, None)
    else:
        err = _elementwise_err(ta, lambda r: tb[r] + 3.0 * tc[r].astype(np.float64) if kind == "triad"
                               else tb[r].astype(np.float64))
    def run() -> float:
        assert held  # the arrays' memory lives as long as the case
        return _core._stream_kernel(kind, ta, tb, tc, 3.0)
    return Case(f"{STREAM} {kind}", _repeat(run, calls), nbytes=STREAM_MOVED[kind] * ta.nbytes * calls), err


def run_arrays(devices: Sequence[Device], *, ops: Sequence[str] = tuple(OPS),
               sizes: Optional[Sequence[int]] = None, n_warmup: int = 3, n_repeat: int = 20,
               max_duration: Optional[float] = 1.0, seed: int = 0,
               progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """One row per (op, size, device or NumPy): median time per call, GB/s and % of the memory ceiling (arrays
    beyond the caches), the error against float64. ``sizes``: bytes per operand, by default SMALL_BYTES and
    :func:`large_bytes`. Every (op, size) is one interleaved run of all its rows; for
    arrays beyond the caches one more row, the host's STREAM-style kernel of the op's access pattern (library
    "stream triad", "stream copy" or "stream read"), is the ceiling of the host-resident rows of that run."""
    import hetnn

    unknown = [o for o in ops if o not in OPS]
    if unknown:
        raise ValueError(f"run_arrays: unknown op(s) {unknown}; available: {', '.join(OPS)}")
    if sizes is None:
        sizes = (SMALL_BYTES, large_bytes())
    rng = np.random.default_rng(seed)
    ceilings = {d.id: mem_peak_gbps(d) for d in devices}
    host_ids = {d.id for d in devices if on_host(d)}
    # a figure is flagged as above the ceiling only beyond the best host triad known too: under load the same-run
    # kernel reads low now and then (both sides are medians of noisy rounds), and the flag is for timing errors
    host_best = max([stream_gbps(), *(ceilings[i] or 0.0 for i in host_ids)])
    rows: List[Dict[str, Any]] = []
    expect(progress, len(ops) * len(sizes))
    for size_asked in sizes:
        for op in ops:
            # the transposed add reads one operand a row apart whatever the size (a tenth of the triad's rate,
            # NumPy's 0.6 s a call at 256 MiB): it keeps LARGE_BYTES, where its rounds fit a row's time budget
            nbytes = min(size_asked, LARGE_BYTES) if op == "add transposed" else size_asked
            n = max(1, nbytes // 4)
            if progress:
                progress(f"{op} {_human(nbytes)}")
            shape = _shape(op, n)
            a, b = _uniform(rng, shape), _uniform(rng, _other_shape(op, shape))
            out = np.empty_like(b)
            moved, kind = OPS[op][1] * a.nbytes, OPS[op][2]
            ref_name, ref_moved = f"{STREAM} {kind}", STREAM_MOVED[kind] * a.nbytes
            # a small array's call is timed as a loop of `calls` (its time per call): one call alone is shorter
            # than the timer's own synchronisation around it
            calls = CALLS_SMALL if a.nbytes < (1 << 20) else 1
            cases, sides = [], []
            for d in devices:
                A, B = hetnn.asarray(a, device=d), hetnn.asarray(b, device=d)
                C = hetnn.empty(b.shape, "float32", device=d)
                fn = _hetnn_fn(op, A, B, C)
                try:
                    err = _rel_err(op, _result(op, fn, C), a, b)
                except hetnn.CompileError as exc:  # a user kernel where no C compiler is found: left out, saying so
                    warnings.warn(f"bench arrays: {op} on {d.id} left out: {str(exc).splitlines()[0]}", stacklevel=2)
                    continue
                cases.append(Case(f"hetnn {d.id}", _repeat(fn, calls), devices=[d], nbytes=moved * calls))
                sides.append(("hetnn", d.id, err, ceilings.get(d.id)))
            fn = _numpy_fn(op, a, b, out)
            cases.append(Case("numpy", _repeat(fn, calls), nbytes=moved * calls))
            sides.append(("numpy", "host", _rel_err(op, _result(op, fn, out), a, b), None))
            beyond = nbytes >= LARGE_BYTES // 4
            if beyond:
                case, err = _stream_case(kind, a.size, rng, calls)
                cases.append(case)
                sides.append((ref_name, "host", err, None))
            results = interleave(cases, n_warmup=n_warmup, n_repeat=n_repeat, max_duration=max_duration)
            stream = stream_best = None
            if beyond:  # this run's ceiling for the host-resident rows (by its wall time, as NumPy's)
                r_t = results[-1]
                stream = ref_moved / (r_t.median / calls) / 1e9 if r_t.median > 0 else None
                if r_t.flags.get("unreliable") and kind == "triad":
                    stream = max(stream or 0.0, stream_gbps()) or None
                # its best round is a triad measured too: beside intermittent load (a CI run's other worker) the
                # median and every triad before and after read low while the op had quieter rounds
                fastest = float(np.min(r_t.wall_times)) if len(r_t.wall_times) else 0.0
                stream_best = ref_moved / (fastest / calls) / 1e9 if fastest > 0 else None
            group: List[Dict[str, Any]] = []
            for (library, device, err, ceiling), r in zip(sides, results):
                same_run = beyond and (library != "hetnn" or device in host_ids)
                if same_run:
                    ceiling = stream
                moved_row = moved if library != ref_name else ref_moved
                dev_t = r.device["median"]
                # the device's own time of its commands where it has one (the bandwidth), else the wall time
                t = (dev_t if library == "hetnn" and dev_t == dev_t and dev_t > 0 else r.median) / calls
                row: Dict[str, Any] = {
                    "op": op, "size": _human(nbytes), "bytes": a.nbytes, "library": library, "device": device,
                    "us": r.median / calls * 1e6, "calls": calls,
                    "gbps": moved_row / t / 1e9 if t > 0 else float("nan"),
                    "max_rel_err": err, "times_s": [float(v) for v in r.wall_times],
                    "rounds": [int(i) for i in r.rounds], "iqr_pct": r.spread_pct, **r.flags}
                if not err <= 1e-4:  # float32 against float64: a wrong result enters no ratio
                    row["wrong"] = True
                row["moved"] = moved_row
                if same_run and library != ref_name:
                    row["ceiling_of"] = ref_name  # this run's row of the op's access pattern
                row["pct_peak"] = 100 * row["gbps"] / ceiling if beyond and ceiling else float("nan")
                if beyond and library != ref_name:
                    if same_run:
                        check_ceiling(row, "gbps", max(ceiling or 0.0, stream_best or 0.0, host_best), "memory ceiling",
                                      host_memory=True)
                    else:
                        check_ceiling(row, "gbps", ceiling, "memory ceiling", "pct_peak")
                group.append(row)
            rows.extend(group)
    return rows


def ceiling_share(row: Dict[str, Any], ref: Dict[str, Any]) -> str:
    """The row's GB/s over the same run's STREAM-style kernel's (both by wall time, paired by round), with its
    interval."""
    pair = row_pair(row, ref, "times_s")
    scale = row["moved"] / ref["moved"]
    r = ratio_interval([(pair[0], [t * scale for t in pair[1]])])
    what = f"this run's {ref['library']}"
    if r is None:
        return f"{row['gbps']:.1f} GB/s = {row['pct_peak'] / 100:.2f}x the memory ceiling ({what})"
    return (f"{row['gbps']:.1f} GB/s = {r.value:.2f}x the memory ceiling ({r.low:.2f}-{r.high:.2f}, "
            f"{r.level:.0%} CI, against {what})")


def summary(rows: List[Dict[str, Any]]) -> List[str]:
    """Per op and size: each device's speed over NumPy's (interleaved, with its interval); for the large arrays the
    share of the memory ceiling reached."""
    out = []
    keys = dict.fromkeys((r["op"], r["size"]) for r in rows)
    for op, size in keys:
        sel = [r for r in rows if r["op"] == op and r["size"] == size]
        npy = next((r for r in sel if r["library"] == "numpy"), None)
        ref = next((r for r in sel if r["library"].startswith(STREAM + " ")), None)
        for r in sel:
            if r is ref or (r is npy and not r["pct_peak"] == r["pct_peak"]):
                continue
            name = f"hetnn {r['device']}" if r["library"] == "hetnn" else "NumPy"
            line = ratio(f"{op} {size}: hetnn {r['device']} / NumPy (speed)", r, npy) \
                if npy and r is not npy else f"{op} {size}: {name}"
            if r["pct_peak"] == r["pct_peak"]:
                if ref is not None and r.get("ceiling_of") == ref["library"]:
                    line += f"; {ceiling_share(r, ref)}"
                else:
                    line += f"; {r['gbps']:.1f} GB/s = {r['pct_peak'] / 100:.2f}x the memory ceiling"
            out.append(line)
    return out


__all__ = ["ARRAYS_COLUMNS", "OPS", "large_bytes", "run_arrays", "summary"]
