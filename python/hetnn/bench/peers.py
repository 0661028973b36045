"""Other array libraries run in the same process as hetnn, for side-by-side figures: PyTorch, CuPy and JAX on every
device each of them sees (when importable). Each peer is timed the way hetnn is: inputs already on the device, a
synchronize before and after every timed call, warm-up calls first, the median of the repeats.

Fairness settings, applied before the peer's first use and recorded in the rows' notes:
- TF32 is off for float32 matmuls on NVIDIA GPUs (PyTorch ``allow_tf32 = False``, CuPy ``CUPY_TF32=0``, JAX
  ``jax_default_matmul_precision="highest"``): TF32 rounds the inputs to 10 mantissa bits, which is not float32.
"""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._threads import get_num_threads

# Names accepted by --compare that this module provides (NumPy and the C++ peers live in the suites themselves).
# numba: ``np.dot`` inside ``@njit`` and inside ``@njit(parallel=True)`` (two rows); jax-nojit: ``jnp.matmul``
# called eagerly, op by op, as the published GEMM study ran it (jax: the same under ``jax.jit``).
ARRAY_PEERS = ("torch", "cupy", "jax", "jax-nojit", "numba")


@dataclass
class PeerTarget:
    """One peer library on one of its devices."""
    library: str                                   # "torch", "cupy", "jax"
    device: str                                    # the peer's own name for the device, e.g. "cpu", "cuda:0"
    put: Callable[[np.ndarray, str], Any]          # host array, dtype name -> device array
    get: Callable[[Any], np.ndarray]               # device array -> host NumPy array (float64 for comparison)
    sync: Callable[[], None]                       # waits for all queued work on that device
    matmul: Callable[[Any, Any], Any]              # a @ b, result on the device
    max_pool2d: Optional[Callable[..., Any]] = None  # (x, k, s, p, d, ceil) -> y, where the peer has pooling
    empty: Optional[Callable[[Tuple[int, ...], str], Any]] = None  # an output array, where the peer can fill one
    matmul_out: Optional[Callable[[Any, Any, Any], None]] = None   # a @ b into out (same work as hetnn's out=)
    threads: Callable[[], Optional[int]] = lambda: None           # threads the peer uses on this device
    dtypes: Tuple[str, ...] = ("float32", "float64", "float16", "bfloat16")
    # Turns TF32 on (True) or back off for the peer's float32 products, where it has it (the bench's tf32 rows:
    # float32 data, TF32 on for the timed calls only)
    tf32: Optional[Callable[[bool], None]] = None
    version: str = ""
    notes: List[str] = field(default_factory=list)


def torch_devices(torch: Any) -> List[Tuple[str, Callable[[], None]]]:
    """PyTorch's devices as (name, wait): the CPU with hetnn's thread count (PyTorch's default ignores the affinity
    mask), then every CUDA device with TF32 off (float32 products and convolutions computed in float32)."""
    torch.set_num_threads(get_num_threads())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out: List[Tuple[str, Callable[[], None]]] = [("cpu", lambda: None)]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            out.append((f"cuda:{i}", functools.partial(torch.cuda.synchronize, i)))
    return out


def _torch_targets() -> List[PeerTarget]:
    import torch
    import torch.nn.functional as F

    tdt = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
           "bfloat16": torch.bfloat16}

    def make(dev: str, sync: Callable[[], None]) -> PeerTarget:
        def put(x: np.ndarray, dtype: str) -> Any:
            return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32 if x.dtype.itemsize <= 2 else x.dtype)
                                    ).to(device=dev, dtype=tdt[dtype])

        def get(t: Any) -> np.ndarray:
            return t.detach().to("cpu", torch.float64).numpy()

        def pool(x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool) -> Any:
            return F.max_pool2d(x, k, s, p, d, ceil_mode=ceil)

        def empty(shape: Tuple[int, ...], dtype: str) -> Any:
            return torch.empty(shape, dtype=tdt[dtype], device=dev)

        def matmul_out(a: Any, b: Any, out: Any) -> None:
            torch.matmul(a, b, out=out)

        def tf32(on: bool) -> None:
            torch.backends.cuda.matmul.allow_tf32 = on

        cuda = dev != "cpu"
        return PeerTarget("torch", dev, put, get, sync, torch.matmul, pool, empty, matmul_out,
                          threads=torch.get_num_threads if dev == "cpu" else lambda: None,
                          dtypes=("float32", "float64", "float16", "bfloat16") + (("tf32",) if cuda else ()),
                          tf32=tf32 if cuda else None, version=torch.__version__,
                          notes=["tf32 off"] if cuda else [])

    return [make(dev, sync) for dev, sync in torch_devices(torch)]


def _cupy_targets() -> List[PeerTarget]:
    os.environ.setdefault("CUPY_TF32", "0")
    import cupy as cp

    out = []
    for i in range(cp.cuda.runtime.getDeviceCount()):
        def put(x: np.ndarray, dtype: str, i: int = i) -> Any:
            if dtype == "bfloat16":
                raise TypeError("CuPy has no bfloat16")
            with cp.cuda.Device(i):
                return cp.asarray(np.asarray(x, dtype=dtype))

        def sync(i: int = i) -> None:
            with cp.cuda.Device(i):
                cp.cuda.runtime.deviceSynchronize()

        def matmul(a: Any, b: Any, i: int = i) -> Any:
            with cp.cuda.Device(i):
                return cp.matmul(a, b)

        def empty(shape: Tuple[int, ...], dtype: str, i: int = i) -> Any:
            with cp.cuda.Device(i):
                return cp.empty(shape, dtype=dtype)

        def matmul_out(a: Any, b: Any, out: Any, i: int = i) -> None:
            with cp.cuda.Device(i):
                cp.matmul(a, b, out=out)

        notes = [] if os.environ.get("CUPY_TF32") == "0" else [f"CUPY_TF32={os.environ.get('CUPY_TF32')}"]
        out.append(PeerTarget("cupy", f"cuda:{i}", put, lambda a: cp.asnumpy(a).astype(np.float64), sync, matmul,
                              empty=empty, matmul_out=matmul_out, dtypes=("float32", "float64", "float16"),
                              version=cp.__version__, notes=notes or ["tf32 off"]))
    return out


