"""Page-locked host memory (hetnn.pinned_empty) and downloads into a given host array (Array.copy_to_host(out=)) on
every device: the memory holds what is written, uploads from it and downloads into it move the data exactly, it
outlives its base array through views, and every bad call is a clear exception."""
import gc

import numpy as np
import pytest

import hetnn


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16"])
def test_pinned_round_trip(device, rng, dtype):
    shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
    host = pinned = hetnn.pinned_empty(shape, dtype, device=device)
    assert isinstance(pinned, np.ndarray) and pinned.shape == shape and pinned.dtype == np.dtype(dtype)
    assert pinned.flags.c_contiguous and pinned.flags.writeable
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    host[...] = x
    a = hetnn.asarray(pinned, device=device)               # an upload from page-locked memory
    np.testing.assert_array_equal(a.numpy(), x)
    out = hetnn.pinned_empty(shape, dtype, device=device)
    out.view(np.uint8)[...] = 0xFF                          # poisoned before the download
    assert a.copy_to_host(out=out) is out                   # a download into page-locked memory
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(a.copy_to_host(), x)      # without out: a new array


def test_pinned_memory_outlives_its_base_through_views(device, rng):
    base = hetnn.pinned_empty((64, 32), "float32", device=device)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    base[...] = x
    view = base[::2, 1:]
    del base
    gc.collect()
    np.testing.assert_array_equal(view, x[::2, 1:])
    np.testing.assert_array_equal(hetnn.asarray(view, device=device).numpy(), x[::2, 1:])


def test_pinned_defaults_and_sizes(device):
    default = hetnn.pinned_empty((3,), device=device)
    assert default.dtype == hetnn.empty((), device=device).dtype  # the device's default real type, as empty's
    assert hetnn.pinned_empty((0, 5), "int32", device=device).shape == (0, 5)
    assert hetnn.pinned_empty((), "float32", device=device).shape == ()
    with pytest.raises(ValueError, match="negative"):
        hetnn.pinned_empty((-1, 2), device=device)
    with pytest.raises(TypeError):
        hetnn.pinned_empty((2,), "complex64", device=device)


def test_copy_to_host_refuses_what_it_cannot_fill(device):
    a = hetnn.zeros((4, 3), "float32", device=device)
    for out, exc, match in ((np.empty((3, 4), np.float32), ValueError, "out is float32"),
                            (np.empty((4, 3), np.float64), ValueError, "out is float64"),
                            (np.empty((3, 4), np.float32).T, ValueError, "C-contiguous"),
                            ([0.0] * 12, TypeError, "NumPy array")):
        with pytest.raises(exc, match=match):
            a.copy_to_host(out=out)
    ro = np.empty((4, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        a.copy_to_host(out=ro)
