"""Property tests (hypothesis): every row of the op table (tests/op_table.py) on drawn seeds and dtypes; then matmul,
max pooling (forward, indices, backward), dense layers (forward, backward) and SGD steps on every available device
against float64 NumPy references, over random shapes including 0- and 1-sized dimensions, odd sizes, large strides,
padding and dilation, NaN/Inf in inputs (propagated as NumPy and PyTorch do), float32 and float64.

HETNN_PROPERTY_EXAMPLES sets the examples per test and device (default 40); the number run is printed at the end
of the session ("property-test examples run")."""
import os

import numpy as np
import pytest

import hetnn
from hetnn import nn, optim

import max_pool_reference as ref
from conftest import assert_row_matches, supported_dtypes
from op_table import OPS

hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

EXAMPLES = int(os.environ.get("HETNN_PROPERTY_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
COUNT = {"examples": 0}  # read by conftest's terminal summary

# Unit roundoff of each storage type (float16/bfloat16 results are rounded once from float32 arithmetic, so their
# unit bounds the error of the rounding and of the float32 accumulation alike).
EPS = {"float32": 2.0 ** -24, "float64": 2.0 ** -53, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def _values(draw, shape, dtype, specials):
    """Uniform values in [-2, 2] of ``shape``, with a few NaN/+-Inf at drawn positions when ``specials``."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, shape)
    if specials and x.size:
        n = draw(st.integers(1, 3))
        for _ in range(n):
            x.flat[rng.integers(x.size)] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    return x.astype(dtype)


def _check_specials(got, want):
    """NaN exactly where the reference has NaN, the same infinities where it has them."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    assert not np.isinf(got[~inf & ~np.isnan(want)]).any()


@st.composite
def matmul_case(draw, dtypes):
    m, k, n = (draw(st.integers(0, 37)) for _ in range(3))
    dtype = draw(st.sampled_from(dtypes))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    specials = draw(st.integers(0, 4)) == 0
    a = _values(draw, (k, m) if ta else (m, k), dtype, specials)
    b = _values(draw, (n, k) if tb else (k, n), dtype, specials)
    bias = _values(draw, (n,), dtype, False) if draw(st.booleans()) else None
    act = draw(st.sampled_from([None, "relu", "sigmoid", "tanh"]))
    alpha = draw(st.sampled_from([1.0, 0.5, -2.0]))
    return a, b, ta, tb, bias, act, alpha


def _act64(z, act):
    if act == "relu":
        return np.where(np.isnan(z), z, np.maximum(z, 0.0))
    if act == "sigmoid":
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-z))
    if act == "tanh":
        return np.tanh(z)
    return z


def test_matmul_properties(device):
    @SETTINGS
    @given(matmul_case(supported_dtypes(device)))
    def prop(case):
        a, b, ta, tb, bias, act, alpha = case
        COUNT["examples"] += 1
        A = a.T.astype(np.float64) if ta else a.astype(np.float64)
        B = b.T.astype(np.float64) if tb else b.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            z = alpha * (A @ B) + (0.0 if bias is None else bias.astype(np.float64))
            want = _act64(z, act)
            bound = abs(alpha) * (np.abs(A) @ np.abs(B))
        got = hetnn.matmul(a, b, transpose_a=ta, transpose_b=tb, alpha=alpha, bias=bias, activation=act,
                           device=device)
        assert got.dtype == a.dtype and got.shape == want.shape
        _check_specials(got, want)
        fin = np.isfinite(want)
        k = A.shape[1]
        tol = (k + 4) * EPS[a.dtype.name] * (bound + (0 if bias is None else np.abs(bias.astype(np.float64)))) \
            + 8 * EPS[a.dtype.name]
        with np.errstate(invalid="ignore"):
            err = np.abs(got.astype(np.float64) - want)
        assert (err[fin] <= tol[fin]).all(), (a.shape, b.shape, ta, tb, act, float(err[fin].max()))
    prop()


@st.composite
def pool_case(draw, dtypes):
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sh, sw = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    ph, pw = draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2))
    dh, dw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    ceil = draw(st.booleans())
    # inputs just big enough for one window, up to odd sizes well beyond
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - 2 * ph), 23))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - 2 * pw), 23))
    n, c = draw(st.integers(0, 2)), draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(dtypes))
    x = _values(draw, (n, c, h, w), dtype, draw(st.integers(0, 3)) == 0)
    return x, (kh, kw), (sh, sw), (ph, pw), (dh, dw), ceil


