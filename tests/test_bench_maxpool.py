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
    for row in rows:
        row.pop("unreliable", None)  # a preempted repeat on a busy machine would leave the row out of the summary
    lines = ratios(rows)
    assert len(lines) == 1 and "STREAM triad" in lines[0] and "backward/forward" in lines[0]
    assert "vs onednn-c++ nchw" in lines[0]


def test_an_accelerator_is_compared_with_its_own_memory_ceiling(tmp_path, monkeypatch, opencl_device):
    """On an H100 the summary read "forward 1028 GB/s = 7.51x STREAM triad (136.8 GB/s)": a GPU's forward set
    against the host's memory. An accelerator's row is now set against its own triad, or says it has none."""
    from test_bench_peak import as_accelerator

    from hetnn.bench import peak

    monkeypatch.setenv("HETNN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(peak, "LOAD_PCT", 101.0)  # ceilings stored also beside a busy neighbour (tested apart)
    acc = as_accelerator(opencl_device)
    case = [("large k2s2", 1, 2, 64, 64, 2, 2, 0)]

    def summary():
        (row,) = run_maxpool(case, [acc], compare=[], n_warmup=1, n_repeat=2)
        row.pop("unreliable", None)  # a preempted repeat on a busy machine would leave the row out of the summary
        (line,) = ratios([row])
        return row, line

    row, line = summary()
    assert "STREAM" not in line and "no measured memory ceiling" in line, line
    peak.measure_missing([acc])
    row, line = summary()
    want = f"{row['fwd_gbps'] / peak.mem_peak_gbps(acc):.2f}x its own triad (bench peak) ("
    assert "STREAM" not in line and want in line, line
