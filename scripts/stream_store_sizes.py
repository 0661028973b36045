"""From which output size streaming stores pay on this processor (cpp/src/backend/cpu/stream_store.cpp's table):
hetnn.add of two float32 arrays into a third on the CPU device with streaming stores and with regular ones, in
interleaved pairs, alone and followed by a sum of its output (the next op reading it: streamed results are no
longer in the caches). Prints regular time / streaming time per size, the median and the middle of the pairs'
ratios. Run: .venv/bin/python scripts/stream_store_sizes.py [--pairs 21]"""
from __future__ import annotations

import argparse
import time

import numpy as np

import hetnn
from hetnn.bench.peak import processor_name
from hetnn._loader import _core

NEVER = 1 << 62  # a threshold no output reaches: regular stores


def _middle(ratios: list) -> str:
    r = sorted(ratios)
    k = len(r) // 7  # the middle five sevenths
    return f"{r[len(r) // 2]:.2f} ({r[k]:.2f}-{r[-1 - k]:.2f})"


def measure(mib: int, pairs: int) -> str:
    n = mib << 18
    cpu = hetnn.device("cpu")
    rng = np.random.default_rng()
    a = hetnn.asarray(rng.random(n, dtype=np.float32), device=cpu)
    b = hetnn.asarray(rng.random(n, dtype=np.float32), device=cpu)
    c = hetnn.empty((n,), dtype="float32", device=cpu)
    add: dict = {0: [], NEVER: []}
    chain: dict = {0: [], NEVER: []}
    try:
        for _ in range(pairs + 1):  # the first pair warms up
            for mode in (0, NEVER):
                _core._set_stream_store_threshold(mode)
                t0 = time.perf_counter()
                hetnn.add(a, b, out=c)
                t1 = time.perf_counter()
                hetnn.sum(c)
                t2 = time.perf_counter()
                add[mode].append(t1 - t0)
                chain[mode].append(t2 - t0)
    finally:
        _core._set_stream_store_threshold(-1)
    if not np.array_equal(c.numpy(), a.numpy() + b.numpy()):
        raise SystemExit(f"{mib} MiB: the add's result differs from NumPy's")
    ra = [r / s for r, s in zip(add[NEVER][1:], add[0][1:])]
    rc = [r / s for r, s in zip(chain[NEVER][1:], chain[0][1:])]
    return f"{mib:5d} MiB: add {_middle(ra)}, add + sum {_middle(rc)}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=21)
    p.add_argument("--sizes", default="2,4,8,16,32,64,256", help="MiB per array, comma-separated")
    args = p.parse_args()
    print(f"processor: {processor_name()}; rule in force: {_core._stream_store_rule()}")
    print("regular time / streaming time (above 1: streaming faster), median (middle of the pairs)")
    for mib in (int(x) for x in args.sizes.split(",")):
        print(measure(mib, args.pairs), flush=True)


if __name__ == "__main__":
    main()
