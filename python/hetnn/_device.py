"""Devices: the oneDNN CPU device (``"cpu"``) and every OpenCL device (``"opencl:P:D"``, also ``"opencl:N"``)."""
from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from ._loader import _core

DeviceLike = Union["Device", str, None]


def _fmt_bytes(n: int) -> str:
    if not n:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n % size else f"{n // size} {unit}"
    return f"{n} B"


class Device:
    """One compute device. Obtain with :func:`hetnn.devices` or :func:`hetnn.device`; never construct directly."""

    __slots__ = ("_dev", "_info")

    def __init__(self, core_device: Any) -> None:
        self._dev = core_device
        self._info: Dict[str, Any] = dict(core_device.info)

    # ``with hetnn.device("opencl"):`` makes it the default device inside the block, for this thread or task only
    # (as CuPy's and PyTorch's device contexts do); blocks nest, on one device or several.
    def __enter__(self) -> "Device":
        _entered.set(_entered.get() + (_context_default.set(self),))
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _entered.get()
        _entered.set(stack[:-1])
        _context_default.reset(stack[-1])

    # identity -------------------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """``"cpu"`` or ``"opencl:P:D"``."""
        return self._info["id"]

    @property
    def kind(self) -> str:
        """The backend that runs it: ``"cpu"`` (oneDNN and hetnn's own loops, in host memory) or ``"opencl"``."""
        return self._info["kind"]

    def cl_handles(self) -> Optional[Dict[str, int]]:
        """The device's OpenCL ``context``, ``queue`` (the device's own in-order queue, not a hetnn.Stream's) and
        ``device`` handles as integers, for another OpenCL library (PyOpenCL:
        ``pyopencl.Context.from_int_ptr(h["context"])``); None on the CPU device. Work put on that queue runs in order
        with hetnn's work outside streams; on another queue, or beside streams, call :func:`hetnn.synchronize` first."""
        return _core._cl_handles(self._dev)

    @property
    def type(self) -> str:
        """Hardware type: ``"cpu"``, ``"gpu"``, ``"accelerator"`` or ``"other"``."""
        return self._info["type"]

    @property
    def name(self) -> str:
        return self._info["name"]

    @property
    def vendor(self) -> str:
        return self._info["vendor"]

    @property
    def arch(self) -> str:
        """Hardware architecture where the driver says it: ``"sm_90"`` on NVIDIA (compute capability), ``"gfx90a"``
        on AMD; ``""`` elsewhere."""
        return self._info["arch"]

    @property
    def driver_version(self) -> str:
        return self._info["driver_version"]

    @property
    def identity(self) -> str:
        """What stored files (compiled programs, tuned parameters, measured ceilings) are keyed by: the device and
        its driver."""
        return self._info["identity"]

    @property
    def version(self) -> str:
        return self._info["version"]

    @property
    def platform(self) -> str:
        return self._info["platform"]

    @property
    def platform_version(self) -> str:
        return self._info["platform_version"]

    @property
    def platform_index(self) -> Optional[int]:
        """P in ``"opencl:P:D"`` (None for the CPU device)."""
        return self._info["platform_index"] if self._info["platform_index"] >= 0 else None

    @property
    def device_index(self) -> Optional[int]:
        """D in ``"opencl:P:D"`` (None for the CPU device)."""
        return self._info["device_index"] if self._info["device_index"] >= 0 else None

    @property
    def ordinal(self) -> Optional[int]:
        """N in ``"opencl:N"`` (None for the CPU device)."""
        return self._info["ordinal"] if self._info["ordinal"] >= 0 else None

    # capabilities ---------------------------------------------------------------------------------------------
    @property
    def compute_units(self) -> int:
        return self._info["compute_units"]

    @property
    def clock_mhz(self) -> int:
        return self._info["clock_mhz"]

    @property
    def global_mem(self) -> int:
        """Bytes of device memory (host memory for the CPU device)."""
        return self._info["global_mem"]

    @property
    def local_mem(self) -> int:
        """Bytes of OpenCL local memory per work-group (the CPU device reports its per-core L2 cache)."""
        return self._info["local_mem"]

    @property
    def cache_size(self) -> int:
        """Bytes of the last-level cache in front of device memory (0 when the driver does not say). Working sets
        larger than it are bounded by the device's memory bandwidth; smaller ones may run faster."""
        return self._info.get("cache_size", 0)

    @property
    def max_alloc(self) -> int:
        return self._info["max_alloc"]

    @property
    def max_work_group_size(self) -> int:
        return self._info["max_work_group_size"]

    @property
    def fp64(self) -> bool:
        return self._info["fp64"]

    @property
    def fp16(self) -> bool:
        return self._info["fp16"]

    @property
    def bf16(self) -> bool:
        return self._info["bf16"]

    @property
    def float16_mode(self) -> str:
        """How float16 ops compute here: ``"native (...)"`` in float16; ``"tensor cores (...)"``: matrix products on
        the GPU's matrix units with float32 accumulation (decided by a probe product on first use, which this
        property runs); or ``"converted (...)"``: stored as float16, computed in float32 (with the conversion used,
        and on an OpenCL device why the matrix units are not used)."""
        return self._mode("float16")

    @property
    def bfloat16_mode(self) -> str:
        """How bfloat16 ops compute here (as :attr:`float16_mode`)."""
        return self._mode("bfloat16")

    @property
    def tf32_mode(self) -> str:
        """What float32 products compute in here at precision ``"high"`` (:func:`hetnn.set_matmul_precision`):
        ``"tensor cores (...)"``, the inputs rounded to TF32 (10 mantissa bits) on the GPU's matrix units with
        float32 accumulation (decided by a probe product on first use, which this property runs); or ``"float32
        (exact) ..."`` with the reason, as at ``"highest"``."""
        return self._mode("tf32")

    def _mode(self, dtype: str) -> str:
        mode = _core.precision_mode(self._dev, dtype) if self.kind == "opencl" else None
        return mode if mode is not None else self._info[f"{dtype}_mode"]

    @property
    def dtypes(self) -> List[str]:
        """The dtypes arrays (and matmul, for the floating ones) may have on this device."""
        return list(self._info["dtypes"])

    @property
    def isa(self) -> str:
        """CPU device: the instruction set oneDNN runs with (e.g. ``avx512_core``)."""
        return self._info["isa"]

    @property
    def threads(self) -> int:
        """CPU device: the number of threads oneDNN uses."""
        return self._info["threads"]

    @property
    def extensions(self) -> List[str]:
        return self._info["extensions"].split()

    def info(self) -> Dict[str, Any]:
        """Everything known about the device, as a dict (the 16-bit and tf32 modes as :attr:`float16_mode` and
        :attr:`tf32_mode` give them)."""
        return {**self._info, "float16_mode": self.float16_mode, "bfloat16_mode": self.bfloat16_mode,
                "tf32_mode": self.tf32_mode, "conv_algorithm": self.conv_algorithm}

    def synchronize(self) -> None:
        """Waits until all work issued to this device, on every stream, has finished."""
        self._dev.synchronize()

    @property
    def conv_algorithm(self) -> str:
        """How this device's convolutions pick their algorithm (:meth:`set_conv_algorithm`): ``"auto"`` (the
        device's own rule), ``"benchmark"``, or the one forced."""
        return _core.conv_algorithm(self._dev)

    def set_conv_algorithm(self, algorithm: str) -> None:
        """OpenCL devices: ``"auto"`` (the device's rule: on a GPU Winograd F(2x2, 3x3) for float32 3x3 stride-1 layers
        of 2+ images, else the implicit GEMM where the GEMM parameters are a GPU family; on CPU-type devices the
        GEMM's panels packed from the images where its B is not read in place, and for the weight gradient of
        stride-1 layers where that moves less than a column buffer; else im2col and a GEMM);
        ``"benchmark"``: per layer shape, the first call times every algorithm that applies (interleaved rounds, at
        least three and 0.1 s of them, the fastest call of each deciding; twice as many where other processes took the
        CPUs, and the choice flagged; the data gradient of stride-1 layers as a forward convolution, itself measured,
        against GEMM + col2im; the weight gradient, where both apply, as the implicit GEMM against im2col) and that
        shape keeps the fastest for the process, or until the GEMM parameters change (:meth:`conv_choices` lists them),
        as PyTorch's ``cudnn.benchmark``; or one of ``"winograd"``, ``"winograd4"`` (F(4x4, 3x3): fewer products, a
        larger rounding error), ``"implicit"``, ``"im2col"`` for every layer it applies to (the data gradient of
        stride-1 layers as a forward convolution with it, unless ``"im2col"``). The CPU device takes only ``"auto"``
        (oneDNN picks). ``HETNN_CONV_ALGORITHM`` sets every OpenCL device's at its creation (the bench's and study's
        ``--conv-algorithm``)."""
        _core.set_conv_algorithm(self._dev, algorithm)

    def conv_choices(self) -> List[Dict[str, Any]]:
        """What ``"benchmark"`` chose so far: per layer shape, ``{"shape", "algorithm", "ms", "calls", "flags"}``:
        each candidate's fastest call in milliseconds, the number of calls each had, and ``flags`` (empty, or why
        the choice may not be the fastest: other processes or the hypervisor took the CPUs while it was measured;
        :func:`hetnn.bench.run` and ``study`` reports say so in a note)."""
        return list(_core.conv_choices(self._dev))

    def transfer_paths(self) -> Dict[str, str]:
        """How copies of 4 MiB or more between this device and ordinary (pageable) NumPy memory go, per direction
        ("h2d", "d2h"): directly, or staged through page-locked memory in double-buffered chunks, with what the
        device measured at the first such copy to decide (``HETNN_STAGING=0`` / ``1`` forces it). Empty on the CPU
        device (its memory is host memory) and before the device's first use."""
        return dict(self._dev.transfer_paths())

    # presentation ---------------------------------------------------------------------------------------------
    def _summary(self) -> str:
        i = self._info
        if self.kind == "cpu":
            extra = f"{i['isa']}, {i['threads']} threads"
        else:
            extra = f"{i['compute_units']} CUs, local {_fmt_bytes(i['local_mem'])}, wg {i['max_work_group_size']}"
        fp = "fp64, " if i["fp64"] else ""
        return (f"{i['id']}: {i['name']!r} [{i['type']}, {i['kind']}] {i['vendor']}, {i['driver_version']}, "
                f"{extra}, mem {_fmt_bytes(i['global_mem'])}, {fp}float16 {i['float16_mode']}, "
                f"bfloat16 {i['bfloat16_mode']}")

    def __repr__(self) -> str:
        return f"<hetnn.Device {self._summary()}>"

    def __str__(self) -> str:
        return self.id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __reduce__(self):  # pickles as its id, resolved again on load
        return (device, (self.id,))


