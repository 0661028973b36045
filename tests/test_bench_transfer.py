"""bench transfer: every direction on every device moves the data (checked) and yields positive bandwidths; the
device-to-device copy refuses mismatched arrays."""
import numpy as np
import pytest

import hetnn
from hetnn._loader import _core
from hetnn.bench.transfer import run_transfer, summary, transfer_sizes


def test_transfer_sizes():
    assert transfer_sizes(1024) == [4, 16, 64, 256, 1024]


def test_run_transfer_every_device():
    devs = hetnn.devices()
    rows = run_transfer(devs, [4, 4096, 1 << 20], n_warmup=1, n_repeat=3, max_duration=0.5)
    assert len(rows) == len(devs) * 3 * 3
    for r in rows:
        assert r["gbps"] > 0 and r["ms"] > 0 and r["wall_ms"] > 0
        assert r["wall_gbps"] == pytest.approx(r["bytes"] / (r["wall_ms"] / 1e3) / 1e9)
        dev = hetnn.device(r["device"])
        across_a_bus = r["direction"] != "d2d" and dev.kind == "opencl" and dev.type != "cpu"
        fits = bool(dev.cache_size) and r["bytes"] <= dev.cache_size and not across_a_bus
        if r["direction"] == "d2d" or across_a_bus:
            assert bool(r["in_cache"]) == fits, r
    lines = summary(rows)
    assert len(lines) == 3 * len(devs) and all("latency" in line for line in lines)


def test_copy_from(device, rng):
    a = _core.Array.from_numpy(device._dev, rng.standard_normal(10).astype(np.float32))
    b = _core.Array.empty(device._dev, [10], "float32")
    b.copy_from(a)
    np.testing.assert_array_equal(b.to_numpy(), a.to_numpy())
    with pytest.raises(ValueError, match="dtype and size must match"):
        b.copy_from(_core.Array.empty(device._dev, [11], "float32"))
    with pytest.raises(ValueError, match="dtype and size must match"):
        b.copy_from(_core.Array.empty(device._dev, [10], "float16"))
