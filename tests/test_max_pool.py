"""max_pool2d / max_pool2d_backward against the float64 NumPy reference of PyTorch's semantics, on every device."""
import itertools

import numpy as np
import pytest

import hetnn
from conftest import rel_err, supported_dtypes
import max_pool_reference as ref

try:
    import ml_dtypes  # noqa: F401
except ImportError:  # pragma: no cover
    ml_dtypes = None


def _params():
    """Every (kernel, stride, padding, dilation, ceil_mode) with kernel 1..5, stride 1..3, padding 0..k//2,
    dilation 1..2, square windows; plus rectangular ones."""
    out = []
    for k, s, d, ceil in itertools.product(range(1, 6), range(1, 4), (1, 2), (False, True)):
        for p in range(0, k // 2 + 1):
            out.append(((k, k), (s, s), (p, p), (d, d), ceil))
    out += [((3, 2), (2, 1), (1, 0), (1, 2), True), ((1, 4), (1, 3), (0, 2), (2, 1), False),
            ((5, 3), (3, 2), (2, 1), (1, 1), True), ((2, 5), (1, 2), (1, 2), (2, 1), False)]
    return out


PARAMS = _params()


def _input(rng, shape, dtype=np.float32):
    # Values drawn from a small set: ties happen, so "first maximum wins" is exercised.
    return (rng.integers(-20, 20, size=shape) / 4).astype(dtype)


def _valid(shape, k, s, p, d, ceil):
    return (ref.out_size(shape[2], k[0], s[0], p[0], d[0], ceil) >= 1 and
            ref.out_size(shape[3], k[1], s[1], p[1], d[1], ceil) >= 1)


@pytest.mark.parametrize("k,s,p,d,ceil", PARAMS, ids=lambda v: str(v).replace(" ", ""))
def test_forward_and_backward_match_reference(device, rng, k, s, p, d, ceil):
    shape = (2, 3, int(rng.integers(5, 12)), int(rng.integers(5, 12)))  # odd and even sizes
    if not _valid(shape, k, s, p, d, ceil):
        shape = (2, 3, 12, 13)
    x = _input(rng, shape)
    y_ref, i_ref = ref.max_pool2d(x, k, s, p, d, ceil)
    y, idx = hetnn.max_pool2d(x, k, s, p, d, ceil, return_indices=True, device=device)
    assert y.shape == y_ref.shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, y_ref.astype(np.float32))  # a max selects: exact
    np.testing.assert_array_equal(idx, i_ref)
    assert idx.dtype == np.int64
    y_only = hetnn.max_pool2d(x, k, s, p, d, ceil, device=device)
    np.testing.assert_array_equal(y_only, y)

    gy = rng.standard_normal(y.shape).astype(np.float32)
    gx = hetnn.max_pool2d_backward(gy, idx, shape, k, s, p, d, ceil, device=device)
    assert gx.shape == shape and gx.dtype == np.float32
    assert ref.backward_error(gx, gy, i_ref, shape) < 1e-6


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_dtypes_select_exactly(device, rng, dtype):
    x = _input(rng, (3, 4, 17, 15)).astype(np.float32)
    x = (x + rng.standard_normal(x.shape).astype(np.float32)).astype(dtype)
    k, s, p, d = (3, 3), (2, 2), (1, 1), (1, 1)
    y_ref, i_ref = ref.max_pool2d(x.astype(np.float64), k, s, p, d, True)
    y, idx = hetnn.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True, device=device)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.astype(np.float64), y_ref)
    np.testing.assert_array_equal(idx, i_ref)
    gy = rng.standard_normal(y.shape).astype(dtype)
    gx = hetnn.max_pool2d_backward(gy, idx, x.shape, 3, 2, 1, ceil_mode=True, device=device)
    assert gx.dtype == np.dtype(dtype)
    tol = {"float32": 1e-6, "float64": 1e-14, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    assert ref.backward_error(gx, gy.astype(np.float64), i_ref, x.shape) < tol


def test_nan_propagates_like_pytorch(device, rng):
    x = rng.standard_normal((1, 2, 8, 8)).astype(np.float32)
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 1, 2] = np.nan   # same k2s2 window as (0, 0, 1, 1)? no: (1,2) is in window (0, 1)
    x[0, 1, 4, 4] = np.nan
    x[0, 1, 5, 5] = np.nan   # two NaNs in one 2x2 window: the last one's index wins
    x[0, 1, 6, 6] = np.inf
    y_ref, i_ref = ref.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    y, idx = hetnn.max_pool2d(x, 2, return_indices=True, device=device)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[0, 0, 0, 1]) and np.isnan(y[0, 1, 2, 2])
    assert y[0, 1, 3, 3] == np.inf
    np.testing.assert_array_equal(idx, i_ref)
    assert idx[0, 1, 2, 2] == 5 * 8 + 5
    # the forward without indices takes its own path on some devices: same NaN rule
    y_only = hetnn.max_pool2d(x, 2, device=device)
    np.testing.assert_array_equal(np.isnan(y_only), np.isnan(y_ref))
    np.testing.assert_array_equal(y_only[~np.isnan(y_only)], y_ref[~np.isnan(y_ref)].astype(np.float32))


