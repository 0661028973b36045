"""OpenBLAS's idle spin, shortened for a measuring block in a process that loaded it with its default.

OpenBLAS's worker threads spin for 2^28 cycles (about 0.1 s) after each call before they sleep, and read the
length (``OPENBLAS_THREAD_TIMEOUT``) only when the library loads: a notebook or a script has loaded NumPy long
before it measures anything. Interleaved rounds wait for a pool to go quiet before the next case's turn, so each
NumPy turn cost 0.11 s of waiting (notebook 02 took 50.6 s quiet against 24.9 s with a core busy, where one thread
has no workers). The library exports what ``fork`` uses: ``openblas_read_env`` reads the environment again and
``blas_thread_shutdown_`` ends the workers, which the next call starts anew with the length read. The block below
does that with :data:`hetnn._cpus.SHORT_SPINS` and puts the default back at its end. An OpenBLAS that runs on
hetnn's threads (:func:`hetnn.share_blas_threads`) is left alone and hetnn's pool spins the shorter length instead:
its own workers are idle, and ending them would only make the next call start new ones that spin their full
length once.

Only where every OpenBLAS in the process exports both, and never where the user set the variable. The workers end
and restart while no BLAS call runs in this thread; a BLAS call running meanwhile in another thread of the same
process would lose its workers (the measuring functions run the peers in the calling thread).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Iterator, List

VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
DEFAULT = "28"  # OpenBLAS's compiled-in default: 2^28 cycles


def _on_pool(lib: ctypes.CDLL) -> bool:
    """Whether this OpenBLAS's threading runs on hetnn's pool now."""
    from ._loader import _core

    return any(x["shared"] and os.path.realpath(x["path"]) == os.path.realpath(lib._name)
               for x in _core.blas_libraries())


def _libraries() -> List[ctypes.CDLL]:
    """The OpenBLAS libraries loaded in this process that can change their spin, or [] if any cannot."""
    try:
        from threadpoolctl import threadpool_info
        paths = [p["filepath"] for p in threadpool_info() if p.get("internal_api") == "openblas"]
    except Exception:  # threadpoolctl cannot read the pools here
        return []
    libs = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD) if hasattr(os, "RTLD_NOLOAD") else ctypes.CDLL(path)
            lib.openblas_read_env, lib.blas_thread_shutdown_  # noqa: B018 - both must exist
            lib.openblas_thread_timeout.restype = ctypes.c_int
        except (OSError, AttributeError):
            return []
        libs.append(lib)
    return libs


def can_shorten() -> bool:
    """Whether :func:`short_spins` takes effect here: OpenBLAS is loaded, the user left its spin alone, and every
    copy exports the calls it needs."""
    return VARIABLE not in os.environ and bool(_libraries())


def _set(libs: List[ctypes.CDLL], value: str) -> None:
    os.environ[VARIABLE] = value
    try:
        for lib in libs:
            lib.openblas_read_env()
            lib.blas_thread_shutdown_()  # the next call starts the workers with the length just read
    finally:
        del os.environ[VARIABLE]


def timeouts() -> List[int]:
    """The spin length of each loaded OpenBLAS's idle workers: the one it read from the environment (0: none set, its
    default), or hetnn's pool's where it runs on hetnn's threads."""
    from ._loader import _core

    return [_core.blas_spin_exponent(0) if _on_pool(lib) else lib.openblas_thread_timeout() for lib in _libraries()]


@contextlib.contextmanager
def short_spins(value: str = "24") -> Iterator[bool]:
    """Inside the block OpenBLAS's workers spin 2^``value`` cycles after a call (2^24: a few ms) instead of 2^28;
    the default is back after it. Yields whether it took effect."""
    libs = _libraries() if VARIABLE not in os.environ else []
    if not libs:
        yield False
        return
    from ._loader import _core

    libs = [lib for lib in libs if not _on_pool(lib)]
    _set(libs, value)
    before = _core.blas_spin_exponent(int(value))  # the same for hetnn's pool, where OpenBLAS runs on it
    try:
        yield True
    finally:
        _core.blas_spin_exponent(before)
        _set(libs, DEFAULT)
