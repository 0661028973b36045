"""Plain-text tables and machine-readable output for benchmark rows (lists of dicts)."""
from __future__ import annotations

import csv
import json
import math
import os
import platform
import sys
import time
from typing import Any, Dict, List, Sequence, Tuple


def _cell(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, fmt) if fmt else str(v)


def format_table(rows: List[Dict[str, Any]], columns: Sequence[Tuple[str, str, str]]) -> str:
    """``columns``: (key, header, format spec). Numbers right-aligned."""
    head = [h for _, h, _ in columns]
    body = [[_cell(r.get(k), f) for k, _, f in columns] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    numeric = [bool(f) for _, _, f in columns]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    return "\n".join([line(head), "  ".join("-" * w for w in widths)] + [line(b) for b in body])


def environment() -> Dict[str, Any]:
    """Metadata stored with every result: versions, devices, threads, relevant environment variables."""
    import numpy as np

    from .. import __version__, devices
    from .._loader import _core

    env_keys = ("OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "HETNN_DEVICE", "POCL_DEVICES", "POCL_MAX_PTHREAD_COUNT", "DNNL_MAX_CPU_ISA")
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "hetnn": __version__, "onednn": _core.onednn_version, "numpy": np.__version__,
        "python": sys.version.split()[0], "platform": platform.platform(), "cpu_count": os.cpu_count(),
        "devices": [d.info() for d in devices()],
        "environment": {k: os.environ[k] for k in env_keys if k in os.environ},
        "timing": "median of repeats after warm-up; wall = host clock around call + synchronize; "
                  "device = sum of device command durations (OpenCL profiling events / oneDNN primitive time)",
    }


def write_outputs(rows: List[Dict[str, Any]], prefix: str) -> List[str]:
    """Writes ``prefix.csv`` and ``prefix.json`` (rows + environment); returns the paths."""
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    keys: List[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    with open(prefix + ".json", "w") as f:
        json.dump({"environment": environment(), "rows": rows}, f, indent=1, default=str)
    return [prefix + ".csv", prefix + ".json"]
