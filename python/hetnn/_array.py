"""hetnn.Array: an n-dimensional array in one device's memory, and the functions that make one."""
from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

try:  # registers NumPy's "bfloat16" dtype
    import ml_dtypes  # noqa: F401
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    ml_dtypes = None  # type: ignore[assignment]

from ._device import Device, DeviceLike, _wrap, device as _resolve_device
from ._loader import _core

_CoreArray = _core.Array  # the native array type, bound once: Array() checks it on every wrap

# dtypes an Array can hold (which ops accept which is up to each op).
SUPPORTED_DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint8", "int8", "bool") + (
    ("bfloat16",) if ml_dtypes is not None else ())

ShapeLike = Union[int, Sequence[int]]


# dtype specifications seen (a name, a NumPy type or dtype) -> (the dtype, its name): NumPy's dtype.name is computed
# in Python on every read (2-3 us), more than the core takes to make a small array
_SEEN_DTYPES: Dict[Any, Tuple[np.dtype, str]] = {}


def _dtype_and_name(dtype: Any, what: str) -> Tuple[np.dtype, str]:
    try:
        return _SEEN_DTYPES[dtype]
    except (KeyError, TypeError):  # TypeError: unhashable (refused below, or a dtype-like object)
        pass
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from None
    name = dt.name
    if name not in SUPPORTED_DTYPES:
        raise TypeError(f"{what}: {name} is not supported; hetnn arrays hold {', '.join(SUPPORTED_DTYPES)}")
    # names, types and dtypes only (an object with a .dtype attribute may change it); the few a program uses
    if isinstance(dtype, (str, type, np.dtype)) and len(_SEEN_DTYPES) < 256:
        _SEEN_DTYPES[dtype] = (dt, name)
    return dt, name


def _dtype(dtype: Any, what: str = "dtype") -> np.dtype:
    return _dtype_and_name(dtype, what)[0]


def _name_of(dtype: Any, what: str = "dtype") -> str:
    """The name of a supported dtype given in any form NumPy takes."""
    return _dtype_and_name(dtype, what)[1]


def _shape(shape: ShapeLike, what: str = "shape") -> Tuple[int, ...]:
    if type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape):  # the common case, first
        return shape
    if isinstance(shape, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int or a sequence of ints, got {shape!r}")
    try:
        return (operator.index(shape),)  # type: ignore[arg-type]  # a sequence raises TypeError: handled below
    except TypeError:
        pass
    if not isinstance(shape, (tuple, list)) and not (isinstance(shape, np.ndarray) and shape.ndim == 1):
        raise TypeError(f"{what} must be an int or a sequence of ints, got {type(shape).__name__}")
    out = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)):
            raise TypeError(f"{what} must hold ints, got {d!r}")
        try:
            out.append(operator.index(d))
        except TypeError:
            raise TypeError(f"{what} must hold ints, got {type(d).__name__} ({d!r})") from None
    for d in out:
        if d < 0:
            raise ValueError(f"{what} {tuple(out)} has a negative dimension")
    return tuple(out)


def _operand(op: str, a: "Array", other: Any) -> Any:
    """other as an operand of ``a <op> other``: the core array of a hetnn Array, a Python number as it is, or
    NotImplemented; a NumPy array (or anything else holding data) is refused, as hetnn never copies between host
    and device implicitly."""
    if isinstance(other, Array):
        return other._a
    if isinstance(other, (bool, int, float, np.bool_, np.integer, np.floating)):
        return other
    if isinstance(other, np.ndarray) or hasattr(other, "__array__") or hasattr(other, "__dlpack__"):
        raise TypeError(f"{op}: a hetnn.Array on {a._a.device.id} and a {type(other).__module__}."
                        f"{type(other).__name__} in host memory; hetnn copies between host and device only when told: "
                        f"hetnn.asarray(x, device='{a._a.device.id}') or arr.numpy()")
    return NotImplemented


def _core_key(key: Any) -> Any:
    """An index with its hetnn Arrays (a mask, 0-d integer indices) as the core's arrays."""
    if type(key) is Array:
        return key._a
    if type(key) is tuple and any(type(k) is Array for k in key):
        return tuple(k._a if type(k) is Array else k for k in key)
    return key


def _binary(op: str, reflected: bool = False, inplace: bool = False) -> Any:
    ew = _core.elementwise

    def method(self: "Array", other: Any) -> Any:
        x2 = other._a if type(other) is Array else _operand(op, self, other)  # two Arrays: the core checks them
        if x2 is NotImplemented:
            return NotImplemented
        out = ew(op, self._a, x2, reflected, self._a if inplace else None)
        return self if inplace else Array(out)
    method.__name__ = f"__{'i' if inplace else 'r' if reflected else ''}{op}__"
    return method


# NumPy's ufuncs that are hetnn element-wise ops under another name (the rest share the name; np.reciprocal is
# integer division on integers in NumPy, so it is not mapped)
_UFUNC_ALIASES = {"power": "pow", "arctan2": "atan2", "left_shift": "bitwise_left_shift",
                  "right_shift": "bitwise_right_shift", "invert": "bitwise_invert", "absolute": "abs",
                  "rint": "round", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                  "arccosh": "acosh", "arctanh": "atanh", "true_divide": "divide"}
