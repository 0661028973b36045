"""Loads the native module hetnn._core.

oneDNN comes from the ``onednn-cpu-gomp`` wheel, which puts ``libdnnl.so.3`` in ``<prefix>/lib``. The extension's
RPATH points there for the usual layouts; loading the library by its recorded path first also covers the rest
(user installs, relocated environments).
"""
from __future__ import annotations

import ctypes
import importlib.metadata as _md
import os


def _preload_onednn() -> None:
    for name in ("onednn-cpu-gomp", "onednn"):
        try:
            dist = _md.distribution(name)
        except _md.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if str(f).endswith("libdnnl.so.3"):
                path = os.path.abspath(dist.locate_file(f))
                if os.path.exists(path):
                    try:
                        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                        return
                    except OSError:
                        pass


_preload_onednn()

try:
    from . import _core  # noqa: E402
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"hetnn's native module could not be loaded ({exc}). Reinstall with `pip install .` from the repository "
        "(it needs the onednn-cpu-gomp wheel; OpenCL needs Debian's ocl-icd-libopencl1)."
    ) from exc

__all__ = ["_core"]
