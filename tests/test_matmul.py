import numpy as np
import pytest

import hetnn
from conftest import rel_err

TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}  # 16-bit: output rounding


def _operands(rng, a_shape, b_shape, dtype):
    return (rng.uniform(-1, 1, a_shape).astype(dtype), rng.uniform(-1, 1, b_shape).astype(dtype))


def _ref(a, b, ta=False, tb=False, alpha=1.0, beta=0.0, c=None):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if ta:
        a64 = np.swapaxes(a64, -1, -2)
    if tb:
        b64 = np.swapaxes(b64, -1, -2)
    r = alpha * (a64 @ b64)
    if beta != 0.0:
        r = r + beta * c.astype(np.float64)
    return r


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_512_cubed_matches_float64_numpy(device, rng, dtype):
    a, b = _operands(rng, (512, 512), (512, 512), dtype)
    A, B = hetnn.asarray(a, device=device), hetnn.asarray(b, device=device)
    C = hetnn.matmul(A, B)
    assert isinstance(C, hetnn.Array) and C.device is device and C.dtype == np.dtype(dtype)
    assert rel_err(C.numpy(), _ref(a, b)) < TOL[dtype]


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 7, 3), (7, 1, 5), (5, 3, 1), (33, 65, 17), (64, 64, 64),
                                   (67, 129, 31), (100, 3, 257), (3, 100, 2), (250, 130, 70)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_edge_sizes_and_transposes(device, rng, m, n, k, ta, tb):
    a, b = _operands(rng, (k, m) if ta else (m, k), (n, k) if tb else (k, n), "float32")
    A, B = hetnn.asarray(a, device=device), hetnn.asarray(b, device=device)
    C = hetnn.matmul(A, B, transpose_a=ta, transpose_b=tb)
    assert C.shape == (m, n)
    assert rel_err(C.numpy(), _ref(a, b, ta, tb)) < TOL["float32"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 0.0), (2.0, 1.0), (0.25, -3.0), (0.0, 2.0)])
def test_alpha_beta_with_out(device, rng, dtype, alpha, beta):
    a, b = _operands(rng, (37, 29), (29, 41), dtype)
    c0 = rng.uniform(-1, 1, (37, 41)).astype(dtype)
    if beta == 0.0:
        c0[:] = np.nan  # beta == 0 must overwrite, never read: NaN here must not leak out
    out = hetnn.asarray(c0, device=device)
    res = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), alpha=alpha,
                       beta=beta, out=out)
    assert res is out
    got = out.numpy()
    assert np.isfinite(got).all()
    assert rel_err(got, _ref(a, b, alpha=alpha, beta=beta, c=c0)) < TOL[dtype]


@pytest.mark.parametrize("a_shape,b_shape,expect", [
    ((4, 6, 5), (4, 5, 3), (4, 6, 3)),
    ((1, 6, 5), (4, 5, 3), (4, 6, 3)),
    ((4, 6, 5), (1, 5, 3), (4, 6, 3)),
    ((6, 5), (4, 5, 3), (4, 6, 3)),
    ((4, 6, 5), (5, 3), (4, 6, 3)),
    ((3, 70, 33), (3, 33, 45), (3, 70, 45)),
])
def test_batched_and_broadcast(device, rng, a_shape, b_shape, expect):
    a, b = _operands(rng, a_shape, b_shape, "float32")
    C = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device))
    assert C.shape == expect
    assert rel_err(C.numpy(), _ref(a, b)) < TOL["float32"]


