"""Loads the native module hetnn._core, with GNU OpenMP's idle spinning bounded.

GNU OpenMP (libgomp, which oneDNN and hetnn's own loops use) keeps its workers spinning on a core after every
parallel region: 300,000 spins by default, 10 ms of CPU per call on an AMD EPYC Zen 4. That CPU belongs to
whatever runs next in the process (NumPy's OpenBLAS, PyTorch, the user's threads): alternating hetnn and NumPy
matmuls on 2 cores made both 4-8x slower than alone. hetnn therefore loads libgomp with GOMP_SPINCOUNT=10000
(0.7 ms of spinning there): enough to bridge the microsecond gaps between the ops of a training step or a burst of
calls, so workers wake without a futex round trip (passive waiting made the 784-128-10 epoch 2.4x slower), short
enough that the cores are free soon after hetnn's work ends (docs/threads.md has the measurements).

libgomp reads its settings once, when it is loaded, so this applies only when hetnn is the first to load it and
the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT: an explicit setting always wins. The variable is removed
again after loading, so child processes see the user's environment. ``SPIN_POLICY`` records what happened.

oneDNN comes from the ``onednn-cpu-gomp`` wheel, which puts ``libdnnl.so.3`` in ``<prefix>/lib``. The extension's
RPATH points there for the usual layouts; when that fails, the library is loaded by the path the wheel recorded
(user installs, relocated environments). That look-up reads package metadata (0.1 s, a third of `import hetnn`),
so it comes second.
"""
from __future__ import annotations

import ctypes
import os


def _preload_onednn() -> None:
    import importlib.metadata as _md

    for name in ("onednn-cpu-gomp", "onednn"):
        try:
            dist = _md.distribution(name)
        except _md.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if str(f).endswith("libdnnl.so.3"):
                path = os.path.abspath(str(dist.locate_file(f)))
                if os.path.exists(path):
                    try:
                        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                        return
                    except OSError:
                        pass


HETNN_SPINCOUNT = "10000"


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return any("libgomp" in line for line in f)
    except OSError:  # not Linux: the answer is unknown, assume not loaded
        return False


def _spin_policy() -> str:
    user = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if k in os.environ}
    if user:
        return "user setting: " + ", ".join(f"{k}={v}" for k, v in user.items())
    if _libgomp_loaded():
        return "libgomp default (it was loaded before hetnn; set GOMP_SPINCOUNT before starting Python to bound it)"
    return f"hetnn default: GOMP_SPINCOUNT={HETNN_SPINCOUNT}"


SPIN_POLICY = _spin_policy()
_set_spin = SPIN_POLICY.startswith("hetnn default")
if _set_spin:
    os.environ["GOMP_SPINCOUNT"] = HETNN_SPINCOUNT
try:
    try:
        from . import _core  # noqa: E402  (loads libgomp too: after the spin setting)
    except ImportError:
        _preload_onednn()
        from . import _core  # noqa: E402
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"hetnn's native module could not be loaded ({exc}). Reinstall with `pip install .` from the repository "
        "(it needs the onednn-cpu-gomp wheel; OpenCL needs Debian's ocl-icd-libopencl1)."
    ) from exc
finally:
    if _set_spin:
        os.environ.pop("GOMP_SPINCOUNT", None)

# NumPy's OpenBLAS (loaded with NumPy) runs its threaded sections on hetnn's threads: see share_blas_threads.
_share = os.environ.get("HETNN_SHARE_BLAS", "1").strip()
if _share not in ("0", "1"):
    import warnings

    warnings.warn(f"HETNN_SHARE_BLAS must be 0 or 1, got {_share!r}: using 1 (OpenBLAS on hetnn's threads)",
                  RuntimeWarning, stacklevel=2)
if _share != "0":
    import numpy  # noqa: F401,E402  (its OpenBLAS must be loaded to be found)

    _core.share_blas_threads(True)

__all__ = ["_core", "SPIN_POLICY"]
