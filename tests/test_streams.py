"""hetnn.Stream: commands in `with stream:` go to the stream's queue; what two queues share is ordered (a command waits
for the last command on another queue that used its memory), proven with deliberately long kernels whose results
would differ if a read, an overwrite or a reuse of freed memory overtook them; copies into and from page-locked memory
on a stream leave the host free and hold the data once the stream is synchronized; the CPU device's streams are
synchronous; misuse is a clear exception."""
import threading

import numpy as np
import pytest

import hetnn

N = 1 << 14
REPS = 20000  # a few tenths of a second per call on a 2-vCPU PoCL device: long enough for the others to overtake it

# y = x after REPS dependent steps (v = v/2 + x/2 stays x exactly, with or without a fused multiply-add), each
# work-item reading x throughout
_SPIN = hetnn.ElementwiseKernel("float32 x, int32 reps", "float32 y",
                                "float v = x; for (int j = 0; j < reps; ++j) { v = v * 0.5f + x * 0.5f; } y = v;",
                                "stream_spin")


def _x(rng):
    return rng.uniform(1, 2, N).astype(np.float32)


def _waits(dev):
    return hetnn._core.stream_waits(dev._dev)


def test_a_read_on_another_queue_waits_for_the_write(opencl_device, rng):
    x = _x(rng)
    a = hetnn.asarray(x, device=opencl_device)
    junk = hetnn.full((N,), np.nan, dtype="float32", device=opencl_device)  # poison the pool's next buffer
    del junk
    s = hetnn.Stream(opencl_device)
    before = _waits(opencl_device)
    with s:
        y = _SPIN(a, REPS)
    z = y * 2.0                        # on the device's own queue: waits for the stream's kernel
    np.testing.assert_array_equal(z.numpy(), 2 * x.astype(np.float64))
    assert _waits(opencl_device) > before


def test_an_overwrite_on_another_queue_waits_for_the_read(opencl_device, rng):
    x = _x(rng)
    a = hetnn.asarray(x, device=opencl_device)
    s = hetnn.Stream(opencl_device)
    with s:
        y = _SPIN(a, REPS)             # reads a for its whole run
    before = _waits(opencl_device)
    a[...] = 0.0                       # on the device's own queue: after the stream's read
    np.testing.assert_array_equal(y.numpy(), x)
    np.testing.assert_array_equal(a.numpy(), np.zeros(N, np.float32))
    assert _waits(opencl_device) > before


