"""User kernels (CuPy's design): :class:`ElementwiseKernel` and :class:`ReductionKernel` compile a few lines of C
for the device a call runs on, at first use, and cache the result (OpenCL programs as hetnn's own; for the CPU
device a shared library built with the system's C compiler, cpp/src/backend/cpu/user_kernel_cpu.cpp)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

from ._array import Array
from ._loader import _core


class ElementwiseKernel:
    """An element-wise kernel from typed parameters and an operation, as CuPy's::

        add_sq = hetnn.ElementwiseKernel("T x, T y", "T z", "z = x * x + y", "add_sq")
        z = add_sq(a, b)          # a new array, of the inputs' broadcast shape
        add_sq(a, b, out_array)   # into an output

    ``in_params`` / ``out_params``: comma-separated ``"type name"``, the type a dtype (float32, float64, int8, uint8,
    int32, int64, bool) or a placeholder (any other identifier) that takes the dtype of the arrays bound to it (a
    number alone gives int64, float64 or bool). ``operation``: statements in the common subset of C99 and OpenCL C
    (``exp``, ``sqrt``, ``fmin``, ``?:`` ...) over the parameters as local variables, ``i`` (the flat index) and
    ``n`` (the element count); outputs start as their current elements and are stored after it. ``preamble``: code
    placed before the kernel (helper functions). Inputs are hetnn Arrays on one device or Python numbers,
    broadcast as NumPy's. A compile error raises :class:`hetnn.CompileError` with the compiler's log and the
    generated source."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 preamble: str = "") -> None:
        for arg, v in (("in_params", in_params), ("out_params", out_params), ("operation", operation),
                       ("name", name), ("preamble", preamble)):
            if not isinstance(v, str):
                raise TypeError(f"hetnn.ElementwiseKernel: {arg} must be a str, got {type(v).__name__}")
        self._k = _core.ElementwiseKernel(in_params, out_params, operation, name, preamble)
        self._nin, self._nout = int(self._k.nin), int(self._k.nout)  # fixed: read once, not per call

    @property
    def name(self) -> str:
        return str(self._k.name)

    def __call__(self, *args: Any) -> Union[Array, Tuple[Array, ...]]:
        nin, nout = self._nin, self._nout
        n = len(args)
        if n != nin and n != nin + nout:
            raise TypeError(f"hetnn.ElementwiseKernel '{self.name}': takes {nin} inputs (and optionally {nout} "
                            f"output{'s' if nout > 1 else ''}), got {n} arguments")
        core = []  # a loop, not a comprehension: this is most of a small array's call
        for a in args:
            core.append(a._a if isinstance(a, Array) else a)
        outs: List[Any] = self._k.call(core[:nin], core[nin:])
        if n > nin:
            return args[nin] if nout == 1 else tuple(args[nin:])
        return Array(outs[0]) if nout == 1 else tuple(Array(o) for o in outs)

    def __repr__(self) -> str:
        return f"hetnn.ElementwiseKernel({self.name!r})"


class ReductionKernel:
    """A reduction from typed parameters and four expressions, as CuPy's::

        l2norm = hetnn.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        n = l2norm(a, axis=1)     # one norm per row

    ``map_expr`` maps the inputs' elements (local variables, broadcast together; numbers allowed) to values of
    ``reduce_type`` (default: the first output's type); ``reduce_expr`` combines two of them, ``a`` and ``b`` (it
    must be associative: a reduction is split into parts that run in parallel and are combined in no fixed order);
    ``identity`` starts every reduction; ``post_map_expr`` sets the outputs from the result ``a``. ``axis`` (None:
    every axis of the broadcast shape) and ``keepdims`` as :func:`hetnn.sum`'s; outputs may be given after the
    inputs. Types, compilation and caching as :class:`ElementwiseKernel`'s."""

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
                 identity: str, name: str = "reduce_kernel", reduce_type: Optional[str] = None,
                 preamble: str = "") -> None:
        for arg, v in (("in_params", in_params), ("out_params", out_params), ("map_expr", map_expr),
                       ("reduce_expr", reduce_expr), ("post_map_expr", post_map_expr), ("identity", identity),
                       ("name", name), ("preamble", preamble)):
            if not isinstance(v, str):
                raise TypeError(f"hetnn.ReductionKernel: {arg} must be a str, got {type(v).__name__}")
        if reduce_type is not None and not isinstance(reduce_type, str):
            raise TypeError(f"hetnn.ReductionKernel: reduce_type must be None or a str, got "
                            f"{type(reduce_type).__name__}")
        self._k = _core.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name,
                                        reduce_type, preamble)

    @property
    def name(self) -> str:
        return str(self._k.name)

    def __call__(self, *args: Any, axis: Any = None, keepdims: bool = False) -> Union[Array, Tuple[Array, ...]]:
        nin, nout = int(self._k.nin), int(self._k.nout)
        if len(args) not in (nin, nin + nout):
            raise TypeError(f"hetnn.ReductionKernel '{self.name}': takes {nin} inputs (and optionally {nout} "
                            f"output{'s' if nout > 1 else ''}), got {len(args)} arguments")
        core = [a._a if isinstance(a, Array) else a for a in args]
        outs: List[Any] = self._k.call(core[:nin], core[nin:], axis, keepdims)
        res = tuple(args[nin:]) if len(args) > nin else tuple(Array(o) for o in outs)
        return res[0] if nout == 1 else res

    def __repr__(self) -> str:
        return f"hetnn.ReductionKernel({self.name!r})"


__all__ = ["ElementwiseKernel", "ReductionKernel"]
