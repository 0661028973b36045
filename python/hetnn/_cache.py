"""Where hetnn keeps its files, and the tuning store, as the core decides them (``cache_dir.cpp``,
``gemm_tuning.cpp``): ``$HETNN_CACHE_DIR``, else ``$XDG_CACHE_HOME/hetnn``, else ``~/.cache/hetnn``
(``HETNN_CACHE_DIR=off`` disables it). Tuned GEMM parameters live in ``<cache>/tuning/gemm.json``; the core applies
them the first time a device needs GEMM parameters, whichever op asks."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

from ._loader import _core


def cache_dir() -> Optional[str]:
    """hetnn's cache directory (not created), or None when disabled."""
    return _core.cache_dir()


def tuning_path() -> Optional[str]:
    return _core.tuning_path()


def save_entry(device: Any, dtype: str, entry: Dict[str, Any]) -> str:
    """Merges one (device, dtype) entry into the tuning file, atomically. Returns the path."""
    return _core.store_tuned_gemm(device._dev, dtype, json.dumps(entry))
