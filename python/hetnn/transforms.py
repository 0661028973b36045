"""Image augmentations for training, as the AlexNet/MRI recipe applies them: each a callable ``t(x, rng) -> x`` on a
batch of images (N, C, H, W) in host memory, drawing its randomness from ``rng`` (a numpy Generator), per sample.
``fit(..., transform=t)`` applies one to the training images at the start of every epoch (the stored images are left
as they are); ``Compose`` chains them. Integer and float images alike; outputs keep the input's dtype and shape
(``Resize`` excepted)."""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from ._check import is_int, is_real

Transform = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def _images(x: Any, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"{what}: images must be (N, C, H, W), got shape {x.shape}")
    return x


def _pair(v: Any, what: str, name: str) -> Tuple[int, int]:
    vals = (v, v) if is_int(v) else tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(vals) != 2 or not all(is_int(i) and i >= 1 for i in vals):
        raise ValueError(f"{what}: {name} must be an int >= 1 or a pair of them, got {v!r}")
    return int(vals[0]), int(vals[1])


class Compose:
    """The transforms applied in order."""

    def __init__(self, transforms: Sequence[Transform]) -> None:
        self.transforms = list(transforms)
        for t in self.transforms:
            if not callable(t):
                raise TypeError(f"Compose: every transform must be callable as t(x, rng), got {type(t).__name__}")

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        for t in self.transforms:
            x = t(x, rng)
        return x


class RandomHorizontalFlip:
    """Each image mirrored left to right with probability ``p``."""

    def __init__(self, p: float = 0.5) -> None:
        if not is_real(p) or not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: p must be a probability in [0, 1], got {p!r}")
        self.p = float(p)

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = _images(x, "RandomHorizontalFlip")
        flip = rng.random(len(x)) < self.p
        out = x.copy()
        out[flip] = x[flip, :, :, ::-1]
        return out


class RandomCrop:
    """A ``size`` window of each image at a random place, after ``padding`` zeros on every side (torchvision's
    RandomCrop with padding: the usual CIFAR/AlexNet augmentation)."""

    def __init__(self, size: Union[int, Tuple[int, int]], padding: int = 0) -> None:
        self.size = _pair(size, "RandomCrop", "size")
        if not is_int(padding) or padding < 0:
            raise ValueError(f"RandomCrop: padding must be an int >= 0, got {padding!r}")
        self.padding = int(padding)

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = _images(x, "RandomCrop")
        p, (h, w) = self.padding, self.size
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p))) if p else x
        if h > xp.shape[2] or w > xp.shape[3]:
            raise ValueError(f"RandomCrop: a {h}x{w} window does not fit {xp.shape[2]}x{xp.shape[3]} padded images")
        tops = rng.integers(0, xp.shape[2] - h + 1, len(x))
        lefts = rng.integers(0, xp.shape[3] - w + 1, len(x))
        return np.stack([xp[i, :, t:t + h, s:s + w] for i, (t, s) in enumerate(zip(tops, lefts))]) if len(x) \
            else np.empty((0, x.shape[1], h, w), x.dtype)


class RandomRotation:
    """Each image turned about its centre by an angle drawn uniformly from [-degrees, degrees] (nearest neighbour;
    what falls outside the image is ``fill``)."""

    def __init__(self, degrees: float, fill: float = 0.0) -> None:
        if not is_real(degrees) or not 0.0 <= float(degrees) <= 360.0:
            raise ValueError(f"RandomRotation: degrees must be a number in [0, 360], got {degrees!r}")
        if not is_real(fill):
            raise TypeError(f"RandomRotation: fill must be a number, got {fill!r}")
        self.degrees, self.fill = float(degrees), float(fill)

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = _images(x, "RandomRotation")
        angles = rng.uniform(-self.degrees, self.degrees, len(x))
        return np.stack([rotate(img, a, self.fill) for img, a in zip(x, angles)]) if len(x) else x.copy()


def rotate(img: np.ndarray, degrees: float, fill: float = 0.0) -> np.ndarray:
    """One (C, H, W) image turned counter-clockwise by ``degrees`` about its centre, nearest neighbour."""
    c, h, w = img.shape
    t = math.radians(degrees)
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx = (h - 1) / 2, (w - 1) / 2
    # the source of each output pixel: the inverse rotation of its coordinates
    sy = np.rint(cy + (yy - cy) * math.cos(t) + (xx - cx) * math.sin(t)).astype(np.int64)
    sx = np.rint(cx - (yy - cy) * math.sin(t) + (xx - cx) * math.cos(t)).astype(np.int64)
    inside = (sy >= 0) & (sy < h) & (sx >= 0) & (sx < w)
    out = np.full_like(img, fill)
    out[:, inside] = img[:, sy[inside], sx[inside]]
    return out


class Normalize:
    """(x - mean) / std per channel, as float32."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1)
        if self.mean.shape != self.std.shape or not np.all(self.std > 0) or not np.all(np.isfinite(self.mean)):
            raise ValueError(f"Normalize: mean and std need one finite value per channel and std > 0, got {mean!r}, "
                             f"{std!r}")

    def __call__(self, x: np.ndarray, rng: Optional[np.random.Generator] = None) -> np.ndarray:
        x = _images(x, "Normalize")
        if x.shape[1] != len(self.mean):
            raise ValueError(f"Normalize: {len(self.mean)} channel(s) of mean and std, images with {x.shape[1]}")
        return ((x.astype(np.float32) - self.mean[:, None, None]) / self.std[:, None, None]).astype(np.float32)


class Resize:
    """Every image resized to ``size`` (H, W) by bilinear interpolation (as float32)."""

    def __init__(self, size: Union[int, Tuple[int, int]]) -> None:
        self.size = _pair(size, "Resize", "size")

    def __call__(self, x: np.ndarray, rng: Optional[np.random.Generator] = None) -> np.ndarray:
        x = _images(x, "Resize").astype(np.float32)
        (h, w), (oh, ow) = x.shape[2:], self.size
        ys = np.clip((np.arange(oh) + 0.5) * h / oh - 0.5, 0, h - 1)
        xs = np.clip((np.arange(ow) + 0.5) * w / ow - 0.5, 0, w - 1)
        y0, x0 = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
        y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
        fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
        top = x[:, :, y0][:, :, :, x0] * (1 - fx) + x[:, :, y0][:, :, :, x1] * fx
        bottom = x[:, :, y1][:, :, :, x0] * (1 - fx) + x[:, :, y1][:, :, :, x1] * fx
        return (top * (1 - fy) + bottom * fy).astype(np.float32)


__all__ = ["Compose", "Normalize", "RandomCrop", "RandomHorizontalFlip", "RandomRotation", "Resize", "rotate"]