def _jax_targets() -> List[PeerTarget]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_default_matmul_precision", "highest")
    matmul = jax.jit(jnp.matmul)

    @functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
    def _pool(x: Any, k: int, s: int, p: int, d: int) -> Any:
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, k, k), (1, 1, s, s),
                                     ((0, 0), (0, 0), (p, p), (p, p)), window_dilation=(1, 1, d, d))

    def pool(x: Any, k: int, s: int, p: int, d: int, ceil: bool) -> Any:
        if ceil:
            raise ValueError("the JAX pooling adapter has no ceil_mode")
        return _pool(x, k, s, p, d).block_until_ready()

    out = []
    for d in jax.devices():
        def put(x: np.ndarray, dtype: str, d: Any = d) -> Any:
            return jax.device_put(jnp.asarray(np.asarray(x, dtype=np.float64 if dtype == "float64" else np.float32),
                                              dtype=dtype), d)

        def sync(d: Any = d) -> None:
            # JAX has no device-wide barrier; a zero-size computation on d queued after everything else is one.
            jax.device_put(jnp.zeros(()), d).block_until_ready()

        out.append(PeerTarget("jax", f"{d.platform}:{d.id}", put, lambda a: np.asarray(a, dtype=np.float64),
                              sync, lambda a, b: matmul(a, b).block_until_ready(), pool, version=jax.__version__,
                              notes=["precision highest"]))
    return out


def _jax_nojit_targets() -> List[PeerTarget]:
    import jax
    import jax.numpy as jnp

    out = []
    for t in _jax_targets():
        def matmul(a: Any, b: Any) -> Any:
            with jax.disable_jit():
                return jnp.matmul(a, b).block_until_ready()
        out.append(PeerTarget("jax-nojit", t.device, t.put, t.get, t.sync, matmul, version=t.version,
                              notes=["eager, no jit"] + t.notes))
    return out


def _numba_targets() -> List[PeerTarget]:
    """np.dot compiled by Numba: as written in the published GEMM study, serial and with parallel=True (Numba
    calls the BLAS NumPy links for np.dot on contiguous float arrays; parallel=True lets its own thread pool run
    whatever else the function does). Compiled on the first call per dtype, which warm-up absorbs."""
    import numba

    @numba.njit(cache=False)
    def dot(a: Any, b: Any) -> Any:
        return np.dot(a, b)

    @numba.njit(parallel=True, cache=False)
    def _dot_parallel(a: Any, b: Any) -> Any:
        return np.dot(a, b)

    def dot_parallel(a: Any, b: Any) -> Any:
        # Numba warns at compile time that parallel=True finds nothing to parallelise in np.dot alone (the
        # published study's code as written): the row's note says so instead
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
            return _dot_parallel(a, b)

    def put(x: np.ndarray, dtype: str) -> np.ndarray:
        if dtype not in ("float32", "float64"):
            raise TypeError(f"numba's np.dot takes float32/float64, not {dtype}")
        return np.ascontiguousarray(x, dtype=dtype)

    def get(a: Any) -> np.ndarray:
        return np.asarray(a, dtype=np.float64)

    def threads() -> Optional[int]:
        return int(numba.get_num_threads())
    return [PeerTarget("numba", "cpu", put, get, lambda: None, dot, threads=threads,
                       dtypes=("float32", "float64"), version=numba.__version__, notes=["@njit"]),
            PeerTarget("numba-parallel", "cpu", put, get, lambda: None, dot_parallel, threads=threads,
                       dtypes=("float32", "float64"), version=numba.__version__,
                       notes=["@njit(parallel=True): nothing to parallelise in np.dot alone (Numba's warning)"])]


_FACTORIES: Dict[str, Callable[[], List[PeerTarget]]] = {
    "torch": _torch_targets, "cupy": _cupy_targets, "jax": _jax_targets, "jax-nojit": _jax_nojit_targets,
    "numba": _numba_targets}


def find_peers(names: Sequence[str]) -> Tuple[List[PeerTarget], List[str]]:
    """The targets of the requested peers that can run here, and one note per peer that cannot (not installed, no
    device): a missing peer is reported, never an error."""
    targets: List[PeerTarget] = []
    notes: List[str] = []
    for name in names:
        if name not in _FACTORIES:
            continue
        try:
            found = _FACTORIES[name]()
        except Exception as exc:  # ImportError, or a driver error of an installed GPU library
            notes.append(f"{name}: not used ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
            continue
        if not found:
            notes.append(f"{name}: no device")
        targets.extend(found)
    return targets, notes


def time_calls(fn: Callable[[], Any], sync: Callable[[], None], *, n_warmup: int, n_repeat: int,
               max_duration: Optional[float]) -> List[float]:
    """Wall-clock seconds of ``fn()`` with ``sync()`` after each call, after ``n_warmup`` calls (hetnn's one
    timing core, :func:`hetnn.interleave`, with a single case)."""
    from .._timing import Case, interleave

    r = interleave([Case(getattr(fn, "__name__", "peer"), fn, sync=sync)], n_warmup=n_warmup,
                   n_repeat=max(1, n_repeat), max_duration=max_duration)[0]
    return [float(t) for t in r.wall_times]
