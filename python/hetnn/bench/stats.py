"""Ratios between libraries or devices with a confidence interval, from interleaved rounds.

:func:`hetnn._timing.interleave` times every case once per round, so round ``i`` of two cases ran side by side
under the same machine state. A ratio of medians is bootstrapped over rounds (the same resampled rounds for both
sides, which keeps what they shared), shape by shape for an aggregate over several shapes. Repeats from several
processes (``--processes``) give an interval over the processes, so that it holds what moves from run to run:
Student's t over the processes' ratios for fewer than ten processes, else a bootstrap in two stages, processes first
(the same for every shape: a process's state reaches all of them) and rounds within each. The interval says how far
the ratio moved with the rounds measured; one that contains 1 shows no difference.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .._workers import process_of



class Pair(tuple):
    """(times of x, times of y) of one shape, per common round, and ``processes``: the process each round ran in
    when the repeats come from several (hetnn._workers; None: one process)."""
    processes: Optional[List[int]]

    def __new__(cls, x: Sequence[float], y: Sequence[float], processes: Optional[List[int]] = None) -> "Pair":
        self = super().__new__(cls, (x, y))
        self.processes = processes
        return self


@dataclass
class Ratio:
    value: float   # how many times faster x is than y: sum of y's medians / sum of x's medians
    low: float
    high: float
    level: float

    @property
    def shows_difference(self) -> bool:
        return not (self.low <= 1.0 <= self.high)

    def text(self, name: str, flags: Optional[str] = None) -> str:
        """``name: 1.23x (1.10-1.35, 95% CI)``, with ``: no difference shown`` when the interval holds 1 and, given
        ``flags`` (:func:`flags_text` of the rows it rests on), ``; flags: ...``."""
        s = f"{name}: {self.value:.2f}x ({self.low:.2f}-{self.high:.2f}, {self.level:.0%} CI)"
        s = s if self.shows_difference else s + ": no difference shown"
        return s if flags is None else f"{s}; flags: {flags}"


def flags_text(rows: Sequence[Dict[str, Any]]) -> str:
    """The flags of the rows a figure rests on, in a few words: 'none' when every row is clean, else each row's
    flags (two rows), or how many rows carry which (more)."""
    from .._table import row_flags

    notes = [row_flags(r) for r in rows]
    hit = [n for n in notes if n]
    if not hit:
        return "none"
    if len(rows) <= 2:
        return " | ".join(hit)
    kinds: Dict[str, int] = {}
    for n in hit:
        kind = "unreliable" if n.startswith("unreliable") else n.split(" ")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return f"{len(hit)} of {len(rows)} rows flagged (" + ", ".join(f"{k} {v}" for k, v in kinds.items()) + ")"


def no_interval(name: str, value: float, why: str, flags: Optional[str] = None) -> str:
    """A ratio that has no interval, saying why (one repeat each, not interleaved)."""
    s = f"{name}: {value:.2f}x (no interval: {why})"
    return s if flags is None else f"{s}; flags: {flags}"


def _timed(v: Any) -> Tuple[List[float], Optional[List[int]], Dict[str, Any]]:
    """(times, rounds, the row's flag fields) of a BenchmarkResult or a benchmark row."""
    if isinstance(v, dict):
        times = v.get("times_ms") or v.get("times_s") or []
        return list(times), v.get("rounds"), v
    flags = dict(getattr(v, "noise", {}) or {})
    return list(v.wall_times), [int(i) for i in v.rounds], flags


def ratio(name: str, x: Any, y: Any, level: float = 0.95) -> str:
    """How many times faster ``x`` ran than ``y``, in one line with its interval and both sides' flags: each a
    :class:`hetnn.BenchmarkResult` (from :func:`hetnn.interleave`, whose rounds pair the two) or a row of a
    benchmark report (with ``times_ms``/``times_s``). An unreliable or wrong side is not compared; one repeat
    each gives the ratio of the two times and says it has no interval."""
    (tx, rx, fx), (ty, ry, fy) = _timed(x), _timed(y)
    flags = flags_text([fx, fy])
    bad = [f for f in (fx, fy) if f.get("unreliable") or f.get("wrong") or f.get("flagged")]
    if bad:
        return f"{name}: not compared; flags: {flags}"
    if not tx or not ty:
        return f"{name}: not compared (no timed repeats); flags: {flags}"
    if min(len(tx), len(ty)) < 2:
        return no_interval(name, float(np.median(ty)) / float(np.median(tx)), "one repeat", flags)
    pair = paired(tx, ty, rx, ry)
    if len(pair[0]) == 1:  # timed in one common round only (the others' repeats fell in different rounds)
        return no_interval(name, pair[1][0] / pair[0][0], "one paired repeat", flags)
    r = ratio_interval([pair], level=level)
    if r is None:
        return f"{name}: not compared (no common rounds); flags: {flags}"
    return r.text(name, flags)


def paired(x: Sequence[float], y: Sequence[float], x_rounds: Optional[Sequence[int]] = None,
           y_rounds: Optional[Sequence[int]] = None) -> Pair:
    """The times of x and y from the rounds both were timed in, in round order: by round index where both sides
    say which round each repeat ran in (preempted repeats re-run in later rounds leave gaps), else the common
    prefix (rounds 0, 1, 2, ... of both)."""
    if x_rounds is None or y_rounds is None or len(x_rounds) != len(x) or len(y_rounds) != len(y):
        n = min(len(x), len(y))
        return Pair(list(x[:n]), list(y[:n]))
    at = {int(r): t for r, t in zip(y_rounds, y)}
    common = [(t, at[int(r)], int(r)) for r, t in zip(x_rounds, x) if int(r) in at]
    procs = [int(p) for p in process_of([r for _, _, r in common])]
    return Pair([a for a, _, _ in common], [b for _, b, _ in common], procs if len(set(procs)) > 1 else None)


def row_pair(x: Dict[str, Any], y: Dict[str, Any], key: str = "times_ms") -> Pair:
    """:func:`paired` for two benchmark rows (their ``key`` times and ``rounds``)."""
    return paired(x[key], y[key], x.get("rounds"), y.get("rounds"))


def _medians(times: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.median(times[idx], axis=-1)


SMALL_N = 10  # below this many paired repeats of one comparison, a t interval instead of the bootstrap
# two-sided Student t quantiles by degrees of freedom (1-9), for the levels a small-sample interval is given at
T_975 = {0.95: (0.0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)}


def _over_few_processes(arrays: List[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]], value: float,
                        level: float) -> Optional[Ratio]:
    """Repeats from 2 to SMALL_N - 1 processes: Student's t interval over the processes' log ratios (each process's
    aggregate over every shape: its medians' totals), from the processes that timed every shape; None otherwise.
    Resampling three processes gives a handful of distinct replicates: where the processes' state moved the ratio
    more than the rounds did, the two-stage bootstrap of 3 processes x 4 rounds covered a simulated true ratio in
    86 % of draws and two runs' intervals excluded each other in 4 % (scripts/interval_agreement.py); the t
    interval covers it in 95 %."""
    if level not in T_975 or any(ps is None for _, _, ps in arrays):
        return None
    every = sorted({int(p) for _, _, ps in arrays if ps is not None for p in ps})
    full = [p for p in every if all(bool(np.any(ps == p)) for _, _, ps in arrays)]
    if not 2 <= len(every) < SMALL_N or len(full) < 2:
        return None
    d = []
    for p in full:
        num = sum(float(np.median(y[ps == p])) for _, y, ps in arrays)
        den = sum(float(np.median(x[ps == p])) for x, _, ps in arrays)
        if not (num > 0 and den > 0):
            return None
        d.append(math.log(num / den))
    return _t_interval(np.array(d), value, level)


def _t_interval(d: np.ndarray, value: float, level: float) -> Ratio:
    """Student's t interval of the mean of the log ratios ``d`` (2 to SMALL_N values), as a ratio around ``value``."""
    n = len(d)
    half = T_975[level][n - 1] * float(np.std(d, ddof=1)) / math.sqrt(n)
    lo, hi = math.exp(float(np.mean(d)) - half), math.exp(float(np.mean(d)) + half)
    return Ratio(value, min(lo, value), max(hi, value), level)


def ratio_interval(pairs: Sequence[Union[Pair, Tuple[Sequence[float], Sequence[float]]]], *, level: float = 0.95,
                   n_boot: int = 2000, seed: int = 0) -> Optional[Ratio]:
    """Speed ratio of x over y across shapes (total time of y's medians over total of x's, i.e. the ratio of
    aggregate throughputs) and its bootstrap percentile interval. Per shape, rounds are resampled with
    replacement and the same indices taken from x and y (paired: both ran in that round); where the two sides
    have different numbers of rounds, the common prefix is used. None when a shape has no timed round. One
    comparison of fewer than SMALL_N paired repeats gets Student's t interval of the per-round log ratios instead
    (three epochs: the bootstrap covered the true ratio in 75 % of simulated draws, the t interval in 94.5 %);
    repeats from 2 to SMALL_N - 1 processes, t over the processes (:func:`_over_few_processes`), however many
    rounds each has; one comparison of one paired repeat, None."""
    if not 0 < level < 1:
        raise ValueError(f"ratio_interval: level must be in (0, 1), got {level}")
    arrays: List[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = []
    for pair in pairs:
        x, y = pair[0], pair[1]
        n = min(len(x), len(y))
        if n == 0:
            return None
        procs = getattr(pair, "processes", None)
        arrays.append((np.asarray(x[:n], dtype=np.float64), np.asarray(y[:n], dtype=np.float64),
                       np.asarray(procs[:n], dtype=np.int64) if procs is not None and len(procs) >= n else None))
    if not arrays:
        return None
    value = sum(float(np.median(y)) for _, y, _ in arrays) / sum(float(np.median(x)) for x, _, _ in arrays)
    if len(arrays) == 1 and len(arrays[0][0]) < 2:
        return None  # one paired repeat: a ratio, but nothing to give an interval from
    few = _over_few_processes(arrays, value, level)
    if few is not None:
        return few
    if len(arrays) == 1 and len(arrays[0][0]) < SMALL_N and level in T_975 and \
            bool(np.all(arrays[0][0] > 0)) and bool(np.all(arrays[0][1] > 0)):
        # a few paired repeats of one process (three epochs, five calls): resampling them gives a handful of
        # distinct medians and an interval far too narrow (three-epoch intervals of the same command excluded each
        # other run after run); Student's t over the per-round log ratios is what so few repeats support
        return _t_interval(np.log(arrays[0][1] / arrays[0][0]), value, level)
    rng = np.random.default_rng(seed)
    num = np.zeros(n_boot)
    den = np.zeros(n_boot)
    every = sorted({int(p) for _, _, ps in arrays if ps is not None for p in ps})
    chosen = rng.choice(np.array(every), size=(n_boot, len(every))) if every else None  # processes, per replicate
    for xs, ys, ps in arrays:
        if ps is None or chosen is None:
            idx = rng.integers(0, len(xs), size=(n_boot, len(xs)))
            num += _medians(ys, idx)
            den += _medians(xs, idx)
            continue
        # two stages: the chosen processes, then as many rounds from each as the largest holds, with replacement
        order = np.argsort(ps, kind="stable")
        xs, ys, ps = xs[order], ys[order], ps[order]
        start = {p: int(np.searchsorted(ps, p)) for p in every}
        size = {p: int(np.searchsorted(ps, p, side="right")) - start[p] for p in every}
        m = max(size.values())
        starts = np.vectorize(start.get)(chosen)
        sizes = np.vectorize(size.get)(chosen)
        draw = rng.integers(0, 1 << 30, size=(n_boot, len(every), m))
        idx = starts[:, :, None] + draw % np.maximum(sizes, 1)[:, :, None]
        missing = np.broadcast_to((sizes == 0)[:, :, None], idx.shape)  # a process without this shape's repeats
        idx = np.minimum(idx, len(xs) - 1)  # a missing process after this shape's last one starts past its end
        xv = np.where(missing, np.nan, xs[idx]).reshape(n_boot, -1)
        yv = np.where(missing, np.nan, ys[idx]).reshape(n_boot, -1)
        with warnings.catch_warnings():  # a replicate of processes none of which timed this shape: NaN, left out
            warnings.simplefilter("ignore", RuntimeWarning)
            num += np.nanmedian(yv, axis=1)
            den += np.nanmedian(xv, axis=1)
    boots = num / den
    boots = boots[np.isfinite(boots)]
    if boots.size < n_boot // 2:
        return None
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    if math.isnan(lo) or math.isnan(hi):
        return None
    return Ratio(value, float(min(lo, value)), float(max(hi, value)), level)
