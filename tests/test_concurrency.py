"""Several Python threads running ops at once, on the same device and on different devices: every result is
correct (the GIL is released during compute; per-device queues, kernel and primitive caches are shared safely)."""
import threading

import time

import numpy as np
import pytest

import hetnn
from hetnn import nn, optim

import max_pool_reference as pool_ref


def _worker(dev, seed, rounds, errors):
    try:
        rng = np.random.default_rng(seed)
        for r in range(rounds):
            m, k, n = (int(v) for v in rng.integers(1, 97, 3))
            a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
            bias = rng.uniform(-1, 1, n).astype(np.float32)
            got = hetnn.matmul(hetnn.asarray(a, device=dev), hetnn.asarray(b, device=dev),
                               bias=hetnn.asarray(bias, device=dev),
                               activation="relu").numpy()
            want = np.maximum(a.astype(np.float64) @ b + bias, 0)
            # float32's error bound for a k-term dot product plus the bias, any summation order: (k+2) u sum|ab|
            bound = (k + 2) * 2.0**-24 * (np.abs(a.astype(np.float64)) @ np.abs(b) + np.abs(bias))
            if not (np.abs(got - want) <= bound).all():
                errors.append(f"{dev.id} matmul {m}x{k}x{n} round {r}: error {np.abs(got - want).max()}")
            x = rng.standard_normal((2, 3, int(rng.integers(4, 40)), int(rng.integers(4, 40)))).astype(np.float32)
            kk = int(rng.integers(2, 4))
            y, idx = hetnn.max_pool2d(hetnn.asarray(x, device=dev), kk, return_indices=True)
            want_y, want_idx = pool_ref.max_pool2d(x, (kk, kk), (kk, kk), (0, 0), (1, 1), False)
            if not np.array_equal(y.numpy(), want_y):
                errors.append(f"{dev.id} max_pool2d {x.shape} k{kk} round {r}: wrong values")
            g = rng.standard_normal(want_y.shape).astype(np.float32)
            gx = hetnn.max_pool2d_backward(hetnn.asarray(g, device=dev), idx, x.shape, kk).numpy()
            if not np.array_equal(gx, pool_ref.max_pool2d_backward(g.astype(np.float64), want_idx, x.shape)):
                errors.append(f"{dev.id} max_pool2d_backward {x.shape} k{kk} round {r}: wrong gradient")
    except Exception as exc:  # a crash in a thread must fail the test, not vanish
        errors.append(f"{dev.id}: {type(exc).__name__}: {exc}")


@pytest.mark.parametrize("threads", [4])
def test_threads_on_every_device_at_once(threads):
    devs = hetnn.devices()
    errors: list = []
    workers = [threading.Thread(target=_worker, args=(devs[i % len(devs)], 1000 + i, 12, errors))
               for i in range(threads * len(devs))]  # several threads per device, all devices at once
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in workers), "a worker thread hung"
    assert not errors, errors[:5]


def test_training_in_threads_matches_sequential(device):
    """Two models trained at once in two threads on one device end where each ends trained alone."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (256, 12)).astype(np.float32)
    y = rng.integers(0, 3, 256)

    def train(seed):
        model = nn.Sequential([nn.Dense(12, 16, "relu", seed=seed), nn.Dense(16, 3, seed=seed + 1)], device=device)
        model.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                  epochs=3, batch_size=32, seed=seed)
        return [p.numpy() for p in model.parameters()]

    alone = [train(1), train(2)]
    # Several attempts: oneDNN's shared scratchpad made one concurrent run in four or so diverge.
    for _ in range(4):
        out: dict = {}
        errors: list = []

        def run(seed):
            try:
                out[seed] = train(seed)
            except Exception as exc:
                errors.append(exc)
        ts = [threading.Thread(target=run, args=(s,)) for s in (1, 2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=300)
        assert not errors, errors
        for seed, ref in zip((1, 2), alone):
            for got, want in zip(out[seed], ref):
                np.testing.assert_array_equal(got, want)  # same device, same seed: bit-identical


def ticks_during(run, calls):
    """How often another Python thread (waking every millisecond) ran during `calls` calls of run(); run() once
    before, untimed. With the GIL held throughout a call it can run only between calls."""
    import time

    run()
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
    t = threading.Thread(target=ticker)
    t.start()
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    t1 = time.perf_counter()
    done.set()
    t.join()
    return len([x for x in ticks if t0 <= x <= t1]), t1 - t0


def test_gil_is_released_during_compute():
    """A long CPU matmul in one thread lets another Python thread run meanwhile."""
    a = np.random.default_rng(0).uniform(-1, 1, (1536, 1536)).astype(np.float32)
    A = hetnn.asarray(a, device="cpu")
    C = hetnn.empty(a.shape, "float32", device="cpu")
    ticks, seconds = ticks_during(lambda: hetnn.matmul(A, A, out=C), 5)
    # with the GIL held the ticker could not run at all during the products
    assert ticks >= 5, (ticks, seconds)


@pytest.mark.parametrize("op", ["exp", "sum"])
def test_gil_is_released_during_large_array_ops(op):
    """Element-wise ops and reductions keep the GIL only for small work on the CPU device (a few thousand elements,
    where releasing it would cost a fifth of the call): on 128M elements (20-50 ms a call) another Python thread
    runs meanwhile."""
    A = hetnn.full((1 << 27,), 0.5, "float32", device="cpu")
    C = hetnn.empty(A.shape, "float32", device="cpu")
    ticks, seconds = ticks_during((lambda: hetnn.exp(A, out=C)) if op == "exp" else (lambda: hetnn.sum(A)), 3)
    # with the GIL held the ticker could run only between the calls (at most once each): 3 ticks
    assert ticks >= 12, (ticks, seconds)


@pytest.mark.parametrize("device", [d for d in hetnn.devices() if d.kind == "opencl"][:1] or
                         [pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL device"))])
def test_opencl_work_in_flight_is_bounded(device):
    """A Python loop of matmuls on Arrays once queued minutes of device work (Ctrl-C, then any call, waited for all
    of it). With the queue bounded, the loop itself waits, and what is left when it returns is a few commands."""
    a = hetnn.asarray(np.random.default_rng().random((192, 192)).astype(np.float32), device=device)
    c = hetnn.empty((192, 192), "float32", device=device)
    device._dev._set_queue_limit(16)
    try:
        hetnn.matmul(a, a, out=c)
        hetnn.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(400):
            hetnn.matmul(a, a, out=c)
        t1 = time.perf_counter()
        hetnn.synchronize(device)
        t2 = time.perf_counter()
    finally:
        device._dev._set_queue_limit(256)
    # about 16 of 400 matmuls left to run when the loop returns (unbounded: all of them)
    assert t2 - t1 < 0.25 * (t2 - t0), (t1 - t0, t2 - t1)
    np.testing.assert_allclose(c.numpy(), a.numpy().astype(np.float64) @ a.numpy(), rtol=1e-4, atol=1e-3)