def test_batched_transposed(device, rng):
    a, b = _operands(rng, (3, 9, 7), (3, 11, 9), "float32")  # a stored (B, K, M), b stored (B, N, K)
    C = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), transpose_a=True,
                     transpose_b=True)
    assert C.shape == (3, 7, 11)
    assert rel_err(C.numpy(), _ref(a, b, True, True)) < TOL["float32"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_in_numpy_out(device, rng, dtype):
    a, b = _operands(rng, (45, 30), (30, 20), dtype)
    c = hetnn.matmul(a, b, device=device)
    assert type(c) is np.ndarray and c.dtype == np.dtype(dtype) and c.shape == (45, 20)
    assert rel_err(c, _ref(a, b)) < TOL[dtype]
    with hetnn.default_device(device):
        c2 = hetnn.matmul(a, b)
    assert rel_err(c2, _ref(a, b)) < TOL[dtype]


def test_numpy_out_written_in_place(device, rng):
    a, b = _operands(rng, (16, 8), (8, 12), "float32")
    out = np.full((16, 12), np.nan, np.float32)
    res = hetnn.matmul(a, b, out=out, device=device)
    assert res is out
    assert rel_err(out, _ref(a, b)) < TOL["float32"]
    c0 = rng.uniform(-1, 1, (16, 12)).astype(np.float32)
    out = c0.copy()
    hetnn.matmul(a, b, alpha=0.5, beta=2.0, out=out, device=device)
    assert rel_err(out, _ref(a, b, alpha=0.5, beta=2.0, c=c0)) < TOL["float32"]


def test_numpy_non_contiguous_operands(device, rng):
    a = rng.uniform(-1, 1, (40, 60)).astype(np.float32)
    b = rng.uniform(-1, 1, (50, 40)).astype(np.float32)
    av = a[::2, :30]  # (20, 30), strided rows
    bv = b[:30, ::2]  # (30, 20), strided columns
    c = hetnn.matmul(av, bv, device=device)
    assert rel_err(c, _ref(np.ascontiguousarray(av), np.ascontiguousarray(bv))) < TOL["float32"]


@pytest.mark.parametrize("sa, sb", [((0, 3, 4), (4, 5)), ((1, 3, 4), (0, 4, 5)), ((0, 3, 4), (1, 4, 5)),
                                    ((3, 4), (0, 4, 5))])
def test_an_empty_batch_broadcasts_to_an_empty_result(device, rng, sa, sb):
    """A batch of 0 against a broadcast operand (batch 1 or 2-D) gives NumPy's empty result: once (1, 3, 5) read past
    an empty buffer on OpenCL and raised from oneDNN on the CPU."""
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    want = np.matmul(a, b)
    got = hetnn.matmul(a, b, device=device)
    assert got.shape == want.shape == (0, 3, 5)
    out = hetnn.empty(want.shape, "float32", device=device)
    assert hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), out=out) is out


def test_zero_sized_dimensions(device, rng):
    a, b = _operands(rng, (0, 5), (5, 3), "float32")
    assert hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device)).shape == (0, 3)
    a, b = _operands(rng, (4, 0), (0, 3), "float32")  # K == 0: the sum is empty, the result is zeros
    c = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device))
    np.testing.assert_array_equal(c.numpy(), np.zeros((4, 3), np.float32))
    c0 = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    out = hetnn.asarray(c0, device=device)
    hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), beta=2.0, out=out)
    np.testing.assert_allclose(out.numpy(), 2.0 * c0, rtol=1e-6)
    np.testing.assert_array_equal(hetnn.matmul(np.zeros((0, 2), np.float32), np.zeros((2, 0), np.float32),
                                               device=device), np.zeros((0, 0), np.float32))


# ---- bad input: each raises a typed error naming the problem -------------------------------------------------

def test_mismatched_shapes_raise_value_error_naming_both(device):
    A = hetnn.zeros((3, 4), "float32", device=device)
    B = hetnn.zeros((5, 6), "float32", device=device)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        hetnn.matmul(A, B)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        hetnn.matmul(np.zeros((3, 4), np.float32), np.zeros((5, 6), np.float32), device=device)
    with pytest.raises(ValueError, match="transposed"):
        hetnn.matmul(A, hetnn.zeros((4, 2), "float32", device=device), transpose_a=True)


def test_huge_mismatch_is_rejected_before_any_allocation(device):
    with pytest.raises(ValueError, match="not aligned"):
        hetnn.matmul(np.zeros((200000, 1), np.float32), np.zeros((2, 200000), np.float32), device=device)


@pytest.mark.parametrize("a_shape,b_shape", [((3,), (3, 2)), ((2, 3), (3,)), ((3,), (3,)), ((1, 2, 3, 4), (4, 2)),
                                             ((2, 1, 3, 4), (5, 4, 2)), ((4, 3), (2, 3, 2)), ((0, 3, 4), (4, 2))])
def test_vectors_and_stacks_as_numpy(device, rng, a_shape, b_shape):
    """The Array API's matmul (NumPy's): a vector each side, stacks of matrices broadcast against each other."""
    a, b = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    A, B = hetnn.asarray(a, device=device), hetnn.asarray(b, device=device)
    for got in (hetnn.matmul(A, B), A @ B):
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_shape,b_shape,match", [((2, 3, 4), (3, 4, 5), "batch"), ((2, 3), (2,), "not aligned"),
                                                   ((), (3,), "a is 0-d"), ((2, 1, 4, 4), (3, 2, 4, 4), "broadcast")])
