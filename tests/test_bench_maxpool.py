"""The max-pool benchmark's rows: right fields, results checked against NumPy, peers agreeing."""
import numpy as np
import pytest

import hetnn
import max_pool_reference as ref
from hetnn.bench.maxpool import numpy_max_pool, ratios, run_maxpool, sweep_cases


@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_numpy_peer_matches_reference(rng, k, s, p):
    x = rng.standard_normal((2, 3, 10, 12))
    want, _ = ref.max_pool2d(x, (k, k), (s, s), (p, p), (1, 1), False)
    np.testing.assert_array_equal(numpy_max_pool(x, k, s, p), want)


def test_rows_for_every_device_and_peer():
    cases = [("t", 2, 3, 20, 18, 3, 2, 1)]
    notes = []
    rows = run_maxpool(cases, hetnn.devices(), compare=["numpy", "onednn", "torch"], n_warmup=1, n_repeat=2,
                       notes=notes)
    libs = {(r["library"], r["device"]) for r in rows}
    for d in hetnn.devices():
        assert ("hetnn", d.id) in libs
    assert ("numpy", "host") in libs and ("onednn-c++ nchw", "cpu") in libs and ("onednn-c++ nhwc", "cpu") in libs
    for r in rows:
        assert r["fwd_ms"] > 0 and r["fwd_gbps"] > 0
        assert r["windows"] == 2 * 3 * 10 * 9
        if r["library"] == "hetnn":
            assert r["max_abs_err"] == 0.0
            assert r["bwd_ms"] > 0 and r["fwd_idx_ms"] > 0
    try:
        import torch  # noqa: F401
    except ImportError:
        assert any(n.startswith("torch: not used") for n in notes)


def test_sweep_has_transfer_columns_on_opencl(opencl_device):
    rows = run_maxpool(sweep_cases(16), [opencl_device], compare=[], backward=False, transfers=True,
                       n_warmup=1, n_repeat=2)
    assert [r["case"] for r in rows] == ["4x4", "8x8", "16x16"]
    for r in rows:
        assert r["h2d_ms"] > 0 and r["d2h_ms"] > 0
        assert r["total_ms"] == pytest.approx(r["fwd_ms"] + r["h2d_ms"] + r["d2h_ms"])


def test_unknown_peer():
    with pytest.raises(ValueError, match="unknown peer"):
        run_maxpool([("t", 1, 1, 4, 4, 2, 2, 0)], [hetnn.device("cpu")], compare=["jaxx"])


def test_ratio_lines_name_stream():
    rows = run_maxpool([("large k2s2", 1, 2, 16, 16, 2, 2, 0)], [hetnn.device("cpu")], compare=["onednn"],
                       n_warmup=1, n_repeat=2)
    lines = ratios(rows)
    assert len(lines) == 1 and "STREAM triad" in lines[0] and "backward/forward" in lines[0]
    assert "vs onednn-c++ nchw" in lines[0]
