"""The Array API's sorting functions (hetnn.sort, hetnn.argsort) and searchsorted on the array's device: the core's
sort and searchsorted (cpp/src/core/sort.h), which check the arguments; every sort is stable and NaN is the largest
value."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ._array import Array, _first
from ._loader import _core


def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """A sorted copy of ``x`` along ``axis``: ascending (NaN last) or ``descending`` (NaN first); equal values keep
    their order (every sort here is stable)."""
    return Array(_core.sort(_first("sort", x)._a, axis, descending, stable))


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The int64 positions along ``axis`` that sort ``x`` as :func:`sort` does."""
    return Array(_core.argsort(_first("argsort", x)._a, axis, descending, stable))


def searchsorted(x1: Array, x2: Array, /, *, side: str = "left", sorter: Optional[Array] = None) -> Array:
    """Where each element of ``x2`` would go in the 1-D ascending ``x1`` (NaN last) to keep it sorted: ``side``
    "left" before equal elements, "right" after them; ``sorter``: int64 positions that sort ``x1`` (argsort's).
    int64, ``x2``'s shape; ``x1`` and ``x2`` of one dtype on one device."""
    a, b = _first("searchsorted", x1), _first("searchsorted", x2)
    if sorter is not None and not isinstance(sorter, Array):
        raise TypeError(f"searchsorted: sorter must be None or a hetnn.Array, got {type(sorter).__name__}")
    return Array(_core.searchsorted(a._a, b._a, side, None if sorter is None else sorter._a))


def nonzero(x: Array, /) -> Tuple[Array, ...]:
    """The int64 coordinates of ``x``'s non-zero elements (NaN counts, -0.0 does not), one array per dimension, in
    row-major order; ``x`` needs at least one dimension."""
    return tuple(Array(a) for a in _core.nonzero(_first("nonzero", x)._a))


__all__: List[str] = ["argsort", "nonzero", "searchsorted", "sort"]
