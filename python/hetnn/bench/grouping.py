"""Which cases of a suite are timed in one interleaved run: as many consecutive ones as fit in memory together.

One run for all of them spreads each case's rounds over the whole run. The machine drifts over seconds (a
neighbour's load, the clock), so repeats taken in one stretch of a run give an interval for that stretch only: timed
shape by shape, 13 of 120 pairs of the same ResNet-50 shape's hetnn/NumPy intervals from four runs excluded each
other; with the 20 shapes in one run, 1 of 120 (docs/results/cpp-kernels.md).
"""
from __future__ import annotations

from typing import Callable, List, Sequence, TypeVar

T = TypeVar("T")

GROUP_BYTES = 1 << 30  # the operands of one interleaved run stay below this together (a user's shapes may be large)


def by_bytes(items: Sequence[T], size_of: Callable[[T], int], limit: int = GROUP_BYTES) -> List[List[T]]:
    """``items`` in runs of consecutive ones whose ``size_of`` sum stays within ``limit`` (one above it alone)."""
    groups: List[List[T]] = []
    total = 0
    for it in items:
        b = int(size_of(it))
        if not groups or total + b > limit:
            groups.append([])
            total = 0
        groups[-1].append(it)
        total += b
    return groups
