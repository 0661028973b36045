"""Plain-text tables and machine-readable output for benchmark rows (lists of dicts)."""
from __future__ import annotations

import os
import platform
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._table import format_table  # noqa: F401  (re-exported: hetnn.bench.format_table)


def collector(say: Optional[Callable[[str], None]], verbose: bool) -> Tuple[List[str], Callable[[str], None]]:
    """(lines, collect): collect(text) keeps a report's line and hands it to ``say``, or prints it when verbose."""
    lines: List[str] = []

    def collect(text: str) -> None:
        lines.append(text)
        if say is not None:
            say(text)
        elif verbose:
            print(text, flush=True)
    return lines, collect


def _versions() -> Dict[str, str]:
    """Installed versions of the peer and plotting libraries (from package metadata: nothing is imported)."""
    from importlib import metadata

    out = {}
    for dist in ("torch", "cupy", "cupy-cuda12x", "cupy-cuda11x", "jax", "jaxlib", "matplotlib", "scipy",
                 "ml_dtypes", "onednn-cpu-gomp"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def _threads() -> Dict[str, Any]:
    from .. import devices

    out: Dict[str, Any] = {"cpu_count": os.cpu_count()}
    try:
        out["affinity"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    cpu = next((d for d in devices() if d.kind == "cpu"), None)
    if cpu is not None:
        out["onednn"] = cpu.info().get("threads")
    if "torch" in sys.modules:  # only when the run used it: importing torch costs seconds
        out["torch"] = sys.modules["torch"].get_num_threads()
    return out


def environment() -> Dict[str, Any]:
    """Metadata stored with every result: versions, devices and drivers, threads, relevant environment
    variables, the ceilings "% of peak" refers to, the timing method, the date."""
    import numpy as np

    from .. import __version__, _cpus, devices, thread_pools
    from .._loader import _core
    from .peak import stored_peaks

    env_keys = ("OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "OMP_PROC_BIND", "OMP_PLACES", "HETNN_DEVICE", "HETNN_CACHE_DIR", "POCL_DEVICES",
                "POCL_MAX_PTHREAD_COUNT", "DNNL_MAX_CPU_ISA", "CUDA_VISIBLE_DEVICES", "CUPY_TF32",
                "OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY")
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": platform.node(),
        "hetnn": __version__, "onednn": _core.onednn_version, "numpy": np.__version__,
        "python": sys.version.split()[0], "platform": platform.platform(), "processor": platform.processor(),
        "cpu_count": os.cpu_count(), "threads": _threads(), "thread_pools": thread_pools(), "libraries": _versions(),
        "numpy_blas": _numpy_blas(),
        "devices": [d.info() for d in devices()],
        "matmul_precision": _core.matmul_precision_in_force(),
        "ceilings": stored_peaks(),
        "cpu_plan": _cpus.last_plan.as_dict() if _cpus.last_plan is not None else None,
        "environment": {k: os.environ[k] for k in env_keys if k in os.environ},
        "timing": "median of repeats after warm-up; wall = host clock around call + synchronize; "
                  "device = sum of device command durations (OpenCL profiling events / oneDNN primitive time); "
                  "figures above the device's measured ceiling (x1.10) are flagged as measurement errors",
    }


def _numpy_blas() -> str:
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")  # NumPy >= 1.25
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older NumPy: no dict mode
        return "unknown"