def conv_algorithm_line(devs: List[Device]) -> Optional[str]:
    """The line a run's report opens with where an OpenCL device's convolutions do not follow its own rule
    (:meth:`Device.set_conv_algorithm`, ``--conv-algorithm``); None where all are "auto"."""
    odd = [f"{d.id} {d.conv_algorithm}" for d in devs if d.kind == "opencl" and d.conv_algorithm != "auto"]
    return f"conv algorithm: {', '.join(odd)} (Device.set_conv_algorithm), not the device's own rule" if odd else None


def conv_choice_notes(devs: List[Device]) -> List[str]:
    """A report's notes on the convolution algorithms ``"benchmark"`` chose in this process while other processes
    or the hypervisor took the CPUs (each such choice carries ``flags``): they may not be the fastest."""
    notes = []
    for d in devs:
        choices = d.conv_choices() if d.kind == "opencl" else []
        busy = [c for c in choices if c.get("flags")]
        if busy:  # each flag names its own span of calls; the note keeps only the reasons, once each
            why = "; ".join(sorted({c["flags"].split(" (")[0] for c in busy}))
            notes.append(f"{d.id}: {len(busy)} of {len(choices)} convolution algorithm choices of \"benchmark\" "
                         f"were {why}: they may not be the fastest (Device.conv_choices())")
    return notes


