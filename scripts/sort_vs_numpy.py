"""hetnn.sort against NumPy's stable sort on every device: float32, one line of 1e6 and 1000 lines of 1000,
interleaved rounds (hetnn.interleave), each device's speed over NumPy's with its 95 % interval and flags.

    .venv/bin/python scripts/sort_vs_numpy.py
"""
import numpy as np

import hetnn
from hetnn import Case, interleave
from hetnn.bench.stats import paired, ratio_interval


def main() -> None:
    rng = np.random.default_rng(0)
    for shape in ((1_000_000,), (1000, 1000)):
        x = rng.standard_normal(shape).astype(np.float32)
        cases, names = [], []
        for dev in hetnn.devices():
            a = hetnn.asarray(x, device=dev)
            cases.append(Case(f"hetnn {dev.id}", lambda a=a: hetnn.sort(a), devices=[dev]))
            names.append(dev.id)
        cases.append(Case("numpy", lambda: np.sort(x, kind="stable")))
        names.append("numpy")
        results = interleave(cases, n_warmup=2, n_repeat=15, max_duration=6)
        ref = results[-1]
        for name, r in zip(names[:-1], results[:-1]):
            ci = ratio_interval([paired(list(r.wall_times), list(ref.wall_times), list(r.rounds), list(ref.rounds))])
            speed = "no interval" if ci is None else f"{ci.value:.2f}x ({ci.low:.2f}-{ci.high:.2f}, 95% CI)"
            print(f"sort {shape} {name}: {np.median(r.wall_times) * 1e3:.2f} ms, speed over NumPy {speed}; "
                  f"flags: {r.flags.get('noise') or 'none'}")


if __name__ == "__main__":
    main()
