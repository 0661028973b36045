"""Datasets for the examples and benchmarks: Fashion-MNIST from Debian's files, an IDX reader, XOR, and a seeded
synthetic stand-in for the solar-sensor regression."""
from __future__ import annotations

import gzip
import os
from typing import Optional, Tuple, Union

import numpy as np
from ._check import is_int

PathLike = Union[str, "os.PathLike[str]"]

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"

# IDX type codes -> big-endian NumPy dtypes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT").
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: PathLike) -> np.ndarray:
    """An IDX file (optionally gzip-compressed, by the .gz suffix) as a native-endian NumPy array of its shape.
    Raises ValueError for a file that is not IDX (bad magic, unknown type, size not matching its header)."""
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as exc:
        raise ValueError(f"read_idx: cannot read {path} ({exc})") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"read_idx: {path} is not an IDX file (bad magic number)")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"read_idx: {path}: unknown IDX element type 0x{code:02x}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"read_idx: {path}: truncated header")
    shape = tuple(int(v) for v in np.frombuffer(data, ">u4", ndim, 4))
    dt = np.dtype(_IDX_TYPES[code])
    expected = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if len(data) - header != expected:
        raise ValueError(f"read_idx: {path}: header says shape {shape} ({expected} bytes of data), the file has "
                         f"{len(data) - header}")
    return np.frombuffer(data, dt, offset=header).reshape(shape).astype(dt.newbyteorder("="))


def _find(directory: str, stem: str) -> str:
    for name in (stem, stem + ".gz"):
        p = os.path.join(directory, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(
        f"fashion_mnist: {stem}[.gz] not found in {directory}. The data ships in Debian's "
        f"'{FASHION_MNIST_PACKAGE}' package (apt-get install {FASHION_MNIST_PACKAGE}; the README's set-up command "
        f"installs it), or pass path= to a directory holding the four IDX files.")


def fashion_mnist(path: Optional[PathLike] = None) -> Tuple[Tuple[np.ndarray, np.ndarray],
                                                             Tuple[np.ndarray, np.ndarray]]:
    """``(x_train, y_train), (x_test, y_test)`` as Keras returns them: uint8 images of shape (n, 28, 28) and
    uint8 labels 0..9 (60,000 training and 10,000 test samples), read from the IDX files in ``path`` (default
    /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist)."""
    d = os.fspath(path) if path is not None else FASHION_MNIST_DIR
    if not os.path.isdir(d):
        _find(d, "train-images-idx3-ubyte")  # raises the error naming the package
    parts = []
    for prefix in ("train", "t10k"):
        x = read_idx(_find(d, f"{prefix}-images-idx3-ubyte"))
        y = read_idx(_find(d, f"{prefix}-labels-idx1-ubyte"))
        if x.ndim != 3 or y.ndim != 1 or x.shape[0] != y.shape[0]:
            raise ValueError(f"fashion_mnist: {prefix} files have shapes {x.shape} and {y.shape}; expected "
                             f"(n, 28, 28) images and (n,) labels")
        parts.append((x, y))
    return parts[0], parts[1]


def xor(dtype: str = "float32") -> Tuple[np.ndarray, np.ndarray]:
    """The four XOR points: x (4, 2), y (4, 1) with y = x0 xor x1."""
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=dtype)
    y = np.array([[0], [1], [1], [0]], dtype=dtype)
    return x, y


def solar_irradiance(n_samples: int = 20000, n_sensors: int = 50, horizon: int = 1, test_fraction: float = 0.2,
                     seed: int = 0, dtype: str = "float32") -> Tuple[Tuple[np.ndarray, np.ndarray],
                                                                      Tuple[np.ndarray, np.ndarray]]:
    """A synthetic stand-in for the classic solar-sensor regression: ``n_sensors`` correlated irradiance series
    (inputs) and one target sensor; predict the target's value ``horizon`` steps ahead from the inputs' current
    values. Returns ``(x_train, y_train), (x_test, y_test)`` split in time order (the last ``test_fraction`` is the
    test set), x of shape (n, n_sensors), y of shape (n, 1), in W/m^2 / 1000.

    The model (all of it seeded by ``seed``): one sample per 5 minutes; a clear-sky curve max(0, sin) over a 24 h day
    with a seasonal amplitude; a cloud-cover factor shared by all sensors (an AR(1) process, clipped to [0.1, 1]);
    each sensor sees that cover with a lag of 0..6 samples (clouds drift across the field) and its own gain and
    noise. The target is one more sensor of the same kind, so the inputs carry most of its future value."""
    for v, name in ((n_samples, "n_samples"), (n_sensors, "n_sensors"), (horizon, "horizon")):
        if not is_int(v) or v <= 0:
            raise ValueError(f"solar_irradiance: {name} must be a positive int, got {v!r}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"solar_irradiance: test_fraction must be in (0, 1), got {test_fraction!r}")
    rng = np.random.default_rng(seed)
    max_lag = 6
    total = n_samples + horizon + max_lag
    t = np.arange(total)
    day = 288  # 5-minute samples per day
    season = 0.8 + 0.2 * np.sin(2 * np.pi * t / (day * 365))
    clear = np.maximum(0.0, np.sin(np.pi * ((t % day) - day / 4) / (day / 2))) * season
    cover = np.empty(total)
    c = 0.7
    for i in range(total):
        c = 0.98 * c + 0.02 * 0.7 + 0.05 * rng.standard_normal()
        cover[i] = c
    cover = np.clip(cover, 0.1, 1.0)
    lags = rng.integers(0, max_lag + 1, n_sensors + 1)
    gains = rng.uniform(0.9, 1.1, n_sensors + 1)
    series = np.empty((n_sensors + 1, n_samples + horizon))
    for s in range(n_sensors + 1):
        lagged = cover[max_lag - lags[s]: max_lag - lags[s] + n_samples + horizon]
        base = clear[max_lag: max_lag + n_samples + horizon]
        series[s] = gains[s] * base * lagged + 0.01 * rng.standard_normal(n_samples + horizon)
    series = np.maximum(series, 0.0)
    x = series[:n_sensors, :n_samples].T.astype(dtype)
    y = series[n_sensors, horizon:horizon + n_samples].reshape(-1, 1).astype(dtype)
    split = int(round(n_samples * (1 - test_fraction)))
    return (x[:split], y[:split]), (x[split:], y[split:])
