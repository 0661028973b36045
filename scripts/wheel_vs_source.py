"""The same benchmarks from the binary wheel and from the source build, interleaved: RUNS rounds, each running a
timing process from each install one after the other (the order alternating round by round), every process timing
the same workloads on every device it finds; per workload the ratio of the two installs' medians, paired by round,
with its 95 % interval over the rounds (hetnn.bench.stats.ratio_interval). A ratio whose interval holds 1 shows no
difference between the builds.

Usage: .venv/bin/python scripts/wheel_vs_source.py --wheel-python /path/to/wheel-venv/bin/python [--runs 6]
(the source build: this script's interpreter, .venv; the wheel's venv: e.g. python3 -m venv /tmp/w && /tmp/w/bin/pip
install wheelhouse/hetnn-*.whl)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# run in each install's interpreter, from a neutral folder: which hetnn it imported, and per workload its median
PROBE = r"""
import json, sys
import numpy as np
import hetnn

rng = np.random.default_rng(0)
out = {"hetnn": hetnn.__file__}
for dev in hetnn.devices():
    def put(*shape):
        return hetnn.asarray(rng.standard_normal(shape, dtype=np.float32), device=dev)
    work = {
        "matmul 3136x64x576": (hetnn.matmul, (put(3136, 576), put(576, 64))),
        "matmul 1024^3": (hetnn.matmul, (put(1024, 1024), put(1024, 1024))),
        "conv2d 64@56x56 3x3, batch 1": (lambda x, w: hetnn.conv2d(x, w, padding=1),
                                         (put(1, 64, 56, 56), put(64, 64, 3, 3))),
        "max_pool2d 32x64x56x56 k3s2": (lambda x: hetnn.max_pool2d(x, 3, 2), (put(32, 64, 56, 56),)),
    }
    for name, (fn, args) in work.items():
        r = hetnn.benchmark(fn, args, n_warmup=3, n_repeat=15, device=dev)
        out[f"{name} [{dev.id}]"] = {"median": r.median, "unreliable": bool(r.unreliable)}
print(json.dumps(out))
"""


def probe(python: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([python, "-I", "-c", PROBE], capture_output=True, text=True, cwd=tmp,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if p.returncode != 0:
        raise SystemExit(f"{python}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    from hetnn.bench.stats import flags_text, ratio_interval

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel-python", required=True)
    ap.add_argument("--source-python", default=sys.executable)
    ap.add_argument("--runs", type=int, default=6)
    a = ap.parse_args()
    sides = {"wheel": a.wheel_python, "source": a.source_python}
    got = {"wheel": [], "source": []}
    for i in range(a.runs):
        for side in (("wheel", "source") if i % 2 == 0 else ("source", "wheel")):
            got[side].append(probe(sides[side]))
    for side in sides:
        print(f"{side}: hetnn from {got[side][0]['hetnn']}")
    print("\n| workload [device] | source median ms | wheel median ms | source / wheel (speed of the wheel) |")
    print("|---|---|---|---|")
    for name in [k for k in got["source"][0] if k != "hetnn"]:
        s = [run[name] for run in got["source"]]
        w = [run[name] for run in got["wheel"]]
        bad = flags_text([{"unreliable": r["unreliable"]} for r in s + w])
        ws, ss = [r["median"] for r in w], [r["median"] for r in s]
        ci = ratio_interval([(ws, ss)])
        med = sorted(ss)[len(ss) // 2] * 1e3, sorted(ws)[len(ws) // 2] * 1e3
        text = ci.text("", bad)[2:] if ci else "no interval"
        print(f"| {name} | {med[0]:.3f} | {med[1]:.3f} | {text} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
