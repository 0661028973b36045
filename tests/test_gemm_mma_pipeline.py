"""The matrix-unit member's pipelined form (st = 2..4: a ring of st local buffers filled st - 1 slices ahead; on
NVIDIA sm_80+ by asynchronous copies, elsewhere by plain copies in the same places of the ring, with the instruction
emulated on its fragment layout). Products against float64 references over K spanning many turns of the ring, every
transpose, aligned (vector) and unaligned operands, tf32 rounded as fragments are read, and the convolution's
gathered B."""
import numpy as np
import pytest

import hetnn
from hetnn import _core
from op_table import _conv_ref
from test_precision import tf32

# 16-deep slices (8 for tf32): K = 257 turns a ring of 2 to 4 buffers many times; 1 and 16 stop inside the prologue
SHAPES = [(1, 1, 1, False, False), (37, 19, 257, True, False), (64, 65, 16, False, True), (13, 7, 100, True, True),
          (32, 48, 200, False, False), (64, 32, 48, True, True), (29, 64, 33, False, True), (3, 5, 0, False, False)]
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "tf32": 4e-6}


def _member(st, dtype):
    return f"family=mma ts_m=32 ts_n=32 ts_k={8 if dtype == 'tf32' else 16} wm=2 wn=1 st={st}"


@pytest.fixture
def set_params(opencl_device):
    saved = {}

    def set_(dtype, params):
        if dtype not in saved:
            saved[dtype] = _core.gemm_params(opencl_device._dev, dtype)
        _core.set_gemm_params(opencl_device._dev, dtype, params, "test")

    yield set_
    for dtype, (old, source) in saved.items():
        _core.set_gemm_params(opencl_device._dev, dtype, "" if source.startswith(("database", "default")) else old,
                              source)


@pytest.mark.parametrize("st", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "tf32"])
def test_pipelined_member_matches_float64(opencl_device, set_params, rng, st, dtype):
    set_params(dtype, _member(st, dtype))
    data = "float32" if dtype == "tf32" else dtype
    for m, n, k, ta, tb in SHAPES:
        a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(data)
        b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(data)
        bias = rng.uniform(-1, 1, n).astype(data)
        out = np.full((m, n), np.nan, data)  # poisoned: beta 0 must overwrite it
        hetnn.matmul(a, b, transpose_a=ta, transpose_b=tb, bias=bias, activation="tanh", device=opencl_device,
                     precision="high", out=out)
        ra, rb = (tf32(a), tf32(b)) if dtype == "tf32" else (a, b)  # the inputs as the units see them
        a64, b64 = ra.astype(np.float64), rb.astype(np.float64)
        ref = np.tanh((a64.T if ta else a64) @ (b64.T if tb else b64) + bias.astype(np.float64))
        tol = TOL[dtype] * (max(1, k) ** 0.5 if dtype == "tf32" else 1)
        got = out.astype(np.float64)
        assert np.max(np.abs(got - ref), initial=0.0) < tol, (st, dtype, m, n, k, ta, tb)


@pytest.mark.parametrize("dtype", ["float16", "tf32"])
def test_pipelined_member_gathers_a_convolution(opencl_device, set_params, rng, dtype):
    set_params(dtype, _member(3, dtype))
    data = "float32" if dtype == "tf32" else dtype
    x = rng.standard_normal((2, 7, 9, 8)).astype(data)  # K = 7 * 9 = 63: several slices, the last one partial
    w = (rng.standard_normal((5, 7, 3, 3)) / np.sqrt(63)).astype(data)
    bias = rng.standard_normal(5).astype(data)
    with hetnn.profile(opencl_device) as prof:
        y = hetnn.conv2d(x, w, bias, 1, 1, 1, 1, "relu", device=opencl_device, precision="high")
    assert "conv2d_im2col" not in [r["name"] for r in prof.records]  # the implicit GEMM on the member
    rx, rw = (tf32(x), tf32(w)) if dtype == "tf32" else (x, w)
    (ref,) = _conv_ref((rx, rw, bias, (1, 1), (1, 1), (1, 1), 1, "relu"))
    tol = {"float16": 2e-3, "tf32": 1e-5}[dtype]
    assert np.max(np.abs(y.astype(np.float64) - ref)) < tol * max(1.0, np.max(np.abs(ref)))


def test_pipelined_tf32_rounds_as_fragments_are_read(opencl_device, set_params):
    """Staged raw, the values must still reach the units rounded to nearest, ties away (a (M, 1) @ (1, 1) product
    with b = 1 returns each a rounded), across a slice boundary of the ring."""
    set_params("tf32", _member(2, "tf32"))
    values = np.array([1 + 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -23, 1 + 2.0 ** -12, -(1 + 2.0 ** -11),
                       2 - 2.0 ** -23, np.finfo(np.float32).max, np.inf, 1e-40, np.pi] * 5, np.float32)
    c = hetnn.matmul(values[:, None], np.ones((1, 1), np.float32), device=opencl_device, precision="high")
    np.testing.assert_array_equal(np.asarray(c)[:, 0], tf32(values))
    # along K: 1 + 2**-11 (a tie: up to 1 + 2**-10) in each of 40 places, 5 slices; sums exact in float32
    tie = np.full((1, 40), 1 + 2.0 ** -11, np.float32)
    c = hetnn.matmul(tie, np.ones((40, 1), np.float32), device=opencl_device, precision="high")
    assert float(np.asarray(c)[0, 0]) == 40 * (1 + 2.0 ** -10)


@pytest.mark.parametrize("bad", ["family=mma st=1", "family=mma st=5", "family=vtiled st=2", "family=mma st=x"])
def test_bad_stage_counts_are_value_errors(opencl_device, bad):
    with pytest.raises(ValueError, match="st"):
        _core.set_gemm_params(opencl_device._dev, "float32" if "vtiled" in bad else "float16", bad, "test")


def test_stage_count_round_trips(opencl_device, set_params):
    set_params("float16", "family=mma ts_m=32 ts_n=32 ts_k=16 wm=2 wn=1 st=3")
    params, source = _core.gemm_params(opencl_device._dev, "float16")
    assert params == "family=mma ts_m=32 ts_n=32 ts_k=16 wm=2 wn=1 st=3" and source == "test"
