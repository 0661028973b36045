"""The OpenCL forward convolution as Winograd F(2x2, 3x3) (kernels/winograd.cl), chosen with
hetnn._core._set_conv_algorithm, run here on the first OpenCL device. Its error bound, elementwise against the float64
direct sum: |y - y64| <= (C + 16) u (|w| * |x|) in the arithmetic type (u its unit roundoff, * the convolution),
plus the rounding of the result to a 16-bit storage type. The transforms' entries are 0, +-1 and +-1/2: measured,
the error stays within 2.2 u (|w| * |x|) for C up to 256."""
import numpy as np
import pytest

import hetnn
from hetnn import _core
from op_table import _conv_ref

# (x shape, O, padding, bias, activation): odd output sizes (partial tiles), no padding, one output row, many
# channels, batch 0
CASES = [((2, 3, 9, 7), 5, (1, 1), True, "relu"),
         ((3, 16, 8, 5), 4, (0, 0), False, None),
         ((1, 64, 14, 14), 32, (1, 1), True, "tanh"),
         ((2, 5, 3, 11), 7, (0, 2), True, "sigmoid"),
         ((1, 256, 7, 7), 8, "same", False, None),
         ((0, 4, 6, 6), 3, (1, 1), True, None)]
UNIT = {"float32": 2.0 ** -24, "float64": 2.0 ** -53, "float16": 2.0 ** -24, "bfloat16": 2.0 ** -24}
STORE = {"float32": 0.0, "float64": 0.0, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


@pytest.fixture
def winograd_device(opencl_device):
    _core._set_conv_algorithm(opencl_device._dev, "winograd")
    yield opencl_device
    _core._set_conv_algorithm(opencl_device._dev, "")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-o{c[1]}")
def test_winograd_forward_within_its_error_bound(winograd_device, rng, dtype, case):
    if dtype == "float64" and not winograd_device.fp64:
        pytest.skip("no fp64")
    shape, o, padding, with_bias, act = case
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((o, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype) if with_bias else None
    with hetnn.profile(winograd_device) as prof:
        y = hetnn.conv2d(x, w, bias, 1, padding, 1, 1, act, device=winograd_device)
    names = [r["name"] for r in prof.records]
    assert shape[0] == 0 or "conv2d:winograd_input" in names, names
    (ref,) = _conv_ref((x, w, bias, (1, 1), padding, (1, 1), 1, None))
    (mag,) = _conv_ref((np.abs(x), np.abs(w), None if bias is None else np.abs(bias), (1, 1), padding, (1, 1), 1,
                        None))
    # the activations are 1-Lipschitz: the bound before them holds after them
    want = ref if act is None else {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh,
                                    "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[act](ref)
    assert y.shape == ref.shape
    if ref.size:
        bound = (shape[1] + 16) * UNIT[dtype] * mag + STORE[dtype] * np.abs(want) + 1e-300
        err = np.abs(np.asarray(y, np.float64) - want)
        assert (err <= bound).all(), float(np.max(err / bound))


# F(4x4, 3x3)'s transforms (kernels/winograd.cl): entries up to 8 and 1/24, so its error is bounded by the
# magnitudes the transforms carry, not by the direct sum's: |y - y64| <= (C + 32) u Y, with
# Y = |A^T| (sum_c (|G| |g| |G^T|) . (|B^T| |d| |B|)) |A| + |bias| per 4x4 output tile (d the tile's 6x6 input).
G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
               [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=np.float64)
AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
               dtype=np.float64)


def winograd4_magnitude(x, w, bias, padding):
    """Y above, in float64: what F(4x4, 3x3)'s roundings are relative to, per output element."""
    from op_table import _conv_pads

    n, c, h, wd = x.shape
    top, bottom, left, right = _conv_pads(padding, 3, 3)
    oh, ow = h + top + bottom - 2, wd + left + right - 2
    th, tw = -(-oh // 4), -(-ow // 4)
    xp = np.zeros((n, c, 4 * th + 2, 4 * tw + 2))
    xp[:, :, top:top + h, left:left + wd] = np.abs(x.astype(np.float64))
    tiles = np.lib.stride_tricks.sliding_window_view(xp, (6, 6), axis=(2, 3))[:, :, ::4, ::4]  # n c th tw 6 6
    v = np.einsum("ij,nctsjk,lk->nctsil", np.abs(BT4), tiles, np.abs(BT4))
    u = np.einsum("ij,ocjk,lk->ocil", np.abs(G4), np.abs(w.astype(np.float64)), np.abs(G4))
    m = np.einsum("ocil,nctsil->notsil", u, v)
    y = np.einsum("ij,notsjk,lk->notsil", np.abs(AT4), m, np.abs(AT4))
    y = y.transpose(0, 1, 2, 4, 3, 5).reshape(n, w.shape[0], 4 * th, 4 * tw)[:, :, :oh, :ow]
    return y if bias is None else y + np.abs(bias.astype(np.float64))[None, :, None, None]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-o{c[1]}")
def test_winograd4_forward_within_its_error_bound(opencl_device, rng, dtype, case):
    shape, o, padding, with_bias, act = case
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((o, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype) if with_bias else None
    _core._set_conv_algorithm(opencl_device._dev, "winograd4")
    try:
        with hetnn.profile(opencl_device) as prof:
            y = hetnn.conv2d(x, w, bias, 1, padding, 1, 1, act, device=opencl_device)
    finally:
        _core._set_conv_algorithm(opencl_device._dev, "")
    names = [r["name"] for r in prof.records]
    assert shape[0] == 0 or "conv2d:winograd_input" in names, names
    (ref,) = _conv_ref((x, w, bias, (1, 1), padding, (1, 1), 1, None))
    want = ref if act is None else {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh,
                                    "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[act](ref)
    assert y.shape == ref.shape
    if ref.size:
        mag = winograd4_magnitude(x, w, bias, padding)
        bound = (shape[1] + 32) * UNIT[dtype] * mag + STORE[dtype] * np.abs(want) + 1e-300
        err = np.abs(np.asarray(y, np.float64) - want)
        assert (err <= bound).all(), float(np.max(err / bound))


def test_winograd4_magnitude_bounds_the_direct_one(rng):
    """The bound's magnitude is at least the direct sum's |w| * |x| (each product is one of its terms) and, for
    these transforms, within a bounded factor of it: the bound is not vacuous."""
    x = rng.standard_normal((2, 3, 10, 9))
    w = rng.standard_normal((4, 3, 3, 3))
    mag = winograd4_magnitude(x, w, None, (1, 1))
    (direct,) = _conv_ref((np.abs(x), np.abs(w), None, (1, 1), (1, 1), (1, 1), 1, None))
    assert mag.shape == direct.shape
    ratio = mag / direct
    assert ratio.min() >= 1 - 1e-12 and ratio.max() < 1e4, (ratio.min(), ratio.max())


def test_winograd_leaves_other_convolutions_to_the_other_paths(winograd_device, rng):
    # stride 2, a 5x5 kernel, dilation, groups: not F(2x2, 3x3); they run as before, and right
    for s, k, d, groups in [((2, 2), 3, (1, 1), 1), ((1, 1), 5, (1, 1), 1), ((1, 1), 3, (2, 2), 1),
                            ((1, 1), 3, (1, 1), 2)]:
        x = rng.standard_normal((2, 4, 11, 10)).astype(np.float32)
        w = rng.standard_normal((6, 4 // groups, k, k)).astype(np.float32)
        with hetnn.profile(winograd_device) as prof:
            y = hetnn.conv2d(x, w, None, s, 1, d, groups, device=winograd_device)
        assert not any(r["name"].startswith("conv2d:winograd") for r in prof.records)
        (ref,) = _conv_ref((x, w, None, s, (1, 1), d, groups, None))
        assert np.max(np.abs(y - ref)) < 1e-4


def test_conv_algorithm_names_are_checked(opencl_device):
    with pytest.raises(ValueError, match="conv algorithm must be"):
        _core._set_conv_algorithm(opencl_device._dev, "fft")


@pytest.mark.parametrize("algorithm", ["winograd", "winograd4", "implicit"])
@pytest.mark.parametrize("kernel,padding", [(3, (1, 1)), (3, (0, 2)), (3, "same"), (5, (2, 1)), (2, "same")])
def test_stride_one_data_gradient_runs_as_a_forward_convolution(opencl_device, rng, algorithm, kernel, padding):
    # gx = gy convolved with the flipped, channel-swapped kernel: on a GPU, or with an explicit forward algorithm
    from op_table import _conv_bwd_ref

    _core._set_conv_algorithm(opencl_device._dev, algorithm)
    try:
        x = rng.standard_normal((2, 5, 9, 8)).astype(np.float32)
        w = rng.standard_normal((4, 5, kernel, kernel)).astype(np.float32)
        (gy_ref,) = _conv_ref((x, w, None, (1, 1), padding, (1, 1), 1, None))
        gy = rng.standard_normal(gy_ref.shape).astype(np.float32)
        with hetnn.profile(opencl_device) as prof:
            gx, gw, _ = hetnn.conv2d_backward(gy, x, w, 1, padding, 1, 1, device=opencl_device)
        names = [r["name"] for r in prof.records]
        assert "copy_strided" in " ".join(names) and "conv2d_col2im" not in names, names
        if algorithm.startswith("winograd") and kernel == 3:
            assert "conv2d:winograd_input" in names, names
        rgx, rgw, _ = _conv_bwd_ref((gy, x, w, (1, 1), padding, (1, 1), 1))
        assert np.max(np.abs(np.asarray(gx, np.float64) - rgx)) < 1e-4 * max(1.0, np.max(np.abs(rgx)))
        assert np.max(np.abs(np.asarray(gw, np.float64) - rgw)) < 1e-4 * max(1.0, np.max(np.abs(rgw)))
    finally:
        _core._set_conv_algorithm(opencl_device._dev, "")


# (kernel, stride, padding, input H x W): 3x3 stride 2 (ResNet's), rows of one class with no tap (1x1 stride 2, a
# 2x2 kernel at stride 3: those inputs get zeros), 7x7 stride 2 padding 3, a 4x4 kernel at stride 2, unequal strides,
# "valid" with rows and columns the forward never read (a class padded past its taps; 5x5: a 3x3 class, Winograd's),
# prime sizes
STRIDED = [(3, (2, 2), (1, 1), (9, 8)), (1, (2, 2), (0, 0), (7, 6)), (2, (3, 3), (0, 0), (11, 10)),
           (7, (2, 2), (3, 3), (13, 12)), (4, (2, 2), (1, 1), (10, 9)), (3, (2, 1), (1, 1), (9, 7)),
           (3, (2, 2), "valid", (10, 11)), (5, (2, 2), "valid", (10, 12)), (5, (3, 2), (2, 1), (13, 11))]


@pytest.mark.parametrize("algorithm", ["implicit", "winograd"])
@pytest.mark.parametrize("kernel,stride,padding,size", STRIDED, ids=lambda v: str(v).replace(" ", ""))
def test_strided_data_gradient_runs_as_forward_convolutions(opencl_device, rng, algorithm, kernel, stride, padding,
                                                            size):
    """One stride-1 forward convolution of gy per class of input positions (their taps flipped), scattered into gx;
    positions no tap reaches are zero (the tests' new arrays start as NaN: HETNN_POISON)."""
    from op_table import _conv_bwd_ref

    _core._set_conv_algorithm(opencl_device._dev, algorithm)
    try:
        x = rng.standard_normal((2, 5, *size)).astype(np.float32)
        w = rng.standard_normal((4, 5, kernel, kernel)).astype(np.float32)
        (gy_ref,) = _conv_ref((x, w, None, stride, padding, (1, 1), 1, None))
        gy = rng.standard_normal(gy_ref.shape).astype(np.float32)
        with hetnn.profile(opencl_device) as prof:
            gx, _, _ = hetnn.conv2d_backward(gy, x, w, stride, padding, 1, 1, weight_grad=False, bias_grad=False,
                                             device=opencl_device)
        names = [r["name"] for r in prof.records]
        assert "copy_strided" in " ".join(names) and "conv2d_col2im" not in names, names
        (rgx, _, _) = _conv_bwd_ref((gy, x, w, stride, padding, (1, 1), 1))
        assert np.max(np.abs(np.asarray(gx, np.float64) - rgx)) < 1e-4 * max(1.0, np.max(np.abs(rgx)))
    finally:
        _core._set_conv_algorithm(opencl_device._dev, "")


@pytest.mark.parametrize("kernel,padding", [(3, 2), (2, 1)])
def test_a_padding_as_large_as_a_class_s_taps_keeps_gemm_and_col2im(opencl_device, rng, kernel, padding):
    """3x3 stride 2 padded by 2, 2x2 padded by 1: a class whose first rows of gy its taps never reach (a negative
    padding); GEMM + col2im, still right."""
    from op_table import _conv_bwd_ref

    _core._set_conv_algorithm(opencl_device._dev, "implicit")
    try:
        x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
        w = rng.standard_normal((4, 3, kernel, kernel)).astype(np.float32)
        (gy_ref,) = _conv_ref((x, w, None, (2, 2), (padding, padding), (1, 1), 1, None))
        gy = rng.standard_normal(gy_ref.shape).astype(np.float32)
        with hetnn.profile(opencl_device) as prof:
            gx, _, _ = hetnn.conv2d_backward(gy, x, w, 2, padding, 1, 1, weight_grad=False, bias_grad=False,
                                             device=opencl_device)
        assert "conv2d_col2im" in [r["name"] for r in prof.records]
        (rgx, _, _) = _conv_bwd_ref((gy, x, w, (2, 2), (padding, padding), (1, 1), 1))
        assert np.max(np.abs(np.asarray(gx, np.float64) - rgx)) < 1e-4 * max(1.0, np.max(np.abs(rgx)))
    finally:
        _core._set_conv_algorithm(opencl_device._dev, "")