def test_nan_everywhere_in_wide_rows(device, rng):
    """NaN in interior and edge chunks of long rows, with and without indices, strides 1 and 2, padding."""
    x = rng.standard_normal((2, 3, 9, 150)).astype(np.float32)
    x[rng.random(x.shape) < 0.03] = np.nan
    for k, s, p in [((3, 3), (2, 2), (1, 1)), ((2, 2), (1, 1), (0, 0)), ((3, 2), (1, 2), (1, 0))]:
        y_ref, i_ref = ref.max_pool2d(x, k, s, p, (1, 1), False)
        y, idx = hetnn.max_pool2d(x, k, s, p, return_indices=True, device=device)
        y_only = hetnn.max_pool2d(x, k, s, p, device=device)
        for out in (y, y_only):
            np.testing.assert_array_equal(np.isnan(out), np.isnan(y_ref))
            np.testing.assert_array_equal(np.nan_to_num(out, nan=7.0), np.nan_to_num(y_ref, nan=7.0).astype(np.float32))
        np.testing.assert_array_equal(idx, i_ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_signed_zeros_keep_the_first_in_window_order(device, rng, dtype):
    """Windows whose maximum is a zero of either sign: the first in row-major window order decides the sign (as
    PyTorch's strict '>' scan does), with and without indices; NaN mixed in. Covers the CPU's column-wise pass,
    which must hand such rows to the tap-by-tap loops."""
    vals = np.array([-0.0, 0.0, -1.0, -2.0, np.nan], dtype=np.float64)
    x = rng.choice(vals, size=(2, 3, 17, 70), p=[0.35, 0.35, 0.15, 0.13, 0.02]).astype(dtype)
    for k, s, p in [((3, 3), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1)), ((4, 2), (1, 1), (1, 0)),
                    ((5, 5), (2, 2), (2, 2))]:
        y_ref, _ = ref.max_pool2d(x, k, s, p, (1, 1), False)
        for y in (hetnn.max_pool2d(x, k, s, p, device=device),
                  hetnn.max_pool2d(x, k, s, p, return_indices=True, device=device)[0]):
            y = np.asarray(y, dtype=np.float64)
            np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
            ok = ~np.isnan(y_ref)
            np.testing.assert_array_equal(y[ok], y_ref[ok])
            np.testing.assert_array_equal(np.signbit(y[ok]), np.signbit(y_ref[ok]), err_msg=f"k={k} s={s} p={p}")


@pytest.mark.parametrize("special", [False, True], ids=["ordinary", "nan-and-zeros"])
def test_short_rows(device, rng, special):
    """Rows of up to 32 inputs, around the 16- and 32-column edges, every stride-1/2 window with padding and
    dilation (the CPU keeps such rows in registers, permuting them per tap; rows holding NaN or -0 take the taps)."""
    vals = np.array([-0.0, 0.0, -1.0, -2.0, np.nan, 3.0, -np.inf], dtype=np.float64)
    probs = [0.3, 0.3, 0.1, 0.1, 0.05, 0.1, 0.05] if special else None
    for w in (1, 2, 7, 15, 16, 17, 31, 32, 33):
        x = (rng.choice(vals, size=(2, 3, 9, w), p=probs) if special else rng.standard_normal((2, 3, 9, w)))
        x = x.astype(np.float32)
        for k, s, p, d in [(1, 1, 0, 1), (2, 2, 0, 1), (3, 2, 1, 1), (3, 1, 1, 1), (5, 2, 2, 1), (3, 2, 1, 2),
                           (4, 1, 0, 1), (2, 1, 1, 2)]:
            if not _valid(x.shape, (k, k), (s, s), (p, p), (d, d), False):
                continue
            y_ref, _ = ref.max_pool2d(x, (k, k), (s, s), (p, p), (d, d), False)
            y = np.asarray(hetnn.max_pool2d(x, k, s, p, d, device=device), dtype=np.float64)
            what = f"w={w} k={k} s={s} p={p} d={d}"
            np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref), err_msg=what)
            ok = ~np.isnan(y_ref)
            np.testing.assert_array_equal(y[ok], y_ref[ok], err_msg=what)
            np.testing.assert_array_equal(np.signbit(y[ok]), np.signbit(y_ref[ok]), err_msg=what)


