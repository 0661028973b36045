"""hetnn.memory_stats / reset_peak_memory_stats on every device: bytes and buffers in use follow the arrays made
and freed, the peak holds until reset, freed blocks of 1 MiB and more are cached, reused and freed by empty_cache."""
import gc

import numpy as np
import pytest

import hetnn

MIB = 1 << 20
KEYS = {"bytes_in_use", "peak_bytes_in_use", "bytes_cached", "buffers_in_use", "buffers_created", "buffers_reused"}


def test_memory_stats_follow_the_arrays(device):
    hetnn.synchronize(device)
    gc.collect()
    hetnn.empty_cache(device)
    hetnn.reset_peak_memory_stats(device)
    s0 = hetnn.memory_stats(device)
    assert set(s0) == KEYS and s0["peak_bytes_in_use"] == s0["bytes_in_use"] and s0["bytes_cached"] == 0
    big = [hetnn.zeros((3 * MIB // 4,), "float32", device=device) for _ in range(2)]  # 3 MiB each -> 4 MiB blocks
    small = hetnn.zeros((100,), "float32", device=device)
    s1 = hetnn.memory_stats(device)
    grown = s1["bytes_in_use"] - s0["bytes_in_use"] - 2 * 4 * MIB  # the big ones rounded to 2 MiB blocks
    assert 400 <= grown <= 512  # the small one as allocated (the CPU device rounds to 64 bytes)
    assert s1["buffers_in_use"] - s0["buffers_in_use"] == 3
    assert s1["buffers_created"] - s0["buffers_created"] == 3 and s1["peak_bytes_in_use"] >= s1["bytes_in_use"]
    del big, small
    gc.collect()
    hetnn.synchronize(device)
    s2 = hetnn.memory_stats(device)
    assert s2["bytes_in_use"] == s0["bytes_in_use"] and s2["buffers_in_use"] == s0["buffers_in_use"]
    assert s2["peak_bytes_in_use"] == s1["peak_bytes_in_use"]  # the peak holds until reset
    assert s2["bytes_cached"] == 8 * MIB  # both big blocks kept for reuse
    again = hetnn.zeros((3 * MIB // 4,), "float32", device=device)
    s3 = hetnn.memory_stats(device)
    assert s3["buffers_reused"] == s2["buffers_reused"] + 1 and s3["bytes_cached"] == 4 * MIB
    hetnn.reset_peak_memory_stats(device)
    assert hetnn.memory_stats(device)["peak_bytes_in_use"] == s3["bytes_in_use"]
    del again
    gc.collect()
    assert hetnn.empty_cache(device) == 8 * MIB and hetnn.memory_stats(device)["bytes_cached"] == 0


def test_arrays_sharing_numpys_memory_allocate_nothing():
    cpu = hetnn.device("cpu")
    gc.collect()
    before = hetnn.memory_stats(cpu)["bytes_in_use"]
    x = np.ones(1 << 20, np.float32)
    a = hetnn.asarray(x, device=cpu, copy=False)
    assert hetnn.memory_stats(cpu)["bytes_in_use"] == before
    del a


def test_bad_device_is_named():
    with pytest.raises((ValueError, TypeError), match="nosuch"):
        hetnn.memory_stats("nosuch")


def test_every_timed_case_carries_its_working_set(device):
    """interleave (so every bench row) records peak_bytes: the most bytes the allocators held on the case's
    devices during a timed call, here an 8 MiB product of two arrays made in the call."""
    x = hetnn.asarray(np.ones((1024, 1024), np.float32), device=device)  # 4 MiB, held across the calls
    case = hetnn.Case("add", lambda: x + x, devices=[device])
    host = hetnn.Case("numpy", lambda: np.ones(10))
    r, h = hetnn.interleave([case, host], n_warmup=1, n_repeat=3, settle=False)
    assert r.flags["peak_bytes"] >= 8 * MIB  # the input and the sum
    assert "peak_bytes" not in h.flags  # no device, nothing to say


def test_a_stopwatch_leaves_the_users_peak_alone(device):
    hetnn.reset_peak_memory_stats(device)
    big = hetnn.zeros((1 << 20,), "float32", device=device)  # 4 MiB, then freed: the peak keeps it
    del big
    gc.collect()
    peak = hetnn.memory_stats(device)["peak_bytes_in_use"]
    with hetnn.Stopwatch(device):
        hetnn.zeros((10,), "float32", device=device)
    assert hetnn.memory_stats(device)["peak_bytes_in_use"] == peak


def test_the_cpu_pool_hands_out_the_block_freed_last():
    """Of cached blocks of one size class the one freed last comes back first (the likeliest still in the caches;
    the pool handed out the oldest before)."""
    dev = hetnn.device("cpu")
    n = 1 << 20  # 4 MiB: pooled
    arrays = [hetnn.zeros((n,), dtype="float32", device=dev) for _ in range(3)]
    where = [np.from_dlpack(a).ctypes.data for a in arrays]
    while arrays:  # freed in the order made
        arrays.pop(0)
    fresh = hetnn.full((n,), 7.0, dtype="float32", device=dev)
    assert np.from_dlpack(fresh).ctypes.data == where[-1]
    np.testing.assert_array_equal(fresh.numpy(), np.full(n, 7.0, np.float32))
