"""NumPy's OpenBLAS on hetnn's threads (hetnn.share_blas_threads): its threaded sections must compute what OpenBLAS
computes on its own threads, on both of hetnn's paths (the pool's workers, and hetnn's OpenMP team while it is
warm), from several threads at once, in a forked child and at exit; and the pool's workers must stop spinning when
a hetnn op starts (what keeps hetnn's ops at their speed beside NumPy). Each process-level case runs in its own
interpreter with a timeout, so a hang shows as a failure."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import hetnn
from hetnn._loader import _core

LIBS = [lib for lib in _core.blas_libraries()]
pytestmark = pytest.mark.skipif(not any(lib["shared"] for lib in LIBS),
                                reason=f"no OpenBLAS with the threads callback shared here: {LIBS}")


def _stats():
    return dict(_core.blas_pool_stats())


def _check_products(rng, before_each=lambda: None):
    """Products large enough for OpenBLAS to thread them, in the dtypes it threads differently, against float64 or
    longdouble references; results poisoned before the call; ``before_each`` runs right before each product."""
    for m, k, n in ((300, 257, 301), (1000, 64, 1000), (129, 1537, 65)):
        for dt in (np.float32, np.float64, np.complex64):
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((k, n)).astype(dt)
            if np.iscomplexobj(a):
                a = a + 1j * rng.standard_normal((m, k)).astype(np.float32)
            out = np.full((m, n), np.nan, dtype=dt)
            before_each()
            np.matmul(a, b, out=out)
            ref = a.astype(np.clongdouble if np.iscomplexobj(a) else np.longdouble) @ b
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < (2e-6 if dt in (np.float32, np.complex64) else 1e-14), (m, k, n, dt, err)
    v = rng.standard_normal((3000, 3000))
    x = rng.standard_normal(3000)
    y = np.full(3000, np.nan)
    before_each()
    np.dot(v, x, out=y)  # a threaded gemv
    assert np.allclose(y, (v.astype(np.longdouble) @ x).astype(np.float64), rtol=1e-12, atol=1e-10)


def test_sharing_is_on_by_default_and_reported():
    pools = hetnn.thread_pools()["blas_sharing"]
    assert any(lib["shared"] and os.path.isabs(lib["path"]) for lib in pools["libraries"]), pools
    assert {"calls", "jobs", "quieted", "on_openmp", "openmp_preempted", "openmp_avoided", "workers"} <= set(pools)


def test_products_on_the_pool_are_right():
    """Before hetnn ran OpenBLAS's sections, no call reached the pool (calls stayed 0): the regression this checks."""
    rng = np.random.default_rng()
    before = _stats()
    _check_products(rng, lambda: time.sleep(0.002))  # hetnn's OpenMP team cold: the pool's workers
    after = _stats()
    assert after["calls"] > before["calls"] and after["jobs"] > before["jobs"]
    assert after["workers"] >= 1


def test_products_on_the_warm_openmp_team_are_right():
    rng = np.random.default_rng()
    a = hetnn.asarray(rng.random((64, 64), dtype=np.float32), device="cpu")
    before = _stats()
    _check_products(rng, lambda: hetnn.matmul(a, a))  # hetnn's team warm: the next NumPy product runs on it
    assert _stats()["on_openmp"] > before["on_openmp"]


def test_a_hetnn_op_stops_the_spinning_workers(monkeypatch):
    """The pool's workers spin after a call (as OpenBLAS's do) until a hetnn CPU op starts. A long spin is set so
    that the test does not depend on how quickly this process is scheduled."""
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "30")
    hetnn.share_blas_threads(True)
    try:
        rng = np.random.default_rng()
        x = rng.random((600, 600))
        a = hetnn.asarray(rng.random((32, 32), dtype=np.float32), device="cpu")
        time.sleep(0.002)
        for _ in range(20):
            x @ x
            deadline = time.monotonic() + 2
            while _stats()["spinning"] == 0 and time.monotonic() < deadline:
                time.sleep(0.0005)
            if _stats()["spinning"]:
                break
        assert _stats()["spinning"] > 0, _stats()
        quieted = _stats()["quieted"]
        hetnn.matmul(a, a)
        deadline = time.monotonic() + 5
        while _stats()["spinning"] and time.monotonic() < deadline:
            time.sleep(0.001)
        after = _stats()
        assert after["spinning"] == 0 and after["quieted"] > quieted, after
    finally:
        monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT")
        hetnn.share_blas_threads(True)


