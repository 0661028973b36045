"""Stream-K in the vtiled GEMM (gemm_vtiled_sk + gemm_sk_fixup, parameter sk): the slices of all tiles dealt out
evenly to sk x compute-units work-groups, parts of tiles added by the fixup pass. Run on the first OpenCL device
with small tiles (many tiles and slices shared among work-groups) against float64."""
import numpy as np
import pytest

import hetnn
from hetnn import _core

BASE = "family=vtiled ts_m=16 ts_n=32 ts_k=8 wpt_m=2 wpt_n=4 vwm=2 vwn=4"
SHAPES = [(1, 1, 1, False, False), (37, 19, 23, True, False), (64, 65, 9, False, True), (13, 7, 40, True, True),
          (29, 64, 33, False, False), (50, 96, 200, True, False), (100, 3, 1000, False, False),
          (17, 129, 8, False, True), (257, 33, 64, False, False), (3, 5, 0, False, False),
          (1000, 70, 2000, False, False)]  # 189 tiles of 250 slices: stream-K on any device, a GPU's 132 CUs too
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 3e-3, "bfloat16": 2e-2}


def uses_stream_k(dev, sk, m, n, k):
    """The host's rule (ClBackend::matmul_tiled): one product, K > 0, tiles not a multiple of the work-groups, at
    least one slice for each."""
    tiles = -(-m // 16) * -(-n // 32)
    groups = sk * max(1, dev.compute_units)
    return k > 0 and tiles % groups != 0 and tiles * -(-k // 8) >= groups


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("sk", [1, 3, 7])
def test_stream_k_matches_float64(opencl_device, rng, dtype, sk):
    old, source = _core.gemm_params(opencl_device._dev, dtype)
    _core.set_gemm_params(opencl_device._dev, dtype, f"{BASE} sk={sk}", "test")
    seen = 0
    try:
        for m, n, k, ta, tb in SHAPES:
            a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(dtype)
            b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(dtype)
            bias = rng.uniform(-1, 1, n).astype(dtype)
            c0 = rng.uniform(-1, 1, (m, n)).astype(dtype)
            out = hetnn.asarray(c0, device=opencl_device)
            da, db, dbias = (hetnn.asarray(v, device=opencl_device) for v in (a, b, bias))
            with hetnn.profile(opencl_device) as prof:
                hetnn.matmul(da, db, transpose_a=ta, transpose_b=tb, alpha=0.75, beta=-0.5, out=out, bias=dbias,
                             activation="tanh")
            names = [r["name"] for r in prof.records]
            expect = uses_stream_k(opencl_device, sk, m, n, k)
            assert ("matmul:sk_fixup" in names) == expect, ((m, n, k), names)
            assert "matmul:split_reduce" not in names or not expect, names
            seen += expect
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            ref = np.tanh(0.75 * ((a64.T if ta else a64) @ (b64.T if tb else b64)) - 0.5 * c0.astype(np.float64)
                          + bias.astype(np.float64))
            got = out.astype("float64").numpy()
            assert np.max(np.abs(got - ref), initial=0.0) < TOL[dtype] * max(1.0, np.sqrt(k)), ((m, n, k), dtype)
    finally:
        _core.set_gemm_params(opencl_device._dev, dtype, "" if source.startswith(("database", "default")) else old,
                              source)
    assert seen >= 1  # stream-K ran, with tiles shared among work-groups (the last shape on any device)


def test_stream_k_overwrites_a_poisoned_output_at_beta_zero(opencl_device, rng):
    """beta = 0: C's old contents (NaN here) must not reach the result, in the tiles one work-group stores and in
    those the fixup adds up."""
    old, source = _core.gemm_params(opencl_device._dev, "float32")
    _core.set_gemm_params(opencl_device._dev, "float32", f"{BASE} sk=3", "test")
    try:
        a = rng.standard_normal((45, 70)).astype(np.float32)
        b = rng.standard_normal((70, 77)).astype(np.float32)
        out = hetnn.asarray(np.full((45, 77), np.nan, np.float32), device=opencl_device)
        da, db = (hetnn.asarray(v, device=opencl_device) for v in (a, b))
        with hetnn.profile(opencl_device) as prof:
            hetnn.matmul(da, db, out=out)
        assert "matmul:sk_fixup" in [r["name"] for r in prof.records]
        ref = a.astype(np.float64) @ b.astype(np.float64)
        assert np.max(np.abs(out.numpy().astype(np.float64) - ref)) < 1e-4
    finally:
        _core.set_gemm_params(opencl_device._dev, "float32", "" if source.startswith(("database", "default")) else old,
                              source)


@pytest.mark.parametrize("bad", ["family=vtiled sk=-1", "family=vtiled sk=17", "family=tiled sk=1",
                                 "family=packed sk=2", "family=vtiled sk=x"])
def test_bad_stream_k_parameters_are_value_errors(opencl_device, bad):
    with pytest.raises(ValueError, match="sk"):
        _core.set_gemm_params(opencl_device._dev, "float32", bad, "test")


def test_stream_k_round_trips_through_the_parameter_text(opencl_device):
    old, source = _core.gemm_params(opencl_device._dev, "float32")
    try:
        _core.set_gemm_params(opencl_device._dev, "float32", f"{BASE} sk=2", "test")
        assert _core.gemm_params(opencl_device._dev, "float32")[0] == f"{BASE} sk=2"
        _core.set_gemm_params(opencl_device._dev, "float32", BASE, "test")
        assert _core.gemm_params(opencl_device._dev, "float32")[0] == BASE  # sk=0 is not written
    finally:
        _core.set_gemm_params(opencl_device._dev, "float32", "" if source.startswith(("database", "default")) else old,
                              source)
