"""bench transfer: every direction on every device moves the data (checked) and yields positive bandwidths; the
device-to-device copy refuses mismatched arrays."""
import numpy as np
import pytest

import hetnn
from hetnn._loader import _core
from hetnn.bench.transfer import run_transfer, summary, transfer_sizes


def test_transfer_sizes():
    assert transfer_sizes(1024) == [4, 16, 64, 256, 1024]


def _has_pinned(dev):
    return _core.pinned_bytes(dev._dev, 1) is not None


def test_run_transfer_every_device():
    devs = hetnn.devices()
    rows = run_transfer(devs, [4, 4096, 1 << 20], n_warmup=1, n_repeat=3, max_duration=0.5)
    # pageable h2d, d2h and d2d everywhere; pinned h2d and d2h where the device has page-locked memory (OpenCL)
    pinned = [d for d in devs if _has_pinned(d)]
    assert len(rows) == (len(devs) * 3 + len(pinned) * 2) * 3
    for d in devs:
        dirs = {r["direction"] for r in rows if r["device"] == d.id}
        assert dirs == ({"h2d", "d2h", "d2d"} | ({"h2d pinned", "d2h pinned"} if d in pinned else set()))
    assert all(d.kind == "opencl" for d in pinned) and not _has_pinned(hetnn.device("cpu"))
    for r in rows:
        assert r["gbps"] > 0 and r["ms"] > 0 and r["wall_ms"] > 0
        assert r["wall_gbps"] == pytest.approx(r["bytes"] / (r["wall_ms"] / 1e3) / 1e9)
        dev = hetnn.device(r["device"])
        across_a_bus = r["direction"] != "d2d" and dev.kind == "opencl" and dev.type != "cpu"
        fits = bool(dev.cache_size) and r["bytes"] <= dev.cache_size and not across_a_bus
        if r["direction"] == "d2d" or across_a_bus:
            assert bool(r["in_cache"]) == fits, r
    lines = summary(rows)
    latency = [line for line in lines if "latency" in line]
    assert len(latency) == 3 * len(devs) + 2 * len(pinned)
    ratios = [line for line in lines if "pinned / pageable" in line]
    assert len(ratios) == 2 * len(pinned) and len(lines) == len(latency) + len(ratios)
    assert all("1 MiB" in line for line in ratios), ratios


def test_copy_from(device, rng):
    a = _core.Array.from_numpy(device._dev, rng.standard_normal(10).astype(np.float32))
    b = _core.Array.empty(device._dev, [10], "float32")
    b.copy_from(a)
    np.testing.assert_array_equal(b.to_numpy(), a.to_numpy())
    with pytest.raises(ValueError, match="dtype and size must match"):
        b.copy_from(_core.Array.empty(device._dev, [11], "float32"))
    with pytest.raises(ValueError, match="dtype and size must match"):
        b.copy_from(_core.Array.empty(device._dev, [10], "float16"))


def test_overlap_rows_time_a_copy_beside_a_kernel(opencl_device):
    from hetnn.bench.overlap import overlap_summary, run_overlap

    steps = []
    rows = run_overlap([hetnn.device("cpu"), opencl_device], 4 << 20, n_warmup=1, n_repeat=3, progress=steps.append)
    assert [r["device"] for r in rows] == [opencl_device.id]  # the CPU device's streams are synchronous: no row
    assert len(steps) == 1
    r = rows[0]
    assert r["size"] == "4 MiB" and r["kernel_reps"] >= 1
    for k in ("copy_ms", "kernel_ms", "serial_ms", "streams_ms"):
        assert r[k] > 0
    assert r["streams_over_serial"] == pytest.approx(r["streams_ms"] / r["serial_ms"])
    want = 100 * (r["copy_ms"] + r["kernel_ms"] - r["streams_ms"]) / min(r["copy_ms"], r["kernel_ms"])
    assert r["hidden_pct"] == pytest.approx(want)
    (line,) = overlap_summary(rows)
    assert line.startswith(f"{opencl_device.id} a 4 MiB copy and a kernel: two streams / one (time)")
