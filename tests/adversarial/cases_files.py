"""Files: model files (saving over a good one when the write fails, malformed files to load), the tuning file, the
kernel cache, the stored ceilings."""
from typing import List

from .harness import Case, fill

MODEL = """
import os, json, zipfile, io, numpy as np, hetnn
from hetnn import nn
rng = np.random.default_rng()
PATH = os.path.join(TMP, "m.npz")
m = nn.Sequential([nn.Dense(12, 16, "relu"), nn.Dense(16, 3)], device=DEV)
m.save(PATH)
X = rng.random((8, 12), dtype=np.float32)
GOOD = m.predict(X)
def intact(what):
    try:
        got = nn.load(PATH, device=DEV).predict(X)
    except Exception as exc:
        data_loss(f"{what}: the previous model no longer loads ({type(exc).__name__}: {exc})")
    if not np.array_equal(got, GOOD):
        data_loss(f"{what}: the previous model changed")
    left = [f for f in os.listdir(TMP) if f.endswith(".tmp")]
    if left:
        bad_error(f"{what}: temporary files left behind: {left}")
def write_npz(path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)
def arch(layers, dtype="float32"):
    return np.array(json.dumps({"format": "hetnn.nn.Sequential/1", "dtype": dtype, "layers": layers}))
DENSE = lambda i, o: {"kind": "dense", "config": {"in_features": i, "out_features": o, "activation": None}}
"""

SAVE_FAULTS = {
    "disk-full": """
import resource
big = nn.Sequential([nn.Dense(400, 400), nn.Dense(400, 3)], device=DEV)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))   # a full disk or quota part-way through
with expect_error(OSError):
    big.save(PATH)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
intact("save on a full disk")
""",
    "ctrl-c": """
import signal, threading
big = nn.Sequential([nn.Dense(1500, 1500), nn.Dense(1500, 3)], device=DEV)
BIG = big.predict(X[:, :1]) if False else None
for delay in (0.0005, 0.002, 0.008, 0.03, 0.1):
    t = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        t.start()                           # (the signal may land while the timer thread starts)
        big.save(PATH)
        import time; time.sleep(0.2)        # the timer fires after the save: not inside it
    except KeyboardInterrupt:
        pass
    t.join()
    try:
        loaded = nn.load(PATH, device=DEV)
    except Exception as exc:
        data_loss(f"Ctrl-C {delay} s into save left no loadable model: {exc}")
    shapes = [p.numpy().shape for p in loaded.parameters()]
    if shapes not in ([(16, 12), (16,), (3, 16), (3,)], [(1500, 1500), (1500,), (3, 1500), (3,)],
                      [(12, 16), (16,), (16, 3), (3,)], [(1500, 1500), (1500,), (1500, 3), (3,)]):
        data_loss(f"Ctrl-C during save left a mixed model {shapes}")
    if shapes[0][0] != 1500:
        intact("Ctrl-C during save")
    m.save(PATH)
""",
    "to-a-directory": """
os.mkdir(os.path.join(TMP, "d"))
with expect_error((IsADirectoryError, ValueError, OSError), "d"):
    m.save(os.path.join(TMP, "d"))
if not os.path.isdir(os.path.join(TMP, "d")): data_loss("the directory was replaced")
""",
    "missing-directory": """
with expect_error(OSError, "nope"):
    m.save(os.path.join(TMP, "nope", "m.npz"))
""",
    "under-a-file": """
with expect_error(OSError):
    m.save(os.path.join(PATH, "inner.npz"))
intact("save under a file")
""",
    "keeps-permissions": """
os.chmod(PATH, 0o644)
m.save(PATH)
if os.stat(PATH).st_mode & 0o777 != 0o644:
    bad_error(f"save changed the file's mode from 644 to {os.stat(PATH).st_mode & 0o777:o}")
old = os.umask(0o022); os.umask(old)
fresh = os.path.join(TMP, "fresh.npz")
m.save(fresh)
if os.stat(fresh).st_mode & 0o777 != 0o666 & ~old:
    bad_error(f"a new model file has mode {os.stat(fresh).st_mode & 0o777:o}, umask {old:o}")
""",
}