def test_max_pool2d_backward_of_a_window_outside_the_input(device):
    """A dilated window with no position inside the input: its output is -inf and its gradient goes nowhere, on
    every path (found by the property test below: a 2x2 input, kernel (1, 2), padding (0, 1), dilation (1, 3))."""
    x = np.array([[[[0.5, -0.9], [-1.8, -1.9]]]], np.float32)
    k, s, p, d = (1, 2), (1, 1), (0, 1), (1, 3)
    y, idx = hetnn.max_pool2d(x, k, s, p, d, return_indices=True, device=device)
    assert np.isneginf(y).all() and ref.empty_windows(x.shape, k, s, p, d, False).all()
    g = np.array([[[[0.75], [-0.25]]]], np.float32)
    gx = hetnn.max_pool2d_backward(g, idx, x.shape, k, s, p, d, device=device)
    np.testing.assert_array_equal(gx, np.zeros_like(x))


def test_max_pool2d_integer_images(device):
    """Integer images on drawn windows (dilation, ceil_mode, padding, windows outside the input): exact maxima in
    the input's dtype, the reference's indices, and the type's lowest value where the reference has -inf."""
    from op_table import INTS, int_image

    @SETTINGS
    @given(pool_case(["float32"]), st.sampled_from(INTS), st.integers(0, 2**32 - 1))
    def prop(case, dtype, seed):
        x, k, s, p, d, ceil = case
        COUNT["examples"] += 1
        x = int_image(np.random.default_rng(seed), x.shape, dtype)
        if ref.out_size(x.shape[2], k[0], s[0], p[0], d[0], ceil) < 1 or \
                ref.out_size(x.shape[3], k[1], s[1], p[1], d[1], ceil) < 1:
            return
        want, want_idx = ref.max_pool2d(x, k, s, p, d, ceil)
        want[np.isneginf(want)] = np.iinfo(dtype).min
        y, idx = hetnn.max_pool2d(hetnn.asarray(x, device=device), k, s, p, d, ceil, return_indices=True)
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y.numpy().astype(np.float64), want)
        np.testing.assert_array_equal(idx.numpy(), want_idx)
        np.testing.assert_array_equal(hetnn.max_pool2d(x, k, s, p, d, ceil, device=device).astype(np.float64), want)
    prop()


def test_max_pool2d_properties(device):
    @SETTINGS
    @given(pool_case(supported_dtypes(device)))
    def prop(case):
        x, k, s, p, d, ceil = case
        COUNT["examples"] += 1
        oh = ref.out_size(x.shape[2], k[0], s[0], p[0], d[0], ceil)
        ow = ref.out_size(x.shape[3], k[1], s[1], p[1], d[1], ceil)
        if oh < 1 or ow < 1:  # PyTorch refuses these too
            with pytest.raises(ValueError):
                hetnn.max_pool2d(x, k, s, p, d, ceil, device=device)
            return
        want, want_idx = ref.max_pool2d(x, k, s, p, d, ceil)
        X = hetnn.asarray(x, device=device)
        y, idx = hetnn.max_pool2d(X, k, s, p, d, ceil, return_indices=True)
        y_only = hetnn.max_pool2d(X, k, s, p, d, ceil).numpy()
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y.numpy().astype(np.float64), want)  # max is exact, NaN wins
        np.testing.assert_array_equal(y_only.astype(np.float64), want)
        np.testing.assert_array_equal(idx.numpy(), want_idx)
        g = np.random.default_rng(x.size).uniform(-1, 1, want.shape).astype(x.dtype)
        gx = hetnn.max_pool2d_backward(hetnn.asarray(g, device=device), idx, x.shape, k, s, p, d, ceil).numpy()
        gref = ref.max_pool2d_backward(g, want_idx, x.shape, ref.empty_windows(x.shape, k, s, p, d, ceil))
        tol = 4 * EPS[x.dtype.name] * max(1, k[0] * k[1])
        np.testing.assert_allclose(gx.astype(np.float64), gref, rtol=tol, atol=tol)
    prop()


