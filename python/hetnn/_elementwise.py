"""The element-wise functions of the Array API standard (hetnn.exp, hetnn.add, hetnn.less, ...), one per row of the
core's table (HETNN_EW_OPS in cpp/src/core/ops.h; hetnn._core.elementwise_ops()): hetnn Arrays in, an Array out on
their device, NumPy's broadcasting, the Array API's type promotion, Python numbers as weak scalars. The operators of
hetnn.Array call the same ops."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ._array import Array, _dtype, _first, _name_of, _operand, zeros_like
from ._loader import _core


def _out(op: str, out: Optional[Array]) -> Any:
    if out is None:
        return None
    if not isinstance(out, Array):
        raise TypeError(f"{op}: out must be a hetnn.Array, got {type(out).__name__}")
    return out._a


def _result(core: Any, out: Optional[Array]) -> Array:
    """The result: ``out`` itself when given (``f(x, out=o) is o``), else a new Array."""
    return out if out is not None else Array(core)


def _make(op: str, arity: int) -> Callable[..., Array]:
    ew = _core.elementwise
    if arity == 1:
        def unary(x: Array, /, *, out: Optional[Array] = None) -> Array:
            if type(x) is Array and out is None:  # the common call, checked in the core alone
                return Array(ew(op, x._a, None, False, None))
            return _result(ew(op, _first(op, x)._a, None, False, _out(op, out)), out)
        fn: Callable[..., Array] = unary
    else:
        def binary(x1: Any, x2: Any, /, *, out: Optional[Array] = None) -> Array:
            # the common call (two Arrays, out an Array or None) goes straight to the core, which checks them: the
            # Python checks below cost a third of a small array's call
            if type(x1) is Array and type(x2) is Array:
                if out is None:
                    return Array(ew(op, x1._a, x2._a, False, None))
                if type(out) is Array:
                    ew(op, x1._a, x2._a, False, out._a)
                    return out
            if not isinstance(x1, Array) and isinstance(x2, Array):  # a number first
                other = _operand(op, x2, x1)
                if other is NotImplemented:
                    raise TypeError(f"{op}: x1 must be a hetnn.Array or a Python number, got {type(x1).__name__}")
                return _result(ew(op, x2._a, other, True, _out(op, out)), out)
            a = _first(op, x1)
            other = _operand(op, a, x2)
            if other is NotImplemented:
                raise TypeError(f"{op}: x2 must be a hetnn.Array or a Python number, got {type(x2).__name__}")
            return _result(ew(op, a._a, other, False, _out(op, out)), out)
        fn = binary
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"The Array API's ``{op}``, element-wise on the operands' device."
    return fn


def where(condition: Array, x1: Any, x2: Any, /, *, out: Optional[Array] = None) -> Array:
    """``x1`` where ``condition`` is true, else ``x2``, element-wise on the operands' device, broadcast together;
    the result's dtype is x1's and x2's promoted (a Python number is weak); a condition that is not bool is read as
    ``!= 0``."""
    c = _first("where", condition)
    for name, v in (("x1", x1), ("x2", x2)):
        if not isinstance(v, Array) and _operand("where", c, v) is NotImplemented:
            raise TypeError(f"where: {name} must be a hetnn.Array or a Python number, got {type(v).__name__}")
    return _result(_core.where(c._a, x1._a if isinstance(x1, Array) else x1,
                               x2._a if isinstance(x2, Array) else x2, _out("where", out)), out)


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:
    """x with its elements limited to [min, max] (either may be None, a Python number or an Array broadcasting
    against x), on x's device: ``minimum(maximum(x, min), max)``, in x's dtype (NaN stays NaN)."""
    a = _first("clip", x)
    for name, v in (("min", min), ("max", max)):
        if v is not None and not isinstance(v, Array) and _operand("clip", a, v) is NotImplemented:
            raise TypeError(f"clip: {name} must be None, a hetnn.Array or a Python number, got {type(v).__name__}")
    y = a if min is None else _core_binary("maximum", a, min)
    y = y if max is None else _core_binary("minimum", y, max)
    return y.astype(a.dtype, copy=False) if y is not a else a.copy()


# The Array API's complex-number functions for hetnn's real types (it has no complex ones), as NumPy gives them for
# real arrays: conj and real are copies of x, imag its zeros.
def conj(x: Array, /) -> Array:
    """The complex conjugate of x: for hetnn's real and integer types, a copy of x."""
    return _first("conj", x).copy()


def real(x: Array, /) -> Array:
    """The real part of x: for hetnn's real and integer types, a copy of x."""
    return _first("real", x).copy()


def imag(x: Array, /) -> Array:
    """The imaginary part of x: for hetnn's real and integer types, zeros of x's shape and dtype."""
    return zeros_like(_first("imag", x))


def _core_binary(op: str, a: Array, v: Any) -> Array:
    return Array(_core.elementwise(op, a._a, v._a if isinstance(v, Array) else v, False, None))


def astype(x: Array, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Array:
    """x converted to ``dtype`` on its device (the Array API's ``astype``), then moved to ``device`` when given (an
    explicit transfer)."""
    y = _first("astype", x).astype(_dtype(dtype, "astype: dtype"), copy=copy)
    return y if device is None else y.to(device)


def result_type(*dtypes: Any) -> Any:
    """The dtype arrays of these dtypes (or Arrays) promote to."""
    import numpy as np
    if not dtypes:
        raise ValueError("result_type: at least one dtype or array is needed")
    names = [d.dtype.name if isinstance(d, Array) else _name_of(d, "result_type") for d in dtypes]
    out = names[0]
    for n in names[1:]:
        out = _core.result_type(out, n)
    return np.dtype(out) if out != "bfloat16" else _dtype("bfloat16")


OPS: Dict[str, int] = {name: arity for name, arity, kind in _core.elementwise_ops() if kind != "cast"}
globals().update({name: _make(name, arity) for name, arity in OPS.items()})

__all__: List[str] = sorted(OPS) + ["astype", "clip", "conj", "imag", "real", "result_type", "where"]
