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
    suite = args.suite or ("all" if args.quick else "matmul")
    if suite not in ("matmul", "maxpool", "mlp", "transfer", "peak", "all"):
        print(f"hetnn bench: unknown suite {suite!r} (available: matmul, maxpool, mlp, transfer, peak, all)",
              file=sys.stderr)
        return 2
    if args.batch < 1:
        print(f"hetnn bench: --batch must be >= 1, got {args.batch}", file=sys.stderr)
        return 2
    rows: list = []
    status = 0
    if suite in ("peak", "all"):  # first: the other suites read the ceilings it stores
        status = _bench_peak(args, rows)
    if status == 0 and suite in ("matmul", "all"):
        status = _bench_matmul(args, rows)
    if status == 0 and suite in ("maxpool", "all"):
        status = _bench_maxpool(args, rows)
    if status == 0 and suite in ("mlp", "all"):
        status = _bench_mlp(args, rows)
    if status == 0 and suite in ("transfer", "all"):
        status = _bench_transfer(args, rows)
    if status == 0 and args.output:
        for p in _write(rows, args.output):
            print(f"wrote {p}")
    return status


def _write(rows: list, prefix: str) -> list:
    from .bench.report import write_outputs

    return write_outputs(rows, prefix)


def _timing_args(args: argparse.Namespace):
    repeat, warmup, max_duration = args.repeat, args.warmup, args.max_duration
    if args.quick:
        repeat, warmup, max_duration = min(repeat, 10), min(warmup, 2), min(max_duration or 1.0, 1.0)
    return repeat, warmup, max_duration


def _bench_matmul(args: argparse.Namespace, all_rows: list) -> int:
    import numpy as np

    from .bench.matmul import MATMUL_COLUMNS, MATMUL_SHAPES, precision_table, ratios, resnet50_shapes, run_matmul
    from .bench.peak import cpu_fma_peak_gflops
    from .bench.report import format_table

    shapes_name = "quick" if args.quick and not args.shapes else (args.shapes or "square")
    if shapes_name not in MATMUL_SHAPES:
        print(f"hetnn bench: unknown shape set {shapes_name!r} (available: {', '.join(MATMUL_SHAPES)})",
              file=sys.stderr)
        return 2
    devs = _devices_arg(args.device)
    compare = _compare(args, "numpy")
    repeat, warmup, max_duration = _timing_args(args)
    t0 = time.perf_counter()
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in ("float32", "float64", "float16", "bfloat16")]
    if bad or not dtypes:
        print(f"hetnn bench: --dtype takes float32, float64, float16, bfloat16 (comma-separated), got {args.dtype!r}",
              file=sys.stderr)
        return 2
    print(f"hetnn matmul benchmark ({shapes_name} shapes, {args.dtype}); devices: "
          f"{', '.join(f'{d.id} ({d.name})' for d in devs)}; NumPy {np.__version__}", flush=True)
    progress = (lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)) if args.verbose else None
    shapes = resnet50_shapes(args.batch) if shapes_name == "resnet50" else MATMUL_SHAPES[shapes_name]
    print(f"measured FP32 FMA peak of the host CPU: {cpu_fma_peak_gflops():.1f} GFLOP/s", flush=True)
    rows: list = []
    notes: list = []
    for dt in dtypes:
        rows += run_matmul(shapes, devs, dtype=dt, compare=[c for c in compare if c != "all"], n_warmup=warmup,
                           n_repeat=repeat, max_duration=max_duration, clblast_tuning=args.clblast_tuning,
                           progress=progress, notes=notes)
    for line in dict.fromkeys(notes):
        print(f"note: {line}")
    columns = MATMUL_COLUMNS if len(dtypes) == 1 else MATMUL_COLUMNS[:4] + [("dtype", "dtype", "")] + MATMUL_COLUMNS[4:]
    print(format_table(rows, columns))
    for dt in dtypes:
        for line in ratios([r for r in rows if r["dtype"] == dt]):
            print(f"  [{dt}] " + line)
    if len(dtypes) > 1:
        print("\nprecision study (hetnn GFLOP/s per dtype; ratios to float32):")
        cols = [("shape", "shape", ""), ("device", "device", "")]
        cols += [(dt, dt, ".1f") for dt in dtypes]
        cols += [(f"{dt}/float32", f"{dt}/f32", ".2f") for dt in dtypes if dt != "float32" and "float32" in dtypes]
        print(format_table(precision_table(rows, dtypes), cols))
    print(f"(median of up to {repeat} synchronized repeats after {warmup} warm-up calls, at most "
          f"{max_duration} s per row; max rel err = max|C - C64| / max|C64| against float64 NumPy; "
          f"{time.perf_counter() - t0:.1f} s in all)\n", flush=True)
    all_rows.extend({"suite": "matmul", **r} for r in rows)
    return 0