def test_memory_freed_on_a_stream_and_taken_on_another_queue_waits(opencl_device, rng):
    n = 1 << 18  # 1 MiB: the allocator keeps freed buffers of this size for reuse
    x = rng.uniform(1, 2, n).astype(np.float32)
    a = hetnn.asarray(x, device=opencl_device)
    s = hetnn.Stream(opencl_device)
    older = [hetnn.zeros((n,), dtype="float32", device=opencl_device) for _ in range(2)]
    del older  # buffers of the same size freed earlier: the pool hands out the last one freed first
    for _ in range(3):
        with s:
            t = _SPIN(a, REPS // 16)   # still writing when its array goes
        del t
        before = _waits(opencl_device)
        b = hetnn.zeros((n,), dtype="float32", device=opencl_device)  # the freed buffer, from the pool
        np.testing.assert_array_equal(b.numpy(), np.zeros(n, np.float32))
        assert _waits(opencl_device) > before


def test_two_streams_and_the_device_queue_compute_a_chain(device, rng):
    x = _x(rng)
    a = hetnn.asarray(x, device=device)
    s1, s2 = hetnn.Stream(device), hetnn.Stream(device)
    with s1:
        y = _SPIN(a, 2000) + 1.0
    with s2:
        z = y * 3.0
    w = z - y
    np.testing.assert_allclose(w.numpy(), 2 * (x.astype(np.float64) + 1), rtol=1e-6)
    s1.synchronize()
    s2.synchronize()
    assert s1.done and s2.query()


def test_copies_on_a_stream_with_page_locked_memory(device, rng):
    x = _x(rng)
    src = hetnn.pinned_empty((N,), "float32", device=device)
    src[...] = x
    s = hetnn.Stream(device)
    a = hetnn.asarray(src, device=device, stream=s)       # upload: the host does not wait
    with s:
        y = _SPIN(a, REPS) * 2.0
    out = hetnn.pinned_empty((N,), "float32", device=device)
    out[...] = np.nan
    assert y.copy_to_host(out=out, stream=s) is out        # download: the host does not wait
    s.synchronize()
    np.testing.assert_array_equal(out, 2 * x.astype(np.float64))
    # ordinary memory on a stream: the host waits, the data are there on return
    plain = np.full(N, np.nan, np.float32)
    assert y.copy_to_host(out=plain, stream=s) is plain
    np.testing.assert_array_equal(plain, 2 * x.astype(np.float64))
    np.testing.assert_array_equal(y.copy_to_host(stream=s), 2 * x.astype(np.float64))
    b = hetnn.asarray(x, device=device, stream=s)
    np.testing.assert_array_equal(b.numpy(), x)


def test_an_upload_on_a_stream_is_waited_for_by_the_device_queue(opencl_device, rng):
    x = _x(rng)
    src = hetnn.pinned_empty((N,), "float32", device=opencl_device)
    src[...] = x
    s = hetnn.Stream(opencl_device)
    with s:
        _SPIN(hetnn.asarray(x, device=opencl_device), REPS)  # the stream is busy: the upload queues behind it
    a = hetnn.asarray(src, device=opencl_device, stream=s)
    before = _waits(opencl_device)
    np.testing.assert_array_equal((a * 2.0).numpy(), 2 * x.astype(np.float64))
    assert _waits(opencl_device) > before


def test_a_stream_waits_for_an_event_of_another(device, rng):
    a = hetnn.asarray(_x(rng), device=device)
    s1, s2 = hetnn.Stream(device), hetnn.Stream(device)
    with s1:
        _SPIN(a, REPS)
    e = s1.record_event()
    assert isinstance(e, hetnn.Event)
    s2.wait_event(e)
    s2.synchronize()                   # s2 waited for e: e has finished once s2 has
    assert e.done
    with s1:
        _SPIN(a, REPS)
    s2.wait_stream(s1)
    e2 = hetnn.Event(device).record(stream=s1)
    s2.synchronize()
    assert e2.done
    e3 = hetnn.Event(device).record(stream=s1)
    e3.wait()                          # the thread's current queue (the device's own) waits for it
    e3.wait(stream=s2)
    hetnn.synchronize(device)          # every queue of the device
    assert e3.done


def test_with_selects_the_stream_per_thread_and_nests(device):
    s1, s2 = hetnn.Stream(device), hetnn.Stream(device)
    assert hetnn.current_stream(device) is None
    seen = {}

    def other():
        seen["other"] = hetnn.current_stream(device)

    with s1:
        assert hetnn.current_stream(device) is s1
        with s2:
            assert hetnn.current_stream(device) is s2
            t = threading.Thread(target=other)
            t.start()
            t.join()
        assert hetnn.current_stream(device) is s1
    assert hetnn.current_stream(device) is None and seen["other"] is None
    with pytest.raises(ZeroDivisionError):
        with s1:
            1 / 0
    assert hetnn.current_stream(device) is None  # restored on an exception


def test_cpu_streams_are_synchronous(rng):
    s = hetnn.Stream("cpu")
    assert s.synchronous and s.done and "synchronous" in repr(s)
    x = _x(rng)
    with s:
        y = hetnn.asarray(x, device="cpu") * 2.0
    e = s.record_event()
    assert e.done
    s.wait_event(e)
    np.testing.assert_array_equal(y.numpy(), 2 * x.astype(np.float64))


def test_opencl_streams_are_queues(opencl_device):
    s = hetnn.Stream(opencl_device)
    assert not s.synchronous and "queue" in repr(s)


def test_stream_misuse_is_a_clear_error(device, rng):
    other = "cpu" if device.id != "cpu" else next((d for d in hetnn.devices() if d.id != "cpu"), None)
    a = hetnn.asarray(_x(rng), device=device)
    s = hetnn.Stream(device)
    with pytest.raises(TypeError, match="stream must be a hetnn.Stream"):
        a.copy_to_host(stream="s")
    with pytest.raises(TypeError, match="stream must be a hetnn.Stream"):
        hetnn.asarray([1.0], dtype="float32", device=device, stream=1)
    with pytest.raises(TypeError, match="event must be a hetnn.Event"):
        s.wait_event(object())
    with pytest.raises(ValueError, match="never recorded"):
        s.wait_event(hetnn.Event(device))
    with pytest.raises(ValueError, match="never recorded"):
        hetnn.Event(device).wait()
    with pytest.raises(TypeError, match="other must be a hetnn.Stream"):
        s.wait_stream(None)
    with pytest.raises(ValueError):
        hetnn.Stream("no such device")
    if other is not None:
        so = hetnn.Stream(other)
        with pytest.raises(ValueError, match="the stream is on"):
            a.copy_to_host(stream=so)
        with pytest.raises(ValueError, match="the stream is on"):
            hetnn.asarray([1.0], dtype="float32", device=device, stream=so)
        with pytest.raises(ValueError, match="the stream is on"):
            hetnn.Event(device).record(stream=so)
        with pytest.raises(ValueError, match="the event is on"):
            so.wait_event(hetnn.Event(device).record())
        np.testing.assert_array_equal(a.to(other, stream=so).numpy(), a.numpy())  # a stream of either device
    s1, s2 = hetnn.Stream(device), hetnn.Stream(device)
    s1.__enter__()
    s2.__enter__()
    with pytest.raises(RuntimeError, match="must nest"):
        s1.__exit__(None, None, None)
    s2.__exit__(None, None, None)
    s1.__exit__(None, None, None)
    assert hetnn.current_stream(device) is None


def test_an_upload_through_page_locked_staging(device, rng):
    x = rng.standard_normal((64, 33))  # float64, non-contiguous source below
    want = x[:, ::2].astype(np.float32)
    s = hetnn.Stream(device)
    a = hetnn.asarray(x[:, ::2], dtype="float32", device=device, stream=s, pinned=True)
    x[...] = np.nan  # the source may change as soon as asarray returns: the staged copy holds the data
    s.synchronize()
    np.testing.assert_array_equal(a.numpy(), want)
    b = hetnn.asarray([[1, 2], [3, 4]], dtype="int32", device=device, pinned=True)  # without a stream: blocking
    np.testing.assert_array_equal(b.numpy(), np.array([[1, 2], [3, 4]], np.int32))
    with pytest.raises(TypeError, match="pinned must be a bool"):
        hetnn.asarray(x, device=device, pinned="yes")
    with pytest.raises(ValueError, match="pinned=True"):
        hetnn.asarray(a, device=device, pinned=True)
    with pytest.raises(ValueError, match="pinned=True"):
        hetnn.asarray(x, device=device, pinned=True, copy=False)


def test_a_stream_dropped_while_it_works_is_still_waited_for(opencl_device, rng):
    """A stream dropped with a copy into page-locked memory still running: hetnn.synchronize(device) waited only for
    the streams still held, and at exit the page-locked memory was unmapped under the copy (a segfault)."""
    x = _x(rng)
    a = hetnn.asarray(x, device=opencl_device)
    out = hetnn.pinned_empty((N,), "float32", device=opencl_device)
    out[...] = np.nan
    s = hetnn.Stream(opencl_device)
    with s:
        y = _SPIN(a, REPS)
    y.copy_to_host(out=out, stream=s)
    del s, y
    hetnn.synchronize(opencl_device)
    np.testing.assert_array_equal(out, x)


def test_exit_with_a_dropped_stream_still_copying(opencl_device):
    import subprocess
    import sys
    code = f"""
import numpy as np, hetnn
d = hetnn.device({opencl_device.id!r})
spin = hetnn.ElementwiseKernel("float32 x, int32 reps", "float32 y",
    "float v = x; for (int j = 0; j < reps; ++j) {{ v = v * 0.5f + x * 0.5f; }} y = v;", "exit_spin")
x = hetnn.asarray(np.ones(1 << 16, np.float32), device=d)
out = hetnn.pinned_empty((1 << 16,), "float32", device=d)
s = hetnn.Stream(d)
with s:
    y = spin(x, 20000)
y.copy_to_host(out=out, stream=s)
del y, s, x
"""
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])


