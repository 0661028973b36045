"""The OpenCL convolutions without a column buffer: where the GEMM parameters in force are vtiled (GPUs) or the
matrix-unit member, the kernel gathers the im2col columns from the input as it loads them; where they are packed
(CPU-type devices), the GEMM's panels are packed from the images. Run here on the first OpenCL device with those
parameters set, against the op table's float64 reference."""
import contextlib

import numpy as np
import pytest

import hetnn
from hetnn import _core
from op_table import _conv_bwd_inputs, _conv_bwd_ref, _conv_inputs, _conv_ref

# small tiles (many edge tiles, split-K) and 8-wide vectors; the gather itself is the same code in every member
VTILED = ["family=vtiled ts_m=16 ts_n=32 ts_k=8 wpt_m=2 wpt_n=4 vwm=2 vwn=4",
          "family=vtiled ts_m=32 ts_n=16 ts_k=8 wpt_m=8 wpt_n=1 vwm=8 vwn=1"]

# (x shape, O, kernel, stride, padding, dilation, bias, activation): edge tiles, strides, dilation, asymmetric
# ("same" with an even kernel) and no padding, 1xk and kx1 kernels, a K long enough for split-K (64 * 9 deep, one
# tile), batch 0
CASES = [((2, 3, 9, 7), 5, (3, 3), (1, 1), (1, 1), (1, 1), True, "relu"),
         ((3, 4, 11, 10), 7, (3, 2), (2, 1), (0, 1), (1, 2), False, None),
         ((1, 6, 8, 8), 33, (2, 2), (1, 1), "same", (1, 1), True, "tanh"),
         ((2, 2, 13, 5), 3, (1, 3), (1, 2), "valid", (1, 1), False, "sigmoid"),
         ((1, 64, 4, 4), 8, (3, 3), (1, 1), (1, 1), (1, 1), True, None),
         ((2, 5, 6, 6), 4, (5, 5), (3, 3), (2, 2), (1, 1), True, None),
         ((0, 3, 5, 5), 4, (3, 3), (1, 1), (1, 1), (1, 1), True, None)]


@contextlib.contextmanager
def params_in_force(dev, gemm_type, params):
    """The device's GEMM parameters for `gemm_type` set to `params` inside the block, then as they were."""
    old, source = _core.gemm_params(dev._dev, gemm_type)
    _core.set_gemm_params(dev._dev, gemm_type, params, "test")
    try:
        yield
    finally:
        _core.set_gemm_params(dev._dev, gemm_type, "" if source.startswith(("database", "default")) else old, source)


def weight_grad(dev, rng, case, data, precision="highest"):
    """Random x, w and gy of the case in `data`, and the weight (and, where the case has a bias, bias) gradient
    on the device: (x, w, gy, gw, gb, the profiled kernels' names, K = images x output positions)."""
    shape, o, (kh, kw), s, padding, d, with_bias, _ = case
    x = rng.standard_normal(shape).astype(data)
    w = (rng.standard_normal((o, shape[1], kh, kw)) / np.sqrt(shape[1] * kh * kw)).astype(data)
    (y,) = _conv_ref((x, w, None, s, padding, d, 1, None))
    gy = rng.standard_normal(y.shape).astype(data)
    with hetnn.profile(dev) as prof:
        _, gw, gb = hetnn.conv2d_backward(gy, x, w, s, padding, d, 1, input_grad=False, bias_grad=with_bias,
                                          device=dev, precision=precision)
    names = [r["name"] for r in prof.records]
    assert "conv2d_im2col" not in names and "sum_rows" not in names, names  # no columns, no per-image partials
    assert shape[0] == 0 or "matmul" in names, names  # batch 0: the front writes the zeros
    assert gb is None if not with_bias else gb.shape == (o,)
    return x, w, gy, gw, gb, names, shape[0] * y.shape[2] * y.shape[3]


