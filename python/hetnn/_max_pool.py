"""2-D max pooling with PyTorch's semantics (``torch.nn.functional.max_pool2d`` and its backward).

Same placement rule as matmul: hetnn Arrays in -> runs on their device -> Arrays out; NumPy in -> runs on
``device`` (else the default device) -> NumPy out (on the CPU device in place, without copies).
"""
from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from ._array import Array, _host_array, _host_empty, _numpy_view
from ._device import DeviceLike, device as _resolve_device
from ._loader import _core

IntOrPair = Union[int, Tuple[int, int]]


def _pair(value: Any, name: str, op: str) -> Tuple[int, int]:
    """An int or a pair of ints -> (h, w). Range checks happen in the core (one place for every device)."""
    def one(v: Any) -> int:
        if isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {v!r}")
        try:
            i = operator.index(v)
        except TypeError:
            raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {type(v).__name__} ({v!r})") from None
        if not -2**31 <= i < 2**31:  # the core takes C ints: beyond them the binding would print its signatures
            raise ValueError(f"{op}: {name} {i} is out of range (|value| < 2**31)")
        return i

    if isinstance(value, (tuple, list)):
        if len(value) == 1:  # PyTorch accepts a 1-element sequence as "both"
            v = one(value[0])
            return v, v
        if len(value) != 2:
            raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {len(value)} values {tuple(value)}")
        return one(value[0]), one(value[1])
    v = one(value)
    return v, v


def _bool(value: Any, name: str, op: str) -> bool:
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{op}: {name} must be a bool, got {type(value).__name__} ({value!r})")


def _window(op: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any):
    if kernel_size is None:
        raise TypeError(f"{op}: kernel_size is required (an int or a pair of ints)")
    k = _pair(kernel_size, "kernel_size", op)
    # PyTorch: stride None (or an empty sequence) means stride = kernel_size.
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _pair(stride, "stride", op)
    return k, s, _pair(padding, "padding", op), _pair(dilation, "dilation", op), _bool(ceil_mode, "ceil_mode", op)


def _as4d(shape: Tuple[int, ...], op: str, what: str) -> Tuple[int, ...]:
    if len(shape) == 4:
        return shape
    if len(shape) == 3:
        return (1,) + tuple(shape)
    raise ValueError(f"{op}: {what} must be 4-D (N, C, H, W) or 3-D (C, H, W), got shape {tuple(shape)}")


def _require_3d(g_shape: Sequence[int], i_shape: Sequence[int], op: str) -> None:
    if len(g_shape) != 3 or len(i_shape) != 3:
        raise ValueError(f"{op}: input_shape is 3-D (C, H, W), so grad_output and indices must be 3-D too; got "
                         f"shapes {tuple(g_shape)} and {tuple(i_shape)}")


def max_pool2d(x: Any, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None, padding: IntOrPair = 0,
               dilation: IntOrPair = 1, ceil_mode: bool = False, return_indices: bool = False, *,
               device: DeviceLike = None) -> Any:
    """Max over ``kernel_size`` windows of each (N, C) plane of ``x`` (4-D NCHW, or 3-D CHW as N = 1).

    PyTorch's semantics exactly: ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) is
    implicit -inf; ``dilation`` spaces the window's taps; the output size is
    ``floor_or_ceil((H + 2p - d(k-1) - 1) / s) + 1`` where, with ``ceil_mode``, the last window must start inside the
    input or the left padding. NaN wins a window; otherwise the first maximum in row-major window order.
    With ``return_indices`` also returns int64 indices: flat ``h * W + w`` positions in each input plane, the input
    of :func:`max_pool2d_backward`.
    """
    op = "max_pool2d"
    k, s, p, d, ceil = _window(op, kernel_size, stride, padding, dilation, ceil_mode)
    ret_idx = _bool(return_indices, "return_indices", op)
    if isinstance(x, Array):
        if device is not None and _resolve_device(device).id != x._a.device.id:
            raise ValueError(f"{op}: device={_resolve_device(device).id!r} but x is on {x._a.device.id}; move it "
                             f"with .to(device)")
        shape = x.shape
        xa = x._a.reshape(_as4d(shape, op, "input")) if len(shape) == 3 else x._a
        res = _core.max_pool2d(xa, k, s, p, d, ceil, ret_idx)
        if len(shape) != 3:
            return (Array(res[0]), Array(res[1])) if ret_idx else Array(res)
        squeeze = lambda a: Array(a.reshape(a.shape[1:]))  # noqa: E731
        return (squeeze(res[0]), squeeze(res[1])) if ret_idx else squeeze(res)

    dev = _resolve_device(device)
    xn = _host_array(x, None, f"{op}: x")
    x4 = xn.reshape(_as4d(xn.shape, op, "input"))
    out_shape = _core.max_pool2d_shape(dev._dev, x4.shape, xn.dtype.name, k, s, p, d, ceil)
    y = _host_empty(out_shape, xn.dtype)
    idx = _host_empty(out_shape, np.dtype(np.int64)) if ret_idx else None
    if dev.kind == "cpu":  # in place on NumPy memory
        wrap = _numpy_view
        _core.max_pool2d(wrap(dev._dev, x4), k, s, p, d, ceil, False, wrap(dev._dev, y),
                         None if idx is None else wrap(dev._dev, idx))
    else:
        res = _core.max_pool2d(_core.Array.from_numpy(dev._dev, x4), k, s, p, d, ceil, ret_idx)
        if ret_idx:
            res[0].read_into(y)
            res[1].read_into(idx)
        else:
            res.read_into(y)
    if xn.ndim == 3:
        y = y.reshape(y.shape[1:])
        idx = None if idx is None else idx.reshape(idx.shape[1:])
    return (y, idx) if ret_idx else y