_UFUNC_OPS = dict(_UFUNC_ALIASES)
_UFUNC_OPS.update({name: name for name, _, kind in _core.elementwise_ops() if kind != "cast" and name != "reciprocal"})


def _numpy_ufunc(ufunc: Any, method: str, inputs: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    """A NumPy ufunc called with hetnn Arrays: on their device when it is a hetnn element-wise op called plainly
    with Arrays and numbers (``out`` an Array); refused beside NumPy arrays (as the operators are); otherwise
    (reductions, ``where=``, ops hetnn lacks) NumPy computes on the host: on a CPU-device Array's memory in place,
    on an OpenCL Array's through the implicit host copy (:func:`set_implicit_host_copies`)."""
    arrays = [x for x in inputs if isinstance(x, Array)]
    first = arrays[0] if arrays else None
    for x in inputs:
        if first is not None and not isinstance(x, Array) and _operand(ufunc.__name__, first, x) is NotImplemented:
            return NotImplemented
    out = kwargs.get("out")
    outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
    op = _UFUNC_OPS.get(ufunc.__name__)
    plain = set(kwargs) <= {"out"} and all(isinstance(o, Array) for o in outs) and len(outs) <= 1
    if method == "__call__" and op and plain and ufunc.nin == len(inputs):
        core_out = outs[0]._a if outs else None
        if len(inputs) == 1:
            res = _core.elementwise(op, inputs[0]._a, None, False, core_out)
        elif isinstance(inputs[0], Array):
            x2 = inputs[1]._a if isinstance(inputs[1], Array) else inputs[1]
            res = _core.elementwise(op, inputs[0]._a, x2, False, core_out)
        else:
            res = _core.elementwise(op, inputs[1]._a, inputs[0], True, core_out)
        return outs[0] if outs else Array(res)
    if any(isinstance(o, Array) for o in outs):
        raise TypeError(f"np.{ufunc.__name__}{'' if method == '__call__' else '.' + method}: NumPy cannot write into "
                        f"a hetnn.Array (out=); use hetnn's function")
    host = [np.asarray(x) if isinstance(x, Array) else x for x in inputs]
    return getattr(ufunc, method)(*host, **kwargs)


def _unary(op: str) -> Any:
    def method(self: "Array") -> "Array":
        return Array(_core.elementwise(op, self._a))
    return method


def _first(op: str, x: Any) -> "Array":
    """x, the array operand of a hetnn function, else TypeError naming the function."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: x must be a hetnn.Array, got {type(x).__name__} (hetnn.asarray(x, device=...) "
                        f"uploads NumPy data)")
    return x


def _no_out(op: str, out: Any) -> None:
    if out is not None:
        raise TypeError(f"{op}: out= is not supported (the result is a new Array on the input's device)")


def _dtype_name(op: str, dtype: Any) -> Optional[str]:
    return None if dtype is None else _name_of(dtype, f"{op}: dtype")


def _reduction(op: str) -> Any:
    """The Array method of a core reduction; its NumPy-compatible signature lets np.sum(a), np.max(a) ... run it
    on the array's device."""
    reduce = _core.reduce

    def method(self: "Array", axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False) -> "Array":
        if out is not None:
            _no_out(op, out)
        return Array(reduce(op, self._a, axis, keepdims, None if dtype is None else _dtype_name(op, dtype)))
    method.__name__ = method.__qualname__ = op
    method.__doc__ = f"The {op} over ``axis`` (None: every axis), on the array's device (hetnn.{op})."
    return method


def _spread(op: str) -> Any:
    """var / std as Array methods: NumPy's ddof or the Array API's correction."""
    def method(self: "Array", axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
               keepdims: Any = False, *, correction: Any = None) -> "Array":
        _no_out(op, out)
        x = self if dtype is None else self.astype(dtype)
        return Array(getattr(_core, op)(x._a, axis, ddof if correction is None else correction, keepdims))
    method.__name__ = method.__qualname__ = op
    method.__doc__ = f"The {'standard deviation' if op == 'std' else 'variance'} over ``axis``, on the array's device."
    return method


class Array:
    """An array living on one :class:`~hetnn.Device`. Make one with :func:`asarray`, :func:`empty` or
    :func:`zeros`; read it back with :meth:`numpy` or ``np.asarray(arr)``. Every transfer is explicit."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100  # NumPy defers binary operators to hetnn types

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _numpy_ufunc(ufunc, method, inputs, kwargs)

    # operators: the element-wise ops of hetnn._elementwise, broadcast as NumPy's, with the Array API's type
    # promotion; Python numbers are weak (they take the array's dtype)
    __add__, __radd__, __iadd__ = _binary("add"), _binary("add", True), _binary("add", inplace=True)
    __sub__, __rsub__, __isub__ = _binary("subtract"), _binary("subtract", True), _binary("subtract", inplace=True)
    __mul__, __rmul__, __imul__ = _binary("multiply"), _binary("multiply", True), _binary("multiply", inplace=True)
    __truediv__, __rtruediv__, __itruediv__ = (_binary("divide"), _binary("divide", True),
                                               _binary("divide", inplace=True))
    __floordiv__, __rfloordiv__, __ifloordiv__ = (_binary("floor_divide"), _binary("floor_divide", True),
                                                  _binary("floor_divide", inplace=True))
    __mod__, __rmod__, __imod__ = _binary("remainder"), _binary("remainder", True), _binary("remainder", inplace=True)
    __pow__, __rpow__, __ipow__ = _binary("pow"), _binary("pow", True), _binary("pow", inplace=True)
    __and__, __rand__, __iand__ = (_binary("bitwise_and"), _binary("bitwise_and", True),
                                   _binary("bitwise_and", inplace=True))
    __or__, __ror__, __ior__ = _binary("bitwise_or"), _binary("bitwise_or", True), _binary("bitwise_or", inplace=True)
    __xor__, __rxor__, __ixor__ = (_binary("bitwise_xor"), _binary("bitwise_xor", True),
                                   _binary("bitwise_xor", inplace=True))
    __lshift__, __rlshift__, __ilshift__ = (_binary("bitwise_left_shift"), _binary("bitwise_left_shift", True),
                                            _binary("bitwise_left_shift", inplace=True))
    __rshift__, __rrshift__, __irshift__ = (_binary("bitwise_right_shift"), _binary("bitwise_right_shift", True),
                                            _binary("bitwise_right_shift", inplace=True))
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __neg__, __pos__, __abs__, __invert__ = _unary("negative"), _unary("positive"), _unary("abs"), \
        _unary("bitwise_invert")
    __hash__ = None  # type: ignore[assignment]  # == is element-wise, as NumPy's

    # reductions (hetnn._reduction): NumPy's np.sum(a), np.max(a, axis=0) ... call these, on the device
    sum, prod, max, min = _reduction("sum"), _reduction("prod"), _reduction("max"), _reduction("min")
    argmax, argmin, all, any = _reduction("argmax"), _reduction("argmin"), _reduction("all"), _reduction("any")
    var, std = _spread("var"), _spread("std")

    def __array_namespace__(self, *, api_version: Optional[str] = None) -> Any:
        """The hetnn module: the Array API namespace these arrays belong to (the parts of the 2023.12 standard
        docs/api.md lists)."""
        if api_version not in (None, "2023.12"):
            raise ValueError(f"__array_namespace__: hetnn follows the Array API 2023.12, got api_version="
                             f"{api_version!r}")
        import hetnn
        return hetnn

    def to_device(self, device: DeviceLike, /, *, stream: Any = None) -> "Array":
        """The Array API's spelling of :meth:`to`: this array on ``device`` (a copy through host memory; itself
        when it is there already), its commands on ``stream`` when given."""
        return self.to(device, stream=stream)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False) -> "Array":
        """The mean over ``axis`` (None: every axis), on the array's device; integers give the device's default
        real type."""
        _no_out("mean", out)
        x = self if dtype is None else self.astype(dtype)
        return Array(_core.mean(x._a, axis, keepdims))

    def __matmul__(self, other: Any) -> "Array":
        """``a @ b``: hetnn.matmul of two Arrays on one device (a transposed view, ``b.T``, is read without a
        copy)."""
        if isinstance(other, Array):
            return Array(_core.matmul(self._a, other._a))
        if _operand("matmul", self, other) is NotImplemented:
            return NotImplemented
        raise TypeError(f"matmul: the operands must be hetnn Arrays, got a {type(other).__name__}")

    def __rmatmul__(self, other: Any) -> "Array":
        _operand("matmul", self, other)
        return NotImplemented

    def __init__(self, core_array: Any) -> None:
        if type(core_array) is not _CoreArray and not isinstance(core_array, _CoreArray):  # the first test: 40 ns less
            raise TypeError("hetnn.Array is not constructed directly; use hetnn.asarray(), hetnn.empty() or "
                            "hetnn.zeros()")
        self._a = core_array

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._a.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._a.dtype)

    @property
    def device(self) -> Device:
        return _wrap(self._a.device)

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    @property
    def cl_buffer(self) -> int:
        """The array's OpenCL buffer (a cl_mem) as an integer, for another OpenCL library to read or write it in place
        (``pyopencl.Buffer.from_int_ptr(a.cl_buffer)``; the array's bytes start at offset 0, ``nbytes`` long, C
        order); the device's queue is ``a.device.cl_handles()["queue"]``. TypeError on the CPU device."""
        return int(_core._cl_buffer(self._a))

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d hetnn.Array")
        return self.shape[0]

    def numpy(self) -> np.ndarray:
        """Copies the array to host memory (blocking) and returns it as a new NumPy array."""
        return self._a.to_numpy()

    get = numpy  # CuPy's spelling

    def copy_to_host(self, out: Optional[np.ndarray] = None, *, stream: Any = None) -> np.ndarray:
        """Copies the array to host memory: into ``out`` when given (a writeable C-contiguous NumPy array of this
        shape and dtype, such as one from :func:`hetnn.pinned_empty`, whose page-locked memory a GPU fills at the
        link's speed), else into a new NumPy array. Returns the host array.

        Without ``stream`` the host waits for the copy. With ``stream`` (a hetnn.Stream of the array's device) the
        copy runs on that stream, after its earlier commands, and into the device's page-locked memory the host does
        not wait: ``out`` holds the data once the stream is synchronized (``stream.synchronize()``, or an event
        recorded after it); into ordinary memory the host waits, as CUDA's copies from pageable memory do."""
        if stream is not None:
            from ._streams import check_stream
            s = check_stream(stream, self.device, "copy_to_host")
        if out is None:
            if stream is None:
                return self._a.to_numpy()
            with s:
                return self._a.to_numpy()
        if not isinstance(out, np.ndarray):
            raise TypeError(f"copy_to_host: out must be a NumPy array, got {type(out).__name__}")
        if out.shape != self.shape or out.dtype != self.dtype:
            raise ValueError(f"copy_to_host: out is {out.dtype} {out.shape}, the array {self.dtype} {self.shape}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("copy_to_host: out must be C-contiguous and writeable")
        if stream is None:
            self._a.read_into(out)
        else:
            with s:
                self._a.read_into(out, True)
        return out

    def _host_view(self) -> Optional[np.ndarray]:
        """A NumPy view of the array's memory where that is host memory (the CPU device), else None."""
        return self._a.host_numpy()

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        # CPU-device arrays live in host memory: NumPy sees them without a copy unless it asks for one.
        view = None if copy else self._host_view()
        if view is None:
            if copy is False:
                raise ValueError(f"np.asarray(copy=False): this hetnn.Array is in {self._a.device.id}'s memory, "
                                 f"which NumPy cannot view; copy it with .numpy()")
            if copy is None and not _implicit_host_copies:
                raise TypeError(f"implicit copy of a hetnn.Array on {self._a.device.id} to the host refused "
                                f"(transfers are explicit): call .numpy() to copy, or allow NumPy to copy with "
                                f"hetnn.set_implicit_host_copies(True)")
            view = self.numpy()
        if dtype is None or np.dtype(dtype) == view.dtype:
            return view  # copy=True: .numpy() made one
        if copy is False:  # as NumPy: another dtype is a copy, which copy=False forbids
            raise ValueError(f"np.asarray(copy=False): this hetnn.Array holds {view.dtype}; {np.dtype(dtype)} needs "
                             f"a copy (copy=None allows it)")
        return view.astype(dtype)

    def __dlpack_device__(self) -> Tuple[int, int]:
        dev = self.device
        return (_DL_CPU, 0) if dev.kind == "cpu" else (_DL_OPENCL, dev.ordinal or 0)

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """DLPack export: zero-copy for the CPU device; an OpenCL array is exported only as an explicit host copy
        (``np.from_dlpack(a, device="cpu", copy=True)``), since DLPack consumers cannot read OpenCL memory."""
        view = self._host_view()
        if view is None:
            if not (copy and dl_device is not None and int(dl_device[0]) == _DL_CPU):
                raise BufferError(f"this hetnn.Array is in {self._a.device.id}'s memory, which DLPack consumers "
                                  f"cannot read; ask for a host copy (np.from_dlpack(a, device='cpu', copy=True)) "
                                  f"or call .numpy()")
            view, copy = self.numpy(), False
        if max_version is None:  # a pre-2023 consumer: the legacy capsule
            return (view.copy() if copy else view).__dlpack__()
        return view.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    @property
    def T(self) -> "Array":
        """The transpose, a view (no data moved). 0-d and 1-d arrays are their own transpose; matmul reads a
        transposed view without a copy (it flips its transpose flag); arrays of more dimensions: ``.mT`` or
        :func:`hetnn.permute_dims`."""
        if self.ndim < 2:
            return self
        if self.ndim > 2:
            raise ValueError(f".T: the Array API defines .T for 2-d arrays; this one has shape {self.shape} (use .mT "
                             f"for the last two axes or hetnn.permute_dims)")
        return Array(_core.matrix_transpose(self._a))

    @property
    def strides(self) -> Tuple[int, ...]:
        """Bytes between neighbouring elements along each axis (NumPy's meaning); a view's may be negative or 0."""
        return self._a.strides

    def astype(self, dtype: Any, copy: bool = True) -> "Array":
        """The array converted to ``dtype`` on its device (self when the dtype matches and ``copy`` is False).
        Floating to integer saturates (NaN gives 0), integers wrap, anything to bool is ``!= 0``."""
        dt = _dtype(dtype, "astype: dtype")
        if dt == self.dtype and not copy:
            return self
        return Array(_core.astype(self._a, dt.name, copy))

    def __getitem__(self, key: Any) -> "Array":
        """Basic indexing as NumPy's: integers, slices with any step, None and the Ellipsis, ``a[1, ::2, ...]``,
        giving a view of a's memory as NumPy does (no data moved; ``a[0][1] = v`` writes into a; element-wise ops,
        reductions and copies read views by their strides, other ops through a dense copy). Elements at an array of
        indices: :func:`hetnn.take`. A bool Array of the leading shape alone (``a[mask]``) selects the elements where
        it is true, as (count,) + the rest of the shape (a new array)."""
        return Array(_core.getitem(self._a, _core_key(key)))

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a[key] = value`` with the indices ``a[key]`` takes (a mask too): value a hetnn.Array on the same
        device, a Python number, or anything NumPy converts (a host -> device write), broadcast to the selection
        and converted to a's dtype."""
        if isinstance(value, Array):
            src = value._a
        elif isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            src = _core.full(self._a.device, (), value, self.dtype.name)
        else:
            try:
                host = np.asarray(value, dtype=self.dtype)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"a[...] = value: the value does not convert to {self.dtype.name} ({exc})") from None
            src = _core.Array.from_numpy(self._a.device, _host_array(host, None, "a[...] = value"))
        _core.setitem(self._a, _core_key(key), src)

    @property
    def mT(self) -> "Array":
        """The last two axes swapped (the Array API's matrix transpose; hetnn.matrix_transpose), a view."""
        return Array(_core.matrix_transpose(self._a))

    def to(self, device: DeviceLike, *, stream: Any = None) -> "Array":
        """A copy on ``device`` (through host memory between devices). Returns self if it is already there. With
        ``stream`` (a hetnn.Stream of either device) the copy's commands on that device run on it, after its earlier
        commands; the host waits for the copy (it passes through host memory)."""
        dev = _resolve_device(device)
        if dev.id == self._a.device.id:
            if stream is not None:
                from ._streams import check_stream
                check_stream(stream, dev, "to")
            return self
        if stream is None:
            return Array(self._a.to(dev._dev))
        from ._streams import Stream
        if not isinstance(stream, Stream):
            raise TypeError(f"to: stream must be a hetnn.Stream, got {type(stream).__name__}")
        if stream.device.id not in (dev.id, self._a.device.id):
            raise ValueError(f"to: the stream is on {stream.device.id}, the copy from {self._a.device.id} to {dev.id}")
        with stream:
            return Array(self._a.to(dev._dev))

    def reshape(self, *shape: Any) -> "Array":
        """The array with another shape of the same size (one entry may be -1): a view of the same memory where the
        elements' order allows it (always for a dense array), else a dense copy, as NumPy's reshape."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        dims = list(shape)
        for d in dims:
            if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
                raise TypeError(f"reshape: shape must hold ints, got {d!r}")
        if dims.count(-1) > 1:
            raise ValueError(f"reshape: at most one dimension may be -1, got {tuple(dims)}")
        if -1 in dims:
            known = int(np.prod([d for d in dims if d != -1]))
            if known == 0 or self.size % known:
                raise ValueError(f"reshape: cannot reshape an array of shape {self.shape} into {tuple(dims)}")
            dims[dims.index(-1)] = self.size // known
        return Array(self._a.reshape(tuple(int(d) for d in dims)))

    def copy(self) -> "Array":
        """A new array on the same device with the same contents."""
        return Array(self._a.copy())

    def __repr__(self) -> str:
        head = f"hetnn.Array(shape={self.shape}, dtype={self.dtype.name}, device='{self._a.device.id}'"
        if self.size <= 1000:
            data = np.array2string(self.numpy(), separator=", ", threshold=100, prefix="       ")
            return f"{head},\n       {data})"
        return head + ")"

    def _scalar(self, what: str) -> Any:
        """The one element of a 0-d array, downloaded (asked for by float(a), int(a), bool(a))."""
        if self.ndim != 0:
            raise TypeError(f"{what}: only a 0-d hetnn.Array converts to a Python scalar, this one has shape "
                            f"{self.shape}" + ("; the truth value of an array is ambiguous (use hetnn.all / "
                                               "hetnn.any)" if what == "bool" else ""))
        return self.numpy()[()]

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __complex__(self) -> complex:  # hetnn has no complex types: a 0-d real array's element, as complex
        return complex(self._scalar("complex"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __index__(self) -> int:
        v = self._scalar("index")
        if not isinstance(v, (np.integer, np.bool_)):
            raise TypeError(f"index: only an integer 0-d hetnn.Array is an index, this one is {self.dtype.name}")
        return int(v)

    def __reduce__(self):  # pickles through host memory, restored on the same device id
        return (asarray, (self.numpy(), None, self._a.device.id))


_DL_CPU, _DL_OPENCL = 1, 4  # DLPack device types
_implicit_host_copies = False


def set_implicit_host_copies(allowed: bool) -> bool:
    """Whether ``np.asarray(a)`` (and any NumPy function given a hetnn.Array) may copy an OpenCL array to the host
    without being asked. False by default, as CuPy: such calls raise TypeError, so that every transfer in a program is
    an explicit ``.numpy()``; True lets NumPy code that reads arrays run unchanged, each read a download. CPU-device
    arrays are in host memory and are viewed without a copy either way. Returns the previous setting."""
    global _implicit_host_copies
    if not isinstance(allowed, (bool, np.bool_)):
        raise TypeError(f"set_implicit_host_copies: allowed must be a bool, got {type(allowed).__name__}")
    prev, _implicit_host_copies = _implicit_host_copies, bool(allowed)
    return prev


def _numpy_view(dev: Any, arr: np.ndarray) -> Any:
    """A zero-copy core Array over `arr` on a host-memory device (the CPU device)."""
    a = _core.Array.wrap_numpy(dev, arr)
    if a is None:
        raise RuntimeError(f"{dev.id} cannot work in NumPy memory")  # callers wrap on the CPU device only
    return a


_READY_DTYPES = frozenset(np.dtype(n) for n in SUPPORTED_DTYPES)  # native byte order only


_DLPACK_HOST = (1, 3)  # DLPack device types NumPy can view: kDLCPU, kDLCUDAHost (pinned host memory)


def _foreign_to_host(obj: Any) -> Any:
    """Arrays of other libraries as something NumPy reads: CuPy and PyTorch GPU data are copied to the host
    explicitly; host-resident DLPack producers (PyTorch CPU tensors, JAX CPU arrays, ...) are viewed without a
    copy through DLPack; anything else goes to np.asarray as it is (JAX GPU arrays copy through __array__)."""
    if isinstance(obj, np.ndarray):
        return obj
    mod = type(obj).__module__.split(".")[0]
    if mod == "cupy" and hasattr(obj, "get"):
        return obj.get()  # device -> host
    if mod == "torch" and hasattr(obj, "detach"):
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()  # device -> host
        if str(t.dtype) == "torch.bfloat16":  # no NumPy bfloat16 on PyTorch's side: reinterpret the bits
            from ml_dtypes import bfloat16

            return t.contiguous().view(dtype=__import__("torch").int16).numpy().view(bfloat16)
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        return t.numpy()
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        try:
            if int(obj.__dlpack_device__()[0]) in _DLPACK_HOST:
                return np.from_dlpack(obj)
        except (TypeError, ValueError, BufferError, RuntimeError, AttributeError):
            pass  # a dtype or layout NumPy's DLPack import does not take: np.asarray below
    return obj


def _host_array(obj: Any, dtype: Optional[np.dtype], what: str) -> np.ndarray:
    """NumPy view/copy of an array-like, C-contiguous, native byte order, of a supported dtype."""
    if dtype is None and type(obj) is np.ndarray and obj.dtype in _READY_DTYPES:  # fast path: use as is
        flags = obj.flags
        if flags.c_contiguous and flags.aligned:
            return obj
    obj = _foreign_to_host(obj)
    try:
        arr = np.asarray(obj, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: cannot convert {type(obj).__name__} to an array ({exc})") from None
    if arr.dtype.kind in "OUSMmc" or (arr.dtype.kind == "V" and arr.dtype.name != "bfloat16"):
        raise TypeError(f"{what}: dtype {arr.dtype} is not supported; hetnn arrays hold "
                        f"{', '.join(SUPPORTED_DTYPES)}")
    _dtype(arr.dtype, what)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr if arr.flags.c_contiguous and arr.flags.aligned else np.array(arr, order="C")


def asarray(obj: Any, dtype: Any = None, device: DeviceLike = None, *, copy: Optional[bool] = None,
            stream: Any = None, pinned: bool = False) -> Array:
    """An Array on ``device`` (default device if None) holding ``obj``.

    ``obj`` may be a hetnn Array (returned as is when dtype and device already match, else copied), a NumPy
    array, a nested sequence, a scalar, an array of another library (host-resident DLPack producers such as
    PyTorch CPU tensors and JAX CPU arrays are read through DLPack without a copy; CuPy arrays and GPU tensors are
    copied to the host first), or anything NumPy can convert. Non-contiguous or byte-swapped input is copied into a
    contiguous native array first (never misread). ``dtype`` defaults to the input's (Python floats give float64,
    which needs an fp64 device: pass ``dtype="float32"`` otherwise). ``copy`` (the Array API's): True always gives
    a new array; False never copies (a ValueError where a copy is needed: another device or dtype, host data that
    the CPU device cannot share); None copies only when needed (host data is copied to the device).

    ``stream`` (a hetnn.Stream of the target device): the copy runs on it, after its earlier commands; from the
    device's page-locked memory (:func:`pinned_empty`) the host does not wait for the upload (leave the source
    unchanged until the stream has passed it), from ordinary memory it does.

    ``pinned=True``: host data goes through the device's page-locked memory: it is copied there (by the host) and
    uploaded from there, so that with ``stream`` the host returns once its own copy is done, the upload running
    beside it (PyTorch's ``x.pin_memory().to(device, non_blocking=True)``); the page-locked copy lives until the
    upload has finished.
    """
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"asarray: copy must be None or a bool, got {type(copy).__name__}")
    if not isinstance(pinned, (bool, np.bool_)):
        raise TypeError(f"asarray: pinned must be a bool, got {type(pinned).__name__}")
    dt = None if dtype is None else _dtype(dtype)
    if pinned:
        if isinstance(obj, Array) or copy is False:
            raise ValueError("asarray(pinned=True): page-locked staging applies to host data copied to the device "
                             f"(got {'an Array' if isinstance(obj, Array) else 'copy=False'})")
        host = _host_array(obj, dt, "asarray")
        staged = pinned_empty(host.shape, host.dtype, device)
        staged[...] = host
        obj = staged
    if stream is not None:
        from ._streams import check_stream
        on = obj.device if isinstance(obj, Array) and device is None else _resolve_device(device)
        s = check_stream(stream, on, "asarray")
        with s:
            return _asarray(obj, dt, on, copy, True)
    return _asarray(obj, dt, device, copy, False)


def _asarray(obj: Any, dt: Optional[np.dtype], device: DeviceLike, copy: Optional[bool], nonblocking: bool) -> Array:
    if isinstance(obj, Array):
        target = obj.device if device is None else _resolve_device(device)
        change = (dt is not None and dt != obj.dtype) or target != obj.device
        if copy is False and change:
            raise ValueError(f"asarray(copy=False): an Array of {obj.dtype} on {obj.device.id} cannot become "
                             f"{(dt or obj.dtype)} on {target.id} without a copy")
        if dt is not None and dt != obj.dtype:  # converted on the device (the move, when asked, is explicit)
            return obj.astype(dt).to(target) if target == obj.device else obj.to(target).astype(dt)
        return obj.to(target).copy() if copy and not change else obj.to(target)
    if copy is False:  # shared only where from_dlpack can share it: host memory of the CPU device's layout
        if dt is not None and dt != getattr(obj, "dtype", None):
            raise ValueError("asarray(copy=False): converting to another dtype is a copy")
        if not hasattr(obj, "__dlpack__"):
            raise ValueError(f"asarray(copy=False): a {type(obj).__name__} cannot be shared without a copy")
        return from_dlpack(obj, device=device, copy=False)
    if isinstance(obj, (list, tuple)) and _holds_arrays(obj):
        return _from_nested(obj, dt, device)
    dev = _resolve_device(device)
    arr = _host_array(obj, dt, "asarray")
    return Array(_core.Array.from_numpy(dev._dev, arr, nonblocking))


def _holds_arrays(obj: Any) -> bool:
    return any(isinstance(x, Array) or (isinstance(x, (list, tuple)) and _holds_arrays(x)) for x in obj)


def _from_nested(obj: Any, dt: Optional[np.dtype], device: DeviceLike) -> Array:
    """A (nested) sequence holding hetnn Arrays (numbers beside them), stacked on the Arrays' device: no copy to the
    host and back (which another device's Arrays would need), dtypes promoted as ``hetnn.stack`` does; then moved to
    ``device`` when one is named."""
    found: Dict[str, Device] = {}

    def visit(x: Any) -> None:
        if isinstance(x, Array):
            found.setdefault(x.device.id, x.device)
        elif isinstance(x, (list, tuple)):
            for e in x:
                visit(e)

    visit(obj)
    if len(found) > 1:
        raise TypeError(f"asarray: the sequence holds Arrays on {' and '.join(sorted(found))}; move them to one "
                        f"device first (.to(device))")
    on = next(iter(found.values()))

    def build(x: Any) -> Array:
        if isinstance(x, Array):
            return x
        if isinstance(x, (list, tuple)) and _holds_arrays(x):
            parts = [build(e) for e in x]
            shapes = sorted({p.shape for p in parts})
            if len(shapes) > 1:
                raise ValueError(f"asarray: the nested sequence is ragged: parts of shapes {shapes[0]} and "
                                 f"{shapes[1]} side by side")
            return Array(_core.stack([p._a for p in parts], 0))
        return _asarray(x, None, on, None, False)  # numbers (or sequences of them) beside the Arrays: uploaded

    y = build(obj)
    if dt is not None and dt != y.dtype:
        y = y.astype(dt)
    return y if device is None else y.to(_resolve_device(device))


def from_dlpack(x: Any, /, *, device: DeviceLike = None, copy: Optional[bool] = None) -> Array:
    """An Array from a DLPack producer (a NumPy array, a PyTorch or JAX CPU tensor, a CuPy array, another hetnn
    Array), the Array API's ``from_dlpack``: on the CPU device host-resident data is shared without a copy unless
    ``copy`` is True (NumPy can see the same memory); any other device, or data not in host memory, is a copy, which
    ``copy=False`` refuses."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: x must support DLPack (have __dlpack__), got {type(x).__name__}")
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"from_dlpack: copy must be None or a bool, got {type(copy).__name__}")
    if isinstance(x, Array):
        target = x.device if device is None else _resolve_device(device)
        if copy is False and target != x.device:
            raise ValueError(f"from_dlpack(copy=False): moving from {x.device.id} to {target.id} is a copy")
        return x.to(target).copy() if copy else x.to(target)
    dev = _resolve_device(device)
    host = _foreign_to_host(x)
    if copy is not True and dev.kind == "cpu" and isinstance(host, np.ndarray) and host.dtype in _READY_DTYPES \
            and host.flags.c_contiguous and host.flags.aligned and host.flags.writeable:
        return Array(_numpy_view(dev._dev, host))
    if copy is False:
        raise ValueError(f"from_dlpack(copy=False): this {type(x).__name__} cannot be shared with {dev.id} without "
                         f"a copy (other memory, layout or dtype)")
    return asarray(np.array(host, copy=True) if dev.kind == "cpu" else host, device=dev)


