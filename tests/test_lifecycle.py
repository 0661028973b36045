"""Process lifecycle: a hetnn call in flight must never take the process down. Each case runs in its own
interpreter with a timeout, so a crash or a hang shows as one."""
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
