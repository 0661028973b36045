"""The classic studies, reproduced as published: ``python -m hetnn study NAME`` and :func:`run`.

Each study runs the published set-up by default (``quick=True``: a short form), prints its tables next to the
published figures where they exist (labelled as published: other hardware), and returns a
:class:`hetnn.bench.Report` (rows, text, CSV/JSON/PNG writers) like the benchmark suites. A JSON run-configuration
file (or a dict) changes any of its settings; ``describe(name)`` lists them with their defaults.
"""
from __future__ import annotations

import contextlib
import textwrap
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import _workers
from .._device import conv_algorithm_line, conv_choice_notes
from .._precision import get_matmul_precision, precision_line
from ._base import COMMON, COMMON_DOC, Context, Study, published_text, read_config, setup_text

__all__ = ["run", "describe", "get", "names", "STUDIES", "Study"]


def _registry() -> Dict[str, Study]:
    from . import cnn, gemm_libraries, maxpool, mlp_topology, nn_library

    return {s.name: s for s in (gemm_libraries.STUDY, maxpool.STUDY, mlp_topology.STUDY, cnn.STUDY,
                                nn_library.STUDY)}


STUDIES: Dict[str, Study] = _registry()


def names() -> List[str]:
    return list(STUDIES)


def get(name: Any) -> Study:
    if not isinstance(name, str):
        raise TypeError(f"hetnn.study: the study name must be a string, got {type(name).__name__}")
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r} (available: {', '.join(STUDIES)})")
    return STUDIES[name]


def describe(name: Optional[str] = None) -> str:
    """One line per study (no name), or a study's set-up and its settings with their published defaults and their
    --quick values."""
    if name is None:
        return "\n".join(f"{s.name:<15} {s.title}" for s in STUDIES.values())
    s = get(name)
    lines = [f"{s.name}: {s.title}", "", textwrap.fill(s.setup, 110), "",
             "settings (default = the published set-up; --quick value):"]
    for key, default in {**COMMON, **s.defaults}.items():
        q = f"  [quick: {s.quick[key]!r}]" if key in s.quick else ""
        pub = ""
        if key in s.paper:
            pub = "  [as published]" if s.paper[key] == default else f"  [published: {s.paper[key]!r}; differs]"
        lines.append(f"  {key} = {default!r}{pub}{q}: {s.doc.get(key) or COMMON_DOC.get(key, '')}")
    lines += ["", *setup_text(s)]
    if s.full_run:
        lines.append(f"\nfull form: {s.full_run}")
    return "\n".join(lines)


def _figures(study: Study, rows: List[Dict[str, Any]], env: Dict[str, Any]) -> Dict[str, Any]:
    fig = study.plot(rows, env) if study.plot is not None else None
    return {} if fig is None else {f"study-{study.name}": fig}


_FIXED_THREADS: Optional[int] = None  # a worker process runs with the thread count of the process it works for