def _compare(args: argparse.Namespace, default: str) -> list:
    text = args.compare if args.compare is not None else default
    return [c.strip() for c in text.split(",") if c.strip()]


def _bench_maxpool(args: argparse.Namespace, all_rows: list) -> int:
    from .bench.maxpool import (MAXPOOL_COLUMNS, POOL_PEERS, SWEEP_COLUMNS, layer_cases, ratios, run_maxpool,
                                sweep_cases, target_cases)
    from .bench.peak import stream_gbps
    from .bench.report import format_table

    devs = _devices_arg(args.device)
    compare = [c for c in _compare(args, "numpy,onednn,torch,cupy") if c in POOL_PEERS]
    repeat, warmup, max_duration = _timing_args(args)
    batches = [1] if args.quick else sorted({1, 32, args.batch})
    sweep_max = args.sweep_max or (1024 if args.quick else 8192)
    if sweep_max < 4 or sweep_max & (sweep_max - 1):
        print(f"hetnn bench: --sweep-max must be a power of two >= 4, got {sweep_max}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    print(f"hetnn max-pool benchmark (float32); devices: {', '.join(f'{d.id} ({d.name})' for d in devs)}", flush=True)
    print(f"measured STREAM triad bandwidth of the host: {stream_gbps():.1f} GB/s", flush=True)
    progress = (lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)) if args.verbose else None
    notes: list = []
    timing = dict(n_warmup=warmup, n_repeat=repeat, max_duration=max_duration, progress=progress, notes=notes)
    layer_rows = run_maxpool(target_cases() + layer_cases(batches), devs, compare=compare, **timing)
    sweep_rows = run_maxpool(sweep_cases(sweep_max), devs, compare=[c for c in compare if c != "onednn"],
                             backward=False, transfers=True, **timing)
    for line in dict.fromkeys(notes):
        print(f"note: {line}")
    print("\nlayers (forward without indices = inference; fwd+idx = training forward; bwd from the indices):")
    print(format_table(layer_rows, MAXPOOL_COLUMNS))
    print(f"\nsweep: square single-channel images, 2x2 windows, stride 2 (transfers of the input and the output "
          f"timed separately):")
    print(format_table(sweep_rows, SWEEP_COLUMNS))
    for line in ratios(layer_rows):
        print("  " + line)
    print(f"(median of up to {repeat} synchronized repeats after {warmup} warm-up calls, at most {max_duration} s "
          f"per row; GB/s counts input + output bytes; {time.perf_counter() - t0:.1f} s in all)\n", flush=True)
    all_rows.extend({"suite": "maxpool", **r} for r in layer_rows + sweep_rows)
    return 0