def test_bad_shapes(device, a_shape, b_shape, match):
    with pytest.raises(ValueError, match=match):
        hetnn.matmul(hetnn.zeros(a_shape, "float32", device=device), hetnn.zeros(b_shape, "float32", device=device))


def test_operands_on_different_devices_raise_value_error(opencl_device):
    A = hetnn.zeros((2, 2), "float32", device="cpu")
    B = hetnn.zeros((2, 2), "float32", device=opencl_device)
    with pytest.raises(ValueError, match="never transfers silently"):
        hetnn.matmul(A, B)
    with pytest.raises(ValueError, match="out is on"):
        hetnn.matmul(A, A, out=B)
    with pytest.raises(ValueError, match="device="):
        hetnn.matmul(A, A, device=opencl_device)


def test_mixed_dtypes_promote_and_integers_are_exact(device, rng):
    """As NumPy: float32 with float64 gives float64, float16 with float32 float32; integers multiply exactly in
    their type, wrapping (int8 here: sums beyond 127)."""
    pairs = [("float32", "float64"), ("float16", "float32"), ("int64", "int64"), ("int8", "int8"), ("int32", "int8")]
    for ta, tb in pairs:
        if "float64" in (ta, tb) and "float64" not in device.dtypes:
            continue
        if ta.startswith("int"):
            a, b = rng.integers(-99, 100, (3, 5)).astype(ta), rng.integers(-99, 100, (5, 4)).astype(tb)
        else:
            a, b = rng.standard_normal((3, 5)).astype(ta), rng.standard_normal((5, 4)).astype(tb)
        want = np.matmul(a, b)
        got = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device))
        assert got.dtype == want.dtype, (ta, tb)
        if ta.startswith("int"):
            np.testing.assert_array_equal(got.numpy(), want)
        else:
            np.testing.assert_allclose(got.numpy(), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3)


def test_options_need_the_kernels_forms(device):
    """bias, activation, alpha, beta, out, the transposes and out_dtype are the kernels': 2-D or 3-D operands of one
    floating dtype. Elsewhere a TypeError (the dtypes) or a ValueError (the shapes) names them."""
    f32, f16 = hetnn.zeros((2, 2), "float32", device=device), hetnn.zeros((2, 2), "float16", device=device)
    ints = hetnn.zeros((2, 2), "int32", device=device)
    with pytest.raises(TypeError, match="alpha needs 2-D or 3-D operands of one floating dtype.*float32 and float16"):
        hetnn.matmul(f32, f16, alpha=2.0)
    with pytest.raises(TypeError, match="activation, transpose_a need.*int32"):
        hetnn.matmul(ints, ints, activation="relu", transpose_a=True)
    with pytest.raises(ValueError, match=r"bias needs.*\(2,\) and \(2, 2\)"):
        hetnn.matmul(hetnn.zeros((2,), "float32", device=device), f32, bias=hetnn.zeros((2,), "float32", device=device))
    with pytest.raises(TypeError, match="numeric"):
        hetnn.matmul(f32 > 0, f32 > 0)


def test_out_problems(device):
    A = hetnn.zeros((2, 3), "float32", device=device)
    B = hetnn.zeros((3, 4), "float32", device=device)
    with pytest.raises(ValueError, match=r"out has shape \(4, 2\)"):
        hetnn.matmul(A, B, out=hetnn.zeros((4, 2), "float32", device=device))
    with pytest.raises(TypeError, match="out is float16"):
        hetnn.matmul(A, B, out=hetnn.zeros((2, 4), "float16", device=device))
    S = hetnn.zeros((3, 3), "float32", device=device)
    with pytest.raises(ValueError, match="share memory"):
        hetnn.matmul(S, S, out=S)
    with pytest.raises(ValueError, match="beta"):
        hetnn.matmul(A, B, beta=1.0)
    with pytest.raises(TypeError, match="out must be a NumPy array"):
        hetnn.matmul(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32), out=[[0.0]], device=device)
    with pytest.raises(TypeError, match="out is a hetnn.Array"):
        hetnn.matmul(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32), out=hetnn.zeros((2, 4), "float32"))
    ro = np.zeros((2, 4), np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writeable"):
        hetnn.matmul(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32), out=ro, device=device)
    with pytest.raises(ValueError, match="C-contiguous"):
        hetnn.matmul(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32),
                     out=np.zeros((4, 2), np.float32).T, device=device)