def test_ties_take_the_first_maximum(device):
    x = np.ones((1, 1, 6, 6), dtype=np.float32)
    y, idx = hetnn.max_pool2d(x, 3, stride=1, padding=1, return_indices=True, device=device)
    _, i_ref = ref.max_pool2d(x, (3, 3), (1, 1), (1, 1), (1, 1), False)
    np.testing.assert_array_equal(idx, i_ref)
    assert idx[0, 0, 0, 0] == 0 and idx[0, 0, 2, 3] == 1 * 6 + 2


def test_all_neg_inf_windows(device):
    x = np.full((1, 1, 4, 4), -np.inf, dtype=np.float32)
    y, idx = hetnn.max_pool2d(x, 2, return_indices=True, device=device)
    assert np.all(y == -np.inf)
    np.testing.assert_array_equal(idx, ref.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), False)[1])


def test_overlapping_windows_accumulate_without_races(device, rng):
    # Many planes and rows, stride < kernel: every input receives gradient from several windows.
    shape = (3, 5, 67, 45)
    x = rng.standard_normal(shape).astype(np.float32)
    x = np.round(x * 2) / 2  # ties across windows
    for k, s in [((3, 3), (1, 1)), ((5, 4), (2, 3)), ((2, 2), (1, 1))]:
        y, idx = hetnn.max_pool2d(x, k, s, return_indices=True, device=device)
        y_ref, i_ref = ref.max_pool2d(x, k, s, (0, 0), (1, 1), False)
        np.testing.assert_array_equal(idx, i_ref)
        gy = rng.standard_normal(y.shape).astype(np.float32)
        gx = hetnn.max_pool2d_backward(gy, idx, shape, k, s, device=device)
        assert ref.backward_error(gx, gy, i_ref, shape) < 1e-6


def test_single_plane_large(device, rng):
    x = rng.standard_normal((1, 1, 301, 257)).astype(np.float32)
    y, idx = hetnn.max_pool2d(x, 3, 2, 1, return_indices=True, device=device)
    y_ref, i_ref = ref.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1), False)
    np.testing.assert_array_equal(y, y_ref.astype(np.float32))
    np.testing.assert_array_equal(idx, i_ref)


def test_numerical_gradient(device, rng):
    """d/dx sum(w * maxpool(x)) by central differences (float64, distinct values so the argmax is stable)."""
    dtype = supported_dtypes(device, ["float64", "float32"])[0]
    shape = (1, 2, 7, 6)
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) / 10
    k, s, p = (3, 2), (2, 1), (1, 1)
    y, idx = hetnn.max_pool2d(x.astype(dtype), k, s, p, return_indices=True, device=device)
    w = rng.standard_normal(y.shape)
    gx = hetnn.max_pool2d_backward(w.astype(dtype), idx, shape, k, s, p, device=device)
    f = lambda z: float(np.sum(w * hetnn.max_pool2d(z.astype(dtype), k, s, p, device=device)))  # noqa: E731
    eps = 1e-3
    num = np.zeros(shape)
    for i in np.ndindex(shape):
        e = np.zeros(shape)
        e[i] = eps
        num[i] = (f(x + e) - f(x - e)) / (2 * eps)
    assert rel_err(gx, num) < (1e-8 if dtype == "float64" else 1e-4)


def test_three_d_input_and_arrays(device, rng):
    x = rng.standard_normal((4, 9, 10)).astype(np.float32)
    y_ref, i_ref = ref.max_pool2d(x[None], (2, 3), (2, 2), (1, 1), (1, 1), True)
    y, idx = hetnn.max_pool2d(x, (2, 3), 2, 1, ceil_mode=True, return_indices=True, device=device)
    assert y.shape == y_ref.shape[1:]
    np.testing.assert_array_equal(y, y_ref[0].astype(np.float32))
    np.testing.assert_array_equal(idx, i_ref[0])
    X = hetnn.asarray(x, device=device)
    Y, I = hetnn.max_pool2d(X, (2, 3), 2, 1, ceil_mode=True, return_indices=True)
    assert isinstance(Y, hetnn.Array) and isinstance(I, hetnn.Array)
    assert Y.device == device and Y.shape == y.shape and I.dtype == np.int64
    np.testing.assert_array_equal(Y.numpy(), y)
    np.testing.assert_array_equal(I.numpy(), idx)
    G = hetnn.asarray(np.ones(y.shape, np.float32), device=device)
    GX = hetnn.max_pool2d_backward(G, I, x.shape, (2, 3), 2, 1, ceil_mode=True)
    assert isinstance(GX, hetnn.Array) and GX.shape == x.shape
    gx_ref = ref.max_pool2d_backward(np.ones(y_ref.shape), i_ref, (1,) + x.shape)[0]
    np.testing.assert_allclose(GX.numpy(), gx_ref)


