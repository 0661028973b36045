"""hetnn's public ops: each a core function (cpp/src/python/bind_<op>.cpp, typed in _core.pyi) under the one
placement rule of hetnn._placement. A new op is one line here (docs/adding-an-op.md)."""
from __future__ import annotations

import numbers
from typing import Any, Optional, Union, cast

import numpy as np

from ._array import Array, _host_array, _host_empty, _numpy_view
from ._device import DeviceLike, device as _resolve_device
from ._loader import _core
from ._placement import placed

ArrayLike = Union[Array, np.ndarray, Any]


def _flag(value: Any, name: str) -> bool:
    if value is False or value is True:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"matmul: {name} must be a bool, got {type(value).__name__} ({value!r})")


def _scalar(value: Any, name: str) -> float:
    if type(value) is float:  # the common case, without the ABC check below
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"matmul: {name} must be a real number, got {type(value).__name__} ({value!r})")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"matmul: {name} {value!r} is too large for a float") from None


ACTIVATIONS = tuple(_core.activations())


def _activation(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"matmul: activation must be None or one of {ACTIVATIONS}, got {type(value).__name__}")
    if value not in ACTIVATIONS:
        raise ValueError(f"matmul: activation must be None or one of {ACTIVATIONS}, got {value!r}")
    return value


def matmul(a: ArrayLike, b: ArrayLike, *, transpose_a: bool = False, transpose_b: bool = False,
           alpha: float = 1.0, beta: float = 0.0, out: Optional[ArrayLike] = None,
           bias: Optional[ArrayLike] = None, activation: Optional[str] = None,
           device: DeviceLike = None) -> Any:
    """``act(alpha * op(a) @ op(b) + beta * out + bias)`` where ``op(x)`` is ``x`` or ``x.T`` (``transpose_a/b``).

    2-D ``(M, K) @ (K, N) -> (M, N)``, or batched 3-D ``(B, M, K) @ (B, K, N)`` (a batch of 1, or a 2-D operand, is
    broadcast). With ``transpose_a`` ``a`` is stored ``(K, M)``; with ``transpose_b`` ``b`` is stored ``(N, K)``.
    ``beta`` needs ``out`` (the matrix it scales). ``bias`` has shape ``(N,)`` and is added to every row;
    ``activation`` is None, ``"relu"``, ``"sigmoid"`` or ``"tanh"``: both are fused into the kernel (oneDNN post-ops,
    the OpenCL epilogue). float32; float64 on devices with fp64; float16 and bfloat16 (accumulated in float32) on
    OpenCL devices and where oneDNN supports them on the CPU (``device.dtypes`` lists what a device takes).
    """
    ta, tb = _flag(transpose_a, "transpose_a"), _flag(transpose_b, "transpose_b")
    al, be = _scalar(alpha, "alpha"), _scalar(beta, "beta")
    act = _activation(activation)
    a_dev, b_dev = isinstance(a, Array), isinstance(b, Array)
    if a_dev or b_dev:
        if not (a_dev and b_dev):
            host = "b" if a_dev else "a"
            raise TypeError(f"matmul: {'a' if a_dev else 'b'} is a hetnn.Array but {host} is not; pass both as "
                            f"Arrays on one device (hetnn.asarray(x, device=...)) or both as NumPy arrays")
        a, b = cast(Array, a), cast(Array, b)
        if device is not None and _resolve_device(device).id != a._a.device.id:
            raise ValueError(f"matmul: device={_resolve_device(device).id!r} but the operands are on "
                             f"{a._a.device.id}; move them with .to(device)")
        if out is not None and not isinstance(out, Array):
            raise TypeError(f"matmul: out must be a hetnn.Array when the operands are, got {type(out).__name__}")
        if bias is not None and not isinstance(bias, Array):
            raise TypeError(f"matmul: bias must be a hetnn.Array when the operands are, got {type(bias).__name__}")
        bias_h = None if bias is None else bias._a
        if out is None:
            return Array(_core.matmul(a._a, b._a, None, ta, tb, al, be, bias_h, act))
        _core.matmul(a._a, b._a, out._a, ta, tb, al, be, bias_h, act)
        return out

    if isinstance(out, Array) or isinstance(bias, Array):
        which = "out" if isinstance(out, Array) else "bias"
        raise TypeError(f"matmul: {which} is a hetnn.Array but the operands are NumPy arrays; pass it as a NumPy "
                        f"array")
    dev = _resolve_device(device)
    # conversion only: which dtypes, shapes and combinations matmul takes is the core's decision (core/matmul.cpp)
    an = _host_array(a, None, "matmul: a")
    bn = _host_array(b, None, "matmul: b")
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"matmul: out must be a NumPy array, got {type(out).__name__}")
        if not out.flags.c_contiguous or not out.flags.writeable or not out.dtype.isnative:
            raise ValueError("matmul: out must be a writeable, C-contiguous NumPy array in native byte order")
    bias_n = None if bias is None else _host_array(bias, None, "matmul: bias")
    if out is not None and any(x is not None and np.may_share_memory(out, x) for x in (an, bn, bias_n)):
        # Each NumPy array is wrapped separately, so the core's check on shared buffers cannot see this.
        raise ValueError("matmul: out must not share memory with a, b or bias")

    wrapped = dev.kind == "cpu"
    put = _numpy_view if wrapped else _core.Array.from_numpy  # CPU: zero-copy, in place
    A, B = put(dev._dev, an), put(dev._dev, bn)
    BIAS = None if bias_n is None else put(dev._dev, bias_n)
    if out is None:
        shape = _core.matmul_shape(A, B, ta, tb, be)  # validates the operands before anything is allocated
        result = _host_empty(shape, an.dtype)
    else:
        result = out
    if wrapped:
        _core.matmul(A, B, _numpy_view(dev._dev, result), ta, tb, al, be, BIAS, act)
    else:
        C = (_core.Array.from_numpy(dev._dev, result) if be != 0.0
             else _core.Array.empty(dev._dev, result.shape, result.dtype.name))
        _core.matmul(A, B, C, ta, tb, al, be, BIAS, act).read_into(result)
    return result


max_pool2d = placed(_core.max_pool2d, "x", outs=("out", "indices_out"))
max_pool2d_backward = placed(_core.max_pool2d_backward, "grad_output", "indices")
avg_pool2d = placed(_core.avg_pool2d, "x")

__all__ = ["avg_pool2d", "matmul", "max_pool2d", "max_pool2d_backward"]
