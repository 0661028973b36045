"""hetnn's exception types.

Bad arguments raise the built-in ``ValueError``/``TypeError``; failed allocations raise ``MemoryError``. Driver
failures raise :class:`OpenCLError` (``status``, ``status_name``, ``call``), kernel build failures raise
:class:`CompileError` (``log``, ``options``, ``kernel``, ``device``); both derive from :class:`HetnnError`.
"""
from ._loader import _core

HetnnError = _core.HetnnError
OpenCLError = _core.OpenCLError
CompileError = _core.CompileError

__all__ = ["HetnnError", "OpenCLError", "CompileError"]
