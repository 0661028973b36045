"""Resources: out of memory on every device (absurd requests, running out part-way, an address-space limit),
file descriptors, many threads, many live arrays."""
from typing import List

from .harness import Case

AFTER = """
rng = np.random.default_rng()
a, b = rng.random((67, 45), dtype=np.float32), rng.random((45, 29), dtype=np.float32)
check_close(hetnn.matmul(a, b, device=DEV), a.astype(np.float64) @ b, what="matmul after running out of memory")
done()
"""

BODIES = {
    "absurd-allocation": """
with expect_error(MemoryError, "(?i)bytes|memory|GiB|TiB"):
    hetnn.empty((2**40,), device=DEV)
with expect_error((MemoryError, ValueError), "(?i)shape|bytes|memory|overflow|large"):
    hetnn.empty((2**62, 4), device=DEV)
""",
    "absurd-output": """
x = hetnn.asarray(np.ones((200000, 1), np.float32), device=DEV)
y = hetnn.asarray(np.ones((1, 200000), np.float32), device=DEV)
with expect_error(MemoryError):
    hetnn.matmul(x, y)
""",
    "absurd-model": """
from hetnn import nn
with expect_error((MemoryError, ValueError)):
    nn.Sequential([nn.Dense(300000, 300000)], device=DEV)
""",
    "fill-the-device": """
held = []
try:
    for _ in range(400):
        held.append(hetnn.empty((2**28,), "float32", device=DEV))   # 1 GiB each, untouched
except MemoryError:
    pass
n = len(held)
del held
""",
    "address-space-limit": """
import resource
def vm():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
hetnn.matmul(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32), device=DEV)   # device started
resource.setrlimit(resource.RLIMIT_AS, (vm() + 3 * 2**30, resource.RLIM_INFINITY))
held, failed = [], False
try:
    for _ in range(40):
        held.append(hetnn.zeros((2**27,), "float32", device=DEV))     # 512 MiB each, written
except MemoryError:
    failed = True
if not failed:
    bad_error("12 GiB allocated under a 3 GiB address-space limit")
del held
""",
    "many-live-arrays": """
held = [hetnn.asarray(np.full(16, i, np.float32), device=DEV) for i in range(20000)]
for i in (0, 777, 19999):
    check_close(held[i].numpy(), np.full(16, i, np.float64), what="a small array among 20000")
del held
""",
    "many-threads": """
import threading
errors = []
def work(seed):
    r = np.random.default_rng(seed)
    for _ in range(5):
        x, y = r.random((41, 23), dtype=np.float32), r.random((23, 19), dtype=np.float32)
        try:
            c = hetnn.matmul(x, y, device=DEV)
        except Exception as exc:
            errors.append(repr(exc)); return
        if not np.allclose(c, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4):
            errors.append("wrong"); return
ts = [threading.Thread(target=work, args=(i,)) for i in range(64)]
for t in ts: t.start()
for t in ts: t.join()
if "wrong" in errors: wrong("a matmul among 64 threads")
if errors: bad_error(errors[0])
""",
}

FEW_FDS = """
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (24, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
import numpy as np
try:
    import hetnn
    devs = hetnn.devices()
except (OSError, RuntimeError) as exc:   # a typed error is fine; a crash is not
    done(); raise SystemExit(0)
rng = np.random.default_rng()
a = rng.random((30, 20), dtype=np.float32)
for d in devs:
    try:
        c = hetnn.matmul(a, a.T.copy(), device=d)
    except (OSError, hetnn.HetnnError, MemoryError):
        continue
    check_close(c, a.astype(np.float64) @ a.T, what=f"matmul on {d.id} with few file descriptors")
done()
"""


# Arrays NumPy hands over unaligned (a view at an odd offset into a buffer, a memory-mapped file with an odd header):
# every op and fit / predict / evaluate must read them as the aligned copies (fit once refused them with an internal
# "not aligned").
UNALIGNED = """
import numpy as np, hetnn
from hetnn import nn, optim
rng = np.random.default_rng()
def odd(a):
    buf = bytearray(a.nbytes + 1)
    v = np.frombuffer(buf, dtype=a.dtype, offset=1, count=a.size).reshape(a.shape)
    v[...] = a
    assert not v.flags.aligned or a.dtype.itemsize == 1
    return v
a, b = rng.random((33, 17), dtype=np.float32), rng.random((17, 9), dtype=np.float32)
check_close(hetnn.matmul(odd(a), odd(b), device=DEV), a.astype(np.float64) @ b, what="matmul")
x = rng.random((2, 3, 9, 9), dtype=np.float32)
check_close(hetnn.max_pool2d(odd(x), 2, device=DEV), hetnn.max_pool2d(x, 2, device=DEV), what="max_pool2d")
w = rng.random((4, 3, 3, 3), dtype=np.float32)
check_close(hetnn.conv2d(odd(x), odd(w), device=DEV), hetnn.conv2d(x, w, device=DEV), what="conv2d")
xs, ys = rng.random((40, 6), dtype=np.float32), rng.integers(0, 3, 40)
runs = []
for X, Y in ((xs, ys), (odd(xs), odd(ys))):
    m = nn.Sequential([nn.Dense(6, 5, "relu", seed=1), nn.Dense(5, 3, seed=2)], device=DEV)
    m.fit(X, Y, loss="cross_entropy", optimizer=optim.SGD(m.parameters(), lr=0.1), epochs=2, batch_size=8, seed=3)
    runs.append((m.predict(X), m.evaluate(X, Y, metrics=["accuracy"])["loss"]))
check_close(runs[1][0], runs[0][0], what="fit + predict on unaligned input")
check_close(runs[1][1], runs[0][1], what="evaluate on unaligned input")
done()
"""


def cases(devs: List[str]) -> List[Case]:
    out: List[Case] = []
    for dev in devs:
        for name, body in BODIES.items():
            out.append(Case(f"resources/{name}/{dev}", "resources", "import numpy as np, hetnn\n" + body + AFTER,
                            device=dev, timeout=180))
    out.append(Case("resources/few-file-descriptors", "resources", FEW_FDS))
    for dev in devs:
        out.append(Case(f"resources/unaligned-inputs/{dev}", "resources", UNALIGNED, device=dev, timeout=120))
    return out
