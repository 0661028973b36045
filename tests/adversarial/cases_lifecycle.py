"""Lifecycle: the interpreter exiting with work in flight, fork and multiprocessing, Ctrl-C in long loops,
finalisation, threads."""
import sys
from pathlib import Path
from typing import List

from .harness import Case

SETUP = """
import numpy as np, hetnn
rng = np.random.default_rng()
def ref_mm(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)
"""

DAEMON = {
    "matmul": "a = hetnn.asarray(rng.random((900, 900), dtype=np.float32), device=DEV)\n"
              "def work():\n    while True:\n        hetnn.matmul(a, a); hetnn.synchronize(DEV)\n",
    "max_pool2d": "x = hetnn.asarray(rng.random((8, 16, 128, 128), dtype=np.float32), device=DEV)\n"
                  "def work():\n    while True:\n        hetnn.max_pool2d(x, 3, 1); hetnn.synchronize(DEV)\n",
    "transfers": "h = rng.random((2048, 2048), dtype=np.float32)\n"
                 "def work():\n    while True:\n        hetnn.asarray(h, device=DEV).numpy()\n",
    "fit": "from hetnn import nn, optim\nx = rng.random((4096, 64), dtype=np.float32); y = rng.integers(0, 3, 4096)\n"
           "def work():\n    while True:\n"
           "        m = nn.Sequential([nn.Dense(64, 64, 'relu'), nn.Dense(64, 3)], device=DEV)\n"
           "        m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=50)\n",
    "unsynchronised": "a = hetnn.asarray(rng.random((256, 256), dtype=np.float32), device=DEV)\n"
                      "def work():\n    while True:\n        hetnn.matmul(a, a)\n",
    # small ops keep the GIL on the CPU device (bindings.h small_host_work), large ones release it
    "elementwise": "s = hetnn.asarray(rng.random(256, dtype=np.float32), device=DEV)\n"
                   "l = hetnn.asarray(rng.random(1 << 20, dtype=np.float32), device=DEV)\n"
                   "def work():\n    while True:\n        hetnn.add(s, s); hetnn.sum(s); hetnn.exp(l); hetnn.sum(l)\n",
}

SIGINT_LOOP = SETUP + """
import os, signal, threading, time
a = hetnn.asarray(rng.random((384, 384), dtype=np.float32), device=DEV)
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    while time.monotonic() - t0 < 60:
        c = hetnn.matmul(a, a)
except KeyboardInterrupt:
    pass
else:
    bad_error("no KeyboardInterrupt within 60 s")
caught = time.monotonic() - t0
t1 = time.monotonic(); hetnn.synchronize(DEV); drain = time.monotonic() - t1
if caught > 5 or drain > 5:
    bad_error(f"Ctrl-C took {caught:.1f} s to arrive and {drain:.1f} s to drain")
x, y = rng.random((33, 17), dtype=np.float32), rng.random((17, 9), dtype=np.float32)
check_close(hetnn.matmul(x, y, device=DEV), ref_mm(x, y), what="matmul after Ctrl-C")
done()
"""

SIGINT_FIT = SETUP + """
import os, signal, threading, time
from hetnn import nn, optim
x = rng.random((20000, 64), dtype=np.float32); y = rng.integers(0, 4, 20000)
m = nn.Sequential([nn.Dense(64, 128, "relu"), nn.Dense(128, 4)], device=DEV)
threading.Timer(0.8, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(m.parameters(), lr=0.05), epochs=1000,
          batch_size=32)
except KeyboardInterrupt:
    pass
else:
    bad_error("fit finished 1000 epochs: no KeyboardInterrupt")
if time.monotonic() - t0 > 10:
    bad_error(f"fit stopped {time.monotonic() - t0:.1f} s after Ctrl-C")
p = m.predict(x[:64])
if not np.all(np.isfinite(p)):
    wrong("predictions after an interrupted fit are not finite")
m.save(os.path.join(TMP, "m.npz"))
q = nn.load(os.path.join(TMP, "m.npz"), device=DEV).predict(x[:64])
check_close(q, p, what="model saved after an interrupted fit")
done()
"""