_devices: Optional[List[Device]] = None
_by_id: Dict[str, Device] = {}


def devices() -> List[Device]:
    """Every device hetnn can use: ``cpu`` first, then each OpenCL device in platform order."""
    global _devices
    if _devices is None:
        _devices = [Device(d) for d in _core.devices()]
        _by_id.update({d.id: d for d in _devices})
    return list(_devices)


def _wrap(core_device: Any) -> Device:
    devices()
    return _by_id[core_device.id]


def device(spec: DeviceLike = None) -> Device:
    """Resolves a device spec.

    ``spec`` may be a :class:`Device`, ``None`` (the default device), an id (``"cpu"``, ``"opencl:0:0"``,
    ``"opencl:1"``), PyOpenCL's ``"P:D"`` or ``"P"`` (platform and device indices), a type (``"cpu"`` is the oneDNN
    device; ``"gpu"``, ``"accelerator"``, ``"opencl:cpu"`` pick the first such OpenCL device; ``"opencl"`` the one
    ``$PYOPENCL_CTX`` names, else the first) or a case-insensitive part of one device's name, vendor, platform or
    version (``"pocl"``, ``"nvidia"``). Raises ``ValueError`` listing the devices when nothing matches, and listing
    the matches when a name part matches more than one.
    """
    if spec is None:
        return get_default_device()
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, str):
        return _wrap(_core.find_device(spec))
    raise TypeError(f"device must be a hetnn.Device, a device spec string or None, got {type(spec).__name__}")


