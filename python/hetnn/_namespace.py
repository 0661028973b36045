"""The Array API namespace's data types, constants and inspection functions (hetnn.float32 ..., e, pi, inf, nan,
newaxis, finfo, iinfo, isdtype, can_cast, __array_namespace_info__). hetnn's dtypes are NumPy dtype objects (an
Array's .dtype compares equal to them); the promotion rule behind can_cast is the core's (result_type)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ._array import SUPPORTED_DTYPES, Array, _dtype, full
from ._device import Device, DeviceLike, device as _resolve_device, devices as _devices, get_default_device
from ._elementwise import result_type

bool = _dtype("bool")  # noqa: A001  (the Array API's name; hetnn.bool is the dtype, builtins.bool is unchanged)
int8 = _dtype("int8")
uint8 = _dtype("uint8")
int32 = _dtype("int32")
int64 = _dtype("int64")
float16 = _dtype("float16")
bfloat16 = _dtype("bfloat16")
float32 = _dtype("float32")
float64 = _dtype("float64")

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int32", "int64"),
    "unsigned integer": ("uint8",),
    "integral": ("int8", "int32", "int64", "uint8"),
    "real floating": ("float16", "bfloat16", "float32", "float64"),
    "complex floating": (),
    "numeric": ("int8", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"),
}


def _as_dtype(x: Any, what: str) -> np.dtype:
    return x.dtype if isinstance(x, Array) else _dtype(x, what)


def isdtype(dtype: Any, kind: Union[str, Any, Tuple[Any, ...]]) -> Any:
    """Whether ``dtype`` is of ``kind``: a kind name ("bool", "signed integer", "unsigned integer", "integral",
    "real floating", "complex floating", "numeric"), a dtype, or a tuple of them (any of)."""
    dt = _dtype(dtype, "isdtype: dtype")
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: kind must be a dtype or one of {', '.join(map(repr, _KINDS))}, got {kind!r}")
        return dt.name in _KINDS[kind]
    return dt == _dtype(kind, "isdtype: kind")


def can_cast(from_: Any, to: Any, /) -> Any:
    """Whether ``from_`` (a dtype or an Array) promotes to ``to`` under hetnn's type promotion rules."""
    src, dst = _as_dtype(from_, "can_cast: from_"), _dtype(to, "can_cast: to")
    return src == dst or result_type(src, dst) == dst


class finfo_object:
    """Machine limits of a floating dtype (the Array API's finfo object)."""

    def __init__(self, dtype: np.dtype) -> None:
        if dtype.name == "bfloat16":
            import ml_dtypes
            f: Any = ml_dtypes.finfo(dtype)
        else:
            f = np.finfo(dtype)
        self.bits, self.dtype = int(f.bits), dtype
        self.eps, self.max, self.min = float(f.eps), float(f.max), float(f.min)
        self.smallest_normal = float(f.smallest_normal)

    def __repr__(self) -> str:
        return f"hetnn.finfo(resolution={self.eps}, min={self.min}, max={self.max}, dtype={self.dtype.name})"


class iinfo_object:
    """Limits of an integer dtype (the Array API's iinfo object)."""

    def __init__(self, dtype: np.dtype) -> None:
        i = np.iinfo(dtype)
        self.bits, self.max, self.min, self.dtype = int(i.bits), int(i.max), int(i.min), dtype

    def __repr__(self) -> str:
        return f"hetnn.iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"


def finfo(type: Any, /) -> finfo_object:  # noqa: A002  (the Array API's parameter name)
    """Machine limits of a floating dtype (or of an Array's dtype)."""
    dt = _as_dtype(type, "finfo")
    if not isdtype(dt, "real floating"):
        raise TypeError(f"finfo: {dt.name} is not a floating dtype (iinfo describes integers)")
    return finfo_object(dt)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype (or of an Array's dtype)."""
    dt = _as_dtype(type, "iinfo")
    if not isdtype(dt, "integral"):
        raise TypeError(f"iinfo: {dt.name} is not an integer dtype (finfo describes floating ones)")
    return iinfo_object(dt)


class _Info:
    """What the namespace offers (the Array API's inspection object)."""

    def capabilities(self) -> Dict[str, Any]:
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 8}

    def default_device(self) -> Device:
        return get_default_device()

    def devices(self) -> List[Device]:
        return list(_devices())

    def default_dtypes(self, *, device: DeviceLike = None) -> Dict[str, Optional[np.dtype]]:
        dev = _resolve_device(device) if device is not None else get_default_device()
        real = full((), 1.0, device=dev).dtype  # the core's default real type on that device
        return {"real floating": real, "complex floating": None, "integral": int64, "indexing": int64}

    def dtypes(self, *, device: DeviceLike = None, kind: Any = None) -> Dict[str, np.dtype]:
        # the Array API's data types the device holds (float16 and bfloat16 are hetnn's own: Device.dtypes has them)
        dev = _resolve_device(device) if device is not None else get_default_device()
        names = [n for n in SUPPORTED_DTYPES if n in dev.dtypes and n not in ("float16", "bfloat16")]
        return {n: _dtype(n) for n in names if kind is None or isdtype(n, kind)}


def __array_namespace_info__() -> _Info:
    """The namespace's inspection object: capabilities, devices and the dtypes they hold."""
    return _Info()


__all__: List[str] = ["bfloat16", "bool", "can_cast", "e", "finfo", "float16", "float32", "float64", "iinfo",
                      "inf", "int32", "int64", "int8", "isdtype", "nan", "newaxis", "pi", "uint8"]
