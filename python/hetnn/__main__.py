"""hetnn's command line: list the devices, run the benchmark suites, check the machine, tune a kernel."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any, Iterator, List, Optional


def _cmd_devices(args: argparse.Namespace) -> int:
    from ._device import devices_table

    print(devices_table())
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import Report, Options
    from .bench.report import environment
    from .bench.result import keep_partial
    from .bench.suites import default_suite, run_suites

    suite = args.suite or default_suite(args.quick)
    opts = Options(device=args.device, compare=args.compare, quick=args.quick, repeat=args.repeat,
                   warmup=args.warmup, max_duration=args.max_duration, shapes=args.shapes, batch=args.batch,
                   widths=args.widths, depths=args.depths, sizes=args.sizes,
                   dtype=args.dtype, sweep_max=args.sweep_max, max_width=args.max_width, epochs=args.epochs,
                   clblast_tuning=args.clblast_tuning, threads=args.threads, progress=args.progress,
                   ranks=args.ranks, hostfile=args.hostfile, details=args.verbose, processes=args.processes)
    if suite == "scaling" and not args.distributed:  # this process starts no MPI: the ranks are launched
        from .bench import launch

        from .bench.suites import scaling_threads

        ranks = launch.check_ranks(args.ranks, args.hostfile)
        opts.check()
        scaling_threads(opts)
        return launch.run(_strip_launch_flags(args.bench_argv), ranks, args.hostfile, args.threads).returncode
    if args.ranks is not None or args.hostfile is not None:
        raise ValueError("--ranks and --hostfile launch the scaling suite; under mpirun the job's ranks are used")
    prefix = _output_prefix(args.output, f"{suite}-{time.strftime('%Y%m%d-%H%M%S')}")
    opts.check()  # every option before any work
    if args.distributed:
        return _bench_distributed(suite, opts, args, prefix)
    if not args.no_output:
        _check_writable(prefix)  # before the run, not after it: the results would be lost
    try:
        rows = run_suites(suite, opts, lambda text: print(text, flush=True))
    except BaseException as exc:
        done = getattr(exc, "partial_rows", None)
        if done and not args.no_output:
            print(keep_partial(exc, Report(suite, done, "", environment()), prefix), flush=True)
        raise
    if not args.no_output:
        _save(Report(suite, rows, "", environment()), prefix)
    return 0


def _strip_launch_flags(argv: List[str]) -> List[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--ranks", "--hostfile"):
            skip = True
        elif not a.startswith(("--ranks=", "--hostfile=")):
            out.append(a)
    return out


def _bench_distributed(suite: str, opts: Any, args: argparse.Namespace, prefix: str) -> int:
    """Under mpirun: every rank runs the suite on its own devices (ranks on one machine in turn, machines at once;
    the scaling suite spans the ranks); rank 0 prints one table with host and rank per row and writes the files.
    Any rank's error ends every rank (a rank left waiting would hang the job)."""
    import socket

    from . import distributed as dist
    from .bench import Report
    from .bench.report import environment, format_table
    from .bench.suites import main_columns, run_suites

    dist.init()
    world = dist._world()
    rank = world.Get_rank()
    try:
        say = (lambda text: print(text, flush=True)) if rank == 0 else (lambda text: None)
        if rank == 0 and not args.no_output:
            _check_writable(prefix)
        if suite == "scaling":
            rows = run_suites(suite, opts, say)
        else:
            from mpi4py import MPI

            node = world.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
            lines: List[str] = []
            rows = []

            def tee(text: str) -> None:
                lines.append(text)
                say(text)
            for turn in range(node.Get_size()):  # ranks sharing a machine must not disturb each other's timings
                if node.Get_rank() == turn:
                    rows = run_suites(suite, opts, tee)
                dist._idle_barrier(node)
            host = socket.gethostname()
            rows = [{"host": host, "rank": rank, **r} for r in rows]
            gathered = world.gather((host, rank, rows, "\n".join(lines)), root=0)
            if rank == 0:
                for h, r, _, text in gathered[1:]:
                    print(f"\n=== rank {r} on {h} ===\n{text}", flush=True)
                rows = [row for g in gathered for row in g[2]]
                print(f"\nall {world.Get_size()} ranks:")
                for name in dict.fromkeys(r["suite"] for r in rows):
                    cols = [("host", "host", ""), ("rank", "rank", "d")] + main_columns(name)
                    print(f"[{name}]\n" + format_table([r for r in rows if r["suite"] == name], cols), flush=True)
        envs = world.gather(environment(), root=0)
        if rank == 0 and not args.no_output:
            env = dict(envs[0], ranks=[{"rank": i, "host": e.get("host"), "devices": e.get("devices")}
                                       for i, e in enumerate(envs)], world_size=world.Get_size())
            _save(Report(suite, rows, "", env), prefix)
        dist._idle_barrier(world)
    except BaseException as exc:  # noqa: B902 - every rank must end, not wait for this one
        print(f"hetnn: rank {rank}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        world.Abort(2)
    return 0


def _save(result: Any, prefix: str) -> None:
    """Writes the run's files and warns about rows kept out of the ratios."""
    for p in result.save(prefix):
        print(f"wrote {p}")
    excluded = [r for r in result.excluded() if not r.get("flagged")]
    if excluded:
        print(f"warning: {len(excluded)} row(s) kept out of every ratio and aggregate (a wrong result, or "
              f"preempted in at least half of the repeats: see the flags column)", file=sys.stderr)
    flagged = result.flagged()
    if flagged:
        print(f"warning: {len(flagged)} figure(s) above their device's measured ceiling, printed as ERR>peak "
              f"(see the ceiling_error column): measurement errors, not results", file=sys.stderr)


def _check_writable(prefix: str, what: str = "--output", hint: str = "choose another PREFIX or --no-output",
                    files: str = ".csv/.json/.png") -> None:
    """Raises ValueError naming the option when files beside PREFIX cannot be written (tried for real: root may
    write where access() says no, and not where a path component is a file)."""
    from ._loader import _core

    directory = os.path.dirname(os.path.abspath(prefix))
    try:
        os.makedirs(directory, exist_ok=True)
        probe = f"{os.path.abspath(prefix)}.{os.getpid()}.probe"
        with open(probe, "w"):
            pass
        os.remove(probe)
        for ext in files.split("/"):  # a directory or a FIFO named PREFIX.json is found now, not after the run
            if ext.startswith(".") and "*" not in ext and ext != ".png":
                _core.atomic_target(prefix + ext)
    except OSError as exc:
        raise ValueError(f"{what}: cannot write {prefix}{files} ({exc.strerror or exc}); {hint}") from None


def _cmd_study(args: argparse.Namespace) -> int:
    from . import study

    if args.list or not args.name:
        print(study.describe())
        if not args.list:
            print("\npython -m hetnn study NAME [--quick] [--config FILE.json]; --describe NAME lists its settings")
        return 0
    if args.describe:
        print(study.describe(args.name))
        return 0
    study.get(args.name)  # an unknown name before anything else
    default_name = f"study-{args.name}{'-quick' if args.quick else ''}-{time.strftime('%Y%m%d-%H%M%S')}"
    prefix = _output_prefix(args.output, default_name)
    if not args.no_output:
        _check_writable(prefix)
    report = study.run(args.name, quick=args.quick, config=args.config, progress=args.progress,
                       say=lambda text: print(text, flush=True), partial_output=None if args.no_output else prefix,
                       processes=args.processes,
                       **({"device": args.device} if args.device else {}))
    if not args.no_output:
        _save(report, prefix)
    return 0


def _output_prefix(output: Optional[str], default_name: str) -> str:
    """--output: a PREFIX, a directory (the default name inside it), or None (bench-results/DEFAULT)."""
    if output is not None and not output.strip():
        raise ValueError("--output: empty; give a PREFIX (PREFIX.csv, PREFIX.json, PREFIX-*.png) or a directory")
    if output is None:
        return os.path.join("bench-results", default_name)
    if output.endswith(os.sep) or os.path.isdir(output):
        return os.path.join(output, default_name)
    return output


def _doctor() -> int:
    from .doctor import main as doctor_main

    return doctor_main()


DEFAULT_TUNE_SIZES = "1024,512x512x2048,3136x64x576"
CONV_ALGORITHMS = ["auto", "benchmark", "winograd", "winograd4", "implicit", "im2col"]


def _compute_options(p: argparse.ArgumentParser, study: bool) -> None:
    """How bench and study runs compute: --precision and --conv-algorithm (set for this process and the ones it
    starts, in main)."""
    p.add_argument("--precision", choices=["highest", "high"], default=None,
                   help="float32 products: highest (float32; the default) or high (TF32 on devices with matrix units "
                        "for it, said per row; Device.tf32_mode)")
    p.add_argument("--conv-algorithm", choices=CONV_ALGORITHMS, default=None,
                   help="OpenCL convolutions: auto (the device's rule; the default), benchmark (per layer shape, the "
                        "fastest algorithm timed at its first call), or one for every layer "
                        "(Device.set_conv_algorithm)" + ("; not the published set-up unless auto" if study else ""))
MAX_TUNE_DIM = 32768  # a 32768^2 float64 reference is 8 GiB: larger problems do not fit a tuning run


def _parse_sizes(text: str):
    from .bench.conv import conv_gemm_sizes
    from .bench.matmul import RESNET50_BS1

    if text == "resnet50":
        return list(RESNET50_BS1)
    if text == "resnet50-conv":
        return conv_gemm_sizes()
    sizes = []
    for part in text.split(","):
        try:
            dims = [int(x) for x in part.lower().split("x")] if "x" in part.lower() else [int(part)] * 3
        except ValueError:
            dims = []
        if len(dims) != 3 or min(dims) < 1:
            raise ValueError(f"--sizes: {part!r} is not N or MxNxK with sizes >= 1 (e.g. 1024,512x512x2048, or "
                             f"resnet50)")
        if max(dims) > MAX_TUNE_DIM:
            raise ValueError(f"--sizes: {part!r} is too large (at most {MAX_TUNE_DIM} per dimension)")
        sizes.append(tuple(dims))
    return sizes


def _cmd_tune(args: argparse.Namespace) -> int:
    from . import _cache, device
    from .tune import tune_gemm

    if args.kernel not in ("gemm", "conv"):
        print(f"hetnn tune: unknown kernel {args.kernel!r} (available: gemm, conv)", file=sys.stderr)
        return 2
    # conv: the GEMM kernels tuned on the products the OpenCL convolution issues (W @ columns per image)
    sizes = _parse_sizes(args.sizes if args.sizes is not None else
                         ("resnet50-conv" if args.kernel == "conv" else DEFAULT_TUNE_SIZES))
    if not 0 < args.budget < float("inf"):
        raise ValueError(f"--budget must be a number of seconds > 0, got {args.budget}")
    dev = device(args.device)
    path = _cache.tuning_path()
    if path is None:
        raise ValueError("the cache is disabled (HETNN_CACHE_DIR=off): nowhere to store tuning results")
    _check_writable(path, "the tuning cache", "set HETNN_CACHE_DIR to a writable directory", "")
    print(f"tuning GEMM ({args.dtype}) on {dev.id} ({dev.name}, driver {dev.driver_version}) for sizes "
          f"{', '.join('x'.join(map(str, s)) for s in sizes)}; budget {args.budget:.0f} s", flush=True)
    progress = (lambda msg: print("  " + msg, flush=True)) if args.verbose else None
    r = tune_gemm(dev, sizes, dtype=args.dtype, budget=args.budget, progress=progress)
    for cls in [*r.get("by_size", []), r]:
        scope = (f"problems up to {cls['max_macs']:.3g} multiply-adds" if "max_macs" in cls else
                 "larger problems" if "by_size" in r else "every size")
        base = f"{cls['baseline_gflops']:.1f}" if cls["baseline_gflops"] else "-"
        print(f"best for {scope} ({', '.join('x'.join(map(str, s)) for s in cls['sizes'])}): {cls['params']}  "
              f"{cls['gflops']:.1f} GFLOP/s (geometric mean over the sizes; before: {cls['baseline_params']}: {base})")
        if cls["speedup_interleaved"] is not None:
            verdict = "kept" if cls["params"] == cls["search_best"] else "not kept: the incumbent stays"
            print(f"  the search's best ({cls['search_best']}) timed interleaved with the incumbent: "
                  f"{cls['speedup_interleaved']:.2f}x (median per round; {verdict})")
    print(f"{r['tried']} candidates tried, {r['rejected']} rejected")
    print(f"stored in {r['path']}")
    return 0


class Terminated(BaseException):
    """SIGTERM (``timeout``, a batch scheduler's end of job, ``kill``) during a run: raised like Ctrl-C's
    KeyboardInterrupt, so that what the run measured is written before the process ends."""


@contextlib.contextmanager
def _signals_end_the_run(active: bool) -> Iterator[None]:
    """While a run measures, SIGTERM raises Terminated in the main thread (the default would end the process with
    nothing written) and SIGINT KeyboardInterrupt, as Python's own handler does. After the first, the run is ending
    and writes what it measured: a second signal is noted and does not interrupt that (a supervisor signalling the
    process then its group, a wrapper forwarding Ctrl-C, 1-10 ms apart, once cost the partial rows); a third
    abandons the writing. A handler someone else installed is left alone; the previous ones come back after."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}
    previous = {s: signal.getsignal(s) for s in ours}
    mine = [s for s in ours if previous[s] is ours[s]]
    received: List[int] = []

    def stop(signum: int, frame: Any) -> None:
        received.append(signum)
        if len(received) == 2:
            print("hetnn: stopping: writing what was measured (signal again to abandon it)", file=sys.stderr,
                  flush=True)
            return
        if signum == signal.SIGTERM:
            raise Terminated("terminated (SIGTERM)")
        raise KeyboardInterrupt

    for s in mine:
        signal.signal(s, stop)
    try:
        yield
    finally:
        for s in mine:
            signal.signal(s, previous[s])


# bench and study run with OpenBLAS's short spin (_cpus.SHORT_SPINS says why), in a fresh interpreter.
_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def _reexec_with_short_spins(raw: List[str]) -> None:
    from ._cpus import SHORT_SPINS

    if (os.name != "posix" or not sys.executable or any(k in os.environ for k in SHORT_SPINS)
            or any(k in os.environ for k in _MPI_ENV)):  # an MPI rank is not replaced under its launcher
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, "-m", "hetnn", *raw], dict(os.environ, **SHORT_SPINS))
    except OSError:  # a read-only or odd interpreter path: run here, with the library's own spin
        pass


def main(argv: Optional[List[str]] = None) -> int:
    from . import __version__

    p = argparse.ArgumentParser(prog="python -m hetnn", description=__doc__)
    p.add_argument("--version", action="version", version=f"hetnn {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list the devices hetnn can use").set_defaults(func=_cmd_devices)
    b = sub.add_parser("bench", help="run a benchmark suite (default: matmul)")
    b.add_argument("suite", nargs="?",
                   help="suite to run: matmul, maxpool, mlp, conv, transfer, arrays, peak, all (default: matmul; all "
                        "with --quick), or scaling (data-parallel training on 1..N MPI ranks)")
    b.add_argument("--quick", action="store_true", help="a short report of every suite on every device")
    b.add_argument("--shapes", help="matmul shape set: quick, square, resnet50, or your own MxNxK list "
                   "(e.g. 1000x1000x1000,256x3136x576)")
    b.add_argument("--batch", default=None,
                   help="batch sizes to sweep, comma-separated (e.g. 16,32,64,128): the resnet50 matmul shapes (M "
                        "scales with them; default 1), the maxpool layers (default 1,32), the mlp topology study "
                        "and Fashion-MNIST table (default 100,500,1000 and 64), the conv suite's Keras-style CNN")
    b.add_argument("--widths", default=None,
                   help="mlp: first hidden widths of the topology study, comma-separated (default: 50 doubling up "
                        "to --max-width)")
    b.add_argument("--depths", default=None, help="mlp: hidden layers of the topology study, e.g. 1,2 (default 1,2,3)")
    b.add_argument("--sizes", default=None,
                   help="maxpool: sweep image sizes, comma-separated (e.g. 64,128,512; default: powers of two up "
                        "to --sweep-max)")
    b.add_argument("--sweep-max", type=int, help="largest image of the maxpool sweep (power of two; default 8192, "
                   "1024 with --quick)")
    b.add_argument("--max-width", type=int, help="widest first hidden layer of the mlp topology study (default "
                   "6400, 800 with --quick; 25600 for the full classic study: tens of minutes)")
    b.add_argument("--epochs", type=int, help="timed epochs of the mlp suite's Fashion-MNIST table and the conv "
                   "suite's Keras-style CNN (default 3, --quick too: a ratio needs repeats for its interval)")
    b.add_argument("--clblast-tuning", help="JSON written by clblast_tuner_xgemm, applied to the CLBlast peer")
    b.add_argument("--device", default="all", help="'all', or comma-separated device specs (default: all)")
    b.add_argument("--compare", default=None,
                   help="peers run in the same process, comma-separated: numpy, onednn (a raw oneDNN C++ "
                        "loop), clblast, torch, cupy, jax, jax-nojit, numba (matmul), keras (conv) (each on every "
                        "device it sees; skipped with a note when not installed), or none. Default: numpy for "
                        "matmul; numpy,onednn,torch,cupy for maxpool; numpy,torch for mlp")
    _compute_options(b, study=False)
    b.add_argument("--dtype", default="float32",
                   help="float32, float64, float16, bfloat16, or several comma-separated (a precision study)")
    b.add_argument("--repeat", type=int, default=20, help="timed repeats per row (default 20)")
    b.add_argument("--warmup", type=int, default=3, help="untimed warm-up calls per row (default 3)")
    b.add_argument("--max-duration", type=float, default=2.0, help="seconds of timing per row at most")
    b.add_argument("--threads", help="CPU threads for hetnn and every peer alike (BLAS, OpenMP, PyTorch): auto "
                   "(default: as many as CPUs are free now, pinned to them, said in the header), default (each "
                   "library's own), or counts to run every suite with, comma-separated (e.g. 1,2)")
    b.add_argument("--processes", type=int, default=None,
                   help="processes the matmul and maxpool suites' repeats are spread over, run one after another as "
                        "pyperf does, so that an interval covers what a rerun would see (default 3 while each "
                        "gets 3 repeats; 1: this process alone)")
    b.add_argument("--output", help="write PREFIX.csv, PREFIX.json (rows and full metadata) and PREFIX-*.png plots "
                   "(default: bench-results/SUITE-DATE-TIME)")
    b.add_argument("--no-output", action="store_true", help="print the report only, write no files")
    b.add_argument("-v", "--verbose", action="store_true",
                   help="every column of every table, and every row left out of the ratios and aggregates listed "
                        "(default: the columns the question needs, and one line for the rows left out)")
    b.add_argument("--distributed", action="store_true",
                   help="under mpirun: every rank runs the suite on its own devices (ranks on one machine in turn), "
                        "rank 0 prints one table with host and rank per row and writes the files; the scaling "
                        "suite trains over the ranks")
    b.add_argument("--ranks", type=int, default=None,
                   help="scaling suite: MPI ranks to launch (default: this machine's cores, at least 2)")
    b.add_argument("--hostfile", default=None, help="scaling suite: Open MPI hostfile for ranks on several machines")
    b.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bars on stderr (default: when stderr is a terminal, else a line a minute; "
                   "--no-progress: nothing)")
    b.set_defaults(func=_cmd_bench)
    st = sub.add_parser("study", help="reproduce a published study (gemm-libraries, maxpool, mlp-topology, cnn, "
                        "nn-library): its set-up by default, --quick for a short form")
    st.add_argument("name", nargs="?", help="the study (--list names them)")
    st.add_argument("--list", action="store_true", help="list the studies")
    st.add_argument("--describe", action="store_true", help="print the study's set-up and settings, run nothing")
    st.add_argument("--quick", action="store_true", help="a short form of the study (under a minute each on 2 vCPUs)")
    st.add_argument("--config", help="a JSON run-configuration file: an object of settings (--describe lists them), "
                    "optionally with \"study\" and \"quick\"")
    st.add_argument("--device", default=None, help="'all', or comma-separated device specs (default: all)")
    st.add_argument("--output", help="write PREFIX.csv, PREFIX.json and PREFIX-*.png (default: "
                    "bench-results/study-NAME-DATE-TIME)")
    st.add_argument("--no-output", action="store_true", help="print the report only, write no files")
    _compute_options(st, study=True)
    st.add_argument("--processes", type=int, default=None,
                    help="maxpool and gemm-libraries: processes the repeats are spread over, one after another, so "
                         "that an interval covers what a rerun would see (default 3 while each gets 3 repeats; 1: "
                         "this process alone)")
    st.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bars on stderr (default: when stderr is a terminal, else a line a minute; "
                    "--no-progress: nothing)")
    st.set_defaults(func=_cmd_study)
    sub.add_parser("doctor", help="is this machine fit to measure on now? (busy processes, load, steal, "
                   "frequency scaling, huge pages, thread pools)").set_defaults(func=lambda a: _doctor())
    t = sub.add_parser("tune", help="auto-tune a kernel family for one OpenCL device")
    t.add_argument("kernel", help="gemm, or conv (the GEMM kernels on the convolutions' products)")
    t.add_argument("--device", default="opencl", help="device spec (default: the first OpenCL device)")
    t.add_argument("--sizes", default=None,
                   help="comma-separated N (for NxNxN) or MxNxK, 'resnet50' (its convolutions as im2col GEMMs) or "
                        f"'resnet50-conv' (as the OpenCL convolution multiplies: O x OH*OW x C*k*k); default: "
                        f"{DEFAULT_TUNE_SIZES} for gemm, resnet50-conv for conv")
    t.add_argument("--budget", type=float, default=120.0, help="seconds to spend at most (default 120)")
    t.add_argument("--dtype", default="float32", choices=["float32", "float64", "float16", "bfloat16", "tf32"],
                   help="float16/bfloat16: the matrix-unit members (family=mma) where the device has them; tf32: "
                        "the members float32 products run at precision 'high' (TF32 matrix units only)")
    t.add_argument("-v", "--verbose", action="store_true", help="print every candidate")
    t.set_defaults(func=_cmd_tune)
    raw = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(raw)
    if getattr(args, "precision", None):  # this process, and the ones it starts (workers, MPI ranks)
        from ._loader import _core
        _core.set_matmul_precision(args.precision)
        os.environ["HETNN_MATMUL_PRECISION"] = args.precision
    if getattr(args, "conv_algorithm", None):  # every OpenCL device of this process and of those it starts
        os.environ["HETNN_CONV_ALGORITHM"] = args.conv_algorithm
        from . import devices

        for d in devices():
            if d.kind == "opencl":
                d.set_conv_algorithm(args.conv_algorithm)
    if argv is None and args.command in ("bench", "study"):
        _reexec_with_short_spins(raw)
    args.bench_argv = raw[raw.index("bench") + 1:] if "bench" in raw else []
    try:
        with _signals_end_the_run(args.command in ("bench", "study")):
            return args.func(args)
    except Terminated as exc:
        print(f"hetnn: {exc}", file=sys.stderr)
        return 128 + int(signal.SIGTERM)
    except (ValueError, TypeError) as exc:
        print(f"hetnn: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: what was measured is saved by the command itself; no traceback
        print("hetnn: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `python -m hetnn devices | head`: the reader left; say nothing more
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141  # 128 + SIGPIPE, as a shell reports a command ended by the closed pipe
    except OSError as exc:  # the results could not be written (a full disk at the end of a run): said, no traceback
        print(f"hetnn: {exc.strerror if exc.filename is None and exc.strerror else exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
