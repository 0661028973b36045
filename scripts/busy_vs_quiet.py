"""Runs a command on a quiet machine and beside a busy neighbour (a one-thread busy loop, bounded in time, started
before the command and stopped after it), RUNS times each, and prints per run its wall time, the 'threads:' header,
every ratio line and the 'left out' / 'no conclusion' lines: whether a busy shared machine still gives an answer,
and whether the intervals of the quiet and busy runs agree.

Usage: .venv/bin/python scripts/busy_vs_quiet.py [--runs 2] [--order quiet,busy] -- python -m hetnn bench ...
"""
import argparse
import re
import signal
import subprocess
import sys
import time

RATIO = re.compile(r"(\S.*?): (\d+\.\d+)x \((\d+\.\d+)-(\d+\.\d+), 95% CI\)")
HOG = "import time\nt = time.time()\nwhile time.time() - t < {s}:\n    pass\n"


def run_once(cmd: list, busy: bool, limit: float) -> dict:
    hog = subprocess.Popen([sys.executable, "-c", HOG.format(s=limit)]) if busy else None
    try:
        if hog:
            time.sleep(0.5)  # the neighbour is there before the run looks at the machine
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        wall = time.perf_counter() - t0
    finally:
        if hog:
            hog.kill()
            hog.wait()
    lines = p.stdout.splitlines()
    return {"wall": wall, "rc": p.returncode, "lines": lines, "stderr": p.stderr[-2000:],
            "threads": [ln for ln in lines if ln.startswith("threads: ")],
            "ratios": [m.groups() for ln in lines for m in [RATIO.search(ln)] if m],
            "undecided": [ln.strip() for ln in lines if "no conclusion" in ln or "not compared" in ln
                          or "left out" in ln or "no aggregate" in ln]}


def main() -> int:
    # a SIGTERM (kill, pkill) unwinds like Ctrl-C, so that the busy loop is stopped with the run, not left to its limit
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--order", default="quiet,busy")
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds a run and its busy loop may take")
    ap.add_argument("--save", help="write each run's output to SAVE-MODE-N.txt")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("give the command after --")
    runs = {}
    for mode in a.order.split(","):
        for i in range(a.runs):
            r = run_once(cmd, mode == "busy", a.limit)
            runs[(mode, i)] = r
            if a.save:
                with open(f"{a.save}-{mode}-{i + 1}.txt", "w") as f:
                    f.write("\n".join(r["lines"]) + "\n")
            print(f"== {mode} run {i + 1}: {r['wall']:.1f} s, exit {r['rc']}; {' | '.join(r['threads'])}")
            for name, v, lo, hi in r["ratios"]:
                print(f"   {name}: {v}x ({lo}-{hi})")
            for ln in r["undecided"]:
                print(f"   {ln}")
            if r["rc"]:
                print(r["stderr"])
            sys.stdout.flush()
    # intervals of the same comparison across runs: do any two exclude each other?
    names = {n for r in runs.values() for n, *_ in r["ratios"]}
    for n in sorted(names):
        ivs = [(k, float(lo), float(hi)) for k, r in runs.items() for m, _, lo, hi in r["ratios"] if m == n]
        clash = [(x[0], y[0]) for x in ivs for y in ivs if x[0] < y[0] and (x[2] < y[1] or y[2] < x[1])]
        print(f"{n}: {len(ivs)} intervals, " + (f"exclusive pairs {clash}" if clash else "all overlap"))
    for mode in dict.fromkeys(m for m, _ in runs):
        walls = [r["wall"] for (m, _), r in runs.items() if m == mode]
        print(f"{mode}: median wall {sorted(walls)[len(walls) // 2]:.1f} s over {len(walls)} run(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
