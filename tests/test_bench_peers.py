"""Peers (PyTorch, CuPy, JAX) in the benchmark: used when importable, reported when not, never an error."""
import pytest

import hetnn
from hetnn.bench import peers
from hetnn.bench.matmul import run_matmul


def test_missing_peer_is_a_note(monkeypatch):
    def broken():
        raise ImportError("No module named 'fakepeer'")
    monkeypatch.setitem(peers._FACTORIES, "torch", broken)
    targets, notes = peers.find_peers(["torch"])
    assert targets == []
    assert len(notes) == 1 and notes[0].startswith("torch: not used (ImportError")


def test_unknown_peer_is_a_value_error():
    with pytest.raises(ValueError, match="unknown peer"):
        run_matmul([("t", 4, 4, 4)], [hetnn.device("cpu")], compare=["tensorflowz"])


def test_time_calls_synchronizes_around_each_call():
    log = []
    t = peers.time_calls(lambda: log.append("call"), lambda: log.append("sync"), n_warmup=2, n_repeat=3,
                         max_duration=None)
    assert len(t) == 3 and all(x >= 0 for x in t)
    assert log == ["call", "sync"] * 2 + ["sync", "call", "sync"] * 3


@pytest.mark.parametrize("name", peers.ARRAY_PEERS)
def test_installed_peer_agrees_with_float64(name):
    pytest.importorskip(name)
    notes = []
    rows = run_matmul([("t", 37, 19, 23)], [hetnn.device("cpu")], compare=[name], n_warmup=1, n_repeat=2,
                      notes=notes)
    prow = [r for r in rows if r["library"] == name]
    assert prow, f"{name} is importable but produced no rows (notes: {notes})"
    for r in prow:
        assert r["gflops"] > 0
        assert r["max_rel_err"] < 1e-5