def _bench_mlp(args: argparse.Namespace, all_rows: list) -> int:
    from .bench.mlp import MLP_MNIST_COLUMNS, MLP_TOPOLOGY_COLUMNS, mnist_ratios, run_mnist, run_topology
    from .bench.report import format_table

    devs = _devices_arg(args.device)
    compare = [c for c in _compare(args, "numpy,torch") if c in ("numpy", "torch")]
    max_width = args.max_width or (800 if args.quick else 6400)
    epochs = args.epochs or (1 if args.quick else 3)
    if max_width < 50 or epochs < 1:
        print("hetnn bench: --max-width must be >= 50 and --epochs >= 1", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    print(f"hetnn MLP benchmark (float32); devices: {', '.join(f'{d.id} ({d.name})' for d in devs)}", flush=True)
    progress = (lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)) if args.verbose else None
    notes: list = []
    try:
        mnist = run_mnist(devs, epochs=epochs, quick=args.quick, compare=compare, progress=progress, notes=notes)
    except FileNotFoundError as exc:
        mnist = []
        notes.append(str(exc))
    topo = run_topology(devs, max_width=max_width, batches=(100, 1000) if args.quick else (100, 500, 1000),
                        n_samples=2000 if args.quick else 5000, progress=progress)
    for line in dict.fromkeys(notes):
        print(f"note: {line}")
    if mnist:
        print(f"\nFashion-MNIST: 784 inputs, hidden ReLU layers, 10 outputs, softmax cross-entropy, SGD lr 0.1 "
              f"momentum 0.9, batch 64, {epochs} epoch(s) from the same initial weights (s/epoch: median):")
        print(format_table(mnist, MLP_MNIST_COLUMNS))
        for line in mnist_ratios(mnist):
            print("  " + line)
    print("\ntopology study: 50 inputs (synthetic solar sensors), hidden ReLU layers halving in width, 1 output, MSE, "
          "plain SGD; one training epoch and one inference pass over the samples:")
    print(format_table(topo, MLP_TOPOLOGY_COLUMNS))
    print(f"({time.perf_counter() - t0:.1f} s in all)\n", flush=True)
    all_rows.extend({"suite": "mlp-fashion-mnist", **{k: v for k, v in r.items() if k != "device_time"}}
                    for r in mnist)
    all_rows.extend({"suite": "mlp-topology", **r} for r in topo)
    return 0


def _bench_peak(args: argparse.Namespace, all_rows: list) -> int:
    from .bench.peak import PEAK_COLUMNS, cpu_fma_peak_gflops, run_peak
    from .bench.report import format_table

    devs = _devices_arg(args.device)
    t0 = time.perf_counter()
    print(f"hetnn peak benchmark (measured ceilings); devices: {', '.join(f'{d.id} ({d.name})' for d in devs)}",
          flush=True)
    progress = (lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)) if args.verbose else None
    rows = run_peak(devs, progress=progress)
    print(format_table(rows, PEAK_COLUMNS))
    host = cpu_fma_peak_gflops()
    for r in rows:
        if r["device"] != "cpu":
            print(f"  {r['device']}: FMA kernel {r['fp32_gflops']:.1f} GFLOP/s = {r['fp32_gflops'] / host:.2f}x the "
                  f"host CPU's native FMA loop ({host:.1f})")
    print(f"(stored in the cache directory for the other suites; {time.perf_counter() - t0:.1f} s in all)\n",
          flush=True)
    all_rows.extend({"suite": "peak", **r} for r in rows)
    return 0


def _bench_transfer(args: argparse.Namespace, all_rows: list) -> int:
    from .bench.report import format_table
    from .bench.transfer import TRANSFER_COLUMNS, run_transfer, summary, transfer_sizes

    devs = _devices_arg(args.device)
    repeat, warmup, max_duration = _timing_args(args)
    max_bytes = 16 << 20 if args.quick else 256 << 20
    t0 = time.perf_counter()
    print(f"hetnn transfer benchmark; devices: {', '.join(f'{d.id} ({d.name})' for d in devs)}", flush=True)
    progress = (lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)) if args.verbose else None
    rows = run_transfer(devs, transfer_sizes(max_bytes), n_warmup=warmup, n_repeat=repeat,
                        max_duration=max_duration, progress=progress)
    print(format_table(rows, TRANSFER_COLUMNS))
    for line in summary(rows):
        print("  " + line)
    print(f"(median of up to {repeat} synchronized repeats after {warmup} warm-up calls; device-timed where the "
          f"device times its copies; {time.perf_counter() - t0:.1f} s in all)\n", flush=True)
    all_rows.extend({"suite": "transfer", **r} for r in rows)
    return 0


def _parse_sizes(text: str):
    from .bench.matmul import RESNET50_BS1

    if text == "resnet50":
        return list(RESNET50_BS1)
    sizes = []
    for part in text.split(","):
        dims = [int(x) for x in part.lower().split("x")] if "x" in part.lower() else [int(part)] * 3
        if len(dims) != 3 or min(dims) < 1:
            raise ValueError(f"--sizes: {part!r} is not N or MxNxK")
        sizes.append(tuple(dims))
    return sizes


