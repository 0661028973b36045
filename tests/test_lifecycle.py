"""Process lifecycle: a hetnn call in flight must never take the process down. Each case runs in its own
interpreter with a timeout, so a crash or a hang shows as one."""
import os
import subprocess
import sys

import pytest

import hetnn

DEVICES = ["cpu"] + [d.id for d in hetnn.devices() if d.kind == "opencl"][:1]

MATMUL = """
import sys, threading, time, numpy as np, hetnn
dev = sys.argv[1]
a = hetnn.asarray(np.random.rand(1200, 1200).astype(np.float32), device=dev)
def work():
    while True:
        hetnn.matmul(a, a)
        hetnn.synchronize(dev)
threading.Thread(target=work, daemon=True).start()
time.sleep(0.3)
print("main exits", flush=True)
"""

FIT = """
import sys, threading, time, numpy as np, hetnn
from hetnn import nn, optim
dev = sys.argv[1]
x = np.random.rand(4096, 64).astype(np.float32); y = np.random.randint(0, 3, 4096)
def work():
    while True:
        m = nn.Sequential([nn.Dense(64, 64, "relu", seed=0), nn.Dense(64, 3, seed=1)], device=dev)
        m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=50,
              batch_size=32)
threading.Thread(target=work, daemon=True).start()
time.sleep(0.5)
print("main exits", flush=True)
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("program", [MATMUL, FIT], ids=["matmul", "fit"])
def test_exit_with_a_daemon_thread_inside_hetnn(device, program):
    """The interpreter exits while a daemon thread is inside a hetnn call: once SIGABRT every time ("terminate
    called without an active exception"), the thread's GIL release unwinding through a noexcept destructor."""
    r = subprocess.run([sys.executable, "-c", program, device], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "main exits" in r.stdout and "terminate called" not in r.stderr


FORK_WHILE_BUSY = """
import os, sys, threading, time, numpy as np, hetnn
a = hetnn.asarray(np.random.rand(600, 600).astype(np.float32), device="cpu")
def work():
    while True:
        hetnn.matmul(a, a)
threading.Thread(target=work, daemon=True).start()
time.sleep(0.2)
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # through the interpreter's exit: hetnn's atexit drain runs in the child
    t0 = time.monotonic()
    os.waitpid(pid, 0)
    print(f"child exit {time.monotonic() - t0:.2f} s", flush=True)
"""


def test_a_child_forked_while_another_thread_is_inside_hetnn_exits_at_once():
    """The child of a fork has only the forking thread, but it inherited the count of hetnn calls the parent's other
    threads had open, and its exit waited for them: the full 30 s drain timeout per child."""
    r = subprocess.run([sys.executable, "-c", FORK_WHILE_BUSY], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    waits = [float(line.split()[2]) for line in r.stdout.splitlines() if line.startswith("child exit")]
    assert len(waits) == 3 and max(waits) < 10, r.stdout


FORK = """
import os, sys, numpy as np, hetnn
a = np.random.default_rng().random((300, 300)).astype(np.float32)
hetnn.matmul(a, a, device="cpu")          # the parent's GNU OpenMP pool exists
cl = [d for d in hetnn.devices() if d.kind == "opencl"]
if cl:
    hetnn.matmul(a, a, device=cl[0])      # and the OpenCL driver's workers
pid = os.fork()
if pid == 0:
    code = 1
    try:
        c = hetnn.matmul(a, a, device="cpu")
        assert np.allclose(c, a.astype(np.float64) @ a, rtol=1e-4, atol=1e-3)
        assert hetnn.get_num_threads() == 1
        if cl:
            try:
                hetnn.matmul(a, a, device=cl[0])
            except hetnn.HetnnError as exc:
                assert "spawn" in str(exc), exc
            else:
                raise AssertionError("OpenCL ran in a forked child")
        code = 0
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
c = hetnn.matmul(a, a, device="cpu")      # the parent goes on with its threads
assert hetnn.get_num_threads() >= 1 and np.allclose(c, a.astype(np.float64) @ a, rtol=1e-4, atol=1e-3)
print("ok", flush=True)
"""

POOL = """
import multiprocessing as mp, numpy as np, hetnn

def work(seed):
    a = np.random.default_rng(seed).random((64, 64)).astype(np.float32)
    return float(np.abs(hetnn.matmul(a, a, device="cpu") - a.astype(np.float64) @ a).max())

if __name__ == "__main__":
    hetnn.matmul(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32), device="cpu")
    with mp.get_context("fork").Pool(2) as pool:
        errs = pool.map(work, range(4))
    assert max(errs) < 1e-3, errs
    print("ok", flush=True)
"""


@pytest.mark.parametrize("program", [FORK, POOL], ids=["fork", "multiprocessing-fork"])
def test_a_forked_child_works_on_the_cpu_and_refuses_opencl(program, tmp_path):
    """After fork() the child once blocked forever on its first op (GNU OpenMP's pool and PoCL's workers do not
    survive fork): now CPU ops run on one thread and OpenCL raises an error naming the 'spawn' start method."""
    script = tmp_path / "prog.py"
    script.write_text(program)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stdout[-1000:], r.stderr[-2000:])


AT_EXIT = """
import atexit, sys, numpy as np, hetnn
dev = sys.argv[1]
a = np.random.default_rng().random((64, 48)).astype(np.float32)
class Holder:
    def __init__(self):
        self.x = hetnn.asarray(a, device=dev)
    def __del__(self):                      # runs during finalisation, on the main thread
        c = hetnn.matmul(self.x, self.x, transpose_b=True).numpy()
        print("del", np.allclose(c, a.astype(np.float64) @ a.T, rtol=1e-4, atol=1e-4), flush=True)
keep = Holder()
def at_exit():
    c = hetnn.matmul(a, a.T.copy(), device=dev)
    print("atexit", np.allclose(c, a.astype(np.float64) @ a.T, rtol=1e-4, atol=1e-4), flush=True)
atexit.register(at_exit)
print("main exits", flush=True)
"""


@pytest.mark.parametrize("device", DEVICES)
def test_hetnn_calls_during_finalisation_on_the_main_thread(device):
    """A __del__ or atexit handler calling hetnn at exit once hung the process for ever: the guard that parks
    daemon threads coming back during finalisation parked the main thread too, which is the one finalising."""
    r = subprocess.run([sys.executable, "-c", AT_EXIT, device], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "atexit True" in r.stdout, (r.stdout, r.stderr[-2000:])
    assert "del False" not in r.stdout and "Traceback" not in r.stderr, (r.stdout, r.stderr[-2000:])


POOL_LOOP = """
import sys, threading, time, numpy as np, hetnn
dev = sys.argv[1]
x = hetnn.asarray(np.random.default_rng().random((8, 16, 128, 128)).astype(np.float32), device=dev)
def work():
    while True:
        hetnn.max_pool2d(x, 3, 1)
        hetnn.synchronize(dev)
threading.Thread(target=work, daemon=True).start()
time.sleep(float(sys.argv[2]))
print("main exits", flush=True)
"""


def test_exit_while_the_driver_compiles_a_kernel(opencl_device):
    """PoCL compiles a kernel on its worker thread when it first runs; the process exiting meanwhile ran LLVM's static
    destructors under the compile and segfaulted (about one exit in four at these delays, kernel caches off). hetnn now
    stops other threads' calls and finishes the started devices' queues at exit (atexit), before the destructors."""
    env = dict(os.environ, HETNN_CACHE_DIR="off", POCL_KERNEL_CACHE="0")
    env.pop("HETNN_POISON", None)
    for delay in ("0.9", "1.1", "1.2", "1.3", "1.5", "1.2"):
        r = subprocess.run([sys.executable, "-c", POOL_LOOP, opencl_device.id, delay], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0 and "main exits" in r.stdout, (delay, r.returncode, r.stderr[-2000:])
