"""The Array API's reductions and statistics (hetnn.sum, hetnn.mean, hetnn.argmax, ...) on the array's device: the
core's reduce, mean, var, std and cumulative_sum (cpp/src/core/reduction.h), which check the axes and apply the
type rules. The Array methods of the same names (hetnn._array) are the one path; NumPy's np.sum(a), np.mean(a),
... call them."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from ._array import Array, _dtype_name, _first
from ._loader import _core

AxisLike = Optional[Union[int, Sequence[int]]]


def sum(x: Array, /, *, axis: AxisLike = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """The sum over ``axis`` (None: all); integers and bool give int64 unless ``dtype`` says otherwise."""
    if type(x) is Array:  # the common call: the method checks the rest (_first's call was a third of a small sum)
        return x.sum(axis, dtype, None, keepdims)
    return _first("sum", x).sum(axis=axis, dtype=dtype, keepdims=keepdims)


def prod(x: Array, /, *, axis: AxisLike = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """The product over ``axis`` (None: all); integers and bool give int64 unless ``dtype`` says otherwise."""
    return _first("prod", x).prod(axis=axis, dtype=dtype, keepdims=keepdims)


def max(x: Array, /, *, axis: AxisLike = None, keepdims: bool = False) -> Array:
    """The maximum over ``axis`` (NaN wins); a zero-size reduction is a ValueError."""
    return _first("max", x).max(axis=axis, keepdims=keepdims)


def min(x: Array, /, *, axis: AxisLike = None, keepdims: bool = False) -> Array:
    """The minimum over ``axis`` (NaN wins); a zero-size reduction is a ValueError."""
    return _first("min", x).min(axis=axis, keepdims=keepdims)


def argmax(x: Array, /, *, axis: Optional[int] = None, keepdims: bool = False) -> Array:
    """The index (int64) of the first maximum along ``axis``; None: a flat index into x."""
    return _first("argmax", x).argmax(axis=axis, keepdims=keepdims)


def argmin(x: Array, /, *, axis: Optional[int] = None, keepdims: bool = False) -> Array:
    """The index (int64) of the first minimum along ``axis``; None: a flat index into x."""
    return _first("argmin", x).argmin(axis=axis, keepdims=keepdims)


def all(x: Array, /, *, axis: AxisLike = None, keepdims: bool = False) -> Array:
    """Whether every element over ``axis`` is non-zero (bool)."""
    return _first("all", x).all(axis=axis, keepdims=keepdims)


def any(x: Array, /, *, axis: AxisLike = None, keepdims: bool = False) -> Array:
    """Whether some element over ``axis`` is non-zero (bool)."""
    return _first("any", x).any(axis=axis, keepdims=keepdims)


def mean(x: Array, /, *, axis: AxisLike = None, keepdims: bool = False) -> Array:
    """The mean over ``axis``; integers and bool give the device's default real type (float64 where it has it)."""
    return _first("mean", x).mean(axis=axis, keepdims=keepdims)


def var(x: Array, /, *, axis: AxisLike = None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """The variance over ``axis`` (two passes: the mean, then the squared deviations); ``correction`` 1 gives the
    sample variance."""
    return _first("var", x).var(axis=axis, keepdims=keepdims, correction=correction)


def std(x: Array, /, *, axis: AxisLike = None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """The standard deviation over ``axis`` (the square root of :func:`var`)."""
    return _first("std", x).std(axis=axis, keepdims=keepdims, correction=correction)


def cumulative_sum(x: Array, /, *, axis: Optional[int] = None, dtype: Any = None,
                   include_initial: bool = False) -> Array:
    """The running sum along ``axis`` (needed for arrays of two or more dimensions); ``include_initial``: a leading
    zero. Result types as :func:`sum`'s."""
    a = _first("cumulative_sum", x)
    return Array(_core.cumulative_sum(a._a, axis, _dtype_name("cumulative_sum", dtype), include_initial))


def cumulative_prod(x: Array, /, *, axis: Optional[int] = None, dtype: Any = None,
                    include_initial: bool = False) -> Array:
    """The running product along ``axis`` (needed for arrays of two or more dimensions); ``include_initial``: a
    leading one. Result types as :func:`prod`'s."""
    a = _first("cumulative_prod", x)
    return Array(_core.cumulative_prod(a._a, axis, _dtype_name("cumulative_prod", dtype), include_initial))


__all__: List[str] = ["all", "any", "argmax", "argmin", "cumulative_prod", "cumulative_sum", "max", "mean", "min",
                      "prod", "std", "sum", "var"]