def empty(shape: ShapeLike, dtype: Any = None, device: DeviceLike = None) -> Array:
    """An uninitialised Array of ``shape`` and ``dtype`` on ``device``; ``dtype`` None: the device's default real
    type (float64 where it has it, else float32), as ``full``'s, ``asarray(1.0)``'s and NumPy's."""
    s = _shape(shape)
    name = None if dtype is None else _name_of(dtype)
    dev = _resolve_device(device)
    return Array(_core.Array.empty(dev._dev, s, name))


def pinned_empty(shape: ShapeLike, dtype: Any = None, device: DeviceLike = None) -> np.ndarray:
    """An uninitialised NumPy array in page-locked ("pinned") host memory of ``device`` (OpenCL: a buffer made with
    CL_MEM_ALLOC_HOST_PTR and kept mapped, the portable way to get memory a GPU's driver copies by DMA), for
    transfers at the link's speed: ``hetnn.asarray(x, device=d)`` uploads from it and ``a.copy_to_host(out=x)``
    downloads into it. The memory lives as long as the array (and its views). On the CPU device, whose memory is host
    memory, an ordinary NumPy array. ``dtype`` as :func:`hetnn.empty`'s."""
    s = _shape(shape)
    dev = _resolve_device(device)
    dt = _dtype(dtype) if dtype is not None else np.dtype(_core.Array.empty(dev._dev, (), None).dtype)  # the core's
    raw = _core.pinned_bytes(dev._dev, int(np.prod(s, dtype=np.int64)) * dt.itemsize)
    if raw is None:
        return np.empty(s, dt)
    return raw.view(dt).reshape(s)