LOAD_BAD = {
    "missing": "p = os.path.join(TMP, 'absent.npz')",
    "directory": "p = TMP",
    "empty": "p = os.path.join(TMP, 'e.npz'); open(p, 'wb').close()",
    "random-bytes": "p = os.path.join(TMP, 'r.npz'); open(p, 'wb').write(os.urandom(5000))",
    "truncated-1": "p = PATH; d = open(p, 'rb').read(); open(p, 'wb').write(d[:1])",
    "truncated-100": "p = PATH; d = open(p, 'rb').read(); open(p, 'wb').write(d[:100])",
    "truncated-half": "p = PATH; d = open(p, 'rb').read(); open(p, 'wb').write(d[:len(d) // 2])",
    "truncated-last-byte": "p = PATH; d = open(p, 'rb').read(); open(p, 'wb').write(d[:-1])",
    "flipped-bytes": "p = PATH; d = bytearray(open(p, 'rb').read()); d[200:260] = os.urandom(60); "
                     "open(p, 'wb').write(bytes(d))",
    "plain-npy": "p = os.path.join(TMP, 'a.npy'); np.save(p, np.ones(3))",
    "no-architecture": "p = os.path.join(TMP, 'x.npz'); write_npz(p, param_0=np.ones(3))",
    "architecture-not-json": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=np.array('{nope'))",
    "architecture-numbers": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=np.arange(5))",
    "deep-json": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=np.array('[' * 100000 + "
                 "']' * 100000))",
    "unknown-format": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=np.array(json.dumps("
                      "{'format': 'keras/2', 'layers': []})))",
    "dtype-float13": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([], 'float13'))",
    "dtype-list": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([], [1]))",
    "unknown-layer": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([{'kind': 'lstm', "
                     "'config': {}}]))",
    "bad-activation": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([{'kind': 'dense', "
                      "'config': {'in_features': 2, 'out_features': 2, 'activation': 'evil'}}]), "
                      "param_0=np.ones((2, 2), np.float32), param_1=np.ones(2, np.float32))",
    "negative-width": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(-2, 3)]))",
    "huge-layer": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(10**6, 10**6)]))",
    "large-layer-tiny-data": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch("
                             "[DENSE(12000, 12000)]), param_0=np.ones((2, 2), np.float32), "
                             "param_1=np.ones(2, np.float32))",
    "missing-param": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(2, 3)]), "
                     "param_0=np.ones((3, 2), np.float32))",
    "extra-param": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(2, 3)]), "
                   "param_0=np.ones((3, 2), np.float32), param_1=np.ones(3, np.float32), "
                   "param_x=np.ones(1))",
    "int-weights": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(2, 3)]), "
                   "param_0=np.ones((3, 2), np.int8), param_1=np.ones(3, np.float32))",
    "object-array": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(2, 3)]), "
                    "param_0=np.array([None] * 6, dtype=object).reshape(3, 2), param_1=np.ones(3, np.float32))",
    "empty-member": "p = os.path.join(TMP, 'x.npz')\nwith zipfile.ZipFile(p, 'w') as z:\n"
                    "    z.writestr('__architecture__.npy', b'')",
    "many-members": "p = os.path.join(TMP, 'x.npz'); write_npz(p, __architecture__=arch([DENSE(2, 3)]), "
                    "**{f'param_{i}': np.ones(1, np.float32) for i in range(3000)})",
}

PICKLE = MODEL + """
import pickle
MARK = os.path.join(TMP, "pickle-ran")
class Evil:
    def __reduce__(self):
        return (open, (MARK, "w"))
p = os.path.join(TMP, "evil.npz")
obj = np.empty(6, dtype=object); obj[:] = Evil()
with open(p, "wb") as f:
    np.savez(f, __architecture__=arch([DENSE(2, 3)]), param_0=obj.reshape(3, 2), param_1=np.ones(3, np.float32))
with expect_error(ValueError, "evil.npz"):
    nn.load(p, device=DEV)
if os.path.exists(MARK):
    bad_error("loading a model unpickled an object (arbitrary code ran)")
done()
"""

