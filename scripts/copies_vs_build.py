"""Copies on the CPU device, this build against an earlier one, interleaved (scripts/build_ab.py): a dense copy of an
Array (`Array.copy()`), a copy into an existing Array (`y[...] = x`), an upload from a NumPy array
(`hetnn.asarray`), a download into an existing NumPy array (`copy_to_host(out=)`) and into a new one
(`Array.numpy()`), and `hetnn.zeros`, each of float32 arrays of 64 KiB to 64 MiB. Each workload: the median over 7
repeats of a timed loop's time per call.
"""
import sys

from build_ab import main

PROBE = r"""


dev = hetnn.device("cpu")
for kib in (64, 1024, 4096, 16384, 65536):
    n = kib * 256
    a = rng.standard_normal(n, dtype=np.float32)
    host = np.empty_like(a)
    x = hetnn.asarray(a, device=dev)
    y = hetnn.empty((n,), dtype="float32", device=dev)
    size = f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"
    work = {
        "Array.copy()": lambda: x.copy(),
        "y[...] = x": lambda: y.__setitem__(Ellipsis, x),
        "asarray (upload)": lambda: hetnn.asarray(a, device=dev),
        "copy_to_host(out=) (download)": lambda: x.copy_to_host(out=host),
        "Array.numpy() (download, new array)": lambda: x.numpy(),
        "zeros": lambda: hetnn.zeros((n,), dtype="float32", device=dev),
    }
    for name, fn in work.items():
        out[f"{name} {size}"] = per_call(fn)
print(json.dumps(out))
"""

if __name__ == "__main__":
    sys.exit(main(PROBE, __doc__, "copies_vs_build.py"))
