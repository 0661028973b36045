"""The one rule for where an op runs, applied to every op the core exports (``placed``):

* hetnn Arrays in -> runs on their device -> Arrays out (all array operands on one device, else ``ValueError``);
* NumPy arrays (or array-likes: PyTorch, CuPy, JAX, DLPack) in -> runs on ``device`` (else the default device) ->
  NumPy out. On the CPU device NumPy memory is used in place and results are returned without a copy; on an
  OpenCL device operands are uploaded and results downloaded.

Everything else (argument types, ranges, dtypes, shapes, defaults) is the core's decision: the arguments that are
not arrays pass through unchanged.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ._array import Array, _host_array, _numpy_view
from ._device import device as _resolve_device
from ._loader import _core


def _names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _check_host_out(op: str, name: str, out: Any, inputs: List[np.ndarray]) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}: {name} must be a NumPy array, got {type(out).__name__}")
    if not out.flags.c_contiguous or not out.flags.writeable or not out.dtype.isnative:
        raise ValueError(f"{op}: {name} must be a writeable, C-contiguous NumPy array in native byte order")
    if any(np.may_share_memory(out, x) for x in inputs):
        # each NumPy array is wrapped on its own, so the core's check on shared buffers cannot see this
        raise ValueError(f"{op}: {name} must not share memory with the inputs")
    return out


def placed(fn: Callable[..., Any], *inputs: str, optional: Sequence[str] = (), outs: Sequence[str] = ("out",),
           reads_out: Optional[Callable[[Dict[str, Any]], bool]] = None,
           positional_optional: bool = False) -> Callable[..., Any]:
    """The public op for core function ``fn``: ``inputs`` name its leading array parameters (positional or by
    keyword), ``optional`` its keyword-only input arrays that may be None (matmul's bias), ``outs`` its
    keyword-only output arrays; ``reads_out(kwargs)`` says whether the op reads an output's contents (matmul with
    beta), so that an OpenCL run uploads it; ``positional_optional``: the optional inputs may also come
    positionally after the inputs (conv2d's bias, as in PyTorch)."""
    op = fn.__name__
    n = len(inputs)
    array_kwargs = tuple(optional) + tuple(outs)
    no_optionals = (None,) * len(optional) if positional_optional else ()  # the core takes them positionally
    whats = [f"{op}: {name}" for name in inputs]

    @functools.wraps(fn)
    def run(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        # The common call: every input a positional hetnn Array, the optional and output arrays hetnn Arrays or
        # None; straight to the core (the general path below spent about 4 us a call in Python, more than a small
        # op's own work).
        if device is None and len(args) >= n and not (positional_optional and len(args) > n):
            core_in = [a._a for a in args[:n] if type(a) is Array]
            if len(core_in) == n:
                if not kwargs:
                    res = fn(*core_in, *no_optionals, *args[n:])
                    return Array(res) if type(res) is _core.Array else _wrap(res, Array)
                outs_given = _fast_arrays(kwargs, array_kwargs, outs)
                if outs_given is not None:
                    leading = [kwargs.pop(k, None) for k in optional] if positional_optional else ()
                    res = fn(*core_in, *leading, *args[n:], **kwargs)
                    if not outs_given and type(res) is _core.Array:
                        return Array(res)
                    return _wrap(res, functools.partial(_as_given, outs_given))
        arrays = list(args[:n])
        for name in inputs[len(arrays):]:
            if name not in kwargs:
                raise TypeError(f"{op}: missing argument {name!r}")
            arrays.append(kwargs.pop(name))
        rest = args[n:]
        if positional_optional:
            for name in optional[:len(rest)]:
                if name in kwargs:
                    raise TypeError(f"{op}: got multiple values for argument {name!r}")
                kwargs[name] = rest[0]
                rest = rest[1:]
        extra = {k: kwargs.pop(k) for k in optional if kwargs.get(k) is not None}
        if positional_optional:
            for name in optional:
                kwargs.pop(name, None)  # None: passed positionally below

        def lead(core_extra: Dict[str, Any]) -> List[Any]:
            """The optional inputs, in order, where the core takes them positionally (popped from core_extra)."""
            return [core_extra.pop(name, None) for name in optional] if positional_optional else []

        given = {k: kwargs.pop(k) for k in outs if kwargs.get(k) is not None}
        on_device = [isinstance(a, Array) for a in arrays]
        if any(on_device):
            if not all(on_device):
                both = "both" if n == 2 else "all"
                raise TypeError(f"{op}: {_names(inputs)} must {both} be hetnn Arrays or {both} NumPy arrays; "
                                f"{inputs[on_device.index(False)]} is not (hetnn.asarray(x, device=...) makes one)")
            where = arrays[0]._a.device.id
            if device is not None and _resolve_device(device).id != where:
                raise ValueError(f"{op}: device={_resolve_device(device).id!r} but {inputs[0]} is on {where}; move "
                                 f"it with .to(device)")
            for k, v in {**extra, **given}.items():
                if not isinstance(v, Array):
                    raise TypeError(f"{op}: {k} must be a hetnn.Array when the operands are, got {type(v).__name__}")
            core_extra = {k: v._a for k, v in extra.items()}
            res = fn(*(a._a for a in arrays), *lead(core_extra), *rest, **core_extra,
                     **{k: v._a for k, v in given.items()}, **kwargs)
            return _wrap(res, functools.partial(_as_given, list(given.values())))  # the caller's out as itself

        for k, v in {**extra, **given}.items():
            if isinstance(v, Array):
                raise TypeError(f"{op}: {k} is a hetnn.Array but the operands are NumPy arrays; pass it as a NumPy "
                                f"array")
        dev = _resolve_device(device)
        hosts = [_host_array(a, None, what) for a, what in zip(arrays, whats)]
        host_extra = {k: _host_array(v, None, f"{op}: {k}") for k, v in extra.items()}
        host_outs = {k: _check_host_out(op, k, v, hosts + list(host_extra.values())) for k, v in given.items()}
        cpu = dev.kind == "cpu"
        put = (lambda h: _numpy_view(dev._dev, h)) if cpu else (lambda h: _core.Array.from_numpy(dev._dev, h))
        core_extra = {k: put(h) for k, h in host_extra.items()}
        if cpu:  # in place on NumPy memory
            core_in = [_numpy_view(dev._dev, h) for h in hosts]
            core_outs = {k: _numpy_view(dev._dev, v) for k, v in host_outs.items()}
        else:
            core_in = [_core.Array.from_numpy(dev._dev, h) for h in hosts]
            read = reads_out is not None and reads_out(kwargs)
            core_outs = {k: _core.Array.from_numpy(dev._dev, v) if read
                         else _core.Array.empty(dev._dev, v.shape, v.dtype.name) for k, v in host_outs.items()}
        res = fn(*core_in, *lead(core_extra), *rest, **core_extra, **core_outs, **kwargs)

        def to_host(a: Any) -> Any:
            for k, c in core_outs.items():
                if a.same_memory(c):  # the caller's out: written in place (CPU) or read back into it
                    if not cpu:
                        a.read_into(host_outs[k])
                    return host_outs[k]
            view = a.host_numpy() if cpu else None
            return a.to_numpy() if view is None else view

        return _wrap(res, to_host)

    return run


def _fast_arrays(kwargs: Dict[str, Any], array_kwargs: Sequence[str], outs: Sequence[str]) -> Optional[List[Array]]:
    """For the direct path: the array keywords swapped for their core arrays, and the output Arrays given; None
    (kwargs untouched) if one is neither a hetnn Array nor None."""
    for k in array_kwargs:
        if k in kwargs and kwargs[k] is not None and type(kwargs[k]) is not Array:
            return None
    given = []
    for k in array_kwargs:
        v = kwargs.get(k)
        if v is not None:
            kwargs[k] = v._a
            if k in outs:
                given.append(v)
    return given


def _as_given(given: List[Array], r: Any) -> Array:
    """r as the caller's output Array it was written into, else a new Array (the Array path's results)."""
    for v in given:
        if r.same_memory(v._a):
            return v
    return Array(r)


def _wrap(res: Any, convert: Callable[[Any], Any]) -> Any:
    if isinstance(res, tuple):
        return tuple(_wrap(r, convert) for r in res)
    return convert(res) if isinstance(res, _core.Array) else res
