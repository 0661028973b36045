"""hetnn.linalg: the Array API's linear-algebra extension, the functions built on hetnn's ops (so every device runs
them): ``matmul``, ``matrix_transpose``, ``vecdot``, ``tensordot``, ``outer``, ``diagonal``, ``trace``,
``vector_norm`` and ``matrix_norm`` (ord "fro", 1, -1, inf, -inf). The factorizations and what needs them
(cholesky, det, eigh, eigvalsh, inv, pinv, qr, slogdet, solve, svd, svdvals, matrix_rank, matrix_power, cross) are
not provided: hetnn has no LAPACK-class kernels; NumPy's run on ``x.numpy()``."""
from __future__ import annotations

import math
import operator
from typing import Any, Tuple, Union

from ._array import Array, _first
from ._loader import _core
from ._manipulation import arange, matrix_transpose, take, vecdot
from ._namespace import __array_namespace_info__
from ._ops import matmul
from ._reduction import max as _max
from ._reduction import min as _min
from ._reduction import sum as _sum

AxisLike = Union[None, int, Tuple[int, ...]]


def tensordot(x1: Array, x2: Array, /, *, axes: Any = 2) -> Array:
    """The sum of the products over paired axes: ``axes`` an int n (x1's last n axes with x2's first n) or a pair of
    sequences of axes; the result has x1's other axes, then x2's. Floating types through matmul, integers exactly
    (wrapping as NumPy's); the same device for both."""
    return Array(_core.tensordot(_first("tensordot", x1)._a, _first("tensordot", x2)._a, axes))


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two 1-d arrays: (len(x1), len(x2))."""
    a, b = _first("outer", x1), _first("outer", x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-d, got shapes {a.shape} and {b.shape}")
    return tensordot(a, b, axes=0)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonal ``offset`` (> 0 above the main one) of x's last two axes, as its last axis (a new array)."""
    a = _first("diagonal", x)
    if a.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions, got shape {a.shape}")
    k = _int("diagonal", "offset", offset)
    m, n = a.shape[-2], a.shape[-1]
    length = max(0, min(m, n - k) if k >= 0 else min(m + k, n))
    start = k if k >= 0 else -k * n
    idx = arange(length, dtype="int64", device=a.device) * (n + 1) + start
    return take(a.reshape(*a.shape[:-2], m * n), idx, axis=a.ndim - 2)


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of the diagonal ``offset`` of x's last two axes (integers give int64 unless ``dtype``)."""
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vector_norm(x: Array, /, *, axis: AxisLike = None, keepdims: bool = False, ord: Union[int, float] = 2) -> Array:
    """The ``ord``-norm of x's elements over ``axis`` (None: all): 2 (Euclidean), 1, inf and -inf (the largest and
    smallest magnitude), 0 (the count of non-zero elements), or any other real p (sum |x|**p)**(1/p). Integer
    input is read in the device's default real type."""
    a = _real("vector_norm", x)
    p = _ord("vector_norm", ord)
    if p == math.inf:
        return _max(abs(a), axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return _min(abs(a), axis=axis, keepdims=keepdims)
    if p == 0:
        return _sum(a != 0, axis=axis, keepdims=keepdims).astype(a.dtype)
    if p == 1:
        return _sum(abs(a), axis=axis, keepdims=keepdims)
    if p == 2:
        return _sum(a * a, axis=axis, keepdims=keepdims) ** 0.5
    return _sum(abs(a) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: Union[int, float, str] = "fro") -> Array:
    """The norm of each matrix of x's last two axes: "fro" (Frobenius), 1 / -1 (the largest / smallest column sum
    of magnitudes), inf / -inf (row sums). ord 2, -2 and "nuc" need the singular values, which hetnn does not
    compute: a ValueError says so."""
    a = _real("matrix_norm", x)
    if a.ndim < 2:
        raise ValueError(f"matrix_norm: x must have at least 2 dimensions, got shape {a.shape}")
    if ord == "fro":
        return _sum(a * a, axis=(-2, -1), keepdims=keepdims) ** 0.5
    if isinstance(ord, str) or ord in (2, -2):
        raise ValueError(f"matrix_norm: ord={ord!r} needs the singular values, which hetnn does not compute (use "
                         f"numpy.linalg.norm on x.numpy()); hetnn takes 'fro', 1, -1, inf and -inf")
    p = _ord("matrix_norm", ord)
    if p not in (1, -1, math.inf, -math.inf):
        raise ValueError(f"matrix_norm: ord must be 'fro', 1, -1, inf or -inf, got {ord!r}")
    along, then = (-2, -1) if abs(p) == 1 else (-1, -2)
    sums = _sum(abs(a), axis=along, keepdims=True)
    out = (_max if p > 0 else _min)(sums, axis=then, keepdims=True)
    return out if keepdims else out.reshape(*a.shape[:-2])


def _real(op: str, x: Any) -> Array:
    a = _first(op, x)
    if a.dtype.kind == "b":
        raise TypeError(f"{op}: x must be numeric, got bool")
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return a
    return a.astype(__array_namespace_info__().default_dtypes(device=a.device)["real floating"])


def _ord(op: str, ord: Any) -> float:
    if isinstance(ord, bool) or not isinstance(ord, (int, float)) and not hasattr(ord, "__float__"):
        raise TypeError(f"{op}: ord must be a real number, got {type(ord).__name__}")
    p = float(ord)
    if math.isnan(p):
        raise ValueError(f"{op}: ord must not be NaN")
    return p


def _int(op: str, name: str, v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{op}: {name} must be an int, got bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__}") from None


__all__ = ["diagonal", "matmul", "matrix_norm", "matrix_transpose", "outer", "tensordot", "trace", "vecdot",
           "vector_norm"]
