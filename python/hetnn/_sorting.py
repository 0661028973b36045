"""The Array API's sorting functions (hetnn.sort, hetnn.argsort) on the array's device: the core's sort
(cpp/src/core/sort.h), which checks the axis; every sort is stable and NaN is the largest value."""
from __future__ import annotations

from typing import List

from ._array import Array, _first
from ._loader import _core


def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """A sorted copy of ``x`` along ``axis``: ascending (NaN last) or ``descending`` (NaN first); equal values keep
    their order (every sort here is stable)."""
    return Array(_core.sort(_first("sort", x)._a, axis, descending, stable))


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The int64 positions along ``axis`` that sort ``x`` as :func:`sort` does."""
    return Array(_core.argsort(_first("argsort", x)._a, axis, descending, stable))


__all__: List[str] = ["argsort", "sort"]