@pytest.fixture
def vtiled_device(opencl_device):
    old, source = _core.gemm_params(opencl_device._dev, "float32")
    yield opencl_device
    _core.set_gemm_params(opencl_device._dev, "float32", "" if source.startswith(("database", "default")) else old,
                          source)


@pytest.mark.parametrize("params", VTILED)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-o{c[1]}-k{c[2][0]}{c[2][1]}")
def test_implicit_gemm_forward_matches_float64(vtiled_device, rng, params, case):
    shape, o, (kh, kw), s, padding, d, with_bias, act = case
    _core.set_gemm_params(vtiled_device._dev, "float32", params, "test")
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((o, shape[1], kh, kw)) / np.sqrt(shape[1] * kh * kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32) if with_bias else None
    with hetnn.profile(vtiled_device) as prof:
        y = hetnn.conv2d(x, w, bias, s, padding, d, 1, act, device=vtiled_device)
    names = [r["name"] for r in prof.records]
    assert "conv2d_im2col" not in names and (shape[0] == 0 or "matmul" in names), names
    assert "conv2d_bias_act" not in names, names  # bias and activation in the GEMM's epilogue (per output channel)
    (ref,) = _conv_ref((x, w, bias, s, padding, d, 1, act))
    assert y.shape == ref.shape
    if ref.size:
        assert np.max(np.abs(y.astype(np.float64) - ref)) < 1e-5 * max(1.0, np.sqrt(shape[1] * kh * kw))


def test_implicit_gemm_on_drawn_convolutions(vtiled_device):
    """The op table's input generator (groups, padding modes, dilation, empty batches), 40 draws."""
    _core.set_gemm_params(vtiled_device._dev, "float32", VTILED[0], "test")
    rng = np.random.default_rng()
    for _ in range(40):
        inp = _conv_inputs(rng, np.float32)
        x, w, bias, s, padding, d, groups, act = inp
        y = hetnn.conv2d(x, w, bias, s, padding, d, groups, act, device=vtiled_device)
        (ref,) = _conv_ref(inp)
        if ref.size:
            assert np.max(np.abs(y.astype(np.float64) - ref)) < 1e-4, (x.shape, w.shape, s, padding, d, groups)


# The matrix-unit member (float16 / bfloat16, and float32 as tf32 at precision "high") gathers the columns the same
# way: emulated off NVIDIA, so the gather, the 16-byte vectors of gathered values and the per-channel epilogue run
# here. A 16-deep slice (the instruction's depth) and a tile narrower than most outputs: edge tiles along both.
MMA = "family=mma ts_m=32 ts_n=32 ts_k=16 wm=2 wn=1"
MMA_CASES = [CASES[0], CASES[1], CASES[2], CASES[5], CASES[6]]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "tf32"])
@pytest.mark.parametrize("case", MMA_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-o{c[1]}-k{c[2][0]}{c[2][1]}")
def test_implicit_gemm_on_the_matrix_unit_member(opencl_device, rng, dtype, case):
    from test_precision import tf32

    shape, o, (kh, kw), s, padding, d, with_bias, act = case
    data = "float32" if dtype == "tf32" else dtype
    with params_in_force(opencl_device, dtype, MMA.replace("ts_k=16", "ts_k=8") if dtype == "tf32" else MMA):
        x = rng.standard_normal(shape).astype(data)
        w = (rng.standard_normal((o, shape[1], kh, kw)) / np.sqrt(shape[1] * kh * kw)).astype(data)
        bias = rng.standard_normal(o).astype(data) if with_bias else None
        with hetnn.profile(opencl_device) as prof:
            y = hetnn.conv2d(x, w, bias, s, padding, d, 1, act, device=opencl_device, precision="high")
    names = [r["name"] for r in prof.records]
    assert "conv2d_im2col" not in names and (shape[0] == 0 or "matmul" in names), names
    assert "conv2d_bias_act" not in names, names
    rx, rw = (tf32(x), tf32(w)) if dtype == "tf32" else (x, w)  # the inputs as the units see them
    (ref,) = _conv_ref((rx, rw, bias, s, padding, d, 1, act))
    assert y.shape == ref.shape and y.dtype == np.dtype(data)
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "tf32": 1e-5}[dtype]  # one rounding of the result, or float32 sums
    if ref.size:
        assert np.max(np.abs(y.astype(np.float64) - ref)) < tol * max(1.0, np.max(np.abs(ref)))


