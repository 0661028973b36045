"""hetnn.Array with NumPy, DLPack consumers (NumPy, PyTorch, JAX where installed), .T, astype, leading-axis
indexing and the switch that refuses implicit host copies."""
import copy as copy_module
import importlib.util

import numpy as np
import pytest

import hetnn


def _arr(rng, device, shape=(6, 4), dtype="float32"):
    x = rng.standard_normal(shape).astype(dtype)
    return x, hetnn.asarray(x, device=device)


def test_numpy_views_cpu_arrays_and_copies_only_when_asked(device, rng):
    x, a = _arr(rng, device)
    if device.kind == "cpu":
        v = np.asarray(a)
        v[0, 0] = 123.0  # a view of the array's memory
        assert a.numpy()[0, 0] == 123.0
        c = np.array(a)  # copy=True
        c[0, 1] = -5.0
        assert a.numpy()[0, 1] == x[0, 1]
    else:
        with pytest.raises(ValueError, match=r"copy.*\.numpy\(\)"):
            np.asarray(a, copy=False)
        with pytest.raises(TypeError, match="implicit copy"):  # transfers are explicit by default
            np.asarray(a)
        np.testing.assert_array_equal(np.array(a), x)  # copy=True: asked for


def test_implicit_host_copies_are_refused_by_default(device, rng):
    x, a = _arr(rng, device)
    prev = hetnn.set_implicit_host_copies(False)
    try:
        assert prev is False  # the default: transfers are explicit (README)
        # np.sum has a hetnn reduction: it runs on the device, no copy either way
        s = np.sum(a)
        # against the float64 sum, within float32 rounding of the magnitudes summed (random signs cancel: a
        # relative tolerance on the sum itself failed when it came out near 0)
        assert isinstance(s, hetnn.Array)
        assert abs(float(s) - float(x.astype(np.float64).sum())) <= 1e-6 * float(np.abs(x).sum())
        if device.kind == "cpu":  # NumPy reads a CPU-device array in place: still allowed
            assert float(np.median(a)) == pytest.approx(float(np.median(x)), rel=1e-6)
        else:  # what hetnn has no op for would download: refused
            with pytest.raises(TypeError, match=r"implicit.*\.numpy\(\)"):
                np.median(a)
        np.testing.assert_array_equal(np.array(a, copy=True), x)  # an explicit copy is always allowed
        np.testing.assert_array_equal(a.numpy(), x)
        hetnn.set_implicit_host_copies(True)
        assert float(np.median(a)) == pytest.approx(float(np.median(x)), rel=1e-6)  # allowed: a download
    finally:
        hetnn.set_implicit_host_copies(prev)
    with pytest.raises(TypeError, match="allowed must be a bool"):
        hetnn.set_implicit_host_copies("no")


def test_dlpack_export_to_numpy(device, rng):
    x, a = _arr(rng, device)
    if device.kind == "cpu":
        assert a.__dlpack_device__() == (1, 0)
        y = np.from_dlpack(a)
        assert np.shares_memory(y, np.asarray(a))  # zero-copy
        np.testing.assert_array_equal(y, x)
    else:
        assert a.__dlpack_device__()[0] == 4  # kDLOpenCL
        with pytest.raises(BufferError, match="copy=True"):
            np.from_dlpack(a)
    y = np.from_dlpack(a, device="cpu", copy=True)  # the explicit host copy works everywhere
    y[0, 0] = 99.0
    np.testing.assert_array_equal(a.numpy(), x)


@pytest.mark.parametrize("lib", ["torch", "jax"])
def test_dlpack_round_trip_with_other_libraries(device, rng, lib):
    if importlib.util.find_spec(lib) is None:
        pytest.skip(f"{lib} is not installed")
    x, a = _arr(rng, device)
    if lib == "torch":
        import torch

        src = a if device.kind == "cpu" else a.numpy()
        t = torch.from_dlpack(src)
        np.testing.assert_array_equal(t.numpy(), x)
        t2 = torch.from_numpy(-x)
    else:
        import jax.numpy as jnp

        t = jnp.from_dlpack(a if device.kind == "cpu" else a.numpy())
        np.testing.assert_array_equal(np.asarray(t), x)
        t2 = jnp.asarray(-x)
    back = hetnn.asarray(t2, device=device)  # and back through hetnn's DLPack import
    np.testing.assert_array_equal(back.numpy(), -x)


