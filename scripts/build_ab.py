"""Two builds of hetnn timed against each other, interleaved: RUNS rounds, each running a timing process of each
build one after the other (the order alternating round by round). A probe is Python source run in a neutral folder
with argv[1] the folder to import hetnn from ("" for the installed one); its last line of output is a JSON object
{"hetnn": hetnn.__file__, workload: seconds, ...}. Per workload: the ratio of the two builds' medians (earlier /
this: above 1 means this build is faster), paired by round, with its 95 % interval over the rounds
(hetnn.bench.stats.ratio_interval). Used by training_vs_build.py and ops_vs_build.py.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


# Every probe starts so: hetnn imported from argv[1] ("" for the installed one), a seeded generator, the result dict
# and per_call, the timed loop
HEAD = r"""
import json, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
import numpy as np
import hetnn

rng = np.random.default_rng(0)
out = {"hetnn": hetnn.__file__}


def per_call(fn, dev=None, budget=0.05, repeats=7, max_calls=1 << 20, grow=4):
    # seconds per call of fn: the median over `repeats` timed loops of about `budget` / 4 seconds or more each
    # (the calls a loop found by growing it `grow`-fold); dev (a hetnn device or None) synchronised after each loop
    def wait():
        if dev is not None:
            hetnn.synchronize(dev)
    fn()
    wait()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        wait()
        if time.perf_counter() - t0 > budget / 4 or n >= max_calls:
            break
        n *= grow
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        wait()
        ts.append((time.perf_counter() - t0) / n)
    return float(np.median(ts))
"""

USAGE = """Usage: .venv/bin/python scripts/{script} --baseline DIR [--runs N]
DIR holds the earlier build's `hetnn` package (e.g. `cp -a .venv/lib/python3.11/site-packages/hetnn DIR/` before
rebuilding); this build: the package this interpreter imports."""


def probe(code: str, baseline: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, "-c", code, baseline], capture_output=True, text=True, cwd=tmp,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if p.returncode != 0:
        raise SystemExit(f"exit {p.returncode}\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(code: str, description: str, script: str, runs: int = 6) -> int:
    """Runs the probe `code` (after HEAD) for both builds and prints the table; `script`: the caller's file name."""
    from hetnn.bench.stats import ratio_interval

    code = HEAD + code
    ap = argparse.ArgumentParser(description=description, epilog=USAGE.format(script=script),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="a folder holding the earlier build's hetnn package")
    ap.add_argument("--runs", type=int, default=runs)
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.baseline, "hetnn", "__init__.py")):
        raise SystemExit(f"--baseline {a.baseline!r}: no hetnn package in that folder")
    sides = {"earlier": os.path.abspath(a.baseline), "this": ""}
    results: dict = {name: [] for name in sides}
    for r in range(a.runs):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for name in order:
            results[name].append(probe(code, sides[name]))
        print(f"round {r + 1}/{a.runs} done", file=sys.stderr, flush=True)
    for name in sides:
        print(f"{name}: {results[name][0]['hetnn']}")
    keys = [k for k in results["this"][0] if k != "hetnn"]
    print(f"{'workload':52s} {'earlier s':>10s} {'this s':>10s}  earlier / this (95% CI over {a.runs} rounds)")
    for k in keys:
        old = [res[k] for res in results["earlier"]]
        new = [res[k] for res in results["this"]]
        iv = ratio_interval([(new, old)])  # the speed of this build over the earlier one
        old_med, new_med = sorted(old)[len(old) // 2], sorted(new)[len(new) // 2]
        ratio = "no interval" if iv is None else iv.text("")[2:]
        print(f"{k:52s} {old_med:10.5g} {new_med:10.5g}  {ratio}")
    return 0
