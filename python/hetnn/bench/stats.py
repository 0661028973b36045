"""Ratios between libraries or devices with a confidence interval, from interleaved rounds.

:func:`hetnn._timing.interleave` times every case once per round, so round ``i`` of two cases ran side by side
under the same machine state. A ratio of medians is bootstrapped over rounds (the same resampled rounds for both
sides, which keeps what they shared), shape by shape for an aggregate over several shapes. The interval says how
far the ratio moved with the rounds measured; one that contains 1 shows no difference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

Pair = Tuple[Sequence[float], Sequence[float]]  # (times of x, times of y) of one shape, per round


@dataclass
class Ratio:
    value: float   # how many times faster x is than y: sum of y's medians / sum of x's medians
    low: float
    high: float
    level: float

    @property
    def shows_difference(self) -> bool:
        return not (self.low <= 1.0 <= self.high)

    def text(self, name: str) -> str:
        s = f"{name}: {self.value:.2f}x ({self.low:.2f}-{self.high:.2f}, {self.level:.0%} CI)"
        return s if self.shows_difference else s + ": no difference shown"


def paired(x: Sequence[float], y: Sequence[float], x_rounds: Optional[Sequence[int]] = None,
           y_rounds: Optional[Sequence[int]] = None) -> Pair:
    """The times of x and y from the rounds both were timed in, in round order: by round index where both sides
    say which round each repeat ran in (preempted repeats re-run in later rounds leave gaps), else the common
    prefix (rounds 0, 1, 2, ... of both)."""
    if x_rounds is None or y_rounds is None or len(x_rounds) != len(x) or len(y_rounds) != len(y):
        n = min(len(x), len(y))
        return list(x[:n]), list(y[:n])
    at = {int(r): t for r, t in zip(y_rounds, y)}
    common = [(t, at[int(r)]) for r, t in zip(x_rounds, x) if int(r) in at]
    return [a for a, _ in common], [b for _, b in common]


def row_pair(x: Dict[str, Any], y: Dict[str, Any], key: str = "times_ms") -> Pair:
    """:func:`paired` for two benchmark rows (their ``key`` times and ``rounds``)."""
    return paired(x[key], y[key], x.get("rounds"), y.get("rounds"))


def _medians(times: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.median(times[idx], axis=-1)


def ratio_interval(pairs: Sequence[Pair], *, level: float = 0.95, n_boot: int = 2000,
                   seed: int = 0) -> Optional[Ratio]:
    """Speed ratio of x over y across shapes (total time of y's medians over total of x's, i.e. the ratio of
    aggregate throughputs) and its bootstrap percentile interval. Per shape, rounds are resampled with
    replacement and the same indices taken from x and y (paired: both ran in that round); where the two sides
    have different numbers of rounds, the common prefix is used. None when a shape has no timed round."""
    if not 0 < level < 1:
        raise ValueError(f"ratio_interval: level must be in (0, 1), got {level}")
    arrays: List[Tuple[np.ndarray, np.ndarray]] = []
    for x, y in pairs:
        n = min(len(x), len(y))
        if n == 0:
            return None
        arrays.append((np.asarray(x[:n], dtype=np.float64), np.asarray(y[:n], dtype=np.float64)))
    if not arrays:
        return None
    value = sum(float(np.median(y)) for _, y in arrays) / sum(float(np.median(x)) for x, _ in arrays)
    rng = np.random.default_rng(seed)
    num = np.zeros(n_boot)
    den = np.zeros(n_boot)
    for xs, ys in arrays:
        idx = rng.integers(0, len(xs), size=(n_boot, len(xs)))
        num += _medians(ys, idx)
        den += _medians(xs, idx)
    boots = num / den
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    if math.isnan(lo) or math.isnan(hi):
        return None
    return Ratio(value, float(min(lo, value)), float(max(hi, value)), level)
