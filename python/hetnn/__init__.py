"""hetnn: neural-network kernels on the CPU (oneDNN) and any OpenCL device, verified against NumPy and timed
honestly (synchronized, warmed up, repeated)."""
from ._loader import _core as _core  # hetnn._core: the native module, for diagnostics and tests
from ._errors import CompileError, HetnnError, OpenCLError
from ._device import Device, default_device, device, devices, get_default_device, set_default_device
from ._array import Array, asarray, empty, zeros
from . import _ops
from ._ops import *  # noqa: F403  (the public ops: hetnn._ops.__all__)
from ._measurement import BenchmarkResult
from ._timing import Case, Timer, benchmark, empty_cache, interleave, synchronize
from ._threads import get_num_threads, num_threads, set_num_threads, thread_pools
from ._profile import profile
from . import datasets, nn, optim  # noqa: E402  (after the core names they use)

__version__ = "0.1.0"

__all__ = [
    "Array", "BenchmarkResult", "Case", "CompileError", "Device", "HetnnError", "OpenCLError", "Timer", "asarray",
    "benchmark", "default_device", "device", "devices", "empty", "empty_cache", "get_default_device",
    "get_num_threads", "interleave", "num_threads", "profile",
    "set_num_threads", "thread_pools",
    "set_default_device", "synchronize", "zeros", "__version__", "datasets", "nn", "optim",
]
__all__ += _ops.__all__