def test_mixing_array_and_numpy_raises_type_error(device):
    with pytest.raises(TypeError, match="both"):
        hetnn.matmul(hetnn.zeros((2, 2), "float32", device=device), np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="both"):
        hetnn.matmul(np.zeros((2, 2), np.float32), hetnn.zeros((2, 2), "float32", device=device))


@pytest.mark.parametrize("kw", [{"transpose_a": 1}, {"transpose_b": "yes"}, {"alpha": "2"}, {"beta": 1j},
                                {"alpha": None}])
def test_bad_flag_and_scalar_types(kw):
    with pytest.raises(TypeError, match="matmul"):
        hetnn.matmul(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), **kw)


def test_non_numeric_operand_raises_type_error():
    with pytest.raises(TypeError):
        hetnn.matmul("abc", np.zeros((2, 2), np.float32))


# ---- fused epilogue: bias + activation ------------------------------------------------------------------------

def _act(x, name):
    if name == "relu":
        return np.maximum(x, 0)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "tanh":
        return np.tanh(x)
    return x


def _epilogue_err(result, a, b, bias, ref):
    """The error over what the operation's rounding is proportional to: alpha|a||b| + |bias| (the activations'
    slopes are at most 1). Relative to the result itself, alpha*a@b + bias cancelling to near zero (seen on PoCL 5.0
    for a 1x1x1 product) made a correctly rounded result fail. Nor below the result's own magnitude: sigmoid's output
    sits near 0.5 whatever its input, and its rounding there (3e-8 in float32) over a tiny 0.75|a||b| (0.00076 for a
    1x1x1 product on the CPU device) failed a correctly rounded result too."""
    scale = max(np.max(0.75 * np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
                       + (0 if bias is None else np.abs(bias.astype(np.float64)))), float(np.max(np.abs(ref))))
    return float(np.max(np.abs(np.asarray(result, np.float64) - ref)) / scale)


def test_epilogue_error_of_sigmoid_near_zero_input_is_rounding_only(device):
    """The operands of a CI failure: sigmoid(0.75 * 0.00106596 * -0.9536554) = 0.49981, right to float32 rounding."""
    a, b = np.array([[0.00106596]], np.float32), np.array([[-0.9536554]], np.float32)
    ref = _act(_ref(a, b, alpha=0.75), "sigmoid")
    got = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), activation="sigmoid",
                       alpha=0.75).numpy()
    assert abs(float(got[0, 0]) - float(ref[0, 0])) <= 2 * np.finfo(np.float32).eps * 0.5
    assert _epilogue_err(got, a, b, None, ref) < TOL["float32"] * 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", [None, "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 13, 5), (70, 50, 33)])
def test_fused_bias_activation(device, rng, dtype, activation, with_bias, m, n, k):
    a, b = _operands(rng, (m, k), (k, n), dtype)
    bias = rng.uniform(-1, 1, n).astype(dtype) if with_bias else None
    A, B = hetnn.asarray(a, device=device), hetnn.asarray(b, device=device)
    C = hetnn.matmul(A, B, bias=None if bias is None else hetnn.asarray(bias, device=device),
                     activation=activation, alpha=0.75)
    ref = _act(_ref(a, b, alpha=0.75) + (0 if bias is None else bias.astype(np.float64)), activation)
    assert _epilogue_err(C.numpy(), a, b, bias, ref) < TOL[dtype] * 2
    c = hetnn.matmul(a, b, bias=bias, activation=activation, alpha=0.75, device=device)  # NumPy path
    assert _epilogue_err(c, a, b, bias, ref) < TOL[dtype] * 2


@pytest.mark.parametrize("activation", [None, "tanh"])
def test_fused_bias_that_cancels_the_product(device, activation):
    """alpha*a*b + bias = 0.75 * 0.5 * 0.8 - 0.3: zero up to float32 rounding. The result must be within rounding
    of the float64 reference measured against the terms' size; measured against the result's own size (the old
    check) any rounding at all is a 100 % error."""
    a, b = np.array([[0.5]], np.float32), np.array([[0.8]], np.float32)
    bias = np.array([-0.3], np.float32)
    ref = _act(0.75 * 0.5 * np.float64(np.float32(0.8)) + np.float64(bias[0]), activation)
    c = hetnn.matmul(a, b, bias=bias, activation=activation, alpha=0.75, device=device)
    assert _epilogue_err(c, a, b, bias, ref) < TOL["float32"]
    assert abs(ref) < 1e-7 and rel_err(np.float64(np.float32(ref) + np.float32(1e-9)), np.array([ref])) > 1e-3


