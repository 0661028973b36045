"""Random numbers made on the device: ``hetnn.random.default_rng(seed)`` gives a :class:`Generator` with NumPy's
``random``, ``uniform``, ``normal`` and ``integers``. The stream is counter-based (SplitMix64 over (seed, counter),
the generator hetnn's dropout uses), so one seed gives the same numbers on every device: uniform and integer draws
bit for bit, normal ones up to the device's rounding of log, sqrt and cos. It is not NumPy's stream (PCG64): the
same seed in NumPy gives other numbers. Uniform floats carry the type's precision (53 bits in float64, 24 in
float32, 11 in float16, 8 in bfloat16); normal ones come from the Box-Muller transform of two uniforms (53-bit in
float64, 24-bit otherwise, so float32 draws reach about 5.6 standard deviations)."""
from __future__ import annotations

import operator
import secrets
from typing import Any, List, Optional, Sequence, Union

from ._array import Array, _name_of
from ._device import DeviceLike, device as _resolve_device
from ._loader import _core

SizeLike = Optional[Union[int, Sequence[int]]]


def _size(size: SizeLike) -> Any:
    """NumPy's size: None (one value, a 0-d array), an int or a sequence of ints (the core checks them)."""
    if size is None:
        return ()
    return (size,) if isinstance(size, int) and not isinstance(size, bool) else size


class Generator:
    """A random stream on hetnn's devices; each call takes the next counters, whatever the device."""

    def __init__(self, seed: int) -> None:
        self._g = _core.Generator(seed)

    @property
    def seed(self) -> int:
        """The seed this stream was made from (drawn from the OS when none was given)."""
        return int(self._g.seed)

    def _real(self, dev: Any, dtype: object) -> str:
        if dtype is None:
            return "float64" if "float64" in dev.dtypes else "float32"
        return _name_of(dtype, "hetnn.random: dtype")

    def random(self, size: SizeLike = None, dtype: object = None, *, device: DeviceLike = None) -> Array:
        """Uniform floats in [0, 1) of shape ``size`` (None: a 0-d array) on ``device``; dtype default: float64
        where the device has it, else float32."""
        dev = _resolve_device(device)
        return Array(self._g.uniform(dev._dev, _size(size), self._real(dev, dtype), 0.0, 1.0))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: SizeLike = None, *, dtype: object = None,
                device: DeviceLike = None) -> Array:
        """Uniform floats in [low, high) (rounding may reach ``high`` when it is not 1)."""
        dev = _resolve_device(device)
        return Array(self._g.uniform(dev._dev, _size(size), self._real(dev, dtype), low, high))

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: SizeLike = None, *, dtype: object = None,
               device: DeviceLike = None) -> Array:
        """Normally distributed floats with mean ``loc`` and standard deviation ``scale``."""
        dev = _resolve_device(device)
        return Array(self._g.normal(dev._dev, _size(size), self._real(dev, dtype), loc, scale))

    def standard_normal(self, size: SizeLike = None, dtype: object = None, *, device: DeviceLike = None) -> Array:
        """``normal(0, 1, size)``."""
        return self.normal(0.0, 1.0, size, dtype=dtype, device=device)

    def integers(self, low: int, high: Optional[int] = None, size: SizeLike = None, dtype: object = "int64",
                 endpoint: bool = False, *, device: DeviceLike = None) -> Array:
        """Integers in [low, high) ([low, high] with ``endpoint``; ``integers(n)``: [0, n)) of an integer dtype,
        each value equally likely up to a bias below 2**-64 relative."""
        if high is None:
            low, high = 0, low
        if not isinstance(endpoint, bool):
            raise TypeError(f"hetnn.random: endpoint must be a bool, got {type(endpoint).__name__}")
        for name, v in (("low", low), ("high", high)):
            if isinstance(v, bool) or not hasattr(type(v), "__index__"):
                raise TypeError(f"hetnn.random: {name} must be an int, got {type(v).__name__}")
        last = operator.index(high) - (0 if endpoint else 1)
        dev = _resolve_device(device)
        return Array(self._g.integers(dev._dev, _size(size), _name_of(dtype, "hetnn.random: dtype"),
                                      operator.index(low), last))

    def __repr__(self) -> str:
        return f"hetnn.random.Generator(seed={self.seed}, counters used={self._g.offset})"


def default_rng(seed: Optional[int] = None) -> Generator:
    """A :class:`Generator` from ``seed`` (an int in [0, 2**64); None: 64 bits from the OS)."""
    return Generator(secrets.randbits(64) if seed is None else seed)


__all__: List[str] = ["Generator", "default_rng"]
