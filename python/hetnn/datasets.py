"""Datasets for the examples and benchmarks: Fashion-MNIST from Debian's files, an IDX reader, XOR, and a seeded
synthetic stand-in for the solar-sensor regression, and images from a folder per class."""
from __future__ import annotations

import gzip
import os
from typing import List, Optional, Tuple, Union

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


def fashion_mnist(path: Optional[PathLike] = None, images: bool = False) -> Tuple[Tuple[np.ndarray, np.ndarray],
                                                                                Tuple[np.ndarray, np.ndarray]]:
    """``(x_train, y_train), (x_test, y_test)`` as Keras returns them: uint8 images of shape (n, 28, 28) and
    uint8 labels 0..9 (60,000 training and 10,000 test samples), read from the IDX files in ``path`` (default
    /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist). ``images=True``: the images as (n, 1, 28,
    28) float32 in [0, 1], the NCHW layout convolutions take."""
    if not isinstance(images, (bool, np.bool_)):
        raise TypeError(f"fashion_mnist: images must be a bool, got {images!r}")
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
        parts.append((x.reshape(-1, 1, *x.shape[1:]).astype(np.float32) / 255 if images else x, y))
    return parts[0], parts[1]


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff")


def image_folder(path: PathLike, size: Optional[Tuple[int, int]] = None, grayscale: bool = False
                 ) -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """``(x, y, classes)`` from a folder per class (``path/<class>/<image>``, PNG, JPEG, BMP, GIF, TIFF), as the
    AlexNet/MRI study feeds its images: x float32 (N, C, H, W) in [0, 1] (C = 1 with ``grayscale``, else 3), y int64
    class indices, classes the folder names sorted. ``size`` (H, W): every image resized to it (bilinear); None:
    the images must share one size. Needs Pillow (installed with hetnn's bench extra)."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("image_folder needs Pillow: pip install pillow (or hetnn's bench extra)") from None
    root = os.fspath(path)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"image_folder: {root} is not a directory")
    if size is not None and (not isinstance(size, (tuple, list)) or len(size) != 2
                             or not all(is_int(v) and v >= 1 for v in size)):
        raise ValueError(f"image_folder: size must be (H, W) of ints >= 1 or None, got {size!r}")
    if not isinstance(grayscale, (bool, np.bool_)):
        raise TypeError(f"image_folder: grayscale must be a bool, got {grayscale!r}")
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    xs: List[np.ndarray] = []
    ys: List[int] = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for f in sorted(os.listdir(folder)):
            if not f.lower().endswith(IMAGE_SUFFIXES):
                continue
            p = os.path.join(folder, f)
            try:
                with Image.open(p) as im:
                    im = im.convert("L" if grayscale else "RGB")
                    if size is not None:
                        im = im.resize((int(size[1]), int(size[0])), Image.Resampling.BILINEAR)
                    a = np.asarray(im, dtype=np.float32) / 255
            except (OSError, ValueError) as exc:
                raise ValueError(f"image_folder: cannot read {p} ({exc})") from None
            a = a[None] if a.ndim == 2 else a.transpose(2, 0, 1)
            if xs and a.shape != xs[0].shape:
                raise ValueError(f"image_folder: {p} is {a.shape[1]}x{a.shape[2]}, the first image "
                                 f"{xs[0].shape[1]}x{xs[0].shape[2]}; pass size=(H, W) to resize them all")
            xs.append(a)
            ys.append(label)
    if not xs:
        raise ValueError(f"image_folder: no images under {root} (a folder per class holding "
                         f"{', '.join(IMAGE_SUFFIXES)} files)")
    return np.stack(xs), np.array(ys, dtype=np.int64), classes


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


def radiation_maps(n_samples: int = 4096, size: int = 50, wind: Tuple[int, int] = (3, 2), test_fraction: float = 0.2,
                   seed: int = 0, dtype: str = "float32") -> Tuple[Tuple[np.ndarray, np.ndarray],
                                                                   Tuple[np.ndarray, np.ndarray]]:
    """A synthetic stand-in for the classic CNN study's 50x50 solar-radiation maps: x (n, 1, size, size) irradiance
    maps (kW/m^2) and y (n, 1), the irradiance at the map's centre one step later, after the clouds drift by
    ``wind`` (rows, columns) pixels. Returns ``(x_train, y_train), (x_test, y_test)`` (the last ``test_fraction``
    is the test set).

    The model (seeded by ``seed``): a clear-sky field rising from 0.8 to 1.0 down the rows; 1 + Poisson(3) clouds
    per map, Gaussian blobs of radius 3..10 pixels and opacity 0.3..0.9 centred anywhere within 10 pixels of the
    map, transmitting ``prod(1 - opacity * blob)``; Gaussian noise of 0.01. The target is the noise-free
    irradiance at the centre minus ``wind``: what the map shows upwind of the centre, so a convolution can learn it
    and a model of the map's mean alone cannot."""
    for v, name in ((n_samples, "n_samples"), (size, "size")):
        if not is_int(v) or v <= 0:
            raise ValueError(f"radiation_maps: {name} must be a positive int, got {v!r}")
    if not (isinstance(wind, (tuple, list)) and len(wind) == 2 and all(is_int(v) for v in wind)) or \
            max(abs(int(v)) for v in wind) >= size // 2 + 1:
        raise ValueError(f"radiation_maps: wind must be a pair of ints smaller than half the map, got {wind!r}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"radiation_maps: test_fraction must be in (0, 1), got {test_fraction!r}")
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
    clear = 0.8 + 0.2 * rows / max(1, size - 1)
    c = size // 2
    src = (c - int(wind[0]), c - int(wind[1]))
    x = np.empty((n_samples, 1, size, size), dtype=dtype)
    y = np.empty((n_samples, 1), dtype=dtype)
    for i in range(n_samples):
        k = 1 + rng.poisson(3)
        cy, cx = rng.uniform(-10, size + 10, k), rng.uniform(-10, size + 10, k)
        radius, opacity = rng.uniform(3, 10, k), rng.uniform(0.3, 0.9, k)
        d2 = (rows[None] - cy[:, None, None]) ** 2 + (cols[None] - cx[:, None, None]) ** 2
        transmit = np.prod(1 - opacity[:, None, None] * np.exp(-d2 / (2 * radius[:, None, None] ** 2)), axis=0)
        field = clear * transmit
        x[i, 0] = field + 0.01 * rng.standard_normal((size, size))
        y[i, 0] = field[src]
    split = int(round(n_samples * (1 - test_fraction)))
    return (x[:split], y[:split]), (x[split:], y[split:])
