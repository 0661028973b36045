"""The precision float32 matrix products and convolutions compute in (PyTorch's vocabulary): ``"highest"``, float32
throughout, the default; ``"high"``, TF32 matrix units where a device has them (``Device.tf32_mode`` says whether
it does; elsewhere float32 either way). The rule and the state are the core's (core/precision.h): a call's own
``precision=`` wins over this thread's :func:`matmul_precision` block, which wins over
:func:`set_matmul_precision`."""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Optional, Type

from ._loader import _core

if TYPE_CHECKING:
    from ._device import Device


def set_matmul_precision(precision: str) -> None:
    """The process's default precision for float32 ``matmul``, ``conv2d`` and the layers built on them:
    ``"highest"`` (float32) or ``"high"`` (TF32 where a device has matrix units for it). Threads inside a
    :func:`matmul_precision` block keep theirs."""
    _core.set_matmul_precision(precision)


def get_matmul_precision() -> str:
    """The precision a float32 product called now on this thread computes in (without ``precision=`` of its
    own)."""
    return _core.matmul_precision_in_force()


class matmul_precision:  # noqa: N801 - a context manager, named as the setting it scopes
    """``with hetnn.matmul_precision("high"):`` float32 products on this thread in that precision until the block
    ends (other threads are unaffected); the thread's previous setting comes back on exit, exceptions included.
    Blocks nest."""

    def __init__(self, precision: str) -> None:
        self.precision = _core.check_matmul_precision(precision, "matmul_precision")
        self._saved: Optional[str] = None

    def __enter__(self) -> "matmul_precision":
        self._saved = _core.thread_matmul_precision()
        _core.set_thread_matmul_precision(self.precision)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        _core.set_thread_matmul_precision(self._saved)

    def __repr__(self) -> str:
        return f"hetnn.matmul_precision({self.precision!r})"


def compute_mode(device: "Device", dtype: str) -> str:
    """How a product of ``dtype`` computes on ``device`` under the precision in force, in a few words (the bench
    rows' "compute" column; "tf32": float32 data at precision "high")."""
    if dtype in ("float32", "tf32"):  # tf32: float32 data at precision "high" (the bench's tf32 rows)
        high = dtype == "tf32" or get_matmul_precision() == "high"
        if high and device.tf32_mode.startswith("tensor cores"):
            return "tf32 (tensor cores)"
        return "float32 (no TF32 here)" if dtype == "tf32" else "native"
    return {"float16": device.float16_mode, "bfloat16": device.bfloat16_mode}.get(dtype, "native").split(";")[0]


def precision_line() -> Optional[str]:
    """The line a run's report opens with where float32 products may compute in TF32 ("high"); None at
    "highest"."""
    if get_matmul_precision() == "highest":
        return None
    return ("precision: float32 products at 'high' (hetnn.set_matmul_precision): TF32 on the devices whose "
            "tf32_mode says tensor cores, float32 elsewhere; each row's 'precision' says so")
