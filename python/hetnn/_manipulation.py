"""The Array API's manipulation, indexing and creation functions that move or make data on the array's device
(hetnn.permute_dims, flip, concat, stack, take, arange, linspace, eye, ...): the core's functions
(cpp/src/core/manipulation.h), which check the axes, shapes and indices. As in NumPy, a selection, a transpose, a
flip, unstack's pieces, expand_dims and squeeze are views of the same memory (no data moved); reshape is a view where
the elements' order allows it; the others make new arrays."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy before 1.25
    from numpy import AxisError  # type: ignore[attr-defined,no-redef]

from ._array import Array, _dtype_name, _first
from ._device import DeviceLike, device as _resolve_device
from ._loader import _core


def _arrays(op: str, arrays: Any) -> List[Any]:
    if not isinstance(arrays, (tuple, list)):
        raise TypeError(f"{op}: arrays must be a tuple or list of hetnn.Arrays, got {type(arrays).__name__}")
    return [_first(op, a)._a for a in arrays]


def reshape(x: Array, /, shape: Sequence[int], *, copy: Optional[bool] = None) -> Array:
    """x with another shape of the same size (one entry may be -1): a view of the same memory where the elements'
    order allows it, else a copy; ``copy=True`` always copies, ``copy=False`` raises ValueError rather than copy."""
    a = _first("reshape", x)
    dims = tuple(shape) if not isinstance(shape, int) else (shape,)
    if copy is False:
        r = a.reshape(dims)
        if not r._a.same_memory(a._a):
            raise ValueError(f"reshape(copy=False): a view of shape {a.shape} with strides {a.strides} cannot be "
                             f"seen as shape {dims} without a copy")
        return r
    return (a.copy() if copy else a).reshape(dims)


def permute_dims(x: Array, /, axes: Tuple[int, ...]) -> Array:
    """x with its axes in the order ``axes`` (a permutation of 0..ndim-1), a view."""
    return Array(_core.permute_dims(_first("permute_dims", x)._a, axes))


def matrix_transpose(x: Array, /) -> Array:
    """x with its last two axes swapped (x.mT), a view."""
    return Array(_core.matrix_transpose(_first("matrix_transpose", x)._a))


def flip(x: Array, /, *, axis: Optional[Union[int, Tuple[int, ...]]] = None) -> Array:
    """x with the order of its elements along ``axis`` (None: every axis) reversed, a view."""
    return Array(_core.flip(_first("flip", x)._a, axis))


def concat(arrays: Union[Tuple[Array, ...], List[Array]], /, *, axis: Optional[int] = 0) -> Array:
    """The arrays joined along ``axis`` (None: each flattened first), promoted to one dtype."""
    return Array(_core.concat(_arrays("concat", arrays), axis))


def stack(arrays: Union[Tuple[Array, ...], List[Array]], /, *, axis: int = 0) -> Array:
    """The arrays (of one shape) joined along a new axis ``axis``."""
    return Array(_core.stack(_arrays("stack", arrays), axis))


def moveaxis(x: Array, source: Union[int, Tuple[int, ...]], destination: Union[int, Tuple[int, ...]], /) -> Array:
    """x with the axes ``source`` moved to the positions ``destination``, the others in their order, a view."""
    return Array(_core.moveaxis(_first("moveaxis", x)._a, source, destination))


def roll(x: Array, /, shift: Union[int, Tuple[int, ...]], *,
         axis: Optional[Union[int, Tuple[int, ...]]] = None) -> Array:
    """x's elements shifted by ``shift`` along ``axis`` (None: over the flattened array), wrapping around."""
    return Array(_core.roll(_first("roll", x)._a, shift, axis))


def tile(x: Array, repetitions: Tuple[int, ...], /) -> Array:
    """x repeated ``repetitions[k]`` times along each axis k (aligned to x's trailing axes)."""
    return Array(_core.tile(_first("tile", x)._a, repetitions))


def repeat(x: Array, repeats: Union[int, Sequence[int], Array], /, *, axis: Optional[int] = None) -> Array:
    """Each element of x repeated ``repeats`` times (one count, or one per element) along ``axis`` (None: x
    flattened)."""
    if isinstance(repeats, Array):  # the counts decide the result's shape: they are read on the host
        repeats = [int(v) for v in repeats.numpy().reshape(-1)]
    return Array(_core.repeat(_first("repeat", x)._a, repeats, axis))