def _cmd_tune(args: argparse.Namespace) -> int:
    from . import device
    from .tune import tune_gemm

    if args.kernel != "gemm":
        print(f"hetnn tune: unknown kernel {args.kernel!r} (available: gemm)", file=sys.stderr)
        return 2
    dev = device(args.device)
    sizes = _parse_sizes(args.sizes)
    print(f"tuning GEMM ({args.dtype}) on {dev.id} ({dev.name}, driver {dev.driver_version}) for sizes "
          f"{', '.join('x'.join(map(str, s)) for s in sizes)}; budget {args.budget:.0f} s", flush=True)
    progress = (lambda msg: print("  " + msg, flush=True)) if args.verbose else None
    r = tune_gemm(dev, sizes, dtype=args.dtype, budget=args.budget, progress=progress)
    base = f"{r['baseline_gflops']:.1f}" if r["baseline_gflops"] else "-"
    print(f"best: {r['params']}  {r['gflops']:.1f} GFLOP/s (database default {r['baseline_params']}: {base} GFLOP/s); "
          f"{r['tried']} candidates tried, {r['rejected']} rejected")
    print(f"stored in {r['path']}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hetnn", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list the devices hetnn can use").set_defaults(func=_cmd_devices)
    b = sub.add_parser("bench", help="run a benchmark suite (default: matmul)")
    b.add_argument("suite", nargs="?",
                   help="suite to run: matmul, maxpool, mlp, transfer, peak, all (default: matmul; all with --quick)")
    b.add_argument("--quick", action="store_true", help="a short report of every suite on every device")
    b.add_argument("--shapes", help="matmul shape set: quick, square, resnet50")
    b.add_argument("--batch", type=int, default=1,
                   help="batch size of the resnet50 matmul shapes (M scales with it); maxpool adds it to 1 and 32")
    b.add_argument("--sweep-max", type=int, help="largest image of the maxpool sweep (power of two; default 8192, "
                   "1024 with --quick)")
    b.add_argument("--max-width", type=int, help="widest first hidden layer of the mlp topology study (default "
                   "6400, 800 with --quick; 25600 for the full classic study: tens of minutes)")
    b.add_argument("--epochs", type=int, help="Fashion-MNIST epochs of the mlp suite (default 3, 1 with --quick)")
    b.add_argument("--clblast-tuning", help="JSON written by clblast_tuner_xgemm, applied to the CLBlast peer")
    b.add_argument("--device", default="all", help="'all', or comma-separated device specs (default: all)")
    b.add_argument("--compare", default=None,
                   help="peers run in the same process, comma-separated: numpy, onednn (a raw oneDNN C++ "
                        "loop), clblast, torch, cupy, jax (each on every device it sees; skipped with a note when "
                        "not installed). Default: numpy for matmul; numpy,onednn,torch,cupy for maxpool; "
                        "numpy,torch for mlp")
    b.add_argument("--dtype", default="float32",
                   help="float32, float64, float16, bfloat16, or several comma-separated (a precision study)")
    b.add_argument("--repeat", type=int, default=20, help="timed repeats per row (default 20)")
    b.add_argument("--warmup", type=int, default=3, help="untimed warm-up calls per row (default 3)")
    b.add_argument("--max-duration", type=float, default=2.0, help="seconds of timing per row at most")
    b.add_argument("--output", help="write PREFIX.csv and PREFIX.json with the rows and full metadata")
    b.add_argument("-v", "--verbose", action="store_true", help="print progress")
    b.set_defaults(func=_cmd_bench)
    t = sub.add_parser("tune", help="auto-tune a kernel family for one OpenCL device")
    t.add_argument("kernel", help="gemm")
    t.add_argument("--device", default="opencl", help="device spec (default: the first OpenCL device)")
    t.add_argument("--sizes", default="1024,512x512x2048,3136x64x576",
                   help="comma-separated N (for NxNxN) or MxNxK, or 'resnet50' (default: 1024,512x512x2048,3136x64x576)")
    t.add_argument("--budget", type=float, default=120.0, help="seconds to spend at most (default 120)")
    t.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    t.add_argument("-v", "--verbose", action="store_true", help="print every candidate")
    t.set_defaults(func=_cmd_tune)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        print(f"hetnn: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
