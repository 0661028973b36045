"""Image datasets for CNNs: Fashion-MNIST as (n, 1, 28, 28), and the synthetic radiation maps (seeded, with a
target a convolution can learn and the map's mean cannot)."""
import os

import numpy as np
import pytest

from hetnn import datasets


def test_fashion_mnist_as_images():
    if not os.path.isdir(datasets.FASHION_MNIST_DIR):
        pytest.skip("dataset-fashion-mnist is not installed (scripts/setup.sh installs it)")
    (x, y), (xt, yt) = datasets.fashion_mnist(images=True)
    (raw, _), _ = datasets.fashion_mnist()
    assert x.shape == (60000, 1, 28, 28) and x.dtype == np.float32 and xt.shape == (10000, 1, 28, 28)
    np.testing.assert_array_equal(x[:5, 0], raw[:5] / np.float32(255))
    assert 0.0 <= x.min() and x.max() <= 1.0
    with pytest.raises(TypeError, match="images"):
        datasets.fashion_mnist(images="yes")


def test_radiation_maps_are_seeded_and_learnable():
    (x, y), (xt, yt) = datasets.radiation_maps(n_samples=600, size=24, wind=(2, 1), seed=3)
    assert x.shape == (480, 1, 24, 24) and y.shape == (480, 1) and xt.shape == (120, 1, 24, 24)
    assert x.dtype == np.float32 and 0.0 < y.min() and y.max() <= 1.0
    (x2, y2), _ = datasets.radiation_maps(n_samples=600, size=24, wind=(2, 1), seed=3)
    np.testing.assert_array_equal(x, x2)
    # the target is the map upwind of the centre (up to the noise), not its mean
    upwind = x[:, 0, 12 - 2, 12 - 1]
    assert np.abs(upwind - y[:, 0]).max() < 0.06
    mean_fit = np.corrcoef(x.mean(axis=(1, 2, 3)), y[:, 0])[0, 1]
    assert np.corrcoef(upwind, y[:, 0])[0, 1] > 0.99 > mean_fit
    for bad in (dict(n_samples=0), dict(size=-1), dict(wind=(30, 0)), dict(test_fraction=1.0), dict(wind="n")):
        with pytest.raises(ValueError):
            datasets.radiation_maps(**bad)
