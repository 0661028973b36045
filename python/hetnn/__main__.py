"""Command line: ``python -m hetnn devices`` | ``python -m hetnn bench [--quick] [matmul ...]``."""
from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional


def _devices_arg(spec: str):
    from . import device, devices

    if spec == "all":
        return devices()
    return [device(s.strip()) for s in spec.split(",") if s.strip()]


def _cmd_devices(args: argparse.Namespace) -> int:
    from ._device import devices_table

    print(devices_table())
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    import numpy as np

    from .bench.matmul import MATMUL_COLUMNS, MATMUL_SHAPES, ratios, resnet50_shapes, run_matmul
    from .bench.peak import cpu_fma_peak_gflops
    from .bench.report import format_table, write_outputs

    suite = args.suite or "matmul"
    if suite != "matmul":
        print(f"hetnn bench: unknown suite {suite!r} (available: matmul)", file=sys.stderr)
        return 2
    shapes_name = "quick" if args.quick and not args.shapes else (args.shapes or "square")
    if args.batch < 1:
        print(f"hetnn bench: --batch must be >= 1, got {args.batch}", file=sys.stderr)
        return 2
    if shapes_name not in MATMUL_SHAPES:
        print(f"hetnn bench: unknown shape set {shapes_name!r} (available: {', '.join(MATMUL_SHAPES)})",
              file=sys.stderr)
        return 2
    devs = _devices_arg(args.device)
    compare = [c.strip() for c in args.compare.split(",") if c.strip()] if args.compare else []
    repeat, warmup = args.repeat, args.warmup
    max_duration = args.max_duration
    if args.quick:
        repeat, warmup, max_duration = min(repeat, 10), min(warmup, 2), min(max_duration or 1.0, 1.0)
    t0 = time.perf_counter()
    print(f"hetnn matmul benchmark ({shapes_name} shapes, {args.dtype}); devices: "
          f"{', '.join(f'{d.id} ({d.name})' for d in devs)}; NumPy {np.__version__}", flush=True)
    progress = (lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)) if args.verbose else None
    shapes = resnet50_shapes(args.batch) if shapes_name == "resnet50" else MATMUL_SHAPES[shapes_name]
    print(f"measured FP32 FMA peak of the host CPU: {cpu_fma_peak_gflops():.1f} GFLOP/s", flush=True)
    rows = run_matmul(shapes, devs, dtype=args.dtype, compare=compare, n_warmup=warmup, n_repeat=repeat,
                      max_duration=max_duration, clblast_tuning=args.clblast_tuning, progress=progress)
    print(format_table(rows, MATMUL_COLUMNS))
    for line in ratios(rows):
        print("  " + line)
    print(f"(median of up to {repeat} synchronized repeats after {warmup} warm-up calls, at most "
          f"{max_duration} s per row; max rel err = max|C - C64| / max|C64| against float64 NumPy; "
          f"{time.perf_counter() - t0:.1f} s in all)")
    if args.output:
        for p in write_outputs(rows, args.output):
            print(f"wrote {p}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hetnn", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list the devices hetnn can use").set_defaults(func=_cmd_devices)
    b = sub.add_parser("bench", help="run a benchmark suite (default: matmul)")
    b.add_argument("suite", nargs="?", help="suite to run: matmul")
    b.add_argument("--quick", action="store_true", help="a short report on every device (under a minute)")
    b.add_argument("--shapes", help="matmul shape set: quick, square, resnet50")
    b.add_argument("--batch", type=int, default=1, help="batch size of the resnet50 shapes (M scales with it)")
    b.add_argument("--clblast-tuning", help="JSON written by clblast_tuner_xgemm, applied to the CLBlast peer")
    b.add_argument("--device", default="all", help="'all', or comma-separated device specs (default: all)")
    b.add_argument("--compare", default="numpy",
                   help="peers run in the same process: numpy, onednn (a raw oneDNN C++ loop), clblast")
    b.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    b.add_argument("--repeat", type=int, default=20, help="timed repeats per row (default 20)")
    b.add_argument("--warmup", type=int, default=3, help="untimed warm-up calls per row (default 3)")
    b.add_argument("--max-duration", type=float, default=2.0, help="seconds of timing per row at most")
    b.add_argument("--output", help="write PREFIX.csv and PREFIX.json with the rows and full metadata")
    b.add_argument("-v", "--verbose", action="store_true", help="print progress")
    b.set_defaults(func=_cmd_bench)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        print(f"hetnn: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
