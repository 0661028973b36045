"""max_pool2d(..., padding_mode="zeros"): the padding holds zeros (the max-pooling study's zero-padded variant).
Checked against NumPy: the image padded with numpy.pad and pooled by the float64 reference without padding; the
backward against the reference scatter of the same indices, -1 (the padding won) carrying no gradient."""
import itertools

import numpy as np
import pytest

import hetnn
import max_pool_reference as ref


def _params():
    """Square windows k 1..4, stride 1..2, padding 1, about half the kernel and k+1 (wider than half the kernel),
    dilation 1..2, floor and ceil; plus rectangular ones and a stride of 3."""
    out = [((k, k), (s, s), (p, p), (d, d), ceil)
           for k, s, d, ceil in itertools.product(range(1, 5), (1, 2), (1, 2), (False, True))
           for p in sorted({1, (k + 1) // 2 + 1, k + 1})]
    out += [((3, 3), (3, 3), (2, 2), (1, 1), True), ((2, 2), (3, 3), (3, 3), (2, 2), False)]
    return out + [((3, 2), (2, 1), (1, 0), (1, 2), True), ((2, 3), (1, 2), (0, 2), (2, 1), False),
                  ((2, 2), (2, 2), (2, 2), (1, 1), False)]  # the study's k2s2 with 2 rows of zeros


PARAMS = _params()


def _geometry_ok(shape, k, s, p, d, ceil):
    return (ref.out_size(shape[2], k[0], s[0], p[0], d[0], ceil) >= 1 and
            ref.out_size(shape[3], k[1], s[1], p[1], d[1], ceil) >= 1)


@pytest.mark.parametrize("k,s,p,d,ceil", PARAMS, ids=lambda v: str(v).replace(" ", ""))
def test_zero_padding_matches_numpy_pad_then_pool(device, rng, k, s, p, d, ceil):
    shape = (2, 2, int(rng.integers(1, 10)), int(rng.integers(1, 10)))
    if not _geometry_ok(shape, k, s, p, d, ceil):
        shape = (2, 2, 9, 8)
    # mostly negative values with zeros among them: the padding wins often and ties with an input zero
    x = (rng.integers(-12, 3, size=shape) / 4).astype(np.float32)
    y_ref, i_ref = ref.max_pool2d_zeros(x, k, s, p, d, ceil)
    y_out = np.full(y_ref.shape, np.nan, np.float32)  # poisoned outputs
    i_out = np.full(y_ref.shape, 12345, np.int64)
    y, idx = hetnn.max_pool2d(x, k, s, p, d, ceil, return_indices=True, padding_mode="zeros", device=device,
                              out=y_out, indices_out=i_out)
    np.testing.assert_array_equal(y, y_ref.astype(np.float32))
    np.testing.assert_array_equal(np.signbit(y), np.signbit(y_ref))  # +0 from the padding, -0 from the input
    np.testing.assert_array_equal(idx, i_ref)
    np.testing.assert_array_equal(hetnn.max_pool2d(x, k, s, p, d, ceil, padding_mode="zeros", device=device), y)

    gy = rng.standard_normal(y.shape).astype(np.float32)
    gx = hetnn.max_pool2d_backward(gy, idx, shape, k, s, p, d, ceil, padding_mode="zeros", device=device)
    assert ref.backward_error(gx, gy, i_ref, shape) < 1e-6


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64"])
def test_zero_padding_in_every_dtype(device, rng, dtype):
    if dtype not in device.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    lo = 0 if dtype == "uint8" else -9
    x = rng.integers(lo, 3, size=(2, 3, 7, 6)).astype(np.float64)
    xd = hetnn.asarray(x, device=device).astype(dtype)
    for k, s, p in (((2, 2), (2, 2), (2, 2)), ((3, 3), (1, 1), (1, 1)), ((3, 2), (2, 1), (2, 1))):
        y_ref, i_ref = ref.max_pool2d_zeros(x, k, s, p, (1, 1), False)
        y, idx = hetnn.max_pool2d(xd, k, s, p, return_indices=True, padding_mode="zeros")
        assert y.dtype == dtype
        np.testing.assert_array_equal(np.asarray(y.astype("float64").numpy()), y_ref)
        np.testing.assert_array_equal(idx.numpy(), i_ref)


def test_nan_wins_over_the_padding(device):
    x = np.full((1, 1, 3, 3), -1.0, np.float32)
    x[0, 0, 0, 0] = np.nan
    y, idx = hetnn.max_pool2d(x, 2, 1, 1, return_indices=True, padding_mode="zeros", device=device)
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[0, 0, 1, 1]) and idx[0, 0, 0, 0] == 0
    assert y[0, 0, 3, 3] == 0 and idx[0, 0, 3, 3] == -1  # the bottom right window: -1 and the padding


def test_the_default_is_pytorchs_negative_infinity(device, rng):
    x = -1 - rng.random((1, 2, 4, 4)).astype(np.float32)  # all negative: zero padding would win every border
    y = hetnn.max_pool2d(x, 3, 1, 1, device=device)
    np.testing.assert_array_equal(y, hetnn.max_pool2d(x, 3, 1, 1, padding_mode="-inf", device=device))
    np.testing.assert_array_equal(y, ref.max_pool2d(x, (3, 3), (1, 1), (1, 1), (1, 1), False)[0].astype(np.float32))
    assert (y < 0).all()


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(padding_mode="reflect"), ValueError, r"padding_mode must be '-inf' .* or 'zeros' .*, got 'reflect'"),
    (dict(padding_mode=0), TypeError, r"padding_mode must be '-inf'.*got 0"),
    (dict(padding_mode=None), TypeError, r"padding_mode must be '-inf'.*got None"),
    (dict(padding=2), ValueError, r"padding \(2, 2\) must be at most half of kernel_size \(2, 2\) \(or "
                                  r"padding_mode='zeros'"),
])
def test_bad_padding_modes_are_named(device, kwargs, exc, match):
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(exc, match=match):
        hetnn.max_pool2d(x, 2, device=device, **kwargs)
    with pytest.raises(exc, match=match):
        hetnn.max_pool2d_backward(np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 1, 3, 3), np.int64), x.shape,
                                  2, device=device, **kwargs)