FORK = SETUP + """
import os
cl = [d.id for d in hetnn.devices() if d.kind == "opencl"]
a = rng.random((200, 200), dtype=np.float32)
{before}
pid = os.fork()
if pid == 0:
    code = 7
    try:
        check_close(hetnn.matmul(a, a, device="cpu"), ref_mm(a, a), what="CPU matmul in a forked child")
        for d in cl:
            try:
                check_close(hetnn.matmul(a, a, device=d), ref_mm(a, a), what="OpenCL matmul in a forked child")
            except hetnn.HetnnError as exc:
                if "spawn" not in str(exc):
                    bad_error(f"OpenCL in a forked child: {{exc}} (no mention of the spawn start method)")
        {child_extra}
        code = 0
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    bad_error(f"the forked child ended with {{os.waitstatus_to_exitcode(status)}}")
for d in ["cpu"] + cl:
    check_close(hetnn.matmul(a, a, device=d), ref_mm(a, a), what=f"parent's matmul on {{d}} after fork")
done()
"""

GRANDCHILD = """
        pid2 = os.fork()
        if pid2 == 0:
            c2 = 7
            try:
                check_close(hetnn.matmul(a, a, device="cpu"), ref_mm(a, a), what="matmul in a grandchild")
                c2 = 0
            finally:
                os._exit(c2)
        _, st2 = os.waitpid(pid2, 0)
        if os.waitstatus_to_exitcode(st2) != 0:
            bad_error("grandchild failed")"""

POOL = """
import multiprocessing as mp, numpy as np
def job(args):
    import hetnn
    dev, seed = args
    rng = np.random.default_rng(seed)
    a = rng.random((120, 80), dtype=np.float32); b = rng.random((80, 50), dtype=np.float32)
    try:
        c = hetnn.matmul(a, b, device=dev)
    except hetnn.HetnnError as exc:
        return "error", str(exc)
    return "ok", float(np.abs(c - a.astype(np.float64) @ b).max())
if __name__ == "__main__":
    import hetnn
    {warm}
    with mp.get_context("{method}").Pool(2) as pool:
        results = pool.map(job, [(DEV, s) for s in range(6)], chunksize=1)
    for kind, val in results:
        if kind == "error":
            if "{method}" != "fork" or "spawn" not in val:
                bad_error(f"worker failed: {{val}}")
        elif val > 1e-3:
            wrong(f"worker's matmul off by {{val}}")
    done()
"""

FINALISE = SETUP + """
import atexit, gc
class Holder:
    def __init__(self):
        self.x = hetnn.asarray(rng.random((64, 64), dtype=np.float32), device=DEV)
    def __del__(self):
        hetnn.matmul(self.x, self.x)   # at interpreter shutdown: must not crash
keep = [Holder() for _ in range(3)]
cycle = [hetnn.asarray(np.ones((32, 32), np.float32), device=DEV)]
cycle.append(cycle)                    # collected late, maybe after hetnn's own globals
a = rng.random((50, 40), dtype=np.float32)
def at_exit():
    c = hetnn.matmul(a, a.T.copy(), device=DEV)
    check_close(c, ref_mm(a, a.T), what="matmul in an atexit handler")
atexit.register(at_exit)
queued = hetnn.asarray(rng.random((300, 300), dtype=np.float32), device=DEV)
for _ in range(200):
    hetnn.matmul(queued, queued)        # left queued at exit, never synchronised
done()
"""

THREADS_EXIT = SETUP + """
import threading, sys
stop = threading.Event()
errors = []
def work(seed):
    r = np.random.default_rng(seed)
    while not stop.is_set():
        a = r.random((70, 90), dtype=np.float32)
        try:
            c = hetnn.matmul(a, a.T.copy(), device=DEV)
        except Exception as exc:
            errors.append(repr(exc)); return
        if not np.allclose(c, ref_mm(a, a.T), rtol=1e-4, atol=1e-4):
            errors.append("wrong"); return
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts: t.start()
import time; time.sleep(1.0)
stop.set()
for t in ts: t.join()
if "wrong" in errors: wrong("a threaded matmul")
if errors: bad_error(errors[0])
done()
sys.exit(0)
"""

RELOAD = SETUP + """
import importlib
x = rng.random((20, 30), dtype=np.float32)
importlib.reload(hetnn)
check_close(hetnn.matmul(x, x.T.copy(), device=DEV), ref_mm(x, x.T), what="matmul after reload")
done()
"""