@pytest.mark.parametrize("spin", [5e-5, 30.0])  # polls shorter than the kernel, then blocks; polls throughout
def test_polled_waits_return_after_the_work(opencl_device, rng, spin):
    """Device._set_wait_spin: synchronize() and blocking copies poll for completion first (scripts/wait_latency.py).
    A wait that returned early would leave the pinned copy, the event or the download unfinished."""
    x = _x(rng)
    a = hetnn.asarray(x, device=opencl_device)
    out = hetnn.pinned_empty((N,), "float32", device=opencl_device)
    opencl_device._dev._set_wait_spin(spin)
    try:
        for _ in range(2):  # the device's own queue, then with a stream as well
            out[...] = np.nan
            y = _SPIN(a, REPS)
            end = hetnn.Event(opencl_device).record()
            y.copy_to_host(out=out)
            hetnn.synchronize(opencl_device)
            assert end.query()
            np.testing.assert_array_equal(out, x)
            np.testing.assert_array_equal((_SPIN(a, REPS // 4) * 2.0).numpy(), 2 * x.astype(np.float64))
            s = hetnn.Stream(opencl_device)
            out[...] = np.nan
            with s:
                z = _SPIN(a, REPS) + 1.0
            z.copy_to_host(out=out, stream=s)
            hetnn.synchronize(opencl_device)
            np.testing.assert_array_equal(out, x + np.float32(1.0))  # rounded to float32 as the device does
    finally:
        opencl_device._dev._set_wait_spin(0.0)
