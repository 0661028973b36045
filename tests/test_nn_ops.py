"""The training ops under hetnn.nn (hetnn._core: activation, softmax, losses, metrics, SGD, bias gradients,
minibatch gathers) against float64 NumPy references, on every device. Outputs start poisoned (HETNN_POISON)."""
import numpy as np
import pytest

from hetnn._loader import _core

from conftest import FLOAT_DTYPES, rel_err


def put(device, x):
    return _core.Array.from_numpy(device._dev, np.ascontiguousarray(x))


def acc0(device):
    return _core.Array.from_numpy(device._dev, np.zeros(1, np.float32))


def tol(dtype, f32, f64, units=4):
    """The test's float32/float64 tolerance; float16/bfloat16 results (float32 arithmetic, rounded once on store)
    are held to `units` units of their own roundoff."""
    name = np.dtype(dtype).name
    return {"float32": f32, "float64": f64, "float16": units * 2.0 ** -11, "bfloat16": units * 2.0 ** -8}[name]


def softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_activation_forward_and_backward(device, rng, act, dtype):
    dt = np.dtype(dtype)
    x = (rng.standard_normal((37, 19)) * 3).astype(dt)
    dy = rng.standard_normal(x.shape).astype(dt)
    xd = x.astype(np.float64)
    y_ref = {"relu": np.maximum(xd, 0), "sigmoid": 1 / (1 + np.exp(-xd)), "tanh": np.tanh(xd)}[act]
    y = _core.activation(put(device, x), act).to_numpy()
    assert y.dtype == dt
    assert rel_err(y, y_ref) < tol(dt, 1e-6, 1e-13)
    y64 = y.astype(np.float64)  # the backward reads the stored output
    slope = {"relu": (y64 > 0).astype(np.float64), "sigmoid": y64 * (1 - y64), "tanh": 1 - y64 ** 2}[act]
    dx = _core.activation_backward(put(device, dy), put(device, y), act).to_numpy()
    assert rel_err(dx, dy.astype(np.float64) * slope) < tol(dt, 1e-5, 1e-12)


def test_activation_in_place_and_nan(device):
    x = np.array([[-1.0, np.nan, 2.0]], np.float32)
    X = put(device, x)
    _core.activation(X, "relu", X)
    y = X.to_numpy()
    assert y[0, 0] == 0 and np.isnan(y[0, 1]) and y[0, 2] == 2


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_softmax(device, rng, dtype):
    dt = np.dtype(dtype)
    x = (rng.standard_normal((29, 11)) * 30).astype(dt)  # large logits: must not overflow
    y = _core.softmax(put(device, x)).to_numpy()
    assert y.dtype == dt
    assert rel_err(y, softmax64(x)) < tol(dt, 2e-6, 1e-13)
    np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1, rtol=tol(dt, 1e-5, 1e-5, units=16))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("target_kind", ["labels", "onehot", "soft"])
def test_cross_entropy_loss_and_gradient(device, rng, target_kind, dtype):
    dt = np.dtype(dtype)
    n, c = 45, 7
    x = (rng.standard_normal((n, c)) * 4).astype(dt)
    labels = rng.integers(0, c, n)
    if target_kind == "labels":
        t = labels.astype(np.int64)
        t64 = np.eye(c)[labels]
    elif target_kind == "onehot":
        t = np.eye(c, dtype=dt)[labels]
        t64 = t.astype(np.float64)
    else:
        t = softmax64(rng.standard_normal((n, c))).astype(dt)
        t64 = t.astype(np.float64)
    p = softmax64(x)
    loss_ref = -(t64 * np.log(p)).sum()
    grad_ref = (p - t64) / n
    acc = acc0(device)
    g = put(device, np.full((n, c), np.nan, dt))
    _core.loss("cross_entropy", put(device, x), put(device, t), acc, g, 1.0 / n, 1.0 / n)
    assert abs(acc.to_numpy()[0] - loss_ref / n) < 1e-5 * max(1, loss_ref / n)
    assert rel_err(g.to_numpy(), grad_ref) < tol(dt, 1e-5, 1e-12)
    # it accumulates, and works without a gradient
    _core.loss("cross_entropy", put(device, x), put(device, t), acc, None, 1.0 / n, 1.0)
    assert abs(acc.to_numpy()[0] - 2 * loss_ref / n) < 2e-5 * max(1, loss_ref / n)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mse_loss_and_gradient(device, rng, dtype):
    dt = np.dtype(dtype)
    x = rng.standard_normal((23, 3)).astype(dt)
    t = rng.standard_normal((23, 3)).astype(dt)
    e = x.astype(np.float64) - t.astype(np.float64)
    acc = acc0(device)
    g = put(device, np.full(x.shape, np.nan, dt))
    _core.loss("mse", put(device, x), put(device, t), acc, g, 1.0 / x.size, 1.0 / x.size)
    assert abs(acc.to_numpy()[0] - (e ** 2).mean()) < 1e-5
    assert rel_err(g.to_numpy(), 2 * e / x.size) < tol(dt, 1e-6, 1e-6)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_metrics(device, rng, dtype):
    n, c = 50, 6
    x = rng.integers(-3, 3, (n, c)).astype(dtype)  # ties: the first maximum counts
    labels = rng.integers(0, c, n).astype(np.int64)
    acc = acc0(device)
    _core.metric("correct_argmax", put(device, x), put(device, labels), acc)
    assert acc.to_numpy()[0] == np.sum(np.argmax(x, axis=1) == labels)
    y = rng.random((n, 1)).astype(dtype)
    t = (rng.random((n, 1)) > 0.5).astype(dtype)
    acc = acc0(device)
    _core.metric("correct_threshold", put(device, y), put(device, t), acc)
    assert acc.to_numpy()[0] == np.sum((y > 0.5) == (t > 0.5))
    acc = acc0(device)
    _core.metric("abs_error", put(device, y), put(device, t), acc)
    assert abs(acc.to_numpy()[0] - np.abs(y.astype(np.float64) - t.astype(np.float64)).sum()) < 1e-4


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.9, False, 0.0), (0.9, True, 1e-2),
                                                   (0.0, False, 5e-3)])
