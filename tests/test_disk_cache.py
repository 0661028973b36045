"""The on-disk cache of compiled OpenCL programs: used by a second process, and never loaded blindly."""
import os
import subprocess
import sys

import pytest

from cache_entry import HEADER, sign, with_plain_checksum

SCRIPT = r"""
import warnings, numpy as np, hetnn
warnings.simplefilter("always")
d = hetnn.device("opencl")
a = np.arange(12, dtype=np.float32).reshape(3, 4)
c = hetnn.matmul(a, a.T.copy(), device=d)
assert np.allclose(c, a @ a.T), c
print("OK")
"""


def _run(cache_dir):
    env = dict(os.environ, HETNN_CACHE_DIR=str(cache_dir), POCL_KERNEL_CACHE="0")
    env.pop("HETNN_POISON", None)
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)


def _entries(cache_dir):
    d = cache_dir / "kernels"
    return sorted(d.glob("*.clbin")) if d.exists() else []


@pytest.fixture
def populated(tmp_path, opencl_device):
    r = _run(tmp_path)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    files = _entries(tmp_path)
    assert files, "no program binary was written"
    assert all(f.read_bytes()[:8] == b"HETNNCLB" for f in files)
    assert not list((tmp_path / "kernels").glob("*.tmp.*")), "temporary files left behind"
    return tmp_path, files


def test_second_process_reuses_binaries_without_warnings(populated):
    cache, files = populated
    before = {f: f.stat().st_mtime_ns for f in files}
    r = _run(cache)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    assert "hetnn:" not in r.stderr
    assert {f: f.stat().st_mtime_ns for f in _entries(cache)} == before  # loaded, not rewritten


@pytest.mark.parametrize("damage,reason", [("flip", "signature mismatch"), ("truncate", "truncated"),
                                           ("garbage", "not a hetnn cache file")])
def test_corrupt_entry_is_ignored_with_warning_and_rebuilt(populated, damage, reason):
    cache, files = populated
    f = files[0]
    data = bytearray(f.read_bytes())
    if damage == "flip":
        data[-10] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"garbage" * 20)
    f.write_bytes(bytes(data))
    r = _run(cache)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    assert reason in r.stderr and "rebuilding" in r.stderr
    assert f.exists() and f.read_bytes()[:8] == b"HETNNCLB"  # rewritten
    r = _run(cache)
    assert "hetnn:" not in r.stderr


def test_unwritable_cache_dir_degrades_with_warning(tmp_path, opencl_device):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    r = _run(blocker / "cache")
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    assert "not writable" in r.stderr and "without an on-disk cache" in r.stderr


def test_cache_can_be_disabled(tmp_path, opencl_device):
    env = dict(os.environ, HETNN_CACHE_DIR="off")
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    assert not list(tmp_path.rglob("*.clbin"))


def test_a_damaged_payload_with_a_recomputed_checksum_never_reaches_the_driver(populated):
    """Damage inside PoCL's binary header with the old plain checksum recomputed once segfaulted every later process
    in clCreateProgramWithBinary: entries are now signed with the cache's secret key."""
    cache, files = populated
    f = files[0]
    data = bytearray(f.read_bytes())
    for i in range(HEADER.size + 64, HEADER.size + 80):
        data[i] ^= 0xA5
    f.write_bytes(with_plain_checksum(bytes(data)))
    r = _run(cache)
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stderr[-2000:])
    assert "signature mismatch" in r.stderr and "rebuilding" in r.stderr
    r = _run(cache)
    assert r.returncode == 0 and "hetnn:" not in r.stderr, r.stderr


def test_the_cache_key_is_private_and_a_damaged_key_is_replaced(populated):
    cache, files = populated
    key = cache / "kernels" / "key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 16
    key.write_bytes(b"short")
    r = _run(cache)  # a new key: every entry fails its signature and is rebuilt, nothing crashes
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    assert "signature mismatch" in r.stderr and len(key.read_bytes()) == 16
    r = _run(cache)
    assert r.returncode == 0 and "hetnn:" not in r.stderr, r.stderr


TWO_PROGRAMS = r"""
import warnings, numpy as np, hetnn
warnings.simplefilter("always")
d = hetnn.device("opencl")
a = np.arange(12, dtype=np.float32).reshape(3, 4)
assert np.allclose(hetnn.matmul(a, a.T.copy(), device=d), a @ a.T)
x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
assert np.array_equal(hetnn.max_pool2d(x, 2, device=d), x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
print("OK")
"""


def test_a_cached_binary_of_another_program_is_discarded_and_rebuilt(tmp_path, opencl_device):
    """An entry holding another program's binary under this key (header and signature valid) once failed with
    CL_INVALID_KERNEL_NAME in every later process: the entry is now dropped and the program rebuilt from source."""
    env = dict(os.environ, HETNN_CACHE_DIR=str(tmp_path), POCL_KERNEL_CACHE="0")
    env.pop("HETNN_POISON", None)

    def run():
        return subprocess.run([sys.executable, "-c", TWO_PROGRAMS], capture_output=True, text=True, env=env,
                              timeout=300)
    r = run()
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    files = _entries(tmp_path)
    assert len(files) >= 2
    first, second = files[0].read_bytes(), files[1].read_bytes()
    files[1].write_bytes(sign(tmp_path, first[:16] + second[16:24] + first[24:]))  # first's binary, second's key
    r = run()
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    assert "lacks kernel" in r.stderr and "rebuilding it from source" in r.stderr
    r = run()  # and it stays fixed
    assert r.returncode == 0 and "OK" in r.stdout and "hetnn:" not in r.stderr, r.stderr


WIDE = r"""
import numpy as np, hetnn
d = hetnn.device("opencl")
x = np.random.default_rng().random((1, 2, 6, 262)).astype(np.float32)
y = hetnn.max_pool2d(x, (1, 255), 1, device=d)
ref = np.lib.stride_tricks.sliding_window_view(x, (1, 255), axis=(2, 3)).max(axis=(4, 5))
assert np.array_equal(y, ref)
print("OK")
"""


def test_a_wide_window_does_not_stall_the_first_call(tmp_path, opencl_device):
    """A (1, 255) window once took 158 s on its first call with the disk cache on (its fully unrolled program was
    recompiled when the binary was exported); wide windows now loop. A hang check, not a timing target: the bound
    is far above the few seconds it takes."""
    env = dict(os.environ, HETNN_CACHE_DIR=str(tmp_path), POCL_KERNEL_CACHE="0")
    env.pop("HETNN_POISON", None)
    r = subprocess.run([sys.executable, "-c", WIDE], capture_output=True, text=True, env=env, timeout=90)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