@st.composite
def dense_case(draw):
    batch, fin, fout = draw(st.integers(1, 9)), draw(st.integers(1, 24)), draw(st.integers(1, 17))
    act = draw(st.sampled_from([None, "relu", "sigmoid", "tanh"]))
    bias = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    lr = draw(st.sampled_from([0.5, 0.1, 0.01]))
    momentum = draw(st.sampled_from([0.0, 0.9]))
    nesterov = momentum > 0 and draw(st.booleans())
    wd = draw(st.sampled_from([0.0, 1e-2]))
    return batch, fin, fout, act, bias, seed, lr, momentum, nesterov, wd


def test_dense_forward_backward_sgd_properties(device):
    """One Dense layer with MSE: the forward against NumPy, then two SGD steps (momentum, Nesterov, weight decay as
    PyTorch defines them) against the same steps written in float64 NumPy."""
    @SETTINGS
    @given(dense_case())
    def prop(case):
        batch, fin, fout, act, use_bias, seed, lr, momentum, nesterov, wd = case
        COUNT["examples"] += 1
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1, 1, (batch, fin)).astype(np.float32)
        t = rng.uniform(-1, 1, (batch, fout)).astype(np.float32)
        layer = nn.Dense(fin, fout, act, bias=use_bias, seed=seed)
        model = nn.Sequential([layer], device=device)
        params = [p.numpy().astype(np.float64) for p in model.parameters()]
        W = params[0]
        b = params[1] if use_bias else np.zeros(fout)

        def forward(W, b):
            z = x.astype(np.float64) @ W.T + b
            return z, _act64(z, act)

        z, y = forward(W, b)
        np.testing.assert_allclose(model.predict(x), y, rtol=1e-5, atol=1e-5)
        opt = optim.SGD(model.parameters(), lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=wd)
        vel = [np.zeros_like(W), np.zeros_like(b)]
        for _ in range(2):
            model.fit(x, t, loss=nn.MSELoss(), optimizer=opt, epochs=1, batch_size=batch, shuffle=False)
            z, y = forward(W, b)
            gy = 2.0 * (y - t) / y.size  # mean-reduced MSE
            if act == "relu":
                gz = gy * (z > 0)
            elif act == "sigmoid":
                gz = gy * y * (1 - y)
            elif act == "tanh":
                gz = gy * (1 - y * y)
            else:
                gz = gy
            grads = [gz.T @ x.astype(np.float64), gz.sum(axis=0)]
            new = []
            for i, (p, g) in enumerate(zip((W, b), grads)):
                g = g + wd * p
                if momentum:
                    vel[i] = momentum * vel[i] + g
                    g = g + momentum * vel[i] if nesterov else vel[i]
                new.append(p - lr * g)
            W, b = new[0], (new[1] if use_bias else b)
        got = [p.numpy() for p in model.parameters()]
        np.testing.assert_allclose(got[0], W, rtol=2e-4, atol=2e-5)
        if use_bias:
            np.testing.assert_allclose(got[1], b, rtol=2e-4, atol=2e-5)
    prop()


@st.composite
def elementwise_case(draw, dtypes):
    shape = (draw(st.integers(0, 9)), draw(st.integers(1, 33)))
    dtype = draw(st.sampled_from(dtypes))
    specials = draw(st.booleans())
    return (shape, dtype, _values(draw, shape, dtype, specials), _values(draw, shape, dtype, specials),
            _values(draw, shape, dtype, False), draw(st.sampled_from(["relu", "sigmoid", "tanh"])),
            draw(st.sampled_from([0.0, 0.9])), draw(st.sampled_from([0.0, 1e-2])), draw(st.booleans()))