def test_fused_epilogue_with_beta_and_transposes(device, rng):
    a, b = _operands(rng, (9, 6), (11, 9), "float32")  # a stored (K, M) = (9, 6); b stored (N, K) = (11, 9)
    bias = rng.uniform(-1, 1, 11).astype(np.float32)
    c0 = rng.uniform(-1, 1, (6, 11)).astype(np.float32)
    out = hetnn.asarray(c0, device=device)
    hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), transpose_a=True,
                 transpose_b=True, beta=0.5, bias=hetnn.asarray(bias, device=device), activation="relu", out=out)
    ref = _act(_ref(a, b, True, True, beta=0.5, c=c0) + bias, "relu")
    assert rel_err(out.numpy(), ref) < 2e-5


def test_relu_propagates_nan(device):
    a = np.array([[np.nan, 1.0]], np.float32)
    b = np.ones((2, 3), np.float32)
    c = hetnn.matmul(a, b, activation="relu", device=device)
    assert np.isnan(c).all()


def test_epilogue_bad_arguments(device):
    A = hetnn.zeros((2, 3), "float32", device=device)
    B = hetnn.zeros((3, 4), "float32", device=device)
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        hetnn.matmul(A, B, bias=hetnn.zeros((3,), "float32", device=device))
    with pytest.raises(ValueError, match=r"bias must have shape"):
        hetnn.matmul(A, B, bias=hetnn.zeros((1, 4), "float32", device=device))
    with pytest.raises(TypeError, match="bias is int32"):
        hetnn.matmul(A, B, bias=hetnn.zeros((4,), "int32", device=device))
    with pytest.raises(ValueError, match="activation"):
        hetnn.matmul(A, B, activation="gelu")
    with pytest.raises(TypeError, match="activation"):
        hetnn.matmul(A, B, activation=1)
    with pytest.raises(TypeError, match="bias must be a hetnn.Array"):
        hetnn.matmul(A, B, bias=np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="bias is a hetnn.Array"):
        hetnn.matmul(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32), bias=hetnn.zeros((4,), "float32"),
                     device=device)
    with pytest.raises(TypeError, match="bias is float64"):
        hetnn.matmul(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32), bias=np.zeros(4), device=device)


def test_bias_on_another_device(opencl_device):
    A = hetnn.zeros((2, 3), "float32", device=opencl_device)
    B = hetnn.zeros((3, 4), "float32", device=opencl_device)
    with pytest.raises(ValueError, match="bias is on cpu"):
        hetnn.matmul(A, B, bias=hetnn.zeros((4,), "float32", device="cpu"))


@pytest.mark.parametrize("m,n,k", [(1000, 1, 1000), (1, 1000, 1000), (7, 13, 5), (129, 257, 3)])
def test_more_odd_shapes(device, rng, m, n, k):
    a, b = _operands(rng, (m, k), (k, n), "float32")
    c = hetnn.matmul(a, b, device=device)
    assert rel_err(c, _ref(a, b)) < TOL["float32"]


# ---- 16-bit floating point: float16 and bfloat16 storage, float32 accumulation ------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m,n,k,ta,tb", [(1, 1, 1, False, False), (7, 13, 5, False, False), (64, 48, 96, True, False),
                                         (33, 70, 129, False, True), (200, 31, 300, True, True)])
def test_half_precisions(device, rng, dtype, m, n, k, ta, tb):
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(dtype)
    C = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), transpose_a=ta,
                     transpose_b=tb)
    assert C.dtype == np.dtype(dtype)
    assert rel_err(C.numpy(), _ref(a, b, ta, tb)) < TOL[dtype]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_epilogue_and_beta(device, rng, dtype):
    a, b = _operands(rng, (45, 37), (37, 29), dtype)
    bias = rng.uniform(-1, 1, 29).astype(dtype)
    c0 = rng.uniform(-1, 1, (45, 29)).astype(dtype)
    out = hetnn.asarray(c0, device=device)
    hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), alpha=0.5, beta=-1.5,
                 bias=hetnn.asarray(bias, device=device), activation="sigmoid", out=out)
    ref = _act(_ref(a, b, alpha=0.5, beta=-1.5, c=c0) + bias.astype(np.float64), "sigmoid")
    assert rel_err(out.numpy(), ref) < TOL[dtype]
    z = hetnn.matmul(np.zeros((3, 0), dtype), np.zeros((0, 4), dtype), device=device)  # K == 0
    np.testing.assert_array_equal(z.astype(np.float32), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("a_shape,b_shape,ta", [((3, 40, 20), (3, 20, 64), False), ((3, 20, 40), (20, 64), True),
                                                ((40, 20), (2, 20, 96), False), ((1, 20, 13), (4, 20, 32), True)])
def test_batched_with_column_counts_that_allow_in_place_reads(device, rng, a_shape, b_shape, ta):
    # N a multiple of the packed kernel's panel width: CPU-shaped OpenCL devices read A and B in place.
    a, b = _operands(rng, a_shape, b_shape, "float32")
    C = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), transpose_a=ta)
    assert rel_err(C.numpy(), _ref(a, b, ta)) < TOL["float32"]