def test_empty_batch(device):
    x = np.zeros((0, 3, 8, 8), np.float32)
    y, idx = hetnn.max_pool2d(x, 2, return_indices=True, device=device)
    assert y.shape == (0, 3, 4, 4) and idx.shape == (0, 3, 4, 4)
    gx = hetnn.max_pool2d_backward(y, idx, x.shape, 2, device=device)
    assert gx.shape == x.shape


# --- bad arguments -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,exc,match", [
    ({"kernel_size": 0}, ValueError, "kernel_size must be positive"),
    ({"kernel_size": -2}, ValueError, "kernel_size must be positive"),
    ({"kernel_size": 2, "stride": 0}, ValueError, "stride must be positive"),
    ({"kernel_size": 2, "padding": -1}, ValueError, "padding must be non-negative"),
    ({"kernel_size": 2, "dilation": 0}, ValueError, "dilation must be positive"),
    ({"kernel_size": 3, "padding": 2}, ValueError, "at most half of kernel_size"),
    ({"kernel_size": 9}, ValueError, "too small"),
    ({"kernel_size": 3, "dilation": 4}, ValueError, "too small"),
    ({"kernel_size": 2.0}, TypeError, "kernel_size must be an int"),
    ({"kernel_size": True}, TypeError, "kernel_size must be an int"),
    ({"kernel_size": (2, 2, 2)}, ValueError, "pair of ints"),
    ({"kernel_size": None}, TypeError, "kernel_size is required"),
    ({"kernel_size": 2, "stride": "2"}, TypeError, "stride must be an int"),
    ({"kernel_size": 2, "ceil_mode": 1}, TypeError, "ceil_mode must be a bool"),
    ({"kernel_size": 2, "return_indices": "yes"}, TypeError, "return_indices must be a bool"),
])
def test_bad_window_arguments(device, kwargs, exc, match):
    x = np.zeros((1, 2, 6, 6), np.float32)
    with pytest.raises(exc, match=match):
        hetnn.max_pool2d(x, device=device, **kwargs)


@pytest.mark.parametrize("shape", [(6, 6), (6,), (1, 1, 1, 6, 6), ()])
def test_wrong_ndim(device, shape):
    with pytest.raises(ValueError, match="4-D"):
        hetnn.max_pool2d(np.zeros(shape, np.float32), 2, device=device)


@pytest.mark.parametrize("shape", [(1, 0, 4, 4), (1, 2, 0, 4), (1, 2, 4, 0)])
def test_empty_non_batch_dimension(device, shape):
    with pytest.raises(ValueError, match="empty channel or spatial"):
        hetnn.max_pool2d(np.zeros(shape, np.float32), 1, device=device)


@pytest.mark.parametrize("bad_dtype,message", [("bool", "input has dtype bool; max pooling takes"),
                                           ("complex64", "complex64 is not supported"),
                                           ("int16", "int16 is not supported"), ("uint16", "uint16 is not supported")])
def test_input_of_a_dtype_max_pooling_does_not_take(device, bad_dtype, message):
    """bool arrays exist (comparisons give them) but do not pool; the others hetnn arrays do not hold. (Not named
    `dtype`: conftest skips a `dtype` a device does not take, which would skip every case here.)"""
    with pytest.raises(TypeError, match=message):
        hetnn.max_pool2d(np.zeros((1, 1, 4, 4), bad_dtype), 2, device=device)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_images_pool_exactly(device, dtype):
    """The max-pooling study's images: digits 0-9, 2x2 windows, stride 2; the same dtype out, the first maximum's
    index (ties everywhere); the integer backward is refused (gradients are floating-point)."""
    x = np.array([[[[3, 9, 9, 0], [9, 1, 2, 2], [0, 0, 7, 7], [0, 0, 7, 7]]]], dtype)
    y, idx = hetnn.max_pool2d(hetnn.asarray(x, device=device), 2, return_indices=True)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.numpy(), np.array([[[[9, 9], [0, 7]]]], dtype))
    np.testing.assert_array_equal(idx.numpy(), [[[[1, 2], [8, 10]]]])
    with pytest.raises(TypeError, match="max pooling takes float32"):
        hetnn.max_pool2d_backward(y, idx, x.shape, 2)