def test_dense_backward_ops_and_sgd_with_nan_inf(device):
    """The training ops a Dense layer's backward and the SGD step run, on raw arrays with NaN/Inf: activation,
    activation_backward, bias gradient (column sums) and the SGD update propagate them as NumPy/PyTorch do."""
    from hetnn._loader import _core

    @SETTINGS
    @given(elementwise_case(supported_dtypes(device, ["float32", "float64"])))
    def prop(case):
        shape, dtype, z, g, v0, act, momentum, wd, nesterov = case
        nesterov = nesterov and momentum > 0
        COUNT["examples"] += 1
        dev = device._dev
        Z, G = _core.Array.from_numpy(dev, z), _core.Array.from_numpy(dev, g)
        y = _core.activation(Z, act).to_numpy().astype(np.float64)
        with np.errstate(all="ignore"):
            want_y = _act64(z.astype(np.float64), act)
        _check_specials(y, want_y)
        fin = np.isfinite(want_y)
        np.testing.assert_allclose(y[fin], want_y[fin], rtol=64 * EPS[dtype], atol=64 * EPS[dtype])
        Y = _core.Array.from_numpy(dev, y.astype(dtype))
        dz = _core.activation_backward(G, Y, act).to_numpy().astype(np.float64)
        with np.errstate(all="ignore"):
            gg, yy = g.astype(np.float64), y
            want_dz = gg * (yy > 0) if act == "relu" else gg * yy * (1 - yy) if act == "sigmoid" else gg * (1 - yy * yy)
            if act == "relu":  # PyTorch's threshold_backward: y <= 0 ? 0 : g (a NaN output passes g on)
                want_dz = np.where(yy <= 0, 0.0, gg)
        _check_specials(dz, want_dz)
        fin = np.isfinite(want_dz)
        np.testing.assert_allclose(dz[fin], want_dz[fin], rtol=64 * EPS[dtype], atol=64 * EPS[dtype])
        cs = _core.sum_rows(G).to_numpy().astype(np.float64)
        with np.errstate(all="ignore"):
            want_cs = gg.sum(axis=0)
        _check_specials(cs, want_cs)
        fin = np.isfinite(want_cs)  # a column sum of n terms: n rounding steps, each at most eps of the running |sum|
        bound = (shape[0] + 1) * EPS[dtype] * np.abs(gg).sum(axis=0)
        assert np.all(np.abs(cs[fin] - want_cs[fin]) <= bound[fin] + EPS[dtype]), (cs, want_cs)
        # SGD on a parameter the size of g, gradient g (NaN/Inf included), velocity v0
        p0 = np.random.default_rng(shape[0] * 131 + shape[1]).uniform(-1, 1, shape).astype(dtype)
        P, V = _core.Array.from_numpy(dev, p0), _core.Array.from_numpy(dev, v0)
        _core.sgd_update(P, G, V if momentum else None, 0.1, momentum, wd, nesterov)
        with np.errstate(all="ignore"):
            d = gg + wd * p0.astype(np.float64)
            if momentum:
                vel = momentum * v0.astype(np.float64) + d
                d = d + momentum * vel if nesterov else vel
            want_p = p0.astype(np.float64) - 0.1 * d
        got_p = P.to_numpy().astype(np.float64)
        _check_specials(got_p, want_p)
        fin = np.isfinite(want_p)
        np.testing.assert_allclose(got_p[fin], want_p[fin], rtol=16 * EPS[dtype], atol=16 * EPS[dtype])
    prop()


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_table_row_matches_its_float64_reference(device, name):
    """Each op-table row on fresh random inputs from drawn seeds, in every dtype the row and the device take: every
    output against the row's float64 reference (new hetnn arrays start as NaN bytes: HETNN_POISON)."""
    op = OPS[name]
    dtypes = supported_dtypes(device, op.dtypes)

    @SETTINGS
    @given(st.integers(0, 2**32 - 1), st.sampled_from(dtypes))
    def check(seed, dtype):
        COUNT["examples"] += 1
        inputs = op.inputs(np.random.default_rng(seed), dtype)
        assert_row_matches(name, op, dtype, op.run(device, inputs), op.reference(inputs))

    check()