def test_backward_takes_minus_one_only_where_the_padding_can_win(device):
    x = -np.ones((1, 1, 4, 4), np.float32)
    y, idx = hetnn.max_pool2d(x, 3, 1, 1, return_indices=True, padding_mode="zeros", device=device)
    assert (idx[0, 0, [0, 0, -1, -1], [0, -1, 0, -1]] == -1).all()
    gy = np.ones_like(y)
    want = np.zeros_like(x)  # the four inner windows reach no padding: -1 wins each at its first tap
    want[0, 0, :2, :2] = 1
    np.testing.assert_array_equal(
        hetnn.max_pool2d_backward(gy, idx, x.shape, 3, 1, 1, padding_mode="zeros", device=device), want)
    with pytest.raises(ValueError, match=r"indices\[0, 0, 0, 0\] = -1 is not a position inside its pooling window"):
        hetnn.max_pool2d_backward(gy, idx, x.shape, 3, 1, 1, device=device)  # -inf padding cannot win
    # a window that reaches no padding: -1 is refused in it (stride 1, 3x3 windows of a 6x6 image: (1, 1)..(4, 4))
    x6 = np.ones((1, 1, 6, 6), np.float32)
    y6, i6 = hetnn.max_pool2d(x6, 3, 1, 1, return_indices=True, padding_mode="zeros", device=device)
    i6[0, 0, 2, 3] = -1
    with pytest.raises(ValueError, match=r"indices\[0, 0, 2, 3\] = -1"):
        hetnn.max_pool2d_backward(np.ones_like(y6), i6, x6.shape, 3, 1, 1, padding_mode="zeros", device=device)
