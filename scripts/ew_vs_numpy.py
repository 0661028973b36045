"""Every element-wise op of the core's table on the CPU device against NumPy's on the same arrays, slowest first:
the median of a few calls each (hetnn's result a new array, as NumPy's), float32 and int32 inputs of 4 Mi
elements (in (0.1, 0.9) for floats: every function's domain). A survey to find the ops far from NumPy's speed;
`--ops tanh,log,...` times those ops instead in interleaved rounds (hetnn.interleave), each with the 95 % interval of
hetnn's speed over NumPy's and the rounds' noise flags; `--calls K`, K calls in a row a turn (a loop's steady state);
`--device D` another hetnn device for them (e.g. opencl:0:0).
Run: .venv/bin/python scripts/ew_vs_numpy.py [--elements N] [--all]
     .venv/bin/python scripts/ew_vs_numpy.py --ops OP,OP,... [--calls K] [--dtype float64|int32] [--device D]"""
from __future__ import annotations

import argparse
import time
import warnings
from typing import Callable, List, Tuple

import numpy as np

import hetnn
from hetnn import Case, _core, interleave
from hetnn.bench.stats import paired, ratio_interval

NUMPY_NAME = {"pow": "power", "bitwise_invert": "invert", "atan": "arctan", "asin": "arcsin", "acos": "arccos",
              "atanh": "arctanh", "asinh": "arcsinh", "acosh": "arccosh", "atan2": "arctan2",
              "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}


def _median_s(fn: Callable[[], object], calls: int = 5) -> float:
    fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[calls // 2]


def _inputs(dtype: str, n: int) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if dtype.startswith("float"):
        xn, yn = rng.uniform(0.1, 0.9, n).astype(dtype), rng.uniform(0.1, 0.9, n).astype(dtype)
    else:
        xn, yn = rng.integers(1, 100, n).astype(dtype), rng.integers(1, 7, n).astype(dtype)
    return xn, yn


def survey(dtype: str, n: int) -> List[Tuple[float, str, float, float]]:
    xn, yn = _inputs(dtype, n)
    cpu = hetnn.device("cpu")
    x, y = hetnn.asarray(xn, device=cpu), hetnn.asarray(yn, device=cpu)
    rows = []
    for op, arity, kind in sorted(_core.elementwise_ops()):
        npf = getattr(np, NUMPY_NAME.get(op, op), None)
        if kind == "cast" or npf is None or (dtype.startswith("float") and
                                             (kind == "bitwise" or op.startswith("bitwise"))):
            continue
        f = getattr(hetnn, op)
        try:
            mine = _median_s(lambda: f(x) if arity == 1 else f(x, y))
            theirs = _median_s(lambda: npf(xn) if arity == 1 else npf(xn, yn))
        except (TypeError, ValueError):  # an op this dtype does not take
            continue
        rows.append((theirs / mine, op, mine * 1e3, theirs * 1e3))
    return sorted(rows)


def interleaved(dtype: str, n: int, ops: List[str], calls: int = 1, device: str = "cpu") -> None:
    """Each op's hetnn call and NumPy's in interleaved rounds: hetnn's speed over NumPy's with its interval. With
    ``calls`` > 1 each timed turn is that many calls in a row (times per call): the steady state of a loop, where
    data left in the last-level cache by the previous call is hot again (a single call after the other side's turn
    and interleave's settling found part of it gone: NumPy's tanh 2.9 ms against 1.5 in a loop of 8)."""
    xn, yn = _inputs(dtype, n)
    dev = hetnn.device(device)
    arity = {op: a for op, a, _ in _core.elementwise_ops()}
    print(f"{dtype}, {n} elements, interleaved, {calls} call(s) a turn: op, hetnn {dev.id} ms, NumPy ms (a call), "
          "hetnn's speed / NumPy's (95 % CI), flags")
    for op in ops:
        if op not in arity:
            raise SystemExit(f"ew_vs_numpy: --ops: unknown op {op!r}")
        f, npf = getattr(hetnn, op), getattr(np, NUMPY_NAME.get(op, op))
        xo = xn + 1 if op == "acosh" else xn  # (1.1, 1.9): in its domain too
        x, y = hetnn.asarray(xo, device=dev), hetnn.asarray(yn, device=dev)
        two = arity[op] == 2
        def mine_fn() -> None:
            for _ in range(calls):
                f(x, y) if two else f(x)

        def ref_fn() -> None:
            for _ in range(calls):
                npf(xo, yn) if two else npf(xo)

        mine, ref = interleave([Case(f"hetnn {op}", mine_fn, devices=[dev]), Case(f"numpy {op}", ref_fn)],
                               n_warmup=2, n_repeat=15, max_duration=4 * calls)
        ci = ratio_interval([paired(list(mine.wall_times), list(ref.wall_times), list(mine.rounds), list(ref.rounds))])
        speed = "no interval" if ci is None else f"{ci.value:.2f}x ({ci.low:.2f}-{ci.high:.2f})"
        flags = ", ".join(str(v) for v in (mine.flags.get("noise"), ref.flags.get("noise")) if v) or "none"
        print(f"  {op:12s} {np.median(mine.wall_times) / calls * 1e3:8.2f} "
              f"{np.median(ref.wall_times) / calls * 1e3:8.2f}  {speed}; "
              f"flags: {flags}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--elements", type=int, default=4 << 20)
    p.add_argument("--all", action="store_true", help="every op, not the ten slowest")
    p.add_argument("--ops", help="comma-separated ops timed in interleaved rounds with intervals")
    p.add_argument("--calls", type=int, default=1, help="with --ops: calls in a row per timed turn (default 1)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64", "int32"),
                   help="with --ops: the inputs' dtype")
    p.add_argument("--device", default="cpu", help="with --ops: the hetnn device (default cpu)")
    args = p.parse_args()
    warnings.simplefilter("ignore")  # NumPy's domain warnings for the integer inputs of real functions
    if args.ops:
        if args.calls < 1:
            raise SystemExit(f"ew_vs_numpy: --calls takes an integer >= 1, got {args.calls}")
        interleaved(args.dtype, args.elements, [o.strip() for o in args.ops.split(",") if o.strip()], args.calls,
                    args.device)
        return
    for dtype in ("float32", "int32"):
        rows = survey(dtype, args.elements)
        print(f"{dtype}, {args.elements} elements: op, hetnn cpu ms, NumPy ms, hetnn's speed / NumPy's")
        for speed, op, mine, theirs in rows if args.all else rows[:10]:
            print(f"  {op:20s} {mine:9.2f} {theirs:9.2f} {speed:7.2f}x")


if __name__ == "__main__":
    main()