CALLBACK = SETUP + """
from hetnn import nn, optim
class Boom(nn.Callback):
    def on_epoch_end(self, epoch, logs, model):
        model.predict(x[:8])          # re-entrant use of the device inside fit
        if epoch == 1:
            raise RuntimeError("boom from a callback")
x = rng.random((512, 16), dtype=np.float32); y = rng.integers(0, 2, 512)
m = nn.Sequential([nn.Dense(16, 8, "relu"), nn.Dense(8, 2)], device=DEV)
try:
    m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=5,
          callbacks=[Boom()])
except RuntimeError as exc:
    if "boom" not in str(exc): bad_error(str(exc))
else:
    bad_error("the callback's exception vanished")
h = m.fit(x, y, loss=nn.CrossEntropyLoss(), optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=1)
if not np.isfinite(h.history["loss"][-1]): wrong("fit after a failed fit")
done()
"""


# Two signals in quick succession while a study measures (a supervisor signalling the process, then its group; a
# wrapper forwarding Ctrl-C): the rows measured so far must be written (once lost in 4 of 4 tries).
SIGNAL_PAIR = """
import json, os, signal, subprocess, sys, time
cfg = os.path.join(TMP, "c.json")
json.dump({{"layers": [[16, 16, 16], [32, 8, 8], [16, 4, 4], [8, 16, 16]], "batch": 8, "repeat": 40,
           "max_duration": 0.4}}, open(cfg, "w"))
prefix = os.path.join(TMP, "run")
# the CPU device alone: no kernel builds, so the first rows are kept within a second of the start even on a busy
# machine with a cold cache (with OpenCL a first build under CI's load outlasted the wait: nothing measured yet)
p = subprocess.Popen([sys.executable, "-m", "hetnn", "study", "maxpool", "--quick", "--no-progress", "--config", cfg,
                      "--output", prefix, "--device", "cpu"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
for line in p.stdout:
    if line.startswith("settings:"):
        break
time.sleep(4.0)  # rows kept by now
os.kill(p.pid, signal.{first})
time.sleep({gap})
os.kill(p.pid, signal.{second})
out, err = p.communicate(timeout=120)
if "Traceback" in err:
    bad_error("a traceback after two signals: " + err[-1500:])
done_path = [q for q in (prefix + "-partial.json", prefix + ".json") if os.path.exists(q)]
if not done_path:
    data_loss("{first} then {second} {gap} s later: no rows written (exit %s): %s" % (p.returncode, err[-800:]))
rows = json.load(open(done_path[0]))["rows"]
if not rows:
    data_loss("the partial file holds no rows")
done()
"""


# Ranks that built different models of the same parameter shapes (an activation, a dropout rate, a padding mode)
# would average the gradients of two functions and report one History: every rank must refuse, and the job end.
RANKS_SCRIPT = """
import numpy as np, hetnn
from hetnn import nn, optim, distributed as dist
dist.init()
r = dist.rank()
layers = {{"activation": lambda: [nn.Dense(6, 5, "relu" if r == 0 else "sigmoid"), nn.Dense(5, 3)],
          "dropout": lambda: [nn.Dense(6, 5), nn.Dropout(0.2 if r == 0 else 0.7), nn.Dense(5, 3)],
          "padding": lambda: [nn.Reshape((1, 2, 3)), nn.Conv2d(1, 2, 3, padding="same" if r == 0 else 1),
                              nn.Flatten(), nn.Dense(12, 3)]}}["{variant}"]()
model = nn.Sequential(layers, device="cpu")
x, y = np.zeros((16, 6), np.float32), np.zeros(16, np.int64)
try:
    model.fit(x, y, loss="cross_entropy", optimizer=optim.SGD(model.parameters(), lr=0.1), batch_size=4,
              distributed=True)
except ValueError as exc:
    assert "the ranks differ in layers" in str(exc), exc
    print("rank", r, "refused", flush=True)
else:
    print("rank", r, "TRAINED", flush=True)
"""