def test_backward_rejects_corrupt_indices(device, rng):
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    y, idx = hetnn.max_pool2d(x, 2, return_indices=True, device=device)
    gy = np.ones_like(y)
    # out of the plane; inside it but outside window (1, 1)'s 2x2 taps; a valid position plus 2^32 (the same low
    # 32 bits as a right answer); a negative value with those low bits
    good = int(idx[1, 0, 1, 1])
    for bad in (-1, 36, 10**12, 3, good + 2**32, good - 2**32):
        corrupt = idx.copy()
        corrupt[1, 0, 1, 1] = bad
        with pytest.raises(ValueError, match=r"indices\[1, 0, 1, 1\] = " + str(bad)):
            hetnn.max_pool2d_backward(gy, corrupt, x.shape, 2, device=device)
    # the dilated grid is enforced too: (0, 1) lies in window (0, 0)'s bounding box but not on its taps
    y2, idx2 = hetnn.max_pool2d(x, 2, stride=2, dilation=2, return_indices=True, device=device)
    corrupt = idx2.copy()
    corrupt[0, 0, 0, 0] = 1
    with pytest.raises(ValueError, match="not a position inside its pooling window"):
        hetnn.max_pool2d_backward(np.ones_like(y2), corrupt, x.shape, 2, stride=2, dilation=2, device=device)


def test_backward_bad_arguments(device, rng):
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    y, idx = hetnn.max_pool2d(x, 2, return_indices=True, device=device)
    with pytest.raises(TypeError, match="int64"):
        hetnn.max_pool2d_backward(y, idx.astype(np.int32), x.shape, 2, device=device)
    # the gradient's dtype is named as such, for NumPy operands and Arrays alike (the core checks it)
    with pytest.raises(TypeError, match="grad_output has dtype int32"):
        hetnn.max_pool2d_backward(y.astype(np.int32), idx, x.shape, 2, device=device)
    with pytest.raises(TypeError, match="grad_output has dtype int32"):
        hetnn.max_pool2d_backward(hetnn.asarray(y.astype(np.int32), device=device), hetnn.asarray(idx, device=device),
                                  x.shape, 2)
    with pytest.raises(ValueError, match="grad_output has shape"):
        hetnn.max_pool2d_backward(y[:, :, :2], idx, x.shape, 2, device=device)
    with pytest.raises(ValueError, match="indices have shape"):
        hetnn.max_pool2d_backward(y, idx[:, :1], x.shape, 2, device=device)
    with pytest.raises(ValueError, match="grad_output has shape"):
        hetnn.max_pool2d_backward(y, idx, (1, 2, 8, 8), 2, device=device)
    with pytest.raises(ValueError, match="input_shape must have 4 entries|4-D"):
        hetnn.max_pool2d_backward(y, idx, (6, 6), 2, device=device)
    with pytest.raises(TypeError, match="input_shape"):
        hetnn.max_pool2d_backward(y, idx, "abc", 2, device=device)
    with pytest.raises(TypeError, match="both be hetnn Arrays"):
        hetnn.max_pool2d_backward(hetnn.asarray(y, device=device), idx, x.shape, 2)


def test_arrays_on_different_devices_are_refused(rng):
    devs = hetnn.devices()
    if len(devs) < 2:
        pytest.skip("needs two devices")
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    Y, I = hetnn.max_pool2d(hetnn.asarray(x, device=devs[0]), 2, return_indices=True)
    with pytest.raises(ValueError, match="move one"):
        hetnn.max_pool2d_backward(Y, I.to(devs[1]), x.shape, 2)


def test_an_aliasing_index_of_an_empty_window_carries_no_gradient(device):
    """Windows with no input position accept any index (their forward writes the first grid point, which may fall
    past the row's end and alias another element). The OpenCL scatter once added their gradient at that alias."""
    x_shape = (1, 1, 2, 2)
    k, s, p, d = (1, 2), (1, 1), (0, 1), (1, 3)  # both windows: columns -1 and 2 of a 2-wide row
    idx = np.array([[[[2], [2]]]], np.int64)    # "row 0, column 2" read as element (1, 0)
    g = np.array([[[[0.75], [-0.25]]]], np.float32)
    gx = hetnn.max_pool2d_backward(g, idx, x_shape, k, s, p, d, device=device)
    np.testing.assert_array_equal(gx, np.zeros(x_shape, np.float32))
