"""The Array API's sorting functions (hetnn.sort, hetnn.argsort) and searchsorted on the array's device: the core's
sort and searchsorted (cpp/src/core/sort.h), which check the arguments; every sort is stable and NaN is the largest
value."""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Tuple

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


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique(op: str, x: Array, indices: bool, inverse: bool, counts: bool) -> Tuple[Any, ...]:
    return tuple(None if a is None else Array(a)
                 for a in _core.unique(_first(op, x)._a, indices, inverse, counts))


def unique_all(x: Array, /) -> UniqueAllResult:
    """x's distinct values ascending (each NaN distinct; -0.0 and 0.0 one value), the flat index of each one's first
    occurrence, each element's position in ``values`` (x's shape) and how often each occurs (int64)."""
    v, i, inv, c = _unique("unique_all", x, True, True, True)
    return UniqueAllResult(v, i, inv, c)


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """x's distinct values ascending and how often each occurs (int64)."""
    v, _, _, c = _unique("unique_counts", x, False, False, True)
    return UniqueCountsResult(v, c)


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """x's distinct values ascending and each element's position in them (int64, x's shape)."""
    v, _, inv, _ = _unique("unique_inverse", x, False, True, False)
    return UniqueInverseResult(v, inv)


def unique_values(x: Array, /) -> Array:
    """x's distinct values ascending (1-D; each NaN distinct)."""
    return _unique("unique_values", x, False, False, False)[0]


__all__: List[str] = ["argsort", "nonzero", "searchsorted", "sort", "unique_all", "unique_counts", "unique_inverse",
                      "unique_values"]