def unstack(x: Array, /, *, axis: int = 0) -> Tuple[Array, ...]:
    """The arrays x holds along ``axis``, as a tuple of views."""
    return tuple(Array(a) for a in _core.unstack(_first("unstack", x)._a, axis))


def meshgrid(*arrays: Array, indexing: str = "xy") -> List[Array]:
    """Coordinate arrays of the grid the 1-D ``arrays`` span ("xy": the first two axes swapped, as NumPy)."""
    return [Array(a) for a in _core.meshgrid(_arrays("meshgrid", list(arrays)), indexing)]


def tril(x: Array, /, *, k: int = 0) -> Array:
    """x (a matrix or a stack of them) with the elements above the k-th diagonal set to zero."""
    return Array(_core.tril(_first("tril", x)._a, k))


def triu(x: Array, /, *, k: int = 0) -> Array:
    """x (a matrix or a stack of them) with the elements below the k-th diagonal set to zero."""
    return Array(_core.triu(_first("triu", x)._a, k))


def expand_dims(x: Array, /, axis: int = 0) -> Array:
    """A view of x with an axis of extent 1 inserted at ``axis``."""
    return Array(_core.expand_dims(_first("expand_dims", x)._a, axis))


def squeeze(x: Array, /, axis: Union[int, Tuple[int, ...]]) -> Array:
    """A view of x without the axes ``axis`` (each of extent 1)."""
    return Array(_core.squeeze(_first("squeeze", x)._a, axis))


def take(x: Array, indices: Array, /, *, axis: Optional[int] = None) -> Array:
    """The elements of x at ``indices`` (a 1-d integer hetnn.Array on x's device; negative counts from the end)
    along ``axis`` (may be omitted for a 1-d x). An index out of bounds is an IndexError."""
    return Array(_core.take(_first("take", x)._a, _first("take: indices", indices)._a, axis))


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot products of x1 and x2 along ``axis`` (the other axes broadcast): sum(x1 * x2, axis=axis), in the
    operands' promoted dtype."""
    a, b = _first("vecdot", x1), _first("vecdot", x2)
    for x in (a, b):
        if not -x.ndim <= axis < x.ndim:
            raise AxisError(f"vecdot: axis {axis} is out of bounds for an array of shape {x.shape}")
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: x1 and x2 must have one extent along axis {axis}, got shapes {a.shape} and "
                         f"{b.shape}")
    prod = a * b
    return prod.sum(axis=axis, dtype=prod.dtype)  # the operands' promoted type (a sum of int8 would give int64)


def arange(start: Union[int, float], /, stop: Optional[Union[int, float]] = None, step: Union[int, float] = 1, *,
           dtype: Any = None, device: DeviceLike = None) -> Array:
    """Values from ``start`` to ``stop`` (exclusive; ``arange(n)`` counts from 0) by ``step`` on ``device``: int64
    when all three are integers, else the device's default real type, unless ``dtype``. Computed on the host in 64
    bits and uploaded."""
    return Array(_core.arange(_resolve_device(device)._dev, start, stop, step, _dtype_name("arange", dtype)))


def linspace(start: Union[int, float], stop: Union[int, float], /, num: int, *, dtype: Any = None,
             device: DeviceLike = None, endpoint: bool = True) -> Array:
    """``num`` values evenly spaced from ``start`` to ``stop`` (included unless ``endpoint`` is False) on
    ``device``, of a floating ``dtype`` (default: the device's default real type). Computed on the host in float64
    as NumPy does and uploaded."""
    return Array(_core.linspace(_resolve_device(device)._dev, start, stop, num, endpoint,
                                _dtype_name("linspace", dtype)))


def eye(n_rows: int, n_cols: Optional[int] = None, /, *, k: int = 0, dtype: Any = None,
        device: DeviceLike = None) -> Array:
    """An ``n_rows`` x ``n_cols`` array on ``device`` with ones on the ``k``-th diagonal (k > 0 above the main one)
    and zeros elsewhere; dtype default: the device's default real type."""
    return Array(_core.eye(_resolve_device(device)._dev, n_rows, n_cols, k, _dtype_name("eye", dtype)))


__all__: List[str] = ["arange", "concat", "expand_dims", "eye", "flip", "linspace", "matrix_transpose", "meshgrid",
                       "moveaxis", "repeat", "roll", "tile", "tril", "triu", "unstack",
                      "permute_dims", "reshape", "squeeze", "stack", "take", "vecdot"]
