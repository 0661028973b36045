"""hetnn.conv2d: PyTorch's semantics (output size, 'same' with even kernels, unbatched input, groups, dilation,
stride larger than the kernel, an empty batch), both placement paths, out=, and PyTorch itself where installed."""
import importlib.util

import numpy as np
import pytest

import hetnn
from op_table import _conv_bwd_ref, _conv_ref
from conftest import rel_err


def _inputs(rng, n, c, h, w, o, k, groups=1, dtype=np.float32):
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((o, c // groups, *k)).astype(dtype)
    return x, weight, rng.standard_normal(o).astype(dtype)


CASES = [  # (n, c, h, w, o, k, stride, padding, dilation, groups)
    (2, 3, 8, 9, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (1, 4, 7, 7, 6, (2, 2), (1, 1), "same", (1, 1), 2),   # even kernel: the extra pad at the bottom/right
    (1, 2, 9, 6, 2, (4, 3), (1, 1), "same", (2, 1), 1),   # dilated 'same'
    (2, 2, 10, 10, 3, (2, 2), (3, 3), (0, 0), (1, 1), 1),  # stride larger than the kernel
    (0, 3, 5, 5, 2, (3, 3), (1, 1), (0, 0), (1, 1), 1),   # an empty batch
    (1, 6, 5, 8, 6, (3, 1), (2, 1), (1, 0), (1, 1), 6),   # depthwise
    (1, 2, 3, 3, 1, (3, 3), (1, 1), "valid", (1, 1), 1),  # the kernel exactly the input
    (3, 5, 4, 6, 3, (1, 1), (1, 1), (0, 0), (1, 1), 1),   # pointwise: a matrix product per image
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv2d_matches_float64(device, rng, case):
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    x, weight, bias = _inputs(rng, n, c, h, w, o, k, groups)
    ref = _conv_ref((x, weight, bias, stride, padding, dilation, groups, "relu"))[0]
    # each output's error bounded by its own sum of |x||w| + |b| (a norm-wise bound failed where an output was a
    # small difference of large products: case 6, one output of 0.006 from 18 products of order 1)
    scale = _conv_ref((np.abs(x), np.abs(weight), np.abs(bias), stride, padding, dilation, groups, None))[0]
    terms = c // groups * k[0] * k[1] + 1

    def within(got):
        return np.all(np.abs(np.asarray(got, np.float64) - ref) <= 4 * terms * 2.0**-24 * scale + 1e-30)
    y = hetnn.conv2d(x, weight, bias, stride, padding, dilation, groups, "relu", device=device)
    assert y.shape == ref.shape
    assert within(y)
    X, Wt, B = (hetnn.asarray(a, device=device) for a in (x, weight, bias))
    out = hetnn.empty(ref.shape, "float32", device=device)
    got = hetnn.conv2d(X, Wt, bias=B, stride=stride, padding=padding, dilation=dilation, groups=groups,
                       activation="relu", out=out)
    assert got is out and within(out.numpy())


@pytest.mark.parametrize("case", [(2, 2, 3, 2, 3, (3, 3), (3, 2), (4, 3), (2, 2), 1),
                                  (1, 3, 5, 11, 2, (2, 5), (2, 3), (3, 6), (1, 1), 1),
                                  (2, 1, 6, 40, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1)],
                         ids=["pad-beyond-input", "wide-pad-stride3", "long-rows"])
def test_im2col_and_col2im_edges(device, rng, case):
    # Output rows and columns that see only padding, strides with partial stretches, rows longer than a vector:
    # the edge arithmetic of the im2col and col2im kernels (per element on GPUs, per row elsewhere)
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    x, weight, bias = _inputs(rng, n, c, h, w, o, k, groups)
    ref = _conv_ref((x, weight, bias, stride, padding, dilation, groups, None))[0]
    assert rel_err(hetnn.conv2d(x, weight, bias, stride, padding, dilation, groups, device=device), ref) < 2e-5
    # and col2im's (the data gradient), with the weight gradient from the same columns
    gy = rng.standard_normal(ref.shape).astype(np.float32)
    want = _conv_bwd_ref((gy, x, weight, stride, padding, dilation, groups))
    got = hetnn.conv2d_backward(gy, x, weight, stride, padding, dilation, groups, device=device)
    for g, r in zip(got[:2], want[:2]):
        assert rel_err(g, r) < 2e-5


def test_unbatched_input_gives_unbatched_output(device, rng):
    x, weight, bias = _inputs(rng, 1, 3, 6, 6, 2, (3, 3))
    y = hetnn.conv2d(x[0], weight, bias, device=device)
    assert y.shape == (2, 4, 4)
    np.testing.assert_allclose(y, hetnn.conv2d(x, weight, bias, device=device)[0], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Using padding=.same.")
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.parametrize("case", CASES[:4] + CASES[5:], ids=[str(i) for i in (0, 1, 2, 3, 5, 6, 7)])
def test_conv2d_agrees_with_pytorch(device, rng, case):
    import torch

    n, c, h, w, o, k, stride, padding, dilation, groups = case
    x, weight, bias = _inputs(rng, n, c, h, w, o, k, groups)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(weight), torch.from_numpy(bias),
                                      stride, padding, dilation, groups).numpy()
    got = hetnn.conv2d(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                       device=device)
    assert got.shape == want.shape
    assert rel_err(got, want) < 2e-5


def test_bias_positionally_and_by_keyword_but_not_both(rng):
    x, weight, bias = _inputs(rng, 1, 2, 5, 5, 2, (3, 3))
    a = hetnn.conv2d(x, weight, bias, 1, 1)
    b = hetnn.conv2d(x, weight, bias=bias, stride=1, padding=1)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="multiple values"):
        hetnn.conv2d(x, weight, bias, bias=bias)


@pytest.mark.requires("float64")
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3], CASES[5]], ids=["3x3", "same-even", "stride3", "dw"])
def test_conv2d_backward_against_finite_differences(device, rng, case):
    n, c, h, w, o, k, stride, padding, dilation, groups = case
    n = max(n, 1)
    x, weight, bias = (a.astype(np.float64) for a in _inputs(rng, n, c, min(h, 6), min(w, 6), o, k, groups))
    args = (stride, padding, dilation, groups)
    y = hetnn.conv2d(x, weight, bias, *args, device=device)
    gy = rng.standard_normal(y.shape)
    gx, gw, gb = hetnn.conv2d_backward(gy, x, weight, *args, device=device)
    loss = lambda xx, ww, bb: float((hetnn.conv2d(xx, ww, bb, *args, device=device) * gy).sum())  # noqa: E731
    eps = 1e-6
    for arr, grad, which in ((x, gx, 0), (weight, gw, 1), (bias, gb, 2)):
        for idx in list(np.ndindex(arr.shape))[:: max(1, arr.size // 12)]:
            plus, minus = [a.copy() for a in (x, weight, bias)], [a.copy() for a in (x, weight, bias)]
            plus[which][idx] += eps
            minus[which][idx] -= eps
            numeric = (loss(*plus) - loss(*minus)) / (2 * eps)
            assert abs(grad[idx] - numeric) <= 1e-6 * (1 + abs(numeric)), (which, idx, grad[idx], numeric)


@pytest.mark.parametrize("n,o", [(7, 1), (5, 3), (1, 2), (33, 64)])
def test_bias_gradient_sums_every_image(device, rng, n, o):
    # Few output channels: the OpenCL reduction splits the images into groups (partial sums, then summed rows)
    x = rng.standard_normal((n, 2, 6, 5)).astype(np.float32)
    weight = rng.standard_normal((o, 2, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((n, o, 4, 3)).astype(np.float32)
    gb = hetnn.conv2d_backward(gy, x, weight, input_grad=False, weight_grad=False, device=device)[2]
    # each channel's float32 sum is off by up to a few ulps of the sum of its terms' magnitudes, not of the result:
    # 396 terms summing to -0.90 came out 2.2e-5 away (CI, 33 images x 64 channels); an image left out or counted
    # twice is off by about one image's sum, |sum of 12 normals| ~ 3
    ref = gy.astype(np.float64).sum(axis=(0, 2, 3))
    bound = 1e-6 * np.abs(gy.astype(np.float64)).sum(axis=(0, 2, 3)) + 1e-6
    assert np.all(np.abs(gb - ref) <= bound), (np.abs(gb - ref) / bound).max()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_conv2d_backward_agrees_with_pytorch_autograd(device, rng):
    import torch

    x, weight, bias = _inputs(rng, 2, 4, 7, 8, 6, (3, 2), groups=2)
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x, weight, bias))
    ty = torch.nn.functional.conv2d(tx, tw, tb, (2, 1), (1, 0), (1, 2), 2)
    gy = rng.standard_normal(ty.shape).astype(np.float32)
    ty.backward(torch.from_numpy(gy))
    gx, gw, gb = hetnn.conv2d_backward(gy, x, weight, (2, 1), (1, 0), (1, 2), 2, device=device)
    for got, want in ((gx, tx.grad), (gw, tw.grad), (gb, tb.grad)):
        assert rel_err(got, want.numpy()) < 2e-5
    only = hetnn.conv2d_backward(gy, x, weight, (2, 1), (1, 0), (1, 2), 2, weight_grad=False, bias_grad=False,
                                 device=device)
    assert only[1] is None and only[2] is None and rel_err(only[0], tx.grad.numpy()) < 2e-5


@pytest.mark.parametrize("device", [d for d in hetnn.devices() if d.kind == "opencl"][:1] or
                         [pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL device"))])
def test_a_batch_past_the_work_limit_runs_in_chunks(device, rng):
    """The batch's GEMM work buffers (the columns, the per-image weight gradients) past the limit, here a device of
    64 MiB (limit 8 MiB): the GEMM paths run on chunks of images, not the 10-25x slower direct kernels."""
    k, padding = 3, 1
    x, weight, bias = _inputs(rng, 11, 32, 30, 30, 16, (k, k))
    gy = rng.standard_normal((11, 16, 30, 30)).astype(np.float32)
    device._dev._set_memory_limit(64 << 20)
    try:
        with hetnn.profile(device) as prof:
            y = hetnn.conv2d(x, weight, bias, padding=padding, device=device)
            gx, gw, gb = hetnn.conv2d_backward(gy, x, weight, padding=padding, device=device)
    finally:
        device._dev._set_memory_limit(0)
    names = {r["name"] for r in prof.records}
    assert "matmul" in names and not names & {"conv2d", "conv2d_backward_data", "conv2d_backward_weights"}, names
    one, pad = (1, 1), (padding, padding)
    assert rel_err(y, _conv_ref((x, weight, bias, one, pad, one, 1, None))[0]) < 1e-5
    for got, ref in zip((gx, gw, gb), _conv_bwd_ref((gy, x, weight, one, pad, one, 1))):
        assert rel_err(got, ref) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_bias_gradient_is_rounded_once(device, rng, dtype):
    """The bias gradient of images whose sums cancel: the OpenCL kernel rounded each group of images' partial sum to
    the 16-bit type before adding them (0.0053 relative error where one rounding gives 0.0005)."""
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    n, o, oh, ow = 8, 1, 3, 11
    gy = rng.uniform(0.1, 0.3, (n, o, oh, ow)).astype(np.float32)
    gy[n // 2:] *= -1.0
    gy[0, 0, 0, 0] += 0.27  # what is left after the halves cancel
    x = rng.standard_normal((n, 1, oh, ow + 1)).astype(np.float32)
    w = rng.standard_normal((o, 1, 1, 2)).astype(np.float32)
    G, X, W = (hetnn.asarray(v, device=device).astype(dtype) for v in (gy, x, w))
    gb = hetnn.conv2d_backward(G, X, W, input_grad=False, weight_grad=False)[2]
    ref = G.numpy().astype(np.float64).sum(axis=(0, 2, 3))
    one_rounding = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[dtype]
    assert abs(float(gb.numpy().astype(np.float64)[0]) - ref[0]) <= one_rounding * abs(ref[0]) * 1.01 + 1e-12
