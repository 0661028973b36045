"""NumPy beside hetnn, with NumPy's OpenBLAS on its own threads and on hetnn's (hetnn.share_blas_threads), in one
process, interleaved: each round times every pattern once with sharing off and once on (the order alternating round
by round). Patterns: NumPy float32 products back to back, with 2 ms of sleep or of busy Python between them, and
NumPy and hetnn products alternating (squares and ResNet-50 shapes). Per pattern the time ratio own / shared of
NumPy's (and in the alternating ones hetnn's) median call, paired by round, with its 95 % interval
(hetnn.bench.stats.ratio_interval): above 1 means faster with sharing; each ratio carries the flags of the rounds
it rests on (preempted, unreliable, noise: hetnn._oscounters.Watch), as every hetnn table does.

Usage: .venv/bin/python scripts/blas_sharing.py [--rounds 7] [--calls 60]
"""
import argparse
import platform
import time

import numpy as np

import hetnn
from hetnn._oscounters import Watch
from hetnn.bench.stats import flags_text, ratio_interval

SQUARES = [(n, n, n) for n in (128, 256, 512, 1024)]
RESNET = [(12544, 64, 147), (3136, 256, 64), (3136, 64, 256), (784, 512, 128)]


def busy(seconds: float) -> None:
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


def pattern(kind: str, m: int, n: int, k: int, calls: int, rng: np.random.Generator):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    out = np.empty((m, n), np.float32)
    da, db = hetnn.asarray(a, device="cpu"), hetnn.asarray(b, device="cpu")
    dout = hetnn.matmul(da, db)

    def run():
        tn, th = [], []
        for _ in range(calls):
            if kind == "sleep 2 ms":
                time.sleep(0.002)
            elif kind == "busy 2 ms":
                busy(0.002)
            t0 = time.perf_counter()
            np.matmul(a, b, out=out)
            tn.append(time.perf_counter() - t0)
            if kind == "alternating":
                t0 = time.perf_counter()
                hetnn.matmul(da, db, out=dout)
                th.append(time.perf_counter() - t0)
        return float(np.median(tn)), (float(np.median(th)) if th else None)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=60)
    args = ap.parse_args()
    libs = hetnn.share_blas_threads(True)
    if not any(lib["shared"] for lib in libs):
        print("no OpenBLAS here takes hetnn's threads:", libs)
        return 1
    cpu = hetnn.devices()[0]
    print(f"{cpu.name}; {platform.python_version()}; NumPy {np.__version__}; {libs[0]['path']}")
    print(f"{args.rounds} rounds, {args.calls} calls per pattern and setting; ratio = own / shared time (>1: "
          "sharing faster), 95 % interval over rounds")
    rng = np.random.default_rng(0)
    cases = [(kind, s) for kind in ("back to back", "sleep 2 ms", "busy 2 ms") for s in SQUARES]
    cases += [("alternating", s) for s in SQUARES + RESNET]
    print(f"{'pattern':13s} {'M x N x K':16s} {'NumPy own ms':>12s} {'shared ms':>9s}  {'NumPy own/shared':28s}"
          f"             {'hetnn own ms':>12s} {'shared ms':>9s}  hetnn own/shared")
    for kind, (m, n, k) in cases:
        run = pattern(kind, m, n, k, args.calls, rng)
        res = {False: [], True: []}
        watch = {False: Watch(), True: Watch()}
        for r in range(args.rounds):
            for on in ((True, False) if r % 2 else (False, True)):
                hetnn.share_blas_threads(on)
                time.sleep(0.15)  # the other setting's workers asleep
                with watch[on].block():
                    res[on].append(run())
        flags = flags_text([watch[False].flags(), watch[True].flags()])
        for w in watch.values():
            w.close()
        line = f"{kind:13s} {f'{m}x{n}x{k}':16s}"
        for i in (0, 1):
            if res[False][0][i] is None:
                continue
            own = [x[i] for x in res[False]]
            shared = [x[i] for x in res[True]]
            ratio = ratio_interval([(shared, own)])
            text = "-" if ratio is None else ratio.text("", flags)[2:]
            line += f" {np.median(own) * 1e3:12.3f} {np.median(shared) * 1e3:9.3f}  {text:40s}"
        print(line, flush=True)
    hetnn.share_blas_threads(True)
    print("pool:", hetnn.thread_pools()["blas_sharing"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