TUNING = """
import os, json, warnings, numpy as np, hetnn
warnings.simplefilter("ignore")
path = os.path.join(TMP, "cache", "tuning", "gemm.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
keys = {d.id: f"{d.name}|{d.driver_version}|{d.version}" for d in hetnn.devices()}
def entries(params):
    return {"format": 1, "devices": {k: {"float32": {"params": params, "gflops": 1.0, "date": "x"}}
                                     for k in keys.values()}}
%s
rng = np.random.default_rng()
for d in hetnn.devices():
    a, b = rng.random((67, 45), dtype=np.float32), rng.random((45, 29), dtype=np.float32)
    check_close(hetnn.matmul(a, b, device=d), a.astype(np.float64) @ b, what=f"matmul on {d.id}")
done()
"""

TUNING_BAD = {
    "garbage": "open(path, 'w').write('{{{ not json')",
    "empty": "open(path, 'w').close()",
    "devices-a-list": "json.dump({'format': 1, 'devices': [1, 2]}, open(path, 'w'))",
    "other-format": "json.dump({'format': 99, 'devices': {}}, open(path, 'w'))",
    "params-int": "json.dump(entries(5), open(path, 'w'))",
    "params-null": "json.dump(entries(None), open(path, 'w'))",
    "unknown-key": "json.dump(entries('family=tiled foo=1'), open(path, 'w'))",
    "huge-tiles": "json.dump(entries('family=tiled ts_k=1048576 ts_m=1073741824'), open(path, 'w'))",
    "negative": "json.dump(entries('family=packed rm=-8 vw=16'), open(path, 'w'))",
    "overflowing-int": "json.dump(entries('family=packed rm=99999999999999999999'), open(path, 'w'))",
    "entry-a-string": "json.dump({'format': 1, 'devices': {k: 'x' for k in keys.values()}}, open(path, 'w'))",
    "dtype-float13": "json.dump({'format': 1, 'devices': {k: {'float13': {'params': 'family=tiled'}} "
                     "for k in keys.values()}}, open(path, 'w'))",
    "a-directory": "os.makedirs(path)",
}

# Tuning entries inside every range GemmParams::parse accepts, drawn at random: each is refused with a warning (beyond
# a bound) or computes right; none may take the process down (one such entry overflowed PoCL's work-group stack) or
# build for minutes (one took 70-88 s).
TUNING_IN_RANGE = """
draw = np.random.default_rng()
vw = [1, 2, 4, 8, 16]
picked = []
for wide in (True, False, False):  # one from the whole ranges (mostly refused), two from what builds
    lx = int(draw.choice([0, 1, 4, 16, 64]))
    rm, nv, ku = (draw.integers(1, 33), draw.integers(1, 9), draw.integers(1, 17)) if wide else \
        (draw.integers(1, 13), draw.integers(1, 5), draw.choice([1, 2, 4]))
    picked.append(f"family=packed rm={rm} vw={draw.choice(vw)} nv={nv} ku={ku} lx={lx} "
                  f"ly={1 if lx == 0 else draw.choice([1, 4, 64])}")
from hetnn import _cache, tune
for d in hetnn.devices():
    if d.kind == "opencl":  # stored as the tuner stores them, under the device's identity
        _cache.save_entry(d, "float32", {"params": picked[0], "by_size": [
            {"max_macs": 10**5, "params": picked[1]}, {"max_macs": 10**6, "params": picked[2]}], "gflops": 1.0,
            "date": "x"})
print("entries:", picked, [tune._params(d, "float32", 67 * 45 * 29) for d in hetnn.devices() if d.kind == "opencl"],
      file=sys.stderr)
"""