def test_turned_off_openblas_runs_its_own_threads_again():
    rng = np.random.default_rng()
    try:
        libs = hetnn.share_blas_threads(False)
        assert not any(lib["shared"] for lib in libs) and any("turned off" in lib["why"] for lib in libs)
        before = _stats()["calls"]
        _check_products(rng)
        assert _stats()["calls"] == before
    finally:
        assert any(lib["shared"] for lib in hetnn.share_blas_threads(True))


def test_bad_argument_is_a_type_error():
    with pytest.raises(TypeError, match="share_blas_threads: on must be True or False, got str"):
        hetnn.share_blas_threads("yes")  # type: ignore[arg-type]


def test_threads_calling_numpy_and_hetnn_at_once():
    """Python threads each running NumPy products (serialised inside the pool: OpenBLAS indexes its buffers by job)
    beside threads running hetnn ops: every result right, nobody blocked."""
    errors = []
    stop = time.monotonic() + 3

    def numpy_worker(seed):
        rng = np.random.default_rng(seed)
        try:
            while time.monotonic() < stop:
                a = rng.standard_normal((400, 300))
                b = rng.standard_normal((300, 500))
                out = np.full((400, 500), np.nan)
                np.matmul(a, b, out=out)
                ref = a.astype(np.longdouble) @ b
                if not np.abs(out - ref).max() <= 1e-12 * np.abs(ref).max():
                    errors.append("numpy wrong")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    def hetnn_worker(seed):
        rng = np.random.default_rng(seed)
        try:
            while time.monotonic() < stop:
                a = rng.standard_normal((200, 150)).astype(np.float32)
                b = rng.standard_normal((150, 100)).astype(np.float32)
                got = hetnn.matmul(hetnn.asarray(a), hetnn.asarray(b)).numpy()
                if not np.abs(got - a.astype(np.float64) @ b).max() <= 1e-5 * 150:
                    errors.append("hetnn wrong")
        except Exception as e:  # pragma: no cover
            errors.append(repr(e))

    threads = [threading.Thread(target=numpy_worker, args=(i,)) for i in range(3)]
    threads += [threading.Thread(target=hetnn_worker, args=(10 + i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[:5]


PROGRAM = """
import multiprocessing as mp, os, sys, numpy as np, hetnn
def product(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((700, 500)); b = rng.standard_normal((500, 600))
    return float(np.abs(a @ b - (a.astype(np.longdouble) @ b)).max())
assert any(l["shared"] for l in hetnn.share_blas_threads(True))
a = hetnn.asarray(np.ones((64, 64), np.float32))
hetnn.matmul(a, a)
product(0)  # the pool's workers and hetnn's team exist before the fork
with mp.get_context("fork").Pool(2) as pool:
    errs = pool.map(product, range(4), chunksize=1)
assert max(errs) < 1e-10, errs
print("ok", hetnn.thread_pools()["blas_sharing"]["calls"], flush=True)
"""


@pytest.mark.parametrize("env", [{}, {"OMP_THREAD_LIMIT": "1"}], ids=["default", "openmp-limited-to-1"])
def test_forked_children_limited_teams_and_exit(env):
    """Children forked after the pool ran (its workers are not theirs), an OpenMP limit smaller than OpenBLAS's
    jobs (the team cannot hold them all: they must still run at once), and exit with the pool's workers asleep
    (a condition variable destroyed at exit under a sleeping worker once blocked the exit)."""
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **env})
    assert r.returncode == 0 and r.stdout.startswith("ok"), (r.returncode, r.stdout[-1000:], r.stderr[-2000:])


def test_opting_out_at_import():
    """Opted out, nothing is shared, and the doctor says so (and what it costs) where OpenBLAS has its own threads."""
    r = subprocess.run([sys.executable, "-c", "import hetnn, json; from hetnn.doctor import check; "
                        "print(json.dumps(hetnn.thread_pools()['blas_sharing']['libraries'])); "
                        "print([f.message for f in check(seconds=0.05) if f.topic == 'OpenBLAS'])"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "HETNN_SHARE_BLAS": "0"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert '"shared": true' not in r.stdout
    if len(os.sched_getaffinity(0)) <= 4:
        assert "runs its own threads (not handed to hetnn: HETNN_SHARE_BLAS=0" in r.stdout, r.stdout
    r = subprocess.run([sys.executable, "-c", "import hetnn"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HETNN_SHARE_BLAS": "maybe"})
    assert r.returncode == 0 and "HETNN_SHARE_BLAS must be 0 or 1, got 'maybe'" in r.stderr, r.stderr[-2000:]


def test_measuring_blocks_shorten_the_pools_spin_too():
    """The measuring commands shorten OpenBLAS's idle spin for a run (hetnn._openblas.short_spins); with OpenBLAS on
    hetnn's pool, the pool's workers must spin the shorter length, and the length before must be back after."""
    from hetnn._openblas import can_shorten, short_spins

    if not can_shorten():
        pytest.skip("OpenBLAS's spin cannot be shortened here (OPENBLAS_THREAD_TIMEOUT set, or exports missing)")
    a = np.random.default_rng().standard_normal((384, 384))
    a @ a  # a threaded call: OpenBLAS starts its own (idle) workers even when its sections run on hetnn's pool
    threads = set(os.listdir("/proc/self/task"))
    before = _core.blas_spin_exponent(0)
    with short_spins("24") as took:
        assert took and _core.blas_spin_exponent(0) == 24
        # a shared OpenBLAS is left alone: ending its idle workers only made the next call start new ones that
        # spun their full 0.1 s once (the regression this checks)
        assert threads <= set(os.listdir("/proc/self/task"))
    assert _core.blas_spin_exponent(0) == before


def _cpu_ticks(tid):
    fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


def test_a_spinning_worker_stays_in_user_space():
    """The pool's workers spin between calls without a system call per look, as OpenBLAS's own (which spin on nops).
    They spun with sched_yield before: under Linux's EEVDF scheduler each yield moves the thread's deadline a slice
    later, so beside a busy core a worker waited out whole slices (2-14 ms) before running its job (a 0.1 ms product
    took 2 ms with sharing on and 0.1 ms without). A spin of sched_yield spends most of its time in the kernel."""
    exponent = _core.blas_spin_exponent(30)  # about 0.4 s: enough CPU ticks even on a busy machine
    try:
        a = np.random.default_rng().standard_normal((512, 512))
        a @ a
        workers = [t for t in os.listdir("/proc/self/task")
                   if open(f"/proc/self/task/{t}/comm").read().strip() == "hetnn-blas"]
        assert workers, "no pool worker named hetnn-blas"
        before = {t: _cpu_ticks(t) for t in workers}
        a @ a
        time.sleep(0.3)
        hetnn.matmul(hetnn.asarray(np.ones((2, 2), np.float32)), hetnn.asarray(np.ones((2, 2), np.float32)))
        used = [tuple(x - y for x, y in zip(_cpu_ticks(t), before[t])) for t in workers]
    finally:
        _core.blas_spin_exponent(exponent)
    user, system = map(sum, zip(*used))
    assert user + system >= 5, f"the workers were not scheduled enough to tell ({used} clock ticks)"
    # a spin of system calls is mostly system time; one in user space still gets some (interrupts and the
    # hypervisor's accounting: a CI run beside other load read 3 of 26 ticks), so the bound is a third, not a tenth
    assert system <= (user + system) / 3, f"(user, system) clock ticks per worker: {used}"