_default_spec: Optional[str] = None
# the tokens of the `with device:` blocks open in this context, innermost last
_entered: contextvars.ContextVar[Tuple[contextvars.Token, ...]] = contextvars.ContextVar("hetnn_device_blocks",
                                                                                          default=())
_context_default: contextvars.ContextVar[Optional[Device]] = contextvars.ContextVar("hetnn_default_device",
                                                                                      default=None)


def get_default_device() -> Device:
    """The device used when none is given: innermost ``with default_device(...)``, else the one set with
    :func:`set_default_device`, else ``$HETNN_DEVICE``, else ``cpu``."""
    dev = _context_default.get()
    if dev is not None:
        return dev
    if _default_spec is not None:
        return _by_id[_default_spec]
    env = os.environ.get("HETNN_DEVICE", "")
    dev = _env_default.get(env)
    if dev is None:
        spec = env.strip() or "cpu"
        try:
            dev = device(spec)
        except ValueError as exc:
            raise ValueError(f"HETNN_DEVICE={env!r}: {exc}") from None
        _env_default[env] = dev
    return dev


_env_default: Dict[str, Device] = {}  # $HETNN_DEVICE value -> device, so the lookup is a dict hit


def set_default_device(spec: DeviceLike) -> Device:
    """Sets the process-wide default device (``None`` restores ``$HETNN_DEVICE`` / ``cpu``); returns it."""
    global _default_spec
    if spec is None:
        _default_spec = None
        return get_default_device()
    dev = device(spec)
    _default_spec = dev.id
    return dev


@contextlib.contextmanager
def default_device(spec: DeviceLike) -> Iterator[Device]:
    """``with hetnn.default_device("opencl"):`` runs the block with that default device (per thread/task)."""
    dev = device(spec)
    token = _context_default.set(dev)
    try:
        yield dev
    finally:
        _context_default.reset(token)


def devices_table() -> str:
    """A table of all devices, as printed by ``python -m hetnn devices``."""
    rows = [("id", "type", "backend", "name", "vendor", "driver", "CUs", "memory", "local", "max wg", "fp64",
             "float16", "bfloat16", "float32 at 'high'", "notes")]
    for d in devices():
        i = d._info
        alias = f"opencl:{i['ordinal']}" if i["ordinal"] >= 0 else ""
        notes = f"{i['isa']}, {i['threads']} threads" if d.kind == "cpu" else alias
        rows.append((d.id, d.type, d.kind, d.name, d.vendor, d.driver_version, str(d.compute_units),
                     _fmt_bytes(d.global_mem), _fmt_bytes(d.local_mem),
                     str(d.max_work_group_size or "-"), "yes" if d.fp64 else "no", d.float16_mode,
                     d.bfloat16_mode, d.tf32_mode.split(";")[0], notes))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    status = _core.opencl_status()
    if status:
        lines.append(f"(OpenCL: {status})")
    return "\n".join(lines)
