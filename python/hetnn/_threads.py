"""How many threads hetnn's CPU device uses, and what every thread pool of the process is set to.

``set_num_threads(n)`` holds for every CPU op on every thread from then on (hetnn's OpenMP loops and oneDNN's);
``num_threads(n)`` does the same for a ``with`` block. hetnn's OpenMP is GNU libgomp, which threadpoolctl lists
(``threadpool_info()``, user_api "openmp") and limits (``threadpool_limits(n)``) like any other pool; such a limit
holds on the thread that set it until hetnn's own setting changes. OpenCL devices on the CPU (PoCL) run their own
threads, set by POCL_MAX_PTHREAD_COUNT before the device starts.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, Iterator, List, Optional

from ._loader import SPIN_POLICY, _core
from ._check import is_int


def set_num_threads(n: Optional[int]) -> None:
    """Threads for every CPU op from now on (``None``: OpenMP's default again, OMP_NUM_THREADS or the CPUs this
    process may run on)."""
    if n is not None and (not is_int(n)):
        raise TypeError(f"set_num_threads: n must be an int >= 1 or None, got {type(n).__name__}")
    if n is not None and int(n) < 1:  # 0 is the core's "default": not a value to pass through
        raise ValueError(f"set_num_threads: n must be >= 1 (or None for the default), got {int(n)}")
    _core.set_num_threads(0 if n is None else int(n))


def get_num_threads() -> int:
    """Threads the next CPU op on this thread will use (after hetnn's setting and any threadpoolctl limit)."""
    return int(_core.get_num_threads())


@contextlib.contextmanager
def num_threads(n: Optional[int]) -> Iterator[int]:
    """``with hetnn.num_threads(1): ...``: ``set_num_threads(n)`` for the block, the previous count after it."""
    before = get_num_threads()
    set_num_threads(n)
    try:
        yield get_num_threads()
    finally:
        set_num_threads(before)


def share_blas_threads(on: bool = True) -> List[Dict[str, Any]]:
    """Runs the threaded sections of every OpenBLAS loaded in the process (NumPy's, SciPy's) on hetnn's threads
    (``on``, the default at import unless ``HETNN_SHARE_BLAS=0``) or on OpenBLAS's own again (``False``).

    OpenBLAS's own workers spin about 0.1 s after each call, and on a machine with few CPUs the next hetnn op shares
    its cores with them (2-13x slower than alone when NumPy and hetnn calls alternate on 2 vCPUs). hetnn's pool
    spins as long as OpenBLAS's own (NumPy keeps its speed) but stops the moment a hetnn op starts, and a NumPy call
    right after a hetnn op runs on hetnn's still-warm OpenMP team. Needs OpenBLAS 0.3.27+ built with pthreads (what
    NumPy's and SciPy's wheels carry); a library loaded after this call is covered by calling it again. Returns one
    entry per OpenBLAS found: ``path``, ``shared`` and, when not shared, ``why``."""
    if not isinstance(on, bool):
        raise TypeError(f"share_blas_threads: on must be True or False, got {type(on).__name__}")
    return [dict(d) for d in _core.share_blas_threads(on)]


_POOL_ENV = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_PROC_BIND", "OMP_PLACES",
             "OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "MKL_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT",
             "POCL_AFFINITY", "HETNN_SHARE_BLAS")


def thread_pools() -> Dict[str, Any]:
    """Every thread pool of the process as far as it can be seen: hetnn's (threads, spin policy), which OpenBLAS
    libraries run on hetnn's threads (``blas_sharing``: :func:`share_blas_threads`, with the pool's counters), those
    threadpoolctl finds (BLAS and OpenMP libraries, with their versions and thread counts), the environment
    variables that set them, and the CPUs this process may run on."""
    out: Dict[str, Any] = {"hetnn": {"threads": get_num_threads(), "spin_policy": SPIN_POLICY},
                           "blas_sharing": {"libraries": [dict(d) for d in _core.blas_libraries()],
                                            **_core.blas_pool_stats()}}
    try:
        out["cpus_allowed"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        out["cpus_allowed"] = os.cpu_count()
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        out["threadpoolctl"] = "not installed"
    else:
        pools: List[Dict[str, Any]] = []
        for p in threadpool_info():
            pools.append({k: p.get(k) for k in ("user_api", "internal_api", "prefix", "version", "num_threads",
                                                "filepath", "threading_layer") if p.get(k) is not None})
        out["pools"] = pools
    out["environment"] = {k: os.environ[k] for k in _POOL_ENV if k in os.environ}
    return out