def test_a_batch_in_several_packing_chunks(device, rng):
    """A batch whose packed B panels (N = 999: not read in place) pass the CPU-shaped OpenCL kernel's 64 MiB of
    scratch per enqueue (about 4 MB an entry): it runs in chunks of entries, each one enqueue per kernel."""
    a, b = _operands(rng, (8, 1000), (17, 1000, 999), "float32")
    C = hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device))
    assert C.shape == (17, 8, 999) and rel_err(C.numpy(), _ref(a, b)) < TOL["float32"]


def test_numpy_out_aliasing_an_operand_is_refused(device):
    x = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="share memory"):
        hetnn.matmul(x, x, out=x, device=device)
    buf = np.ones(20, np.float32)  # a and out overlap by 12 elements, both C-contiguous
    with pytest.raises(ValueError, match="share memory"):
        hetnn.matmul(buf[:16].reshape(4, 4), np.ones((4, 4), np.float32), out=buf[4:].reshape(4, 4),
                     device=device)


def test_many_shapes_evict_the_primitive_cache_and_stay_correct(rng):
    """More distinct shapes than the CPU device keeps primitives for (256): evicted shapes are rebuilt and every
    product is still right (the per-thread argument cache must not confuse a new primitive with an evicted one)."""
    shapes = [(1 + i % 23, 1 + i // 23, 3 + i % 5) for i in range(300)]
    for rnd in range(2):
        for m, n, k in shapes[::7] if rnd else shapes:
            a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
            got = hetnn.matmul(a, b, device="cpu")
            np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("converted", [False, True])
def test_cpu_16_bit_paths_batched_and_fused(rng, dtype, converted):
    """The CPU device's 16-bit matmul, native where oneDNN has kernels for the processor and forced through the
    converted path (float32 work areas, one rounding) so that both run on any processor: batched and broadcast
    operands, transposes, alpha, beta, bias and an activation against float64 NumPy."""
    cpu = hetnn.device("cpu")
    a = rng.uniform(-1, 1, (3, 40, 21)).astype(dtype)  # stored (K, M) per batch: transpose_a
    b = rng.uniform(-1, 1, (17, 40)).astype(dtype)  # one (N, K) matrix for every batch: transpose_b
    bias = rng.uniform(-1, 1, 17).astype(dtype)
    c0 = rng.uniform(-1, 1, (3, 21, 17)).astype(dtype)
    out = hetnn.asarray(c0, device=cpu)
    hetnn._core._force_cpu_half_conversion(converted)
    try:
        hetnn.matmul(hetnn.asarray(a, device=cpu), hetnn.asarray(b, device=cpu), transpose_a=True, transpose_b=True,
                     alpha=-0.5, beta=0.25, bias=hetnn.asarray(bias, device=cpu), activation="tanh", out=out)
    finally:
        hetnn._core._force_cpu_half_conversion(False)
    z = -0.5 * (np.swapaxes(a.astype(np.float64), -1, -2) @ b.astype(np.float64).T) + 0.25 * c0.astype(np.float64)
    ref = np.tanh(z + bias.astype(np.float64))
    assert out.dtype == np.dtype(dtype)
    assert rel_err(out.numpy(), ref) < TOL[dtype]


@pytest.mark.parametrize("case", ["int32-activation", "beta-without-out", "dtype-mismatch-alpha", "out-dtype",
                                  "bias-dtype"])
def test_numpy_and_array_operands_get_the_same_error(device, case):
    """The checks live once, in the core: NumPy operands and hetnn Arrays got differently worded errors for the
    same mistake (Python kept its own copies)."""
    f = np.ones((4, 4), np.float32)
    calls = {
        "int32-activation": lambda w: hetnn.matmul(w(f.astype(np.int32)), w(f), activation="relu"),
        "beta-without-out": lambda w: hetnn.matmul(w(f), w(f), beta=1.0),
        "dtype-mismatch-alpha": lambda w: hetnn.matmul(w(f), w(f.astype(np.float64)), alpha=2.0),
        "out-dtype": lambda w: hetnn.matmul(w(f), w(f), out=w(np.zeros((4, 4), np.float64))),
        "bias-dtype": lambda w: hetnn.matmul(w(f), w(f), bias=w(np.zeros(4, np.float64))),
    }
    if "float64" not in device.dtypes and case in ("dtype-mismatch-alpha", "out-dtype", "bias-dtype"):
        pytest.skip(f"{device.id} has no float64 arrays")
    messages = []
    for wrap in (lambda x: x, lambda x: hetnn.asarray(x, device=device)):
        with pytest.raises((TypeError, ValueError)) as info:
            with hetnn.default_device(device):
                calls[case](wrap)
        messages.append((info.type, str(info.value)))
    assert messages[0] == messages[1]


# ---- a float32 result of 16-bit operands (out_dtype="float32") ---------------------------------------------------

def _f32_result_case(rng, dtype, batched):
    """Operands in a 16-bit dtype, float32 bias and beta matrix; the float64 reference of the same rounded values."""
    a = rng.uniform(-1, 1, (3, 40, 21) if batched else (40, 21)).astype(dtype)  # transpose_a: stored (K, M)
    b = rng.uniform(-1, 1, (17, 40)).astype(dtype)  # transpose_b: stored (N, K)
    bias = rng.uniform(-1, 1, 17).astype(np.float32)
    c0 = rng.uniform(-1, 1, (3, 21, 17) if batched else (21, 17)).astype(np.float32)
    z = -0.5 * (np.swapaxes(a.astype(np.float64), -1, -2) @ b.astype(np.float64).T) + 0.25 * c0
    return a, b, bias, c0, np.tanh(z + bias)


def _check_f32_result(out, ref, dtype):
    assert out.dtype == np.float32
    err = np.max(np.abs(out.astype(np.float64) - ref))
    assert err < 2e-6  # float32 accumulation of 40 exact products
    # the result was not rounded to the operands' type on the way: that alone costs up to half its unit
    rounded = np.max(np.abs(ref.astype(np.float32).astype(dtype).astype(np.float64) - ref))
    assert err < rounded / 20


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("batched", [False, True])
def test_float32_result_of_16_bit_operands(device, rng, dtype, batched):
    a, b, bias, c0, ref = _f32_result_case(rng, dtype, batched)
    out = hetnn.asarray(c0, device=device)
    hetnn.matmul(hetnn.asarray(a, device=device), hetnn.asarray(b, device=device), transpose_a=True,
                 transpose_b=True, alpha=-0.5, beta=0.25, bias=hetnn.asarray(bias, device=device),
                 activation="tanh", out=out, out_dtype="float32")
    _check_f32_result(out.numpy(), ref, dtype)
    got = hetnn.matmul(b, b.T, out_dtype=np.float32, device=device)  # NumPy in, a new float32 result
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, b.astype(np.float64) @ b.astype(np.float64).T, rtol=0, atol=1e-5)
    z = hetnn.matmul(np.zeros((3, 0), dtype), np.zeros((0, 4), dtype), out_dtype="float32", device=device)  # K == 0
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z, np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("converted", [False, True])
def test_float32_result_on_the_cpu_paths(rng, converted):
    cpu = hetnn.device("cpu")
    for dtype in ("float16", "bfloat16"):
        a, b, bias, c0, ref = _f32_result_case(rng, dtype, True)
        out = c0.copy()
        hetnn._core._force_cpu_half_conversion(converted)
        try:
            hetnn.matmul(a, b, transpose_a=True, transpose_b=True, alpha=-0.5, beta=0.25, bias=bias,
                         activation="tanh", out=out, out_dtype="float32", device=cpu)
        finally:
            hetnn._core._force_cpu_half_conversion(False)
        _check_f32_result(out, ref, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float32_result_on_the_matrix_unit_member(opencl_device, rng, dtype):
    """The mma member writes the float32 result itself (emulated off NVIDIA: the same kernel's epilogue)."""
    old, source = hetnn._core.gemm_params(opencl_device._dev, dtype)
    hetnn._core.set_gemm_params(opencl_device._dev, dtype, "family=mma ts_m=32 ts_n=32 ts_k=32 wm=2 wn=2", "test")
    try:
        a, b, bias, c0, ref = _f32_result_case(rng, dtype, True)
        out = c0.copy()
        hetnn.matmul(a, b, transpose_a=True, transpose_b=True, alpha=-0.5, beta=0.25, bias=bias,
                     activation="tanh", out=out, out_dtype="float32", device=opencl_device)
        _check_f32_result(out, ref, dtype)
    finally:
        restore = "" if source.startswith(("database", "default")) else old
        hetnn._core.set_gemm_params(opencl_device._dev, dtype, restore, source)


def test_out_dtype_problems(device):
    h, f = np.ones((4, 4), np.float16), np.ones((4, 4), np.float32)
    with pytest.raises(TypeError, match="out_dtype float64 with float32 operands"):
        hetnn.matmul(f, f, out_dtype="float64", device=device)
    with pytest.raises(TypeError, match="out_dtype float16 with bfloat16 operands"):
        hetnn.matmul(h.astype("bfloat16"), h.astype("bfloat16"), out_dtype="float16", device=device)
    with pytest.raises(TypeError, match="matmul: out_dtype: unsupported dtype 'complex64'"):
        hetnn.matmul(h, h, out_dtype=np.complex64, device=device)
    with pytest.raises(TypeError, match="bias is float16 but the result is float32"):
        hetnn.matmul(h, h, bias=np.ones(4, np.float16), out_dtype="float32", device=device)
    with pytest.raises(TypeError, match="out_dtype='float32' gives a float32 result"):
        hetnn.matmul(h, h, out=np.zeros((4, 4), np.float32), device=device)
    np.testing.assert_array_equal(hetnn.matmul(f, f, out_dtype="float32", device=device), f @ f)  # the operands' own


@pytest.fixture(params=["matmul", "sgemm"])
def cpu_gemm_path(request):
    """The CPU device's float32 products forced through one of oneDNN's two GEMMs (the processor's table picks per
    shape class; forcing runs both on any processor)."""
    hetnn._core._force_cpu_gemm_path(request.param)
    yield request.param
    hetnn._core._force_cpu_gemm_path("auto")


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (7, 13, 5), (49, 600, 530), (130, 70, 257)])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_cpu_float32_paths_with_transposes_alpha_beta_and_epilogue(rng, cpu_gemm_path, m, n, k, ta, tb):
    """Both float32 GEMM paths of the CPU device against float64 NumPy: transposed operands, alpha, beta (0: the
    output, poisoned with NaN, is not read), bias and an activation applied after the product."""
    cpu = hetnn.device("cpu")
    # entries of the product about 1 in size, so that an activation's slope does not scale its rounding
    a = (rng.standard_normal((k, m) if ta else (m, k)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    prod = (a64.T if ta else a64) @ (b64.T if tb else b64)
    for alpha, beta, act in [(1.0, 0.0, None), (-0.5, 0.0, "relu"), (2.0, 0.75, "tanh")]:
        c0 = rng.standard_normal((m, n)).astype(np.float32)
        out = hetnn.asarray(c0 if beta else np.full((m, n), np.nan, np.float32), device=cpu)
        kw = {"activation": act, "bias": hetnn.asarray(bias, device=cpu)} if act else {}
        hetnn.matmul(hetnn.asarray(a, device=cpu), hetnn.asarray(b, device=cpu), transpose_a=ta, transpose_b=tb,
                     alpha=alpha, beta=beta, out=out, **kw)
        ref = alpha * prod + beta * c0.astype(np.float64)
        if act:
            ref = {"relu": lambda z: np.maximum(z, 0), "tanh": np.tanh}[act](ref + bias)
        assert rel_err(out.numpy(), ref) < 4 * TOL["float32"], (cpu_gemm_path, alpha, beta, act)


def test_cpu_sgemm_path_propagates_nan_through_relu(cpu_gemm_path):
    cpu = hetnn.device("cpu")
    a = np.ones((3, 4), np.float32)
    a[1, 2] = np.nan
    got = hetnn.matmul(a, np.ones((4, 5), np.float32), activation="relu", device=cpu)
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2]]).any()


def test_cpu_gemm_path_hook_rejects_unknown_names():
    with pytest.raises(ValueError, match="'auto', 'matmul' or 'sgemm'.*'blas'"):
        hetnn._core._force_cpu_gemm_path("blas")
    assert "matmul primitive" in hetnn._core._cpu_gemm_rule()
