"""Interleaving check: per ResNet-50 GEMM shape, hetnn's CPU matmul and NumPy's timed alone (2 warm-ups,
7 repeats; twice, before and after) and interleaved with each other (2 warm-ups, 7 rounds). Prints each ratio and
how many shapes stay within 1.15x. Runs on the CPUs found free, as the bench does (hetnn._cpus; --threads N or
--threads default to choose). Usage: .venv/bin/python scripts/interleave_vs_alone.py [--threads auto]"""
import sys

import numpy as np

import hetnn
from hetnn import _cpus
from hetnn._oscounters import quiesce
from hetnn._timing import Case, interleave
from hetnn.bench.matmul import resnet50_shapes
from hetnn.bench.stats import ratio_interval


def main() -> None:
    cpu = hetnn.device("cpu")
    rows, pairs = [], []
    for label, m, n, k in resnet50_shapes(1):
        rng = np.random.default_rng(0)
        a = rng.random((m, k), dtype=np.float32)
        b = rng.random((k, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        A, B, C = hetnn.asarray(a, device=cpu), hetnn.asarray(b, device=cpu), hetnn.empty((m, n), "float32", device=cpu)

        def alone_hetnn() -> float:
            quiesce()
            return hetnn.benchmark(hetnn.matmul, (A, B), {"out": C}, n_repeat=7, n_warmup=2, device=cpu).median

        def alone_numpy() -> float:
            quiesce()
            return hetnn.benchmark(np.matmul, (a, b), {"out": out}, n_repeat=7, n_warmup=2, device=[]).median

        h1, n1 = alone_hetnn(), alone_numpy()
        rs = interleave([Case("hetnn", lambda: hetnn.matmul(A, B, out=C), devices=[cpu]),
                         Case("numpy", lambda: np.matmul(a, b, out=out))], n_warmup=2, n_repeat=7)
        h2, n2 = alone_hetnn(), alone_numpy()
        pairs.append((rs[0].wall_times, rs[1].wall_times))
        rows.append((label, h2 / h1, n2 / n1, rs[0].median / h1, rs[1].median / n1, rs[0].noise["noise"],
                     rs[1].noise["noise"]))
        print("%-20s alone2/alone1: hetnn %.2f numpy %.2f | interleaved/alone1: hetnn %.2f numpy %.2f  %s %s"
              % rows[-1], flush=True)
    arr = np.array([r[1:5] for r in rows])
    within = [int((np.maximum(arr[:, c], 1 / arr[:, c]) <= 1.15).sum()) for c in range(4)]
    print(f"within 1.15x of the first alone run, of {len(rows)} shapes: alone again hetnn {within[0]}, numpy "
          f"{within[1]}; interleaved hetnn {within[2]}, numpy {within[3]}")
    print(ratio_interval(pairs).text("interleaved aggregate, hetnn cpu / NumPy"))


if __name__ == "__main__":
    arg = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "auto"
    plan = None if arg == "default" else _cpus.plan(fixed=None if arg == "auto" else int(arg))
    if plan is None:
        main()
    else:
        print(plan.header(), flush=True)
        with _cpus.use(plan):
            main()
