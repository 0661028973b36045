"""hetnn: neural-network kernels on the CPU (oneDNN) and any OpenCL device, verified against NumPy and timed
honestly (synchronized, warmed up, repeated)."""
from ._loader import _core as _core  # hetnn._core: the native module, for diagnostics and tests
from ._errors import CompileError, HetnnError, OpenCLError
from ._device import Device, default_device, device, devices, get_default_device, set_default_device
from ._array import (Array, asarray, broadcast_arrays, broadcast_to, empty, empty_like, from_dlpack,
                     full, full_like, ones, ones_like, pinned_empty, set_implicit_host_copies, zeros, zeros_like)
from . import _ops
from ._ops import *  # noqa: F403  (the public ops: hetnn._ops.__all__)
from . import _elementwise
from ._elementwise import *  # noqa: F403  (the element-wise functions: hetnn._elementwise.__all__)
from . import _reduction
from ._reduction import *  # noqa: F403  (the reductions: hetnn._reduction.__all__; they shadow builtins here only)
from . import _sorting
from ._sorting import *  # noqa: F403  (sort, argsort: hetnn._sorting.__all__)
from . import _manipulation
from ._user_kernels import ElementwiseKernel, ReductionKernel
from ._manipulation import *  # noqa: F403  (indexing, manipulation, arange/linspace/eye: hetnn._manipulation.__all__)
from . import _namespace
from ._namespace import *  # noqa: F403  (dtypes, constants, finfo/iinfo/isdtype/can_cast: hetnn._namespace.__all__)
from ._namespace import __array_namespace_info__ as __array_namespace_info__
from ._measurement import BenchmarkResult
from ._streams import Event, Stream, current_stream
from ._timing import (Case, Stopwatch, benchmark, empty_cache, interleave, memory_stats, reset_peak_memory_stats,
                      synchronize)
from ._threads import get_num_threads, num_threads, set_num_threads, share_blas_threads, thread_pools
from ._profile import profile
from ._precision import get_matmul_precision, matmul_precision, set_matmul_precision
from . import datasets, linalg, nn, optim, random, transforms  # noqa: E402  (after the core names they use)
from .linalg import tensordot

__array_api_version__ = "2023.12"  # the Array API standard the array functions follow (docs/api.md: which parts)


def __getattr__(name: str) -> str:
    # __version__ on first use: one source, the installed distribution's metadata (pyproject.toml's version); reading
    # it costs a third of `import hetnn`, paid by every process the benchmarks and tests start
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("hetnn")
        except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
            v = "unknown"
        globals()["__version__"] = v
        return v
    raise AttributeError(f"module 'hetnn' has no attribute {name!r}")


__all__ = [
    "Array", "BenchmarkResult", "Case", "CompileError", "Device", "ElementwiseKernel", "HetnnError", "OpenCLError",
    "ReductionKernel", "Stopwatch", "Event", "Stream", "current_stream",
    "asarray", "pinned_empty", "benchmark", "datasets", "transforms", "default_device", "device", "devices", "empty",
    "empty_cache", "memory_stats", "reset_peak_memory_stats", "get_default_device", "get_num_threads", "interleave",
    "linalg", "nn", "num_threads", "optim", "profile", "tensordot",
    "get_matmul_precision", "matmul_precision", "set_matmul_precision",
    "random",
    "set_default_device", "set_implicit_host_copies", "set_num_threads", "share_blas_threads", "synchronize",
    "thread_pools", "zeros",
    "broadcast_arrays", "broadcast_to", "empty_like", "from_dlpack", "full", "full_like", "ones", "ones_like",
    "zeros_like",
]
__all__ += _ops.__all__  # type: ignore[attr-defined]  # _ops.pyi types the ops, not the list
__all__ += _elementwise.__all__
__all__ += _reduction.__all__
__all__ += _sorting.__all__
__all__ += _manipulation.__all__
__all__ += _namespace.__all__
