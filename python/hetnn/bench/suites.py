"""The benchmark suites behind ``python -m hetnn bench`` and :func:`hetnn.bench.run`: one front for all of them.

Each suite takes the same :class:`Options`, writes its report through ``say`` (the terminal for the command line, a
string for notebooks) and returns its rows, tagged with ``suite``. Bad options raise ``ValueError`` naming the
option, before anything is measured.
"""
from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _cpus, _workers
from .._device import Device
from .._check import is_int, is_real
from .._device import conv_algorithm_line, conv_choice_notes
from .._precision import get_matmul_precision, precision_line

SUITES = ("peak", "matmul", "maxpool", "mlp", "conv", "transfer", "arrays", "scaling")
ALL = SUITES[:-1]  # "all": every suite on this process's devices (scaling runs over MPI ranks: named alone)
# the suites whose every timing goes through hetnn.interleave run in worker processes too (hetnn._workers); the
# others time training epochs, which a worker would have to train again
IN_PROCESSES = ("matmul", "maxpool")
DEFAULT_PROCESSES = 3
MIN_SHARE = 3  # repeats per process at least, for the default
Say = Callable[[str], None]


@dataclass
class Options:
    """Options shared by every suite (the command line's flags; :func:`hetnn.bench.run`'s keyword arguments)."""
    device: Union[str, Sequence[Any]] = "all"   # "all", "cpu,opencl:0:0", or a list of devices / specs
    compare: Optional[Union[str, Sequence[str]]] = None  # peers; None: each suite's default
    quick: bool = False
    repeat: int = 20
    warmup: int = 3
    max_duration: float = 2.0
    shapes: Any = None                  # matmul: quick, square, resnet50, or a list of (M, N, K) / (label, M, N, K)
    batch: Any = None                   # batch sizes, 16 or "16,32,64" or [16, 32]: matmul resnet50 (M scales with
                                        # them), maxpool layers, mlp (topology and Fashion-MNIST), conv (Keras CNN)
    widths: Any = None                  # mlp: first hidden widths of the topology study ("50,100,200")
    depths: Any = None                  # mlp: hidden layers of the topology study ("1,2,3")
    sizes: Any = None                   # maxpool: sweep image sizes ("64,128,256")
    dtype: str = "float32"              # matmul: one dtype or several, comma-separated
    sweep_max: Optional[int] = None     # maxpool: largest sweep image
    max_width: Optional[int] = None     # mlp: widest first hidden layer of the topology study
    epochs: Optional[int] = None        # mlp: Fashion-MNIST epochs
    clblast_tuning: Optional[str] = None
    progress: Optional[bool] = None     # tqdm progress bars; None: when stderr is a terminal or in Jupyter
    threads: Any = None                 # CPU thread counts "1,2" or [1, 2]; None or "auto": the CPUs found free
                                        # (hetnn._cpus); "default": each library's own default
    ranks: Optional[int] = None         # scaling: MPI ranks to launch (default: the machine's cores, at least 2)
    hostfile: Optional[str] = None      # scaling: Open MPI hostfile (ranks on several machines)
    details: bool = False               # -v: every column of every table, and every row kept out of the ratios
                                        # one line each (else the columns the question needs, and one line)
    processes: Optional[int] = None     # processes the matmul and maxpool suites' repeats are spread over, one after
                                        # another (hetnn._workers); None: DEFAULT_PROCESSES
    notes: List[str] = field(default_factory=list)
    _share: int = field(default=1, repr=False, compare=False)  # the processes the running suite's repeats span

    def process_count(self) -> int:
        """--processes; when not set, DEFAULT_PROCESSES as long as each gets MIN_SHARE repeats (a process with
        fewer shows no spread of its own: a run of a few repeats stays in one process)."""
        if self.processes is not None:
            return int(self.processes)
        return max(1, min(DEFAULT_PROCESSES, self._timing_in_all()[0] // MIN_SHARE))

    def matmul_shapes(self) -> Tuple[str, Optional[List[Any]]]:
        """--shapes: (the shape set's name, None) or ("custom", the (label, M, N, K) list)."""
        from .matmul import MATMUL_SHAPES

        if self.shapes is not None and not isinstance(self.shapes, str):  # from Python: (M, N, K) or (label, M, N, K)
            return "custom", _shape_list(self.shapes)
        if isinstance(self.shapes, str) and self.shapes not in MATMUL_SHAPES and "x" in self.shapes.lower():
            return "custom", _shape_list(_parse_mnk(self.shapes, list(MATMUL_SHAPES)))
        name = "quick" if self.quick and not self.shapes else (self.shapes or "square")
        if name not in MATMUL_SHAPES:
            raise ValueError(f"--shapes: unknown shape set {name!r} (available: {', '.join(MATMUL_SHAPES)})")
        return name, None

    def dtypes(self) -> List[str]:
        """--dtype: the matmul suite's dtypes."""
        text = self.dtype if isinstance(self.dtype, str) else ""
        dtypes = [d.strip() for d in text.split(",") if d.strip()]
        if not dtypes or any(d not in ("float32", "float64", "float16", "bfloat16", "tf32") for d in dtypes):
            raise ValueError(f"--dtype takes float32, float64, float16, bfloat16, tf32 (float32 data at precision "
                             f"'high'; comma-separated), got {self.dtype!r}")
        return dtypes

    def check(self) -> None:
        # every option is checked here, before any suite or worker process runs (a bad --dtype once started two
        # worker processes that each failed on it)
        self.matmul_shapes()
        self.dtypes()
        v = self.processes
        if v is not None and (not is_int(v) or v < 1 or v > 64):
            raise ValueError(f"--processes must be an integer from 1 to 64, got {v!r}")
        v = self.repeat
        if not is_int(v) or v < 1:
            raise ValueError(f"--repeat must be an integer >= 1, got {v!r}")
        self.batches()
        self.widths_list()
        self.depths_list()
        self.sizes_list()
        if not is_int(self.warmup) or self.warmup < 0:
            raise ValueError(f"--warmup must be an integer >= 0, got {self.warmup!r}")
        if not is_real(self.max_duration) or \
                not self.max_duration > 0:
            raise ValueError(f"--max-duration must be a number of seconds > 0, got {self.max_duration!r}")
        for name in ("quick", "progress", "details"):
            v = getattr(self, name)
            if not isinstance(v, (bool, np.bool_)) and not (name == "progress" and v is None):
                raise TypeError(f"--{name} must be a bool, got {v!r}")
        for name in ("sweep_max", "max_width", "epochs"):
            v = getattr(self, name)
            if v is not None and (not is_int(v)):
                raise TypeError(f"--{name.replace('_', '-')} must be an integer, got {v!r}")
        # checked here, before any suite runs (a bad --epochs once surfaced after the other suites had run)
        if self.sweep_max is not None and (self.sweep_max < 4 or self.sweep_max & (self.sweep_max - 1)):
            raise ValueError(f"--sweep-max must be a power of two >= 4, got {self.sweep_max}")
        if self.max_width is not None and self.max_width < 50:
            raise ValueError(f"--max-width must be >= 50, got {self.max_width}")
        if self.epochs is not None and self.epochs < 1:
            raise ValueError(f"--epochs must be >= 1, got {self.epochs}")
        self.thread_counts()
        if self.ranks is not None or self.hostfile is not None:
            from .launch import check_ranks
            check_ranks(self.ranks if self.ranks is not None else 2, self.hostfile)
        if self.clblast_tuning is not None:
            from .matmul import clblast_params
            try:
                clblast_params(self.clblast_tuning)
            except (OSError, ValueError, TypeError, AttributeError, IndexError) as exc:
                raise ValueError(f"--clblast-tuning: cannot use {self.clblast_tuning!r} ({type(exc).__name__}: "
                                 f"{exc})") from None
        if not isinstance(self.dtype, str):
            raise TypeError(f"--dtype must be a string such as 'float32' or 'float32,float16', got {self.dtype!r}")
        self.peers("")  # every name known, before anything runs


    def devices(self) -> List[Device]:
        from .. import device, devices

        spec = self.device
        if spec is None or (isinstance(spec, str) and spec == "all"):
            return devices()
        items = [s.strip() for s in spec.split(",") if s.strip()] if isinstance(spec, str) else list(spec)
        if not items:
            raise ValueError(f"--device: expected 'all' or device specs, got {spec!r}")
        return [d if isinstance(d, Device) else device(d) for d in items]

    @staticmethod
    def _ints(value: Any, flag: str, low: int = 1, high: Optional[int] = None) -> Optional[List[int]]:
        """A sweep from the command line or Python: "16,32,64", 16 or [16, 32] as a list of ints (None: not set)."""
        if value is None:
            return None
        if isinstance(value, bool):
            items: List[Any] = [value]
        elif isinstance(value, str):
            items = [p.strip() for p in value.split(",") if p.strip()]
        elif is_int(value):
            items = [value]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise TypeError(f"{flag} takes integers such as 16,32,64 (or a list of them), got {value!r}")
        out = []
        for v in items:
            n = int(v) if (isinstance(v, str) and v.isdigit()) or (is_int(v) and not isinstance(v, bool)) else None
            if n is None or n < low or (high is not None and n > high):
                limit = f">= {low}" + (f" and <= {high}" if high is not None else "")
                raise ValueError(f"{flag} takes integers {limit} such as 16,32,64, got {value!r}")
            out.append(n)
        if not out:
            raise ValueError(f"{flag} takes integers such as 16,32,64, got {value!r}")
        return out

    def batches(self) -> Optional[List[int]]:
        """--batch as a list (None: each suite's default)."""
        return self._ints(self.batch, "--batch")

    def widths_list(self) -> Optional[List[int]]:
        return self._ints(self.widths, "--widths", low=2)

    def depths_list(self) -> Optional[List[int]]:
        return self._ints(self.depths, "--depths", high=3)

    def sizes_list(self) -> Optional[List[int]]:
        return self._ints(self.sizes, "--sizes", low=2)

    def auto_threads(self) -> bool:
        """Whether the thread count is chosen per run from the CPUs found free (the default)."""
        return self.threads is None or (isinstance(self.threads, str) and self.threads.strip() == "auto")

    def thread_counts(self) -> List[Optional[int]]:
        """The --threads values ([None]: none set by the user: "auto" or "default")."""
        if self.threads is None or (isinstance(self.threads, str) and self.threads.strip() in ("auto", "default")):
            return [None]
        items = self.threads.split(",") if isinstance(self.threads, str) else (
            [self.threads] if isinstance(self.threads, (int, np.integer)) else list(self.threads))
        out: List[Optional[int]] = []
        for t in items:
            try:
                n = int(str(t).strip())
            except ValueError:
                n = 0
            if n < 1 or isinstance(t, bool):
                raise ValueError(f"--threads: expected auto, default or thread counts >= 1 such as 1,2, got "
                                 f"{self.threads!r}")
            out.append(n)
        if not out:
            raise ValueError(f"--threads: expected auto, default or thread counts >= 1 such as 1,2, got "
                             f"{self.threads!r}")
        return out

    def peers(self, default: str) -> List[str]:
        """The peer libraries to run ("none": hetnn alone)."""
        from .._check import shown
        from .matmul import PEERS
        from .maxpool import POOL_PEERS

        text = self.compare if self.compare is not None else default
        if not isinstance(text, str) and not (isinstance(text, (list, tuple)) and
                                              all(isinstance(c, str) for c in text)):
            raise TypeError(f"--compare must be names separated by commas or a list of names, got {shown(text)}")
        items = text.split(",") if isinstance(text, str) else list(text)
        out = [c.strip() for c in items if c.strip()]
        known = dict.fromkeys([*PEERS, *POOL_PEERS, "im2col", "keras", "all", "none"])
        unknown = [c for c in out if c not in known]
        if unknown:  # here, before any suite runs (a suite found it after the others had run)
            raise ValueError(f"--compare: unknown peer(s) {shown(', '.join(unknown))}; the suites compare with "
                             f"{', '.join(known)}")
        return [] if out == ["none"] else out

    def show_progress(self) -> bool:
        """``progress``, where None means: when someone watches (stderr a terminal, or a Jupyter kernel)."""
        if self.progress is not None:
            return bool(self.progress)
        return sys.stderr.isatty() or "ipykernel" in sys.modules

    def progress_mode(self) -> Optional[str]:
        """"bar" (tqdm) when shown, else "log" (a plain line now and then: a run of hours written to a file shows
        where it is) unless progress=False asked for silence (None)."""
        if self.show_progress():
            return "bar"
        return "log" if self.progress is None else None

    def _timing_in_all(self) -> Tuple[int, int, float]:
        """(repeats, warm-up calls, max_duration) of a row over all its processes."""
        repeat, warmup, max_duration = self.repeat, self.warmup, self.max_duration
        if self.quick:
            repeat, warmup, max_duration = min(repeat, 10), min(warmup, 2), min(max_duration or 1.0, 1.0)
        return repeat, warmup, max_duration

    def timing(self) -> Dict[str, Any]:
        repeat, warmup, max_duration = self._timing_in_all()
        # spread over processes: each takes its share of the repeats and of the time (warm-up calls in every one)
        n_repeat, each = _workers.shares(repeat, max_duration, max(1, int(self._share)))
        return {"n_repeat": n_repeat, "n_warmup": warmup, "max_duration": each}


LOG_EVERY_S = 60.0  # "log" progress: at most a line a minute, none in a run's first minute


class _Progress:
    """Progress of one suite or study, each callback naming the step that starts: a tqdm bar ("bar"), a plain
    stderr line at most every LOG_EVERY_S seconds ("log": for runs written to a file), or nothing (None)."""

    def __init__(self, mode: Optional[str], desc: str) -> None:
        self.bar = None
        self.desc, self.log, self.steps, self.total = desc, mode == "log", 0, 0
        self.t0 = self.last = time.monotonic()
        if mode == "bar":
            try:
                from .._bars import tqdm_class

                tqdm = tqdm_class()
            except ImportError:  # a core dependency; without it, no bar
                return
            self.bar = tqdm(desc=desc, unit="row", file=sys.stderr, leave=False, dynamic_ncols=True)

    def expect(self, n: int) -> None:
        """n more steps to come (the runners announce their step counts, so the bar shows a total)."""
        self.total += n
        if self.bar is not None:
            self.bar.total = (self.bar.total or 0) + n
            self.bar.refresh()

    def __call__(self, msg: str) -> None:
        self.steps += 1
        if self.bar is not None:
            self.bar.set_postfix_str(msg, refresh=False)
            self.bar.update(1)
        elif self.log and time.monotonic() - self.last >= LOG_EVERY_S:
            self.last = time.monotonic()
            minutes, seconds = divmod(int(self.last - self.t0), 60)
            of = f" of {self.total}" if self.total else ""
            print(f"[{self.desc} {minutes}:{seconds:02d}] step {self.steps}{of}: {msg}", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def callback(self) -> Optional[Callable[[str], None]]:
        return self if self.bar is not None or self.log else None


def _devices_line(devs: Sequence[Device]) -> str:
    return ", ".join(f"{d.id} ({d.name})" for d in devs)


def _timing_line(t: Dict[str, Any], processes: int = 1) -> str:
    if processes > 1:
        return (f"median of up to {t['n_repeat'] * processes} synchronized repeats, {t['n_repeat']} in each of "
                f"{processes} processes run one after another, after {t['n_warmup']} warm-up calls in each, at most "
                f"{t['max_duration'] * processes:.3g} s per row in all")
    return (f"median of up to {t['n_repeat']} synchronized repeats after {t['n_warmup']} warm-up calls, at most "
            f"{t['max_duration']:.3g} s per row")


def _elapsed(t0: float, opts: Options) -> str:
    took = time.perf_counter() - t0
    return f"{took:.1f} s in this process" if opts._share > 1 else f"{took:.1f} s in all"


def suite_peak(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    from .peak import PEAK_COLUMNS, cpu_fma_peak_gflops, run_peak
    from .report import format_table

    devs = opts.devices()
    t0 = time.perf_counter()
    say(f"hetnn peak benchmark (measured ceilings); devices: {_devices_line(devs)}")
    rows = run_peak(devs, progress=progress.callback())
    say(format_table(rows, PEAK_COLUMNS, opts.details))
    host = cpu_fma_peak_gflops()
    for r in rows:
        if r["device"] != "cpu":
            say(f"  {r['device']}: FMA kernel {r['fp32_gflops']:.1f} GFLOP/s = {r['fp32_gflops'] / host:.2f}x the "
                f"host CPU's native FMA loop ({host:.1f}; ceilings are best runs: no interval; flags: "
                f"{'measured under load' if r.get('under_load') else 'none'})")
    say(f"(stored in the cache directory for the other suites; {time.perf_counter() - t0:.1f} s in all)\n")
    return rows


def _shape_list(shapes: Any) -> List[Any]:
    out = []
    for sh in shapes:
        t = tuple(sh) if isinstance(sh, (tuple, list)) else ()
        dims = t[1:] if len(t) == 4 and isinstance(t[0], str) else t
        if len(dims) != 3 or not all(is_int(d) and d >= 1
                                     for d in dims):
            raise ValueError(f"shapes: each entry must be (M, N, K) or (label, M, N, K) with sizes >= 1, got {sh!r}")
        m, n, k = (int(d) for d in dims)
        out.append((t[0] if len(t) == 4 else f"{m}x{n}x{k}", m, n, k))
    if not out:
        raise ValueError("shapes: an empty list")
    return out


def _parse_mnk(text: str, sets: Sequence[str]) -> List[Any]:
    """--shapes 1000x1000x1000,256x3136x576: (M, N, K) triples from the command line."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        dims = part.lower().split("x")
        if len(dims) != 3 or not all(d.strip().isdigit() and int(d) >= 1 for d in dims):
            raise ValueError(f"--shapes: {part!r} is not MxNxK with sizes >= 1 (e.g. 1000x1000x1000,256x3136x576), "
                             f"and not a shape set ({', '.join(sets)})")
        out.append(tuple(int(d) for d in dims))
    return out


def suite_matmul(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    from .matmul import MATMUL_COLUMNS, MATMUL_SHAPES, precision_table, ratios, resnet50_shapes, run_matmul
    from .peak import ceiling_line, measure_missing
    from .report import format_table

    shapes_name, custom = opts.matmul_shapes()
    dtypes = opts.dtypes()
    devs = opts.devices()
    compare = [c for c in opts.peers("numpy") if c != "all"]
    timing = opts.timing()
    t0 = time.perf_counter()
    say(f"hetnn matmul benchmark ({shapes_name} shapes, {opts.dtype}); devices: {_devices_line(devs)}; "
        f"NumPy {np.__version__}")
    batches = opts.batches() or [1]
    if shapes_name == "resnet50":
        shapes = [(f"{sh[0]} bs{b}" if len(batches) > 1 else sh[0], *sh[1:]) for b in batches
                  for sh in resnet50_shapes(b)]
    else:
        shapes = custom or MATMUL_SHAPES[shapes_name]
    measure_missing(devs, say)
    say(ceiling_line())
    rows: List[Dict[str, Any]] = []
    notes: List[str] = []
    for dt in dtypes:
        rows += run_matmul(shapes, devs, dtype=dt, compare=compare, clblast_tuning=opts.clblast_tuning,
                           progress=progress.callback(), notes=notes, **timing)
    for line in dict.fromkeys(notes):
        say(f"note: {line}")
    columns = MATMUL_COLUMNS if len(dtypes) == 1 else MATMUL_COLUMNS[:4] + [("dtype", "dtype", "")] + MATMUL_COLUMNS[4:]
    if any(dt in ("float16", "bfloat16", "tf32") for dt in dtypes):  # 16-bit or TF32 units, or float32
        columns = columns[:-1] + [("compute", "compute", "")] + columns[-1:]
    say(format_table(rows, columns, opts.details))
    for dt in dtypes:
        for line in ratios([r for r in rows if r["dtype"] == dt], opts.details):
            say(f"  [{dt}] " + line)
    if len(dtypes) > 1:
        say("\nprecision study (hetnn GFLOP/s per dtype; ratios to float32):")
        cols = [("shape", "shape", ""), ("device", "device", "")]
        cols += [(dt, dt, ".1f") for dt in dtypes]
        cols += [(f"{dt} compute", f"{dt} compute", "") for dt in dtypes if dt in ("float16", "bfloat16", "tf32")]
        cols += [(f"{dt}/float32", f"{dt}/f32", ".2f") for dt in dtypes if dt != "float32" and "float32" in dtypes]
        say(format_table(precision_table(rows, dtypes), cols))
    say(f"({_timing_line(timing, opts._share)}; aggregate: GFLOP/s = total FLOP / total time, mean GFLOP/s = the "
        f"shapes' arithmetic mean; max rel err = max|C - C64| / max|C64| against float64 NumPy (the result-agreement "
        f"column); {_elapsed(t0, opts)})\n")
    return rows


def suite_maxpool(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    from .maxpool import (MAXPOOL_COLUMNS, POOL_PEERS, SWEEP_COLUMNS, layer_cases, ratios, run_maxpool,
                          sweep_cases, target_cases)
    from .peak import measure_missing, stream_gbps
    from .report import format_table

    batches = opts.batches() or ([1] if opts.quick else [1, 32])
    sweep_max = opts.sweep_max if opts.sweep_max is not None else (1024 if opts.quick else 8192)
    sweep = [(f"{n}x{n}", 1, 1, n, n, 2, 2, 0) for n in opts.sizes_list() or []] or sweep_cases(sweep_max)
    devs = opts.devices()
    compare = [c for c in opts.peers("numpy,onednn,torch,cupy") if c in POOL_PEERS]
    timing = opts.timing()
    t0 = time.perf_counter()
    say(f"hetnn max-pool benchmark (float32); devices: {_devices_line(devs)}")
    say(f"measured STREAM triad bandwidth of the host: {stream_gbps():.1f} GB/s")
    measure_missing(devs, say)
    notes: List[str] = []
    kw = dict(progress=progress.callback(), notes=notes, **timing)
    layer_rows = run_maxpool(target_cases() + layer_cases(batches), devs, compare=compare, **kw)
    sweep_rows = run_maxpool(sweep, devs, compare=[c for c in compare if c != "onednn"],
                             backward=False, transfers=True, **kw)
    for r in layer_rows:
        r["part"] = "layers"
    for r in sweep_rows:
        r["part"] = "sweep"
    for line in dict.fromkeys(notes):
        say(f"note: {line}")
    say("\nlayers (forward without indices = inference; fwd+idx = training forward; bwd from the indices):")
    say(format_table(layer_rows, MAXPOOL_COLUMNS, opts.details))
    say("\nsweep: square single-channel images, 2x2 windows, stride 2 (transfers of the input and the output "
        "timed separately):")
    say(format_table(sweep_rows, SWEEP_COLUMNS, opts.details))
    for line in ratios(layer_rows):
        say("  " + line)
    say(f"({_timing_line(timing, opts._share)}; GB/s counts input + output bytes; % mem peak: forward GB/s over the "
        f"device's measured memory ceiling (it bounds working sets beyond the last-level cache only); "
        f"{_elapsed(t0, opts)})\n")
    return layer_rows + sweep_rows


def suite_mlp(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    from .mlp import MLP_MNIST_COLUMNS, MLP_TOPOLOGY_COLUMNS, mnist_ratios, run_mnist, run_topology
    from .report import format_table

    # None means the default; 0 is a bad value, not a request for the default
    max_width = opts.max_width if opts.max_width is not None else (800 if opts.quick else 6400)
    # three epochs even in the quick form: a ratio needs repeats for its interval, and one epoch preempted (steal on
    # a shared VM) no longer leaves the row out
    epochs = opts.epochs if opts.epochs is not None else 3
    devs = opts.devices()
    compare = [c for c in opts.peers("numpy,torch") if c in ("numpy", "torch")]
    t0 = time.perf_counter()
    say(f"hetnn MLP benchmark (float32); devices: {_devices_line(devs)}")
    notes: List[str] = []
    try:
        mnist = run_mnist(devs, epochs=epochs, quick=opts.quick, compare=compare, progress=progress.callback(),
                          notes=notes, batches=opts.batches() or (64,))
    except FileNotFoundError as exc:
        mnist = []
        notes.append(str(exc))
    topo = run_topology(devs, max_width=max_width, batches=opts.batches() or ((100, 1000) if opts.quick else
                                                                             (100, 500, 1000)),
                        widths=opts.widths_list(), depths=opts.depths_list() or (1, 2, 3),
                        n_samples=2000 if opts.quick else 5000, epochs=3,
                        progress=progress.callback())
    for line in dict.fromkeys(notes):
        say(f"note: {line}")
    if mnist:
        say(f"\nFashion-MNIST: 784 inputs, hidden ReLU layers, 10 outputs, softmax cross-entropy, SGD lr 0.1 "
            f"momentum 0.9, batch 64, {epochs} epoch(s) from the same initial weights (s/epoch: median; GFLOP/s: "
            f"the FLOP an epoch needs (forward, weight gradients, input gradients but the first layer's) over its "
            f"time):")
        say(format_table(mnist, MLP_MNIST_COLUMNS, opts.details))
        for line in mnist_ratios(mnist):
            say("  " + line)
    say("\ntopology study: 50 inputs (synthetic solar sensors), hidden ReLU layers of widths w, w/2, 13w/50, 1 output, "
        "MSE, plain SGD; one training epoch and one inference pass over the samples:")
    say(format_table(topo, MLP_TOPOLOGY_COLUMNS, opts.details))
    say(f"({time.perf_counter() - t0:.1f} s in all)\n")
    return [{"part": "fashion-mnist", **{k: v for k, v in r.items() if k != "device_time"}} for r in mnist] + \
        [{"part": "topology", **r} for r in topo]


def suite_conv(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    """(a) ResNet-50 convolution layers, (b) the Keras-style CNN's epochs and inference, (c) LeNet and the AlexNet
    variant on Fashion-MNIST: epochs and test accuracy (hetnn.bench.conv, hetnn.bench.cnn)."""
    from . import cnn
    from .conv import CONV_COLUMNS, QUICK_LAYERS, run_layers, summary
    from .report import format_table

    devs = opts.devices()
    quick = opts.quick
    compare = opts.peers("im2col,onednn,torch,clblast")
    timing = opts.timing()
    notes: List[str] = []
    t0 = time.perf_counter()
    say(f"hetnn convolution benchmark (float32); devices: {_devices_line(devs)}")
    layer_rows = run_layers(devs, batches=(1,) if quick else (1, 32), layers=QUICK_LAYERS if quick else None,
                            compare=compare, n_warmup=timing["n_warmup"], n_repeat=min(timing["n_repeat"], 5),
                            max_duration=timing["max_duration"], progress=progress.callback(), notes=notes)
    say("\n(a) ResNet-50 v1.5 convolution layers, forward (NCHW in and out); im2col+matmul: the same layer as a GEMM "
        "through hetnn.matmul, im2col and the copy back included; onednn-c++: oneDNN's convolution on its own "
        "layouts, inputs reordered once outside the timing:")
    say(format_table(layer_rows, CONV_COLUMNS, opts.details))
    for line in summary(layer_rows):
        say("  " + line)
    epochs = opts.epochs if opts.epochs is not None else 3  # as the mlp suite: intervals need repeats
    n_maps = 160 if quick else 1024
    (mx, my), _ = cnn.datasets.radiation_maps(n_samples=n_maps, size=50, seed=0)
    batches = opts.batches() or ((32,) if quick else (2, 8, 32, 64, 128, 256, 512, 1024))
    keras_rows: List[Dict[str, Any]] = []
    progress.expect(len(batches))
    for b in batches:
        progress(f"keras-cnn batch {b}")
        keras_rows += cnn.run_training("keras-cnn", devs, (mx, my), batch=b, epochs=1 if b < 32 else epochs,
                                       loss="mse", compare=compare, notes=notes)
    infer_rows = cnn.run_inference("keras-cnn", devs, mx, (2, 64) if quick else (2, 64, 512, 1024),
                                   compare=compare, notes=notes)
    say(f"\n(b) Keras-style CNN on {len(mx):,} radiation maps 50x50 (4,352,641 parameters), Adam lr 1e-3, MSE: one "
        f"epoch per batch size:")
    say(format_table(keras_rows, cnn.CNN_COLUMNS, opts.details))
    for line in cnn.ratios(keras_rows):
        say("  " + line)
    say("inference (predict, NumPy in and out):")
    say(format_table(infer_rows, cnn.INFER_COLUMNS, opts.details))
    study_rows: List[Dict[str, Any]] = []
    progress.expect(2)
    try:
        # quick: scoring 10,000 test images would take most of the suite's time (AlexNet on PoCL: a minute)
        n_test = 1000 if quick else None
        fm = cnn.fashion_images(28, 1024 if quick else None, n_test)
        progress("lenet")
        study_rows += cnn.run_training("lenet", devs, fm, batch=64, epochs=3 if quick else 5, loss="cross_entropy",
                                       compare=compare, notes=notes)
        fm32 = cnn.fashion_images(32, 256 if quick else 6400, n_test)
        progress("alexnet32")
        study_rows += cnn.run_training("alexnet32", devs, fm32, batch=256, epochs=1 if quick else 2,
                                       loss="cross_entropy", compare=compare, notes=notes)
    except FileNotFoundError as exc:
        notes.append(str(exc))
    if study_rows:
        scored = f"the first {n_test:,} of the 10,000 test images (--quick)" if n_test else "the 10,000 test images"
        say("\n(c) LeNet (Adam lr 1e-3, batch 64) and the AlexNet variant (Fashion-MNIST zero-padded to 32x32, one "
            "input channel, Adam lr 1e-3, batch 256, dropout 0.5) on Fashion-MNIST: epochs from the same initial "
            f"weights, test accuracy on {scored} after the last epoch:")
        say(format_table(study_rows, cnn.CNN_COLUMNS, opts.details))
        for line in cnn.ratios(study_rows):
            say("  " + line)
    for line in dict.fromkeys(notes):
        say(f"note: {line}")
    say(f"({time.perf_counter() - t0:.1f} s in all)\n")
    return [{"part": "layers", **r} for r in layer_rows] + [{"part": "keras-cnn", **r} for r in keras_rows] + \
        [{"part": "keras-cnn inference", **r} for r in infer_rows] + [{"part": "studies", **r} for r in study_rows]


def suite_transfer(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    from .peak import measure_missing
    from .report import format_table
    from .transfer import TRANSFER_COLUMNS, run_transfer, summary, transfer_sizes

    devs = opts.devices()
    timing = opts.timing()
    max_bytes = 16 << 20 if opts.quick else 1 << 30
    t0 = time.perf_counter()
    say(f"hetnn transfer benchmark; devices: {_devices_line(devs)}")
    measure_missing(devs, say)
    # page-locked copies in the full study only: the quick report keeps to the copies every program makes
    rows = run_transfer(devs, transfer_sizes(max_bytes), progress=progress.callback(), pinned=not opts.quick,
                        **timing)
    say(format_table(rows, TRANSFER_COLUMNS, opts.details))
    for line in summary(rows):
        say("  " + line)
    for dev in devs:
        paths = dev.transfer_paths()
        if paths:  # what the device measured at its first large copy from ordinary memory
            say(f"  {dev.id} copies of 4 MiB or more from and into ordinary memory: "
                + "; ".join(f"{k} {v}" for k, v in sorted(paths.items(), reverse=True)))
    over: List[Dict[str, Any]] = []
    if not opts.quick:
        from .overlap import OVERLAP_COLUMNS, overlap_summary, run_overlap
        over = run_overlap(devs, 64 << 20, progress=progress.callback(), **timing)
        if over:
            say("\noverlap: a 64 MiB upload from page-locked memory on one stream beside a kernel of about its length "
                "on another, against both on one stream (wall times)")
            say(format_table(over, OVERLAP_COLUMNS, opts.details))
            for line in overlap_summary(over):
                say("  " + line)
    say(f"({_timing_line(timing)}; device-timed where the device times its copies; "
        f"{time.perf_counter() - t0:.1f} s in all)\n")
    return rows + [{"part": "overlap", **r} for r in over]


def suite_arrays(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    from .arrays import ARRAYS_COLUMNS, run_arrays, summary
    from .peak import measure_missing
    from .report import format_table

    devs = opts.devices()
    timing = opts.timing()
    t0 = time.perf_counter()
    say(f"hetnn arrays benchmark (float32, operands on the device, element-wise results into out=); devices: "
        f"{_devices_line(devs)}; NumPy {np.__version__}")
    measure_missing(devs, say)
    rows = run_arrays(devs, progress=progress.callback(), **timing)
    say(format_table(rows, ARRAYS_COLUMNS, opts.details))
    for line in summary(rows):
        say("  " + line)
    say(f"({_timing_line(timing)}; GB/s: each operand's bytes once over the device's time of the op (hetnn) or the "
        f"wall time (NumPy); % mem peak, for arrays beyond the caches: of the device's memory ceiling (host-resident "
        f"rows: this run's STREAM-style kernel of the op's access pattern, the 'stream' rows); "
        f"{time.perf_counter() - t0:.1f} s in all)\n")
    return rows


def scaling_threads(opts: Options) -> Optional[int]:
    """The scaling suite's one --threads value per rank (None: its default)."""
    counts = opts.thread_counts()
    if len(counts) > 1:
        raise ValueError(f"--threads: the scaling suite takes one thread count per rank, got {opts.threads!r}")
    return counts[0]


def suite_scaling(opts: Options, say: Say, progress: _Progress) -> List[Dict[str, Any]]:
    """Data-parallel training on 1..N MPI ranks (hetnn.bench.scaling); every rank runs this, rank 0 reports."""
    from .. import distributed as dist
    from .._threads import num_threads
    from .report import format_table
    from .scaling import SCALING_COLUMNS, WORKLOADS, default_threads, describe, rank_counts, run_scaling, summary

    if not dist.is_initialized():
        raise ValueError("the scaling suite runs over MPI ranks: python -m hetnn bench scaling [--ranks N] launches "
                         "them (or mpirun -np N python -m hetnn bench scaling --distributed)")
    world = dist._world()
    threads = scaling_threads(opts) or default_threads(world)
    spec = opts.device if not (isinstance(opts.device, str) and opts.device == "all") else "cpu"
    devs = Options(device=spec).devices()
    if len(devs) != 1:
        raise ValueError(f"--device: the scaling suite trains on one device per rank, got {spec!r}")
    workloads = list(WORKLOADS)
    rounds = 3 if opts.quick else min(opts.repeat, 10)
    t0 = time.perf_counter()
    say(f"hetnn scaling benchmark: data-parallel training on {', '.join(map(str, rank_counts(world.Get_size())))} of "
        f"{world.Get_size()} MPI ranks, {threads} thread(s) per rank, device {devs[0].id} ({devs[0].name}); "
        f"{rounds} interleaved rounds")
    for line in describe(workloads):
        say("  " + line)
    with num_threads(threads):
        rows = run_scaling(world, workloads, devs[0], opts.quick, rounds, threads, progress.callback())
    if rows:
        say(format_table(rows, SCALING_COLUMNS, opts.details))
        for line in summary(rows):
            say("  " + line)
    say(f"(s/epoch: median over rounds of the slowest rank's epoch after a warm-up epoch; speedup: samples/s over "
        f"1 rank's, per-round ratios with a 95 % bootstrap interval; comm: mean time in gradient reduction per step, "
        f"waiting for the slowest rank included; {time.perf_counter() - t0:.1f} s in all)\n")
    return rows


_RUNNERS: Dict[str, Callable[[Options, Say, _Progress], List[Dict[str, Any]]]] = {
    "peak": suite_peak, "matmul": suite_matmul, "maxpool": suite_maxpool, "mlp": suite_mlp,
    "conv": suite_conv, "transfer": suite_transfer, "arrays": suite_arrays, "scaling": suite_scaling}


def main_columns(suite: str) -> List[Any]:
    """The columns of a suite's main table (the one-table view of a distributed run)."""
    from . import arrays, conv, matmul, maxpool, mlp, peak, scaling, transfer

    tables: Dict[str, List[Any]] = {
        "peak": peak.PEAK_COLUMNS, "matmul": matmul.MATMUL_COLUMNS, "maxpool": maxpool.MAXPOOL_COLUMNS,
        "mlp": mlp.MLP_MNIST_COLUMNS, "conv": conv.CONV_COLUMNS, "transfer": transfer.TRANSFER_COLUMNS,
        "arrays": arrays.ARRAYS_COLUMNS}
    return list(tables.get(suite, scaling.SCALING_COLUMNS))


def default_suite(quick: bool) -> str:
    """The suite run when none is named: every suite with quick, else matmul (the full suites take long)."""
    return "all" if quick else "matmul"


def run_suites(suite: Optional[str], opts: Options, say: Say, worker: bool = False) -> List[Dict[str, Any]]:
    """Runs ``suite`` ("all": every suite, peak first since the others read the ceilings it stores; None: the
    default suite); returns the rows of all of them, each tagged with ``suite``. The suites of IN_PROCESSES spread
    their repeats over ``opts.processes`` processes: the workers run first, one after another, and this process
    merges their repeats into its rows (hetnn._workers). ``worker``: this process is one of those workers."""
    from .. import distributed as dist

    if suite is None:
        suite = default_suite(bool(opts.quick))
    if suite not in SUITES + ("all",):
        raise ValueError(f"unknown suite {suite!r} (available: {', '.join(SUITES + ('all',))})")
    opts.check()
    opts.devices()  # an unknown device spec fails before anything runs
    from ..doctor import warnings as doctor_warnings

    names = [name for name in SUITES if suite == name or (suite == "all" and name in ALL)]
    shared = [name for name in names if name in IN_PROCESSES]
    processes = opts.process_count() if shared and not dist.is_initialized() else 1
    counts = opts.thread_counts()
    auto = cpu_plan(opts, None, suite) if counts == [None] else None  # one sample serves the doctor and the plan
    if not worker:
        for line in doctor_warnings(plan=auto):
            say(f"doctor: {line}")
        if precision_line():
            say(str(precision_line()))
        conv_line = conv_algorithm_line(opts.devices())
        if conv_line:
            say(conv_line)
    precision = get_matmul_precision()
    rows: List[Dict[str, Any]] = []
    stopped: Optional[BaseException] = None  # an interrupt while the workers ran: their rows are made, then raised
    try:
        if processes > 1 and not worker:
            stopped = _start_workers(opts, auto, shared, processes, say)
        for at, n in enumerate(counts):
            plan = auto if n is None else cpu_plan(opts, n, suite)
            if plan is not None and not worker:
                say(plan.header() + (" -- hetnn, BLAS, PyTorch and every peer alike" if n is None else ""))
                note = _cpus.spin_note(plan.threads)
                if note and n is None:
                    say(note)
            with _cpus.use(plan) if plan is not None else contextlib.nullcontext():
                for name in names:
                    if (worker or stopped is not None) and name not in shared:
                        continue
                    progress = _Progress(None if worker else opts.progress_mode(), name)
                    setting = n if n is not None else (f"auto {plan.threads}" if plan is not None else "default")
                    opts._share = processes if name in shared else 1
                    # the same in every process (a worker's count is fixed); the suites the workers skip: unmerged
                    _workers.set_key(f"{name} #{at}", merged=name in shared)
                    try:
                        rows.extend({"suite": name, "thread_setting": setting, "precision": precision, **r}
                                    for r in _RUNNERS[name](opts, say, progress))
                    except _workers.ReplayEnd:
                        assert stopped is not None
                        raise stopped from None  # the rows of the suites the workers finished go with it
                    finally:
                        progress.close()
                        opts._share = 1
        if stopped is not None:
            raise stopped
        merger = _workers._merger
        if merger is not None and merger.unmatched:
            say(f"note: {merger.unmatched} timed run(s) differed between the processes and hold this process's "
                f"repeats alone")
        if not worker:
            for line in conv_choice_notes(opts.devices()):
                say(f"note: {line}")
    except BaseException as exc:  # Ctrl-C or a failure in a later suite: the suites already run survive
        exc.partial_rows = rows  # type: ignore[attr-defined]
        raise
    finally:
        if not worker:
            _workers._merger = None
    return rows


def _start_workers(opts: Options, auto: Optional["_cpus.CpuPlan"], shared: List[str], processes: int,
                   say: Say) -> Optional[BaseException]:
    """Runs the worker processes of ``shared`` suites (each process's share of the repeats) and leaves their
    recordings for this process to merge; returns the interrupt that stopped them (hetnn._workers.start)."""
    from dataclasses import fields

    spec: Dict[str, Any] = {f.name: getattr(opts, f.name) for f in fields(opts) if not f.name.startswith("_")}
    devs = opts.devices()
    spec.update(device=[d.id for d in devs], progress=False, notes=[], ranks=None, hostfile=None)
    if auto is not None:  # the thread count this process found free, for every process alike
        spec["threads"] = str(auto.threads)
    share = _workers.split(opts._timing_in_all()[0], processes)
    say(f"processes: {processes}, one after another ({processes - 1} worker(s) first, then this one), each timing "
        f"{share} of the repeats of every {' and '.join(shared)} row: the intervals cover what a rerun sees "
        f"(--processes sets it)")
    return _workers.start({"options": spec, "suite": "all" if len(shared) > 1 else shared[0]}, processes - 1,
                          "hetnn.bench.worker", lambda line: say(f"note: {line}"))


def cpu_plan(opts: Options, n: Optional[int], suite: Optional[str] = None) -> Optional["_cpus.CpuPlan"]:
    """The CPUs and thread count a run takes: the user's count ``n`` on as many of the least used CPUs; else, by
    default ("auto"), the CPUs found free now (:func:`hetnn._cpus.plan`); None for "default" (each library's own).
    For the scaling suite and under MPI nothing is sampled or pinned (ranks sharing a machine are each other's
    load; the scaling suite sets threads per rank)."""
    from .. import distributed as dist

    if suite == "scaling" or dist.is_initialized():  # ranks on one machine: no sampling, no pinning
        allowed = _cpus.allowed_cpus()
        return None if n is None else _cpus.CpuPlan(allowed, allowed, math.nan, {}, math.nan, fixed=n)
    if n is not None:
        return _cpus.plan(fixed=n)
    if not opts.auto_threads():
        return None
    p = _cpus.plan()
    _cpus.last_plan = p
    return p