def zeros(shape: ShapeLike, dtype: Any = None, device: DeviceLike = None) -> Array:
    """An Array of zeros of ``shape`` and ``dtype`` on ``device``; ``dtype`` None: the device's default real type,
    as :func:`empty`'s."""
    s = _shape(shape)
    name = None if dtype is None else _name_of(dtype)
    dev = _resolve_device(device)
    return Array(_core.Array.zeros(dev._dev, s, name))


def full(shape: ShapeLike, fill_value: Any, dtype: Any = None, device: DeviceLike = None) -> Array:
    """An Array of ``shape`` filled with ``fill_value`` (a Python number), made on ``device``; ``dtype`` None: bool,
    int64 or the device's default real type (float64 where it has it) after the number's kind."""
    s = _shape(shape)
    name = None if dtype is None else _name_of(dtype)
    return Array(_core.full(_resolve_device(device)._dev, s, fill_value, name))


def ones(shape: ShapeLike, dtype: Any = None, device: DeviceLike = None) -> Array:
    """An Array of ones of ``shape`` and ``dtype`` on ``device``; ``dtype`` None: the device's default real type,
    as :func:`empty`'s."""
    return full(shape, 1 if dtype is not None else 1.0, dtype, device)


def _like(x: Any, what: str) -> "Array":
    return _first(what, x)