def process_count(study: Study, cfg: Dict[str, Any], processes: Optional[int]) -> int:
    """The processes a run spreads its repeats over: ``processes`` as asked (studies whose timings all go through
    interleave); by default, for those studies, as many as the bench suites take (DEFAULT_PROCESSES while each
    gets MIN_SHARE repeats); else 1."""
    from .._check import is_int
    from ..bench.suites import DEFAULT_PROCESSES, MIN_SHARE

    if processes is not None:
        if not is_int(processes) or not 1 <= processes <= 64:
            raise ValueError(f"hetnn.study.run: processes must be an integer from 1 to 64, got {processes!r}")
        if processes > 1 and not study.in_processes:
            raise ValueError(f"hetnn.study.run: study {study.name} trains networks, which a worker process would "
                             f"have to train again; processes applies to "
                             f"{', '.join(s.name for s in STUDIES.values() if s.in_processes)}")
        return int(processes)
    if not study.in_processes or not is_int(cfg.get("repeat")):
        return 1
    return max(1, min(DEFAULT_PROCESSES, int(cfg["repeat"]) // MIN_SHARE))


def run(name: str, *, quick: bool = False, config: Any = None, verbose: bool = False, output: Optional[str] = None,
        progress: Optional[bool] = None, say: Optional[Callable[[str], None]] = None,
        partial_output: Optional[str] = None, processes: Optional[int] = None, **settings: Any) -> Any:
    """Runs study ``name`` and returns its :class:`hetnn.bench.Report`. ``config``: a dict or the path of a JSON
    run-configuration file; ``settings``: any of the study's settings (``describe(name)`` lists them), applied
    last. ``verbose`` prints the report as it runs; ``output`` writes PREFIX.csv, PREFIX.json and PREFIX-*.png.
    Unknown settings and bad values raise ValueError/TypeError before anything runs. ``processes``: for the studies
    whose timings are all interleaved (maxpool, gemm-libraries), the processes their repeats are spread over, one
    after another (hetnn._workers), so that an interval covers what a rerun sees (default: 3 while each process gets 3
    repeats; process_count). An interrupt while the workers run keeps the rows of what they timed.

    A run that stops early (Ctrl-C, an error) raises as it would, carrying the rows measured so far as the
    exception's ``partial_report``, also written as PREFIX-partial.* (PREFIX: ``partial_output``, else
    ``output``)."""
    from ..bench.report import collector, environment
    from ..bench.result import Report, keep_partial
    from .. import _cpus
    from ..bench.suites import Options, _Progress, cpu_plan
    from ..doctor import warnings as doctor_warnings

    study = get(name)
    data, config_quick = read_config(config, study.name)
    quick = quick or bool(config_quick)
    cfg = study.resolve(quick, data, settings)
    full_cfg = cfg
    n_proc = process_count(study, cfg, processes)
    opts = Options(device=cfg["device"], progress=progress)
    devs = opts.devices()
    lines, collect = collector(say, verbose)

    t0 = time.perf_counter()
    collect(f"hetnn study {study.name}{' (quick)' if quick else ''}: {study.title}")
    collect(f"devices: {', '.join(f'{d.id} ({d.name})' for d in devs)}")
    collect("settings: " + ", ".join(f"{k}={v!r}" for k, v in cfg.items()))
    for line in setup_text(study, cfg):
        collect(line)
    precision = get_matmul_precision()
    if precision_line():
        collect(f"{precision_line()}: not the published set-up, which computed float32 in float32")
    conv_line = conv_algorithm_line(devs)
    if conv_line:
        collect(f"{conv_line}: not the published set-up")
    plan = cpu_plan(opts, _FIXED_THREADS)
    for line in doctor_warnings(plan=plan):
        collect(f"doctor: {line}")
    if plan is not None:
        collect(plan.header() + " -- hetnn and every peer alike")
        spin = _cpus.spin_note(plan.threads)
        if spin:
            collect(spin)
    stopped: Optional[BaseException] = None  # an interrupt while the workers ran: their rows are made, then raised
    if n_proc > 1:
        cfg, stopped = _spread(study, cfg, n_proc, plan, quick, collect)
    bar = _Progress(opts.progress_mode(), study.name)
    ctx = Context(cfg, devs, collect, bar.callback())

    def report(rows: List[Dict[str, Any]]) -> Any:
        env = dict(environment(), study=study.name, quick=quick, config=full_cfg, processes=n_proc,
                   seconds=time.perf_counter() - t0)
        return Report(f"study-{study.name}", [{"suite": f"study-{study.name}", "precision": precision, **r}
                                              for r in rows],
                      "\n".join(lines), env, figures=lambda rows, env: _figures(study, rows, env))

    try:
        with _cpus.use(plan) if plan is not None else contextlib.nullcontext():
            if stopped is not None:
                try:
                    study.run(ctx)
                except _workers.ReplayEnd:
                    pass
                collect("note: interrupted while the worker processes ran: the rows hold the repeats of the workers "
                        "that timed them")
                raise stopped
            rows = study.run(ctx)
    except BaseException as exc:  # Ctrl-C, a failure or MemoryError hours in: the rows measured so far survive
        bar.close()
        if ctx.kept:
            collect(keep_partial(exc, report(ctx.kept), partial_output or output))
        raise
    finally:
        if n_proc > 1:
            if _workers._merger is not None and _workers._merger.unmatched:
                ctx.notes.append(f"{_workers._merger.unmatched} timed run(s) differed between the processes and "
                                 f"hold this process's repeats alone")
            _workers._merger = None
    bar.close()
    ctx.notes.extend(conv_choice_notes(devs))
    for line in dict.fromkeys(ctx.notes):
        collect(f"note: {line}")
    collect("")
    for line in published_text(study):
        collect(line)
    collect(f"({time.perf_counter() - t0:.1f} s in all)")
    done = report(rows)
    if output:
        done.save(output)
    return done


def _spread(study: Study, cfg: Dict[str, Any], n: int, plan: Any, quick: bool,
            collect: Callable[[str], None]) -> Tuple[Dict[str, Any], Optional[BaseException]]:
    """Runs ``n - 1`` worker processes of the study first, each with its share of the repeats, and leaves their
    recordings for this process to merge (hetnn._workers); returns this process's configuration, and the interrupt
    that stopped the workers if one did after they finished a timed run (the study then replays what they
    recorded)."""
    repeat, max_duration = _workers.shares(cfg["repeat"], cfg.get("max_duration"), n)
    share = dict(cfg, repeat=repeat, **({} if max_duration is None else {"max_duration": max_duration}))
    collect(f"processes: {n}, one after another ({n - 1} worker(s) first, then this one), each timing "
            f"{share['repeat']} of the {cfg['repeat']} repeats of every row: the intervals cover what a rerun "
            f"sees (processes= sets it)")
    spec = {"study": study.name, "quick": quick, "config": share,
            "threads": plan.threads if plan is not None else None}
    stopped = _workers.start(spec, n - 1, "hetnn.study.worker", lambda line: collect(f"note: {line}"))
    _workers.set_key(f"study {study.name}")
    return share, stopped