def max_pool2d_backward(grad_output: Any, indices: Any, input_shape: Sequence[int], kernel_size: IntOrPair,
                        stride: Optional[IntOrPair] = None, padding: IntOrPair = 0, dilation: IntOrPair = 1,
                        ceil_mode: bool = False, *, device: DeviceLike = None) -> Any:
    """Gradient of :func:`max_pool2d` with respect to its input: each ``grad_output`` value is added at the input
    position its index names (windows that overlap accumulate). ``indices`` as returned by the forward with the
    same parameters, on the same device; ``input_shape`` is the forward input's shape. An index that does not point
    inside its own window raises ``ValueError``."""
    op = "max_pool2d_backward"
    k, s, p, d, ceil = _window(op, kernel_size, stride, padding, dilation, ceil_mode)
    if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, (tuple, list, np.ndarray)):
        raise TypeError(f"{op}: input_shape must be a sequence of ints, got {type(input_shape).__name__}")
    ishape = []
    for v in input_shape:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}: input_shape must hold ints, got {v!r}")
        ishape.append(int(v))
    ishape4 = _as4d(tuple(ishape), op, "input_shape")
    three = len(ishape) == 3
    g_dev, i_dev = isinstance(grad_output, Array), isinstance(indices, Array)
    if g_dev or i_dev:
        if not (g_dev and i_dev):
            raise TypeError(f"{op}: grad_output and indices must both be hetnn Arrays or both NumPy arrays")
        if device is not None and _resolve_device(device).id != grad_output._a.device.id:
            raise ValueError(f"{op}: device={_resolve_device(device).id!r} but grad_output is on "
                             f"{grad_output._a.device.id}")
        ga, ia = grad_output._a, indices._a
        if three:
            _require_3d(ga.shape, ia.shape, op)
            ga, ia = ga.reshape((1,) + tuple(ga.shape)), ia.reshape((1,) + tuple(ia.shape))
        gx = _core.max_pool2d_backward(ga, ia, ishape4, k, s, p, d, ceil)
        return Array(gx.reshape(tuple(ishape)) if three else gx)

    dev = _resolve_device(device)
    gn: np.ndarray = _host_array(grad_output, None, f"{op}: grad_output")
    inn: np.ndarray = _host_array(indices, None, f"{op}: indices")
    if three:
        _require_3d(gn.shape, inn.shape, op)
        gn, inn = gn.reshape((1,) + gn.shape), inn.reshape((1,) + inn.shape)
    gxn = _host_empty(ishape4, gn.dtype)
    if dev.kind == "cpu":
        wrap = _numpy_view
        _core.max_pool2d_backward(wrap(dev._dev, gn), wrap(dev._dev, inn), ishape4, k, s, p, d, ceil,
                                  wrap(dev._dev, gxn))
    else:
        up = _core.Array.from_numpy
        _core.max_pool2d_backward(up(dev._dev, gn), up(dev._dev, inn), ishape4, k, s, p, d, ceil).read_into(gxn)
    return gxn.reshape(tuple(ishape)) if three else gxn
