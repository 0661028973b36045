"""How often two runs of the same measurement give 95 % intervals that exclude each other, by simulation, with the
interval hetnn prints (hetnn.bench.stats.ratio_interval) and the run layouts its commands use: a floor that no
amount of sampling removes (two independent 95 % intervals of one quantity miss each other now and then), and how
far above it an interval that ignores the processes' state lands.

Model: the log of a round's ratio = the process's state (normal, sd PROCESS) + the round's noise (normal, sd ROUND);
every process of every run draws its own state. Usage: .venv/bin/python scripts/interval_agreement.py [--trials N]
"""
import argparse

import numpy as np

from hetnn import _workers
from hetnn.bench.stats import paired, ratio_interval


def one_run(rng: np.random.Generator, processes: int, rounds: int, sd_process: float, sd_round: float):
    state = np.repeat(rng.normal(0.0, sd_process, processes), rounds)
    n = processes * rounds
    x = np.exp(rng.normal(0.0, sd_round, n))
    y = 2.0 * np.exp(state + rng.normal(0.0, sd_round, n))
    idx = [p * _workers.ROUND_STRIDE + r for p in range(processes) for r in range(rounds)]
    return ratio_interval([paired(list(x), list(y), idx, idx)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=2000)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    print("| layout | process sd / round sd | covers the true ratio | two runs exclude each other |")
    print("|---|---|---|---|")
    for processes, rounds in ((1, 3), (3, 1), (3, 2), (3, 4), (10, 1)):
        for sd_process, sd_round in ((0.0, 0.1), (0.05, 0.1), (0.1, 0.05)):
            covers = excludes = 0
            for _ in range(a.trials):
                r1 = one_run(rng, processes, rounds, sd_process, sd_round)
                r2 = one_run(rng, processes, rounds, sd_process, sd_round)
                covers += r1.low <= 2.0 <= r1.high
                excludes += r1.high < r2.low or r2.high < r1.low
            print(f"| {processes} process(es) x {rounds} rounds | {sd_process / sd_round:.1f} | "
                  f"{100 * covers / a.trials:.1f} % | {100 * excludes / a.trials:.2f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
