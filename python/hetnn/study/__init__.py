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
from typing import Any, Callable, Dict, List, Optional

from ._base import COMMON, COMMON_DOC, Context, Study, published_text, read_config

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
        lines.append(f"  {key} = {default!r}{q}: {s.doc.get(key) or COMMON_DOC.get(key, '')}")
    if s.full_run:
        lines.append(f"\nfull form: {s.full_run}")
    return "\n".join(lines)


def _figures(study: Study, rows: List[Dict[str, Any]], env: Dict[str, Any]) -> Dict[str, Any]:
    fig = study.plot(rows, env) if study.plot is not None else None
    return {} if fig is None else {f"study-{study.name}": fig}


def run(name: str, *, quick: bool = False, config: Any = None, verbose: bool = False, output: Optional[str] = None,
        progress: Optional[bool] = None, say: Optional[Callable[[str], None]] = None,
        partial_output: Optional[str] = None, **settings: Any) -> Any:
    """Runs study ``name`` and returns its :class:`hetnn.bench.Report`. ``config``: a dict or the path of a JSON
    run-configuration file; ``settings``: any of the study's settings (``describe(name)`` lists them), applied
    last. ``verbose`` prints the report as it runs; ``output`` writes PREFIX.csv, PREFIX.json and PREFIX-*.png.
    Unknown settings and bad values raise ValueError/TypeError before anything runs.

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
    opts = Options(device=cfg["device"], progress=progress)
    devs = opts.devices()
    lines, collect = collector(say, verbose)

    t0 = time.perf_counter()
    collect(f"hetnn study {study.name}{' (quick)' if quick else ''}: {study.title}")
    collect(f"devices: {', '.join(f'{d.id} ({d.name})' for d in devs)}")
    collect("settings: " + ", ".join(f"{k}={v!r}" for k, v in cfg.items()))
    plan = cpu_plan(opts, None)
    for line in doctor_warnings(plan=plan):
        collect(f"doctor: {line}")
    if plan is not None:
        collect(plan.header() + " -- hetnn and every peer alike")
        spin = _cpus.spin_note(plan.threads)
        if spin:
            collect(spin)
    bar = _Progress(opts.progress_mode(), study.name)
    ctx = Context(cfg, devs, collect, bar.callback())

    def report(rows: List[Dict[str, Any]]) -> Any:
        env = dict(environment(), study=study.name, quick=quick, config=cfg, seconds=time.perf_counter() - t0)
        return Report(f"study-{study.name}", [{"suite": f"study-{study.name}", **r} for r in rows],
                      "\n".join(lines), env, figures=lambda rows, env: _figures(study, rows, env))

    try:
        with _cpus.use(plan) if plan is not None else contextlib.nullcontext():
            rows = study.run(ctx)
    except BaseException as exc:  # Ctrl-C, a failure or MemoryError hours in: the rows measured so far survive
        bar.close()
        if ctx.kept:
            collect(keep_partial(exc, report(ctx.kept), partial_output or output))
        raise
    bar.close()
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
