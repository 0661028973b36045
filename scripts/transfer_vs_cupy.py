"""Host <-> GPU copies: hetnn (OpenCL) against CuPy, from and into ordinary (pageable) NumPy memory and page-locked
memory (hetnn.pinned_empty; cupyx.empty_pinned), interleaved in one run, each copy checked to have moved the data.

    python scripts/transfer_vs_cupy.py [--sizes 4096,1048576,67108864,268435456] [--rounds 15]

The issue's targets: pinned H2D/D2H >= 0.8x CuPy's pinned copies of the same sizes; pageable no slower than before."""
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
    cases = [
        Case("hetnn h2d pageable", lambda: a._a.write_from(pageable), devices=[dev], nbytes=n),
        Case("hetnn h2d pinned", lambda: a._a.write_from(h_pin), devices=[dev], nbytes=n),
        Case("cupy h2d pageable", lambda: (g.set(pageable), cp.cuda.Device().synchronize()), nbytes=n),
        Case("cupy h2d pinned", lambda: (g.set(c_pin), cp.cuda.Device().synchronize()), nbytes=n),
        Case("hetnn d2h pageable", lambda: a.copy_to_host(out=back), devices=[dev], nbytes=n),
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