RANKS_DISAGREE = """
import os, subprocess, sys
from pathlib import Path
script = Path(TMP) / "ranks.py"
script.write_text({script})
mpirun = Path(sys.executable).with_name("mpirun")
env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
p = subprocess.run([str(mpirun), "--oversubscribe", "-np", "2", sys.executable, str(script)], capture_output=True,
                   text=True, timeout=120, env=env)
if "TRAINED" in p.stdout:
    wrong("ranks with different models ({variant}) trained together: " + p.stdout[-500:])
if p.stdout.count("refused") != 2:
    bad_error("not every rank refused ({variant}): " + (p.stdout + p.stderr)[-1500:])
done()
"""


def cases(devs: List[str]) -> List[Case]:
    out: List[Case] = []
    for dev in devs:
        for what, body in DAEMON.items():
            code = (SETUP + "import threading, time\n" + body +
                    "threading.Thread(target=work, daemon=True).start()\ntime.sleep(0.4)\ndone()\n")
            out.append(Case(f"lifecycle/exit-with-daemon-thread-in-{what}/{dev}", "lifecycle", code, device=dev))
        if dev != "cpu":  # exit while the driver compiles the kernel a daemon thread launched (caches off)
            code = (SETUP + "import threading, time\n" + DAEMON["max_pool2d"] +
                    "threading.Thread(target=work, daemon=True).start()\ntime.sleep(1.2)\ndone()\n")
            out.append(Case(f"lifecycle/exit-while-the-driver-compiles/{dev}", "lifecycle", code, device=dev,
                            env={"HETNN_CACHE_DIR": "off", "POCL_KERNEL_CACHE": "0"}))
        out.append(Case(f"lifecycle/ctrl-c-in-a-loop/{dev}", "lifecycle", SIGINT_LOOP, device=dev))
        out.append(Case(f"lifecycle/ctrl-c-in-fit/{dev}", "lifecycle", SIGINT_FIT, device=dev))
        out.append(Case(f"lifecycle/finalisation-with-live-arrays/{dev}", "lifecycle", FINALISE, device=dev))
        out.append(Case(f"lifecycle/threads-then-exit/{dev}", "lifecycle", THREADS_EXIT, device=dev))
        out.append(Case(f"lifecycle/reload/{dev}", "lifecycle", RELOAD, device=dev))
        out.append(Case(f"lifecycle/callback-raises-in-fit/{dev}", "lifecycle", CALLBACK, device=dev))
        for method in ("fork", "spawn", "forkserver"):
            for warm in ("pass", "hetnn.matmul(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), "
                                 "device=DEV)"):
                tag = "after-use" if warm != "pass" else "fresh"
                out.append(Case(f"lifecycle/multiprocessing-{method}-{tag}/{dev}", "lifecycle",
                                POOL.format(method=method, warm=warm), device=dev, timeout=120,
                                as_file=True))
    for first, second, gap in (("SIGTERM", "SIGINT", 0.001), ("SIGTERM", "SIGTERM", 0.005),
                               ("SIGINT", "SIGINT", 0.01), ("SIGINT", "SIGTERM", 0.003)):
        out.append(Case(f"lifecycle/{first.lower()}-then-{second.lower()}-{gap * 1000:.0f}ms-while-a-study-runs",
                        "lifecycle", SIGNAL_PAIR.format(first=first, second=second, gap=gap), timeout=150))
    if Path(sys.executable).with_name("mpirun").exists():
        for variant in ("activation", "dropout", "padding"):
            script = repr(RANKS_SCRIPT.format(variant=variant))
            out.append(Case(f"lifecycle/ranks-build-different-models-{variant}", "lifecycle",
                            RANKS_DISAGREE.format(script=script, variant=variant), timeout=150))
    befores = {"after-import": "", "after-cpu-op": "hetnn.matmul(a, a, device='cpu')",
               "after-enumeration": "hetnn.devices()",
               "after-every-device": "[hetnn.matmul(a, a, device=d) for d in ['cpu'] + cl]"}
    for tag, before in befores.items():
        out.append(Case(f"lifecycle/fork-{tag}", "lifecycle", FORK.format(before=before, child_extra="pass")))
    out.append(Case("lifecycle/fork-grandchild", "lifecycle",
                    FORK.format(before="hetnn.matmul(a, a, device='cpu')", child_extra=GRANDCHILD.strip())))
    return out