# Every writer of a file hetnn replaces, aimed at what is not a regular file: refused with OSError naming the path,
# the node left as it was (as root, saving to /dev/full turned it into a regular file). Made in the case's own
# directory, never the system's.
SPECIAL = """
import os, socket, stat, numpy as np, hetnn
from hetnn import nn
from hetnn._loader import _core
from hetnn.bench import Report
targets = {"fifo": os.path.join(TMP, "fifo"), "dir": os.path.join(TMP, "dir"), "dangling": os.path.join(TMP, "dl"),
           "link-to-fifo": os.path.join(TMP, "lf")}
os.mkfifo(targets["fifo"]); os.mkdir(targets["dir"]); os.symlink(os.path.join(TMP, "none"), targets["dangling"])
os.symlink(targets["fifo"], targets["link-to-fifo"])
if os.geteuid() == 0:
    targets["char-device"] = os.path.join(TMP, "null")
    os.mknod(targets["char-device"], 0o666 | stat.S_IFCHR, os.makedev(1, 3))
s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(TMP, "sock")); s.close()
targets["socket"] = os.path.join(TMP, "sock")
model = nn.Sequential([nn.Dense(3, 2)], device="cpu")
report = Report("x", [{"a": 1}], "", {})
writers = {"Sequential.save": lambda p: model.save(p), "write_file_atomic": lambda p: _core.write_file_atomic(p, b"x"),
           "Report.to_json": lambda p: report.to_json(p), "Report.to_csv": lambda p: report.to_csv(p)}
for kind, path in targets.items():
    for name, write in writers.items():
        before = os.lstat(path)
        with expect_error(OSError, "cannot write"):
            write(path)
        after = os.lstat(path)
        if (stat.S_IFMT(after.st_mode), after.st_ino) != (stat.S_IFMT(before.st_mode), before.st_ino):
            data_loss(f"{name} replaced the {kind} at {path}")
left = [f for f in os.listdir(TMP) if ".tmp" in f]
if left:
    bad_error(f"temporary files left behind: {left}")
done()
"""

KERNEL_CACHE = """
import os, sys, stat, subprocess, struct, numpy as np, hetnn
CACHE = os.path.join(TMP, "cache")
env = dict(os.environ, HETNN_CACHE_DIR=CACHE)
POP = "import hetnn, numpy as np; a = np.ones((5, 7), np.float32); hetnn.matmul(a, a.T.copy(), device=%r)" % DEV
r = subprocess.run([sys.executable, "-c", POP], env=env, capture_output=True, text=True, timeout=300)
if r.returncode != 0:
    bad_error("populating the cache failed: " + r.stderr[-500:])
KDIR = os.path.join(CACHE, "kernels")
entries = sorted(f for f in os.listdir(KDIR) if f.endswith(".clbin"))
if not entries:
    bad_error("no cache entry was written")
E = os.path.join(KDIR, entries[0])
DATA = open(E, "rb").read()
%s
os.environ["HETNN_CACHE_DIR"] = CACHE
import warnings; warnings.simplefilter("ignore")
rng = np.random.default_rng()
a, b = rng.random((67, 45), dtype=np.float32), rng.random((45, 29), dtype=np.float32)
check_close(hetnn.matmul(a, b, device=DEV), a.astype(np.float64) @ b, what="matmul with a damaged cache")
done()
"""

FNV = """
sys.path.insert(0, os.environ["HARNESS_TESTS"])
from cache_entry import with_plain_checksum as plain_checksum  # the tests' own reader of the entry format
"""

KERNEL_BAD = {
    "truncated": "open(E, 'wb').write(DATA[:len(DATA) // 3])",
    "header-only": "open(E, 'wb').write(DATA[:40])",
    "garbage": "open(E, 'wb').write(os.urandom(len(DATA)))",
    "huge-length-field": "open(E, 'wb').write(DATA[:24] + struct.pack('<Q', 2**62) + DATA[32:])",
    "damaged-payload-plain-checksum": FNV + "d = bytearray(DATA)\nfor i in range(104, 120): d[i] ^= 0xA5\n"
                                            "open(E, 'wb').write(plain_checksum(bytes(d)))",
    "payload-swapped-between-keys": "others = [f for f in os.listdir(KDIR) if f.endswith('.clbin')]\n"
                                          "for f in others:\n"
                                          "    p = os.path.join(KDIR, f); o = open(p, 'rb').read()\n"
                                          "    open(p, 'wb').write(o[:24] + DATA[24:])",
    "key-damaged": "open(os.path.join(KDIR, 'key'), 'wb').write(b'x')",
    "key-removed": "os.unlink(os.path.join(KDIR, 'key'))",
    "key-a-directory": "os.unlink(os.path.join(KDIR, 'key')); os.mkdir(os.path.join(KDIR, 'key'))",
    "entry-a-directory": "os.unlink(E); os.mkdir(E)",
    "entry-a-fifo": "os.unlink(E); os.mkfifo(E)",
    "entry-a-link-to-dev-zero": "os.unlink(E); os.symlink('/dev/zero', E)",
    "entry-a-dangling-link": "os.unlink(E); os.symlink(os.path.join(TMP, 'nowhere'), E)",
    "kernels-a-file": "import shutil; shutil.rmtree(KDIR); open(KDIR, 'w').write('x')",
}

