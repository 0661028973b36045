"""Benchmark suites behind ``python -m hetnn bench``, and the same from Python for notebooks.

Every figure is measured here, in this process: devices are synchronized around each timed call, after warm-up,
over repeats (see :func:`hetnn.benchmark`). ``run(suite, **options)`` returns a :class:`Report` (``.rows``,
``.text``, ``.to_csv()``, ``.to_json()``, ``.plot()``); ``compare(op, *args)`` times one op on hetnn and on each
importable peer library and reports how far their results are apart.
"""
import contextlib as _contextlib
import typing as _t

from .._device import devices_table
from .compare import compare
from .matmul import MATMUL_SHAPES, RESNET50_BS1, run_matmul
from .matmul import ratios as matmul_ratios
from .maxpool import LAYERS, MAXPOOL_COLUMNS, SWEEP_COLUMNS, numpy_max_pool, run_maxpool, sweep_cases
from .mlp import MLP_TOPOLOGY_COLUMNS, run_topology
from .overlap import OVERLAP_COLUMNS, overlap_summary, run_overlap
from .plots import mark_unreliable, notebook_display
from .report import collector, environment, format_table
from .result import Report
from .stats import ratio
from .suites import SUITES, Options, default_suite, run_suites
from .transfer import TRANSFER_COLUMNS, run_transfer
from .transfer import summary as transfer_summary

__all__ = ["run", "compare", "ratio", "matmul_ratios", "free_cpus", "Report", "Options", "SUITES", "MATMUL_SHAPES",
           "RESNET50_BS1", "run_matmul",
           "LAYERS", "MAXPOOL_COLUMNS", "SWEEP_COLUMNS", "numpy_max_pool", "run_maxpool", "sweep_cases",
           "MLP_TOPOLOGY_COLUMNS", "run_topology", "format_table", "devices_table", "notebook_display",
           "mark_unreliable", "TRANSFER_COLUMNS", "run_transfer", "transfer_summary", "OVERLAP_COLUMNS", "run_overlap",
           "overlap_summary"]


@_contextlib.contextmanager
def free_cpus(threads: _t.Optional[int] = None) -> _t.Iterator[_t.Any]:
    """``with hetnn.bench.free_cpus() as plan: ...``: the block runs as ``run`` runs its suites, on the CPUs found
    free now (or on ``threads`` of the least used ones), every thread pool (hetnn's, the BLAS, PyTorch's) limited to
    that many threads and every thread pinned to them; ``plan.header()`` says what was chosen and why. For the
    measuring functions called directly (``run_maxpool``, ``run_topology``, ``hetnn.interleave``)."""
    from .. import _cpus

    plan = _cpus.plan(fixed=threads)
    _cpus.last_plan = plan
    with _cpus.use(plan):
        yield plan


def run(suite: _t.Optional[str] = None, *, verbose: bool = False, output: _t.Optional[str] = None,
        say: _t.Optional[_t.Callable[[str], None]] = None, **options: _t.Any) -> Report:
    """Runs one benchmark suite ("peak", "matmul", "maxpool", "mlp", "conv", "transfer", "arrays", "scaling") or
    "all", as ``python -m hetnn bench SUITE`` does, and returns its rows. With no suite, the command line's default:
    "all" with ``quick=True``, else "matmul".

    ``options`` are the command line's flags: ``device`` ("all", "cpu,opencl:0:0" or a list of devices),
    ``compare`` ("numpy,torch" or a list), ``quick``, ``repeat``, ``warmup``, ``max_duration``, ``shapes``,
    ``batch``, ``dtype``, ``sweep_max``, ``max_width``, ``epochs``, ``clblast_tuning``, ``threads``, ``progress``
    (tqdm bars; default: when stderr is a terminal or in Jupyter, as on the command line), ``processes`` (the
    processes the matmul and maxpool suites' repeats are spread over, default 3: hetnn._workers); for "scaling",
    ``ranks`` and ``hostfile`` (the suite runs in an MPI job launched with mpirun, its report read back).
    ``verbose`` prints the report while it runs (else it is in ``.text``); ``output`` writes PREFIX.csv,
    PREFIX.json and PREFIX-*.png. Unknown options and bad values raise ValueError/TypeError before anything runs.
    A run that stops early (Ctrl-C, an error) raises as it would, with the rows of the suites that finished as the
    exception's ``partial_report`` (and in PREFIX-partial.* with ``output``).
    """
    known = {k for k in Options.__dataclass_fields__ if not k.startswith("_")} - {"notes"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"hetnn.bench.run: unknown option(s) {unknown}; available: {', '.join(sorted(known))}")
    if suite is not None and not isinstance(suite, str):
        raise TypeError(f"hetnn.bench.run: suite must be a string, got {type(suite).__name__}")
    opts = Options(**options)
    lines, collect = collector(say, verbose)

    name = suite if suite is not None else default_suite(bool(opts.quick))
    from .. import distributed as _dist
    if name == "scaling" and not _dist.is_initialized():  # MPI is started in the launched ranks, not here
        from .launch import report
        from .suites import scaling_threads
        opts.check()
        scaling_threads(opts)
        result = report(opts, collect)
        if output:
            result.save(output)
        return result
    try:
        rows = run_suites(name, opts, collect)
    except BaseException as exc:  # the suites that finished, on the exception and (with output) on disk
        done = getattr(exc, "partial_rows", None)
        if done:
            from .result import keep_partial
            collect(keep_partial(exc, Report(name, done, "\n".join(lines), environment()), output))
        raise
    result = Report(name, rows, "\n".join(lines), environment())
    if output:
        result.save(output)
    return result
