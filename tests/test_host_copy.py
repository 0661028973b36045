"""Contiguous copies and fills on the CPU device (cpp/src/backend/cpu/host_copy.h): uploads, downloads, copies between
Arrays, dense copies of views and zero-filled arrays run on the threads from 1 MiB, with streaming stores where the
processor's rule says. Every path (one thread, the threads' pieces; regular and streaming stores, forced on and off
so that both run on any x86-64) writes exactly the source's bytes over a poisoned destination, whatever the
alignment of either end and however the size ends."""
import numpy as np
import pytest

import hetnn
from hetnn import _core

MIB = 1 << 20
# one thread below 1 MiB; from it, pieces of 256 KiB with a ragged last one
SIZES = [MIB - 1, MIB, MIB + 4099, 3 * MIB + 5]
STORES = {"table": -1, "streaming": 0, "regular": 1 << 62}


@pytest.fixture
def cpu():
    return hetnn.device("cpu")


@pytest.fixture(params=sorted(STORES))
def stores(request):
    _core._set_stream_store_threshold(STORES[request.param])
    yield request.param
    _core._set_stream_store_threshold(-1)


def _bytes(rng, n):
    return rng.integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("n", SIZES)
def test_uploads_downloads_and_copies_keep_every_byte(cpu, rng, stores, n):
    src = _bytes(rng, n + 7)
    for lead in (0, 3):  # an aligned and an unaligned NumPy source
        want = src[lead:lead + n]
        x = hetnn.asarray(want, device=cpu)
        np.testing.assert_array_equal(x.numpy(), want)
        back = np.empty(n + 5, dtype=np.uint8)
        back[:] = ~np.resize(want, n + 5)  # every byte differs from the one that will land on it
        back[:2] = 0xAB
        x.copy_to_host(out=back[2:2 + n])  # an unaligned NumPy destination
        np.testing.assert_array_equal(back[2:2 + n], want)
        assert np.all(back[:2] == 0xAB) and np.array_equal(back[2 + n:], (~np.resize(want, n + 5))[2 + n:])
        c = x.copy()
        np.testing.assert_array_equal(c.numpy(), want)
        y = hetnn.asarray(~want, device=cpu)
        y[...] = x
        np.testing.assert_array_equal(y.numpy(), want)


@pytest.mark.parametrize("n", SIZES)
def test_dense_copies_of_views_and_copies_into_views_keep_every_byte(cpu, rng, stores, n):
    host = _bytes(rng, n + 11)
    x = hetnn.asarray(host, device=cpu)
    v = x[5:5 + n]  # a view starting 5 bytes into its memory
    np.testing.assert_array_equal(v.copy().numpy(), host[5:5 + n])
    dst_host = ~_bytes(rng, n + 11)
    dst = hetnn.asarray(dst_host, device=cpu)
    dst[3:3 + n] = v  # both ends unaligned
    want = dst_host.copy()
    want[3:3 + n] = host[5:5 + n]
    np.testing.assert_array_equal(dst.numpy(), want)


def test_long_rows_of_a_strided_view_are_each_shared_by_the_threads(cpu, rng, stores):
    """A (3, 1 MiB + 9) float32 view without its first column: three contiguous rows each above the threshold."""
    host = rng.standard_normal((3, MIB // 4 + 10), dtype=np.float32)
    x = hetnn.asarray(host, device=cpu)
    np.testing.assert_array_equal(x[:, 1:].copy().numpy(), host[:, 1:])
    out = hetnn.asarray(np.full((3, MIB // 4 + 10), np.nan, dtype=np.float32), device=cpu)
    out[:, :-1] = x[:, 1:]
    want = np.full_like(host, np.nan)
    want[:, :-1] = host[:, 1:]
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("n", SIZES)
def test_zeros_overwrite_reused_memory(cpu, rng, stores, n):
    for _ in range(3):  # the pool hands a freed buffer of the size back: poison it first
        junk = hetnn.asarray(np.full(n, 0xFF, dtype=np.uint8), device=cpu)
        del junk
        z = hetnn.zeros((n,), dtype="uint8", device=cpu)
        assert not z.numpy().any()
        f = hetnn.zeros((n // 8,), dtype="float64", device=cpu)
        np.testing.assert_array_equal(f.numpy(), np.zeros(n // 8))
