"""The placement rule's two paths (hetnn/_placement.py): a call whose array operands are all hetnn Arrays goes
straight to the core, any other through the general path; both must give the same results, return the caller's
output Arrays as themselves and refuse the same mistakes."""
import numpy as np
import pytest

import hetnn


def _poisoned(shape, dtype, device):
    return hetnn.asarray(np.full(shape, np.nan if np.dtype(dtype).kind == "f" else 12345, dtype), device=device)


def test_matmul_with_bias_and_out(device, rng):
    a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    ref = a.astype(np.float64) @ b + bias
    A, B, Bias = (hetnn.asarray(v, device=device) for v in (a, b, bias))
    np.testing.assert_allclose(hetnn.matmul(A, B, bias=Bias).numpy(), ref, rtol=1e-5, atol=1e-5)
    out = _poisoned((5, 3), np.float32, device)
    got = hetnn.matmul(A, B, bias=Bias, out=out)
    assert got is out
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    # the same call on NumPy operands (the general path) agrees
    np.testing.assert_allclose(hetnn.matmul(a, b, bias=bias, device=device), out.numpy(), rtol=1e-6, atol=1e-6)


def test_conv2d_bias_positional_and_by_keyword(device, rng):
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    X, W, Bias = (hetnn.asarray(v, device=device) for v in (x, w, bias))
    by_position = hetnn.conv2d(X, W, Bias, 1, 1).numpy()
    by_keyword = hetnn.conv2d(X, W, bias=Bias, stride=1, padding=1).numpy()
    without = hetnn.conv2d(X, W, padding=1).numpy()
    np.testing.assert_allclose(by_position, by_keyword, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(by_position - bias[:, None, None], without, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hetnn.conv2d(x, w, bias, 1, 1, device=device), by_position, rtol=1e-6, atol=1e-6)


def test_max_pool_returns_both_given_outputs(device, rng):
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    X = hetnn.asarray(x, device=device)
    y_out, i_out = _poisoned((1, 2, 3, 3), np.float32, device), _poisoned((1, 2, 3, 3), np.int64, device)
    y, idx = hetnn.max_pool2d(X, 2, 2, return_indices=True, out=y_out, indices_out=i_out)
    assert y is y_out and idx is i_out
    ref = x.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(y.numpy(), ref)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(1, 2, 36), idx.numpy().reshape(1, 2, 9), 2),
                                  ref.reshape(1, 2, 9))
    # one output given, the other made: the given one comes back as itself, the other as a new Array
    y2, idx2 = hetnn.max_pool2d(X, 2, 2, return_indices=True, indices_out=i_out)
    assert idx2 is i_out and y2 is not y_out and isinstance(y2, hetnn.Array)
    np.testing.assert_array_equal(y2.numpy(), ref)


def test_the_same_mistakes_are_refused(device, rng):
    a = rng.standard_normal((4, 4)).astype(np.float32)
    A = hetnn.asarray(a, device=device)
    with pytest.raises(TypeError, match="must both be hetnn Arrays or both NumPy arrays"):
        hetnn.matmul(A, a)
    with pytest.raises(TypeError, match="out must be a hetnn.Array when the operands are, got ndarray"):
        hetnn.matmul(A, A, out=np.empty((4, 4), np.float32))
    with pytest.raises(TypeError, match="bias must be a hetnn.Array when the operands are, got list"):
        hetnn.matmul(A, A, bias=[1.0, 2.0, 3.0, 4.0])
    other = "cpu" if A.device.id != "cpu" else None
    if other is None and len(hetnn.devices()) > 1:
        other = hetnn.devices()[1].id
    if other is not None:
        with pytest.raises(ValueError, match="move it with .to"):
            hetnn.matmul(A, A, device=other)