def empty_like(x: Array, /, *, dtype: Any = None, device: DeviceLike = None) -> Array:
    """An uninitialised Array of x's shape, and its dtype and device unless given."""
    a = _like(x, "empty_like")
    return empty(a.shape, a.dtype if dtype is None else dtype, a.device if device is None else device)


def zeros_like(x: Array, /, *, dtype: Any = None, device: DeviceLike = None) -> Array:
    """Zeros of x's shape, and its dtype and device unless given."""
    a = _like(x, "zeros_like")
    return zeros(a.shape, a.dtype if dtype is None else dtype, a.device if device is None else device)


def ones_like(x: Array, /, *, dtype: Any = None, device: DeviceLike = None) -> Array:
    """Ones of x's shape, and its dtype and device unless given."""
    a = _like(x, "ones_like")
    return full(a.shape, 1, a.dtype if dtype is None else dtype, a.device if device is None else device)


def full_like(x: Array, /, fill_value: Any, *, dtype: Any = None, device: DeviceLike = None) -> Array:
    """``fill_value`` in x's shape, and its dtype and device unless given."""
    a = _like(x, "full_like")
    return full(a.shape, fill_value, a.dtype if dtype is None else dtype, a.device if device is None else device)


def broadcast_to(x: Array, /, shape: ShapeLike) -> Array:
    """x broadcast to ``shape`` (NumPy's rule), a new Array on x's device."""
    return Array(_core.broadcast_to(_first("broadcast_to", x)._a, shape))


def broadcast_arrays(*arrays: Array) -> List[Array]:
    """The arrays broadcast against each other (NumPy's rule), each a new Array on its own device."""
    xs = [_first("broadcast_arrays", a) for a in arrays]
    shape = _core.broadcast_shapes([a.shape for a in xs])
    return [Array(_core.broadcast_to(a._a, shape)) for a in xs]