RACE = """
import os, sys, subprocess
CACHE = os.path.join(TMP, "cache")
CODE = '''
import warnings, numpy as np, hetnn
warnings.simplefilter("error")
rng = np.random.default_rng()
for d in hetnn.devices():
    a, b = rng.random((33, 21), dtype=np.float32), rng.random((21, 17), dtype=np.float32)
    assert np.allclose(hetnn.matmul(a, b, device=d), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    x = rng.random((1, 2, 9, 9), dtype=np.float32)
    hetnn.max_pool2d(x, 3, device=d)
print("ok")
'''
env = dict(os.environ, HETNN_CACHE_DIR=CACHE)
procs = [subprocess.Popen([sys.executable, "-c", CODE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) for _ in range(4)]
for p in procs:
    out, err = p.communicate(timeout=240)
    if p.returncode != 0 or "ok" not in out:
        bad_error(f"a process sharing a new cache failed ({p.returncode}): {err[-800:]}")
done()
"""

PEAKS = """
import os, json, warnings, hetnn
from hetnn.bench import run
os.makedirs(os.path.join(TMP, "cache"), exist_ok=True)
path = os.path.join(TMP, "cache", "peaks.json")
%s
warnings.simplefilter("ignore")
res = run("matmul", shapes="quick", repeat=2, warmup=1, device="cpu", output=None, compare="")
if not res.rows:
    bad_error("no rows")
done()
"""

PEAKS_BAD = {
    "garbage": "open(path, 'w').write('nope')",
    "inner-wrong-types": "json.dump({k: {'fma_gflops': 'fast', 'triad_gbs': None, 'date': 5} for k in "
                         "[f'{d.id}|{d.name}|{d.driver_version}' for d in hetnn.devices()]}, open(path, 'w'))",
    "negative-ceilings": "json.dump({k: {'fma_gflops': -1.0, 'triad_gbs': 0.0} for k in "
                         "[f'{d.id}|{d.name}|{d.driver_version}' for d in hetnn.devices()]}, open(path, 'w'))",
}


def cases(devs: List[str]) -> List[Case]:
    out: List[Case] = []
    for name, body in SAVE_FAULTS.items():
        out.append(Case(f"files/model-save-{name}", "files", MODEL + body + "\ndone()\n", device="cpu"))
    out.append(Case("files/model-save-then-load-on-every-device", "files", MODEL + "".join(
        f"check_close(nn.load(PATH, device={d!r}).predict(X), GOOD, what='reloaded on {d}')\n" for d in devs) +
        "done()\n", device="cpu"))
    for name, body in LOAD_BAD.items():
        code = MODEL + body + "\nwith expect_error((ValueError, FileNotFoundError), os.path.basename(p) or p):\n" \
                              "    nn.load(p, device=DEV)\ndone()\n"
        out.append(Case(f"files/model-load-{name}", "files", code, device="cpu", timeout=30))
    out.append(Case("files/model-load-never-unpickles", "files", PICKLE, device="cpu"))
    cache_env = {"HETNN_CACHE_DIR": "{tmp}/cache"}
    for name, body in TUNING_BAD.items():
        out.append(Case(f"files/tuning-file-{name}", "files", fill(TUNING, body), env=cache_env))
    for i in range(3):  # three random draws of three entries each, every run
        out.append(Case(f"files/tuning-entries-in-range-{i}", "files", fill(TUNING, TUNING_IN_RANGE), env=cache_env,
                        timeout=180))
    out.append(Case("files/writers-refuse-special-files", "files", SPECIAL))
    for dev in (d for d in devs if d != "cpu"):
        for name, body in KERNEL_BAD.items():
            out.append(Case(f"files/kernel-cache-{name}/{dev}", "files", fill(KERNEL_CACHE, body), device=dev,
                            timeout=120))
    out.append(Case("files/kernel-cache-four-processes-fill-a-new-cache", "files", RACE, timeout=300))
    for name, body in PEAKS_BAD.items():
        out.append(Case(f"files/stored-ceilings-{name}", "files", fill(PEAKS, body), env=cache_env, timeout=120))
    return out