def test_transpose_view_is_read_by_matmul_without_a_copy(device, rng):
    x, a = _arr(rng, device, (7, 3))
    y, b = _arr(rng, device, (7, 5))
    at = a.T
    assert at.shape == (3, 7) and at.dtype == np.float32 and len(at) == 3
    assert at._a.same_memory(a._a) and at.T._a.is_dense and at.T.strides == a.strides
    ref = x.astype(np.float64).T @ y.astype(np.float64)
    np.testing.assert_allclose(hetnn.matmul(at, b).numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hetnn.matmul(b.T, a).numpy(), ref.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hetnn.matmul(at, b.T.T).numpy(), ref, rtol=1e-5, atol=1e-5)
    # a .T on the operand and transpose_a=True cancel out
    np.testing.assert_allclose(hetnn.matmul(at, at, transpose_a=True).numpy(), x.astype(np.float64) @ x.T,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(at.numpy(), x.T)
    np.testing.assert_array_equal(np.array(at), x.T)
    np.testing.assert_array_equal(at.copy().numpy(), x.T)
    assert at.copy().shape == (3, 7)
    if device.kind == "cpu":
        np.testing.assert_array_equal(np.from_dlpack(at), x.T)
    # other ops read a transposed view through a dense copy
    img = hetnn.asarray(x[:6, :3].copy(), device=device)
    np.testing.assert_array_equal(hetnn.max_pool2d(img.T.reshape(1, 1, 3, 6), (1, 2)).numpy()[0, 0],
                                  x[:6, :3].T.reshape(3, 3, 2).max(axis=2))
    v = hetnn.asarray(x[0], device=device)
    assert v.T is v
    with pytest.raises(ValueError, match="2-d"):
        _ = hetnn.zeros((2, 2, 2), device=device).T


def test_astype(device, rng):
    x, a = _arr(rng, device)
    for dt in ("float16", "int32", "float32"):
        if dt not in device.dtypes:
            continue
        b = a.astype(dt)
        assert b.dtype == np.dtype(dt) and b.device is device and b is not a
        np.testing.assert_array_equal(b.numpy(), x.astype(dt))
    assert a.astype("float32", copy=False) is a
    with pytest.raises(TypeError, match="astype"):
        a.astype("complex64")


def test_leading_axis_indexing_and_assignment(device, rng):
    x, a = _arr(rng, device, (6, 3, 2))
    for key in (0, 5, -1, -6, slice(1, 4), slice(None), slice(-2, None), slice(4, 2), slice(0, 100), (2,)):
        got = a[key]
        assert isinstance(got, hetnn.Array) and got.device is device
        np.testing.assert_array_equal(got.numpy(), x[key])
    assert [r.shape for r in a] == [(3, 2)] * 6  # iteration
    for bad, exc in ((6, IndexError), (-7, IndexError), ((0, 1, 2, 0), IndexError), (1.0, IndexError),
                     (True, IndexError), ([0, 1], IndexError)):
        with pytest.raises(exc):
            a[bad]
    x = x.copy()
    a[1] = 0.5
    x[1] = 0.5
    a[2:4] = np.arange(6, dtype=np.float32).reshape(3, 2)  # broadcast over the rows
    x[2:4] = np.arange(6, dtype=np.float32).reshape(3, 2)
    src = hetnn.asarray(np.full((1, 3, 2), 9, np.float32), device=device)
    a[5:6] = src
    x[5:6] = 9
    a[0] = src[0]
    x[0] = 9
    np.testing.assert_array_equal(a.numpy(), x)
    with pytest.raises(ValueError, match="shape|broadcast"):
        a[0:2] = np.zeros((3, 3), np.float32)
    with pytest.raises(IndexError):
        hetnn.asarray(np.float32(1.0), device=device)[0]


def test_deepcopy_is_a_new_array_on_the_same_device(device, rng):
    x, a = _arr(rng, device)
    b = copy_module.deepcopy(a)
    assert b.device is device and not b._a.same_memory(a._a)
    np.testing.assert_array_equal(b.numpy(), x)


def test_from_dlpack_shares_host_memory_on_the_cpu_device_and_copies_elsewhere(device, rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    a = hetnn.from_dlpack(x, device=device)
    assert a.device is device and a.shape == (4, 5)
    np.testing.assert_array_equal(a.numpy(), x)
    x[0, 0] = 42.0
    assert (a.numpy()[0, 0] == 42.0) == (device.kind == "cpu")  # a view on the CPU device, a copy elsewhere
    c = hetnn.from_dlpack(x, device=device, copy=True)
    x[0, 1] = -1.0
    assert c.numpy()[0, 1] != -1.0
    if device.kind != "cpu":
        with pytest.raises(ValueError, match="copy=False"):
            hetnn.from_dlpack(x, device=device, copy=False)
    assert hetnn.from_dlpack(a) is a
    with pytest.raises(TypeError, match="DLPack"):
        hetnn.from_dlpack([1, 2, 3], device=device)
