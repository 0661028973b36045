"""python tests/adversarial/run.py [-k SUBSTRING] [-j WORKERS] [-v]: runs the adversarial cases, prints each
finding (every case with -v) and the summary line; exit status 1 when there are findings."""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adversarial.harness import all_cases, run_all, summary  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("-j", type=int, default=None, help="cases run at once (default: the CPU count, at least 2)")
    ap.add_argument("-v", action="store_true", help="print every case, not only findings")
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.k in c.name]
    t0 = time.monotonic()

    def show(o):
        if args.v or o.verdict != "ok":
            print(f"{o.verdict:>12}  {o.seconds:5.1f} s  {o.case.name}" + (f"\n{o.detail}\n" if o.detail else ""),
                  flush=True)
    outcomes = run_all(cases, args.j, show)
    print(summary(outcomes, time.monotonic() - t0))
    return 1 if any(o.verdict != "ok" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