def test_sgd_matches_pytorch_definition(device, rng, momentum, nesterov, wd, dtype):
    dt = np.dtype(dtype)
    p = rng.standard_normal(300).astype(dt)
    v = np.zeros_like(p)
    P, V = put(device, p), put(device, v)
    p64, v64 = p.astype(np.float64), v.astype(np.float64)
    lr = 0.05
    for _ in range(3):
        g = rng.standard_normal(p.shape).astype(dt)
        _core.sgd_update(P, put(device, g), V if momentum else None, lr, momentum, wd, nesterov)
        gi = g.astype(np.float64) + wd * p64
        if momentum:
            v64 = momentum * v64 + gi
            gi = gi + momentum * v64 if nesterov else v64
        p64 = p64 - lr * gi
    assert rel_err(P.to_numpy(), p64) < tol(dt, 1e-6, 1e-14, units=8)  # 16-bit: rounded at every step


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sum_rows(device, rng, dtype):
    dt = np.dtype(dtype)
    x = rng.standard_normal((130, 33)).astype(dt)
    s = _core.sum_rows(put(device, x)).to_numpy()
    assert s.dtype == dt
    assert rel_err(s, x.astype(np.float64).sum(axis=0)) < tol(dt, 1e-6, 1e-6)
    out = put(device, np.ones(33, dt))
    _core.sum_rows(put(device, x), out, 0.5)
    assert rel_err(out.to_numpy(), 0.5 + x.astype(np.float64).sum(axis=0)) < tol(dt, 1e-6, 1e-6)


@pytest.mark.parametrize("dtype,shape", [(np.float32, (40, 7, 3)), (np.int64, (40,)), (np.uint8, (40, 5))])
def test_take_rows(device, rng, dtype, shape):
    src = (rng.standard_normal(shape) * 50).astype(dtype)
    idx = rng.permutation(40).astype(np.int64)
    out = _core.take_rows(put(device, src), put(device, idx), 5, 17).to_numpy()
    np.testing.assert_array_equal(out, src[idx[5:22]])


def test_bad_arguments(device, rng):
    x = put(device, rng.standard_normal((4, 3)).astype(np.float32))
    acc = acc0(device)
    with pytest.raises(TypeError, match="int64"):
        _core.loss("cross_entropy", x, put(device, np.zeros(4, np.int32)), acc, None, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\)"):
        _core.loss("cross_entropy", x, put(device, np.zeros(5, np.int64)), acc, None, 1.0, 1.0)
    with pytest.raises(ValueError, match="kind"):
        _core.loss("hinge", x, x, acc, None, 1.0, 1.0)
    with pytest.raises(ValueError, match="acc must be a float32 array of one element"):
        _core.loss("mse", x, x.copy(), put(device, np.zeros(2, np.float32)), None, 1.0, 1.0)
    with pytest.raises(ValueError, match="lr must be finite and >= 0"):
        _core.sgd_update(x, x.copy(), None, -1.0, 0.0, 0.0, False)
    for lr, wd in ((float("inf"), 0.0), (0.1, float("inf"))):  # one epoch of either left the model all NaN
        with pytest.raises(ValueError, match="must be finite and >= 0"):
            _core.sgd_update(x, x.copy(), None, lr, 0.0, wd, False)
    with pytest.raises(ValueError, match="momentum needs a velocity"):
        _core.sgd_update(x, x.copy(), None, 0.1, 0.9, 0.0, False)
    with pytest.raises(ValueError, match="outside its"):
        _core.take_rows(x, put(device, np.arange(3, dtype=np.int64)), 2, 2)
    with pytest.raises(TypeError, match="float32, float64, float16 or bfloat16"):
        _core.activation(put(device, np.zeros((2, 2), np.int32)), "relu")
    with pytest.raises(ValueError, match="2-D"):
        _core.softmax(put(device, np.zeros(3, np.float32)))
