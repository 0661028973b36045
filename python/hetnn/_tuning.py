"""Tuned kernel parameters on disk: ``<cache dir>/tuning/gemm.json``, one entry per device (name + driver version)
and dtype, written by ``python -m hetnn tune gemm`` and applied automatically the first time a device runs a GEMM.

The cache directory is ``$HETNN_CACHE_DIR``, else ``$XDG_CACHE_HOME/hetnn``, else ``~/.cache/hetnn``
(``HETNN_CACHE_DIR=off`` disables it). Writes are atomic (temporary file + rename); a corrupt file is ignored with a
warning and replaced on the next write."""
from __future__ import annotations

import json
import os
import tempfile
import threading
import warnings
from typing import Any, Dict, Optional

from ._device import device as _resolve
from ._loader import _core

FORMAT = 1
_lock = threading.Lock()
_applied: set = set()


def cache_dir() -> Optional[str]:
    base = os.environ.get("HETNN_CACHE_DIR")
    if base is None:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = os.path.join(xdg, "hetnn") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "hetnn")
    if base.strip().lower() in ("off", "0", "none", ""):
        return None
    return base


def tuning_path() -> Optional[str]:
    base = cache_dir()
    return None if base is None else os.path.join(base, "tuning", "gemm.json")


def device_key(device: Any) -> str:
    return f"{device.name}|{device.driver_version}|{device.version}"


def load() -> Dict[str, Any]:
    path = tuning_path()
    if not path or not os.path.exists(path):
        return {}
    try:
        if not os.path.isfile(path):  # a FIFO would block open() for ever
            raise ValueError("not a regular file")
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("devices"), dict):
            raise ValueError("unexpected format")
        devices = data["devices"]
        if not all(isinstance(v, dict) and all(isinstance(e, dict) for e in v.values()) for v in devices.values()):
            raise ValueError("an entry is not a mapping of dtype to parameters")
        return devices
    except (OSError, ValueError) as exc:
        warnings.warn(f"hetnn: ignoring the tuning cache {path} ({exc}); re-run `python -m hetnn tune gemm`",
                      RuntimeWarning, stacklevel=3)
        return {}


def save_entry(device: Any, dtype: str, entry: Dict[str, Any]) -> str:
    """Merges one (device, dtype) entry into the tuning file, atomically. Returns the path."""
    path = tuning_path()
    if path is None:
        raise ValueError("the cache is disabled (HETNN_CACHE_DIR=off): nowhere to store tuning results")
    with _lock:
        devices = load()
        devices.setdefault(device_key(device), {})[dtype] = entry
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".gemm.", suffix=".tmp", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"format": FORMAT, "devices": devices}, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _applied.discard(device.id)
    return path


def ensure_applied(device: Any) -> None:
    """Applies the stored tuned GEMM parameters of an OpenCL device, once per process; afterwards (and for the CPU
    device) a set lookup. ``device``: a hetnn.Device or the native device object (anything with ``.id``)."""
    if device.id in _applied:
        return
    device = _resolve(device.id)
    with _lock:
        if device.id in _applied:
            return
        _applied.add(device.id)
        if device.kind != "opencl":
            return
        entries = load().get(device_key(device), {})
    for dtype, entry in entries.items():
        try:
            _core.set_gemm_params(device._dev, dtype, entry["params"], "tuned " + entry.get("date", ""))
        except (KeyError, TypeError, ValueError) as exc:
            warnings.warn(f"hetnn: ignoring tuned {dtype} GEMM parameters for {device.id} ({exc})", RuntimeWarning,
                          stacklevel=3)