# The weight gradient as one implicit GEMM over the batch (K = images x positions): the same cases, plus a 1x1
# pointwise layer, an OH*OW that is a multiple of 4 (4-wide loads of gy) and one long enough along K for split-K
# on one tile (images crossing the slices' boundaries).
WG_CASES = CASES + [((3, 5, 6, 6), 6, (1, 1), (1, 1), (0, 0), (1, 1), True, None),
                    ((3, 2, 16, 16), 4, (3, 3), (1, 1), (1, 1), (1, 1), True, None),
                    ((5, 3, 9, 11), 2, (2, 3), (1, 1), (0, 1), (1, 1), False, None)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("params", VTILED)
@pytest.mark.parametrize("case", WG_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-o{c[1]}-k{c[2][0]}{c[2][1]}")
def test_implicit_gemm_weight_gradient_matches_float64(opencl_device, rng, dtype, params, case):
    shape, o, (kh, kw), s, padding, d, with_bias, _ = case
    with params_in_force(opencl_device, dtype, params):
        x, w, gy, gw, gb, names, k = weight_grad(opencl_device, rng, case, dtype)
    if k >= 768 and o <= 16 and shape[1] * kh * kw <= 32:
        assert "matmul:split_reduce" in names, names  # one tile, a long K: split
    _, rgw, rgb = _conv_bwd_ref((gy, x, w, s, padding, d, 1))
    tol = (1e-5 if dtype == "float32" else 1e-13) * np.sqrt(max(k, 1))
    assert gw.shape == rgw.shape and gw.dtype == np.dtype(dtype)
    assert np.max(np.abs(gw.astype(np.float64) - rgw), initial=0.0) < tol * max(1.0, np.max(np.abs(rgw), initial=0))
    if with_bias:
        assert np.max(np.abs(gb.astype(np.float64) - rgb), initial=0.0) < tol * max(1.0, np.max(np.abs(rgb)))


# float16 on a padded, a strided, an empty, a 16x16 and a split case; bfloat16 (another conversion) on two (few
# builds: each kernel size is a program)
VT16_RUNS = ([("float16", c) for c in (WG_CASES[0], WG_CASES[1], WG_CASES[6], WG_CASES[8], WG_CASES[9])] +
             [("bfloat16", c) for c in (WG_CASES[0], WG_CASES[9])])


@pytest.mark.parametrize("dtype,case", VT16_RUNS, ids=lambda v: v if isinstance(v, str) else
                         "x".join(map(str, v[0])) + f"-o{v[1]}-k{v[2][0]}{v[2][1]}")
def test_vtiled_weight_gradient_of_16_bit_data_sums_in_float32(opencl_device, rng, dtype, case):
    """GPUs without matrix units: 16-bit data's weight gradient is one vtiled GEMM over the batch too, its slices
    (one, or split-K's) summed in float32 and rounded once, where it was per-image partial gradients in 16 bits."""
    shape, o, (kh, kw), s, padding, d, with_bias, _ = case
    with params_in_force(opencl_device, dtype, VTILED[0]):
        x, w, gy, gw, _, names, k = weight_grad(opencl_device, rng, case, dtype)
    assert shape[0] == 0 or "matmul:split_reduce" in names, names  # the rounding pass, split or not
    _, rgw, _ = _conv_bwd_ref((gy, x, w, s, padding, d, 1))
    assert gw.shape == rgw.shape and gw.dtype == np.dtype(dtype)
    unit = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[dtype]
    bound = unit * np.abs(rgw) + 1e-6 * np.sqrt(max(k, 1)) * max(1.0, np.max(np.abs(rgw), initial=0))
    assert (np.abs(gw.astype(np.float64) - rgw) <= bound).all()


# The matrix-unit member's weight gradient (16-bit data, tf32): the same gathers over the whole batch, K split in
# slices summed in float32 and rounded once (emulated off NVIDIA). A 64 x 32 tile: CK and O both have edge tiles;
# ts_k 16 makes the split cases' slices start inside images; 6x6 outputs (OH*OW a multiple of 4, not of 8) and the
# odd ones read gy value by value, 16x16 ones as 16-byte vectors.
MMA_WG = "family=mma ts_m=32 ts_n=64 ts_k=16 wm=2 wn=1"


# Every case in float16 and tf32 (the 16- and 32-bit staging); bfloat16 (another conversion of the same 16-bit path)
# and the pipelined form (st = 3: copies into a ring of slices) on a padded case, the 16-byte-vector one and a split
# one, to keep the builds few.
SOME = [WG_CASES[0], WG_CASES[8], WG_CASES[9]]
MMA_WG_RUNS = ([("float16", 0, c) for c in WG_CASES] + [("tf32", 0, c) for c in WG_CASES] +
               [(t, st, c) for t, st in (("bfloat16", 0), ("float16", 3), ("tf32", 3)) for c in SOME])


@pytest.mark.parametrize("dtype,st,case", MMA_WG_RUNS,
                         ids=lambda v: v if isinstance(v, str) else str(v) if isinstance(v, int) else
                         "x".join(map(str, v[0])) + f"-o{v[1]}-k{v[2][0]}{v[2][1]}")
def test_matrix_unit_weight_gradient_matches_float64(opencl_device, rng, dtype, st, case):
    from test_precision import tf32

    shape, o, (kh, kw), s, padding, d, with_bias, _ = case
    data = "float32" if dtype == "tf32" else dtype
    params = (MMA_WG.replace("ts_k=16", "ts_k=8") if dtype == "tf32" else MMA_WG) + (f" st={st}" if st else "")
    with params_in_force(opencl_device, dtype, params):
        x, w, gy, gw, gb, names, k = weight_grad(opencl_device, rng, case, data, precision="high")
    if k >= 768 and o <= 32 and shape[1] * kh * kw <= 64:
        assert "matmul:split_reduce" in names, names  # one tile, a long K: split
    rgy, rx = (tf32(gy), tf32(x)) if dtype == "tf32" else (gy, x)  # the inputs as the units see them
    _, rgw, _ = _conv_bwd_ref((rgy, rx, w, s, padding, d, 1))
    assert gw.shape == rgw.shape and gw.dtype == np.dtype(data)
    # float32 sums of exact products, one rounding to the data type
    unit = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "tf32": 0.0}[dtype]
    bound = unit * np.abs(rgw) + 1e-6 * np.sqrt(max(k, 1)) * max(1.0, np.max(np.abs(rgw), initial=0))
    assert (np.abs(gw.astype(np.float64) - rgw) <= bound).all()
    if with_bias:
        tol = 2e-3 if dtype == "float16" else 1.6e-2 if dtype == "bfloat16" else 1e-5 * np.sqrt(max(k, 1))
        _, _, rgb = _conv_bwd_ref((gy, x, w, s, padding, d, 1))
        assert np.max(np.abs(gb.astype(np.float64) - rgb), initial=0.0) < tol * max(1.0, np.max(np.abs(rgb)))


def test_implicit_weight_gradient_on_drawn_convolutions(vtiled_device):
    """The op table's backward generator (groups, which keep the gathering kernels, padding modes, dilation, empty
    batches) with vtiled parameters in force, 30 draws, all three gradients against float64."""
    _core.set_gemm_params(vtiled_device._dev, "float32", VTILED[1], "test")
    rng = np.random.default_rng()
    for _ in range(30):
        inp = _conv_bwd_inputs(rng, np.float32)
        gy, x, w, s, padding, d, groups = inp
        got = hetnn.conv2d_backward(gy, x, w, s, padding, d, groups, device=vtiled_device)
        for g, r in zip(got, _conv_bwd_ref(inp)):
            if r.size:
                assert np.max(np.abs(g.astype(np.float64) - r)) < 1e-4 * max(1.0, np.max(np.abs(r))), (
                    x.shape, w.shape, s, padding, d, groups)


# CPU-type devices (the packed family): the GEMM's B panels are packed from the images by pack_b_conv, for the
# forward (columns) and the weight gradient (their transpose, per image, summed), with no column buffer. The
# database's small-problem entry (A read in place) and a narrow one (RN = 8: many panels, ragged last panels on both
# operands, and a K that is not a multiple of anything), on the implicit cases, 1x1 strided layers and CK beyond one
# panel.
PACKED = ["family=packed rm=8 vw=16 nv=2 lx=1 ly=1 pack_a=0 pack_b=0", "family=packed rm=3 vw=4 nv=2 lx=2 ly=2"]
PACKED_CASES = WG_CASES + [((2, 3, 7, 9), 4, (1, 1), (2, 3), (0, 0), (1, 1), True, "relu"),
                           ((2, 5, 9, 9), 3, (3, 3), (2, 2), (2, 1), (2, 1), False, None)]


@contextlib.contextmanager
def conv_algorithm(dev, algorithm):
    """dev's convolution algorithm set to `algorithm` inside the block, then as it was."""
    old = dev.conv_algorithm
    dev.set_conv_algorithm(algorithm)
    try:
        yield
    finally:
        dev.set_conv_algorithm(old)


def case_arrays(rng, case, dtype):
    """Fresh random x and weights of a case (the weights scaled to keep outputs near 1)."""
    shape, o, (kh, kw) = case[:3]
    x = rng.standard_normal(shape).astype(dtype)
    return x, (rng.standard_normal((o, shape[1], kh, kw)) / np.sqrt(shape[1] * kh * kw)).astype(dtype)


def packed_kernels(dev, fn):
    """fn()'s result and the names of the kernels it ran on dev."""
    with hetnn.profile(dev) as prof:
        out = fn()
    return out, [r["name"] for r in prof.records]


# "implicit" packs B from the images on every case; "auto" takes im2col's columns instead where the GEMM reads B in
# place (the first parameter set, OH*OW a multiple of 32: the 16x16 case), bias and activation in the epilogue both.
# float32 on every case and both parameter sets; float64 and float16 (other programs: each kernel size, stride and
# type is a build, about a second on PoCL without its cache) on a padded, a strided 5x5 and a dilated strided case
def packed_runs():
    return ([(c, p, "float32") for c in PACKED_CASES for p in PACKED] +
            [(c, PACKED[1], t) for t in ("float64", "float16") for c in (PACKED_CASES[0], PACKED_CASES[5],
                                                                        PACKED_CASES[-1])])


def packed_grid(*algorithms):
    """Parametrises a test over the algorithms and packed_runs() (case, params, dtype)."""
    def wrap(fn):
        runs = packed_runs()
        fn = pytest.mark.parametrize("case,params,dtype", runs,
                                     ids=[f"{case_id(c)}-vw{p.split()[2][3:]}-{t}" for c, p, t in runs])(fn)
        return pytest.mark.parametrize("algorithm", list(algorithms))(fn)
    return wrap


def case_id(c):
    return "x".join(map(str, c[0])) + f"-o{c[1]}-k{c[2][0]}{c[2][1]}"


@packed_grid("implicit", "auto")
def test_packed_forward(opencl_device, rng, algorithm, dtype, params, case):
    shape, o, (kh, kw), s, padding, d, with_bias, act = case
    x, w = case_arrays(rng, case, dtype)
    bias = rng.standard_normal(o).astype(dtype) if with_bias else None
    with params_in_force(opencl_device, dtype, params), conv_algorithm(opencl_device, algorithm):
        y, names = packed_kernels(opencl_device, lambda: hetnn.conv2d(x, w, bias, s, padding, d, 1, act,
                                                                      device=opencl_device))
    pointwise = (kh, kw, s) == (1, 1, (1, 1)) and padding in ((0, 0), "valid")
    if shape[0] and not pointwise:
        (ref_y,) = _conv_ref((x, w, None, s, padding, d, 1, None))
        in_place = params == PACKED[0] and dtype != "float16" and (ref_y.shape[2] * ref_y.shape[3]) % 32 == 0
        columns = algorithm == "auto" and in_place
        assert ("matmul:pack_b_conv" in names) != columns and ("conv2d_im2col" in names) == columns, names
        assert "conv2d_bias_act" not in names, names  # bias (per output channel) and activation in the epilogue
    (ref,) = _conv_ref((x, w, bias, s, padding, d, 1, act))
    assert y.shape == ref.shape and y.dtype == np.dtype(dtype)
    scale = max(1.0, np.max(np.abs(ref), initial=0))
    tol = {"float32": 1e-5, "float64": 1e-13, "float16": 2.0 ** -10}[dtype] * np.sqrt(shape[1] * kh * kw)
    assert np.max(np.abs(y.astype(np.float64) - ref), initial=0.0) < tol * scale


# "implicit" forces the packed form (one GEMM over images x positions, gy and the columns packed from the arrays,
# slices of K summed) on every case; "im2col" the per-image products of a column buffer, summed.
@packed_grid("implicit", "im2col")
def test_packed_weight_gradient(opencl_device, rng, algorithm, dtype, params, case):
    shape, o, (kh, kw), s, padding, d, with_bias, _ = case
    x, w = case_arrays(rng, case, dtype)
    (y,) = _conv_ref((x, w, None, s, padding, d, 1, None))
    gy = rng.standard_normal(y.shape).astype(dtype)
    with params_in_force(opencl_device, dtype, params), conv_algorithm(opencl_device, algorithm):
        (_, gw, gb), names = packed_kernels(opencl_device, lambda: hetnn.conv2d_backward(
            gy, x, w, s, padding, d, 1, input_grad=False, bias_grad=with_bias, device=opencl_device))
    pointwise = (kh, kw, s) == (1, 1, (1, 1)) and padding in ((0, 0), "valid")
    if shape[0] and not pointwise:
        packed = {"matmul:pack_a_images", "matmul:pack_b_conv_t"} <= set(names) and "conv2d_im2col" not in names
        assert packed == (algorithm == "implicit"), names
    _, rgw, rgb = _conv_bwd_ref((gy, x, w, s, padding, d, 1))
    assert gw.shape == rgw.shape and gw.dtype == np.dtype(dtype)
    k = shape[0] * y.shape[2] * y.shape[3]
    if dtype == "float16":  # partial sums (per image, or per slice of K) rounded to float16, their sum again: each
        # partial's rounding is within u of the sum of its terms' magnitudes, whatever the grouping
        _, magnitudes, _ = _conv_bwd_ref((np.abs(gy), np.abs(x), w, s, padding, d, 1))
        bound = 2.0 ** -11 * (magnitudes + np.abs(rgw)) * 1.01 + 1e-5 * np.sqrt(max(k, 1))
        assert (np.abs(gw.astype(np.float64) - rgw) <= bound).all()
    else:
        tol = (1e-5 if dtype == "float32" else 1e-13) * np.sqrt(max(k, 1))
        assert np.max(np.abs(gw.astype(np.float64) - rgw), initial=0.0) < tol * max(1.0, np.max(np.abs(rgw), initial=0))
    if with_bias:
        tol = 2.0 ** -10 if dtype == "float16" else 1e-5 * np.sqrt(max(k, 1))
        assert np.max(np.abs(gb.astype(np.float64) - rgb), initial=0.0) < tol * max(1.0, np.max(np.abs(rgb)))


def test_packed_weight_gradient_form_by_rule(opencl_device, rng):
    """"auto" packs gy and the columns where that moves less than a column buffer and per-image products: a layer of
    few output channels over many taps (LeNet's first: 6 over 25) takes the packed form, one of many over few (the
    Keras-style CNN's first: 32 over 9) the column buffer."""
    if _core.gemm_params(opencl_device._dev, "float32")[0].split()[0] != "family=packed":
        pytest.skip("the first OpenCL device's GEMM is not the packed family")
    for (c, h, o, k), packed in [((1, 28, 6, 5), True), ((1, 50, 32, 3), False)]:
        x = rng.standard_normal((4, c, h, h)).astype(np.float32)
        w = rng.standard_normal((o, c, k, k)).astype(np.float32)
        gy = rng.standard_normal((4, o, h - k + 1, h - k + 1)).astype(np.float32)
        with conv_algorithm(opencl_device, "auto"):
            (_, gw, _), names = packed_kernels(opencl_device, lambda: hetnn.conv2d_backward(
                gy, x, w, input_grad=False, device=opencl_device))
        assert ("matmul:pack_b_conv_t" in names) == packed and ("conv2d_im2col" in names) != packed, names
        _, rgw, _ = _conv_bwd_ref((gy, x, w, (1, 1), (0, 0), (1, 1), 1))
        assert np.max(np.abs(gw.astype(np.float64) - rgw)) < 1e-4 * max(1.0, np.max(np.abs(rgw)))


def test_packed_convolutions_on_drawn_shapes(opencl_device):
    """The op table's generators (groups, which keep the direct kernels, padding modes, dilation, empty batches) on
    the database's packed parameters: 10 forwards and 10 backwards (all three gradients) against float64 (the op
    table's own device tests draw more, on the same rule), then more input layouts than the tap tables kept (64),
    each still right."""
    if _core.gemm_params(opencl_device._dev, "float32")[0].split()[0] != "family=packed":
        pytest.skip("the first OpenCL device's GEMM is not the packed family")
    rng = np.random.default_rng()
    for _ in range(10):
        inp = _conv_inputs(rng, np.float32)
        (ref,) = _conv_ref(inp)
        y = hetnn.conv2d(*inp, device=opencl_device)
        assert np.max(np.abs(y.astype(np.float64) - ref), initial=0.0) < 1e-4, [a.shape for a in inp[:2]]
        inp = _conv_bwd_inputs(rng, np.float32)
        for g, r in zip(hetnn.conv2d_backward(*inp, device=opencl_device), _conv_bwd_ref(inp)):
            assert np.max(np.abs(g.astype(np.float64) - r), initial=0.0) < 1e-4 * max(1.0, np.max(np.abs(r),
                                                                                                 initial=0))
    w = rng.standard_normal((2, 1, 2, 2)).astype(np.float32)
    for h in range(2, 72):  # a tap table per input height (the packed form forced); the cache is emptied on the way
        x = rng.standard_normal((1, 1, h, 3)).astype(np.float32)
        gy = rng.standard_normal((1, 2, h - 1, 2)).astype(np.float32)
        with conv_algorithm(opencl_device, "implicit"):
            _, gw, _ = hetnn.conv2d_backward(gy, x, w, input_grad=False, bias_grad=False, device=opencl_device)
        _, rgw, _ = _conv_bwd_ref((gy, x, w, (1, 1), (0, 0), (1, 1), 1))
        assert np.max(np.abs(gw.astype(np.float64) - rgw)) < 1e-4 * max(1.0, np.max(np.abs(rgw))), h
