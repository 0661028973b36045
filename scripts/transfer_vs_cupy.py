"""Host <-> GPU copies: hetnn (OpenCL) against CuPy, from and into ordinary (pageable) NumPy memory and page-locked
memory (hetnn.pinned_empty; cupyx.empty_pinned), interleaved in one run, each copy checked to have moved the data.
hetnn's pageable copies are timed both ways (directly, and staged through its page-locked chunks) whatever its own
measurement chose; then what the device chose (Device.transfer_paths()) and the overlap of a copy with a kernel on two
streams (hetnn.bench.run_overlap).

    python scripts/transfer_vs_cupy.py [--sizes 4096,1048576,67108864,268435456] [--rounds 15]

The issue's targets: pinned H2D/D2H >= 0.8x CuPy's pinned copies of the same sizes; pageable no slower than before;
a copy and a kernel of similar length on two streams <= 0.6x their serial time."""
import argparse

import cupy as cp
import cupyx
import numpy as np

import hetnn
from hetnn import Case, interleave
from hetnn.bench import ratio

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="4096,1048576,67108864,268435456")
ap.add_argument("--rounds", type=int, default=15)
ap.add_argument("--device", default="gpu")
args = ap.parse_args()
dev = hetnn.device(args.device)
print("device:", dev.id, dev.name)
for n in (int(v) for v in args.sizes.split(",")):
    x = np.random.default_rng(n).integers(0, 255, n, dtype=np.uint8)
    pageable, back = x.copy(), np.empty_like(x)
    h_pin, h_back = hetnn.pinned_empty(n, "uint8", device=dev), hetnn.pinned_empty(n, "uint8", device=dev)
    c_pin, c_back = cupyx.empty_pinned(n, np.uint8), cupyx.empty_pinned(n, np.uint8)
    h_pin[...] = x
    c_pin[...] = x
    a = hetnn.empty(n, "uint8", device=dev)
    g = cp.empty(n, cp.uint8)
    def path(staged, fn):
        def run():
            dev._dev._set_transfer_staging(staged)
            fn()
        return run

    cases = [
        Case("hetnn h2d pageable", path(0, lambda: a._a.write_from(pageable)), devices=[dev], nbytes=n),
        Case("hetnn h2d staged", path(1, lambda: a._a.write_from(pageable)), devices=[dev], nbytes=n),
        Case("hetnn h2d pinned", lambda: a._a.write_from(h_pin), devices=[dev], nbytes=n),
        Case("cupy h2d pageable", lambda: (g.set(pageable), cp.cuda.Device().synchronize()), nbytes=n),
        Case("cupy h2d pinned", lambda: (g.set(c_pin), cp.cuda.Device().synchronize()), nbytes=n),
        Case("hetnn d2h pageable", path(0, lambda: a.copy_to_host(out=back)), devices=[dev], nbytes=n),
        Case("hetnn d2h staged", path(1, lambda: a.copy_to_host(out=back)), devices=[dev], nbytes=n),
        Case("hetnn d2h pinned", lambda: a.copy_to_host(out=h_back), devices=[dev], nbytes=n),
        Case("cupy d2h pageable", lambda: (g.get(out=back), cp.cuda.Device().synchronize()), nbytes=n),
        Case("cupy d2h pinned", lambda: (g.get(out=c_back), cp.cuda.Device().synchronize()), nbytes=n),
    ]
    res = dict(zip([c.name for c in cases], interleave(cases, n_warmup=2, n_repeat=args.rounds)))
    for buf in (back, h_back, c_back):
        assert np.array_equal(buf, x), "a copy did not move the data"
    for name, r in res.items():
        print(f"{n:>11} B  {name:<20} {n / r.median / 1e9:8.2f} GB/s  {r.noise['noise'] or ''}")
    for d in ("h2d", "d2h"):
        for kind in ("pinned", "pageable"):
            print("  " + ratio(f"{n} B {d} {kind}: hetnn / CuPy (speed)", res[f"hetnn {d} {kind}"],
                               res[f"cupy {d} {kind}"]))
        print("  " + ratio(f"{n} B {d} staged: hetnn / CuPy pageable (speed)", res[f"hetnn {d} staged"],
                           res[f"cupy {d} pageable"]))
        print("  " + ratio(f"{n} B {d}: hetnn staged / direct (speed)", res[f"hetnn {d} staged"],
                           res[f"hetnn {d} pageable"]))

dev._dev._set_transfer_staging(-1)  # what the device measures and chooses on its own
x = np.ones(64 << 20, np.uint8)
hetnn.asarray(x, device=dev).copy_to_host(out=x)
print("transfer paths:", dev.transfer_paths())

from hetnn.bench import OVERLAP_COLUMNS, format_table, overlap_summary, run_overlap  # noqa: E402

over = run_overlap([dev], 256 << 20, n_repeat=args.rounds)
print(format_table(over, OVERLAP_COLUMNS))
for line in overlap_summary(over):
    print("  " + line)
