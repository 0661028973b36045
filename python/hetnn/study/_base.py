"""What a study is: a published experiment's set-up as a configuration (its defaults are the published values), a
short form for ``--quick``, the published figures to print beside the measured ones, a runner and a plot.

A run's configuration comes from, in order: the study's defaults, its quick overrides (with ``quick``), a JSON
run-configuration file, keyword arguments. Every key is checked against the defaults (unknown keys and values of
the wrong type raise ValueError/TypeError naming the key) before anything is measured.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .._check import is_int, is_real, shown
from .._device import Device
from .._table import format_table
from ..bench.keras_peer import keras_module

Say = Callable[[str], None]
Rows = List[Dict[str, Any]]
Columns = Sequence[Tuple[str, str, str]]
# keys every study takes besides its own: which devices, and the seed of its data and initial weights
COMMON: Dict[str, Any] = {"device": "all", "seed": 0}
COMMON_DOC = {"device": "'all', or comma-separated device specs", "seed": "seed of the data and initial weights"}


@dataclass
class Context:
    """What a runner gets: the resolved configuration, the devices, where to write its report, a progress
    callback (or None) and the notes to print after its tables. A runner hands each row to :meth:`keep` as soon as
    it is measured: when the run is interrupted, the rows kept so far are what survives."""
    cfg: Dict[str, Any]
    devices: List[Device]
    say: Say
    progress: Optional[Callable[[str], None]] = None
    notes: List[str] = field(default_factory=list)
    kept: Rows = field(default_factory=list)

    def step(self, msg: str) -> None:
        if self.progress is not None:
            self.progress(msg)

    def keep(self, row: Dict[str, Any]) -> Dict[str, Any]:
        """``row``, kept for a partial report should the run stop before it ends."""
        self.kept.append(row)
        return row

    def keep_all(self, rows: Rows) -> Rows:
        self.kept.extend(rows)
        return rows


@dataclass
class Study:
    name: str
    title: str
    setup: str                            # the published set-up in words, and what hetnn changes (said plainly)
    defaults: Dict[str, Any]              # the published set-up
    doc: Dict[str, str]                   # one line per key of defaults
    quick: Dict[str, Any]                 # the short form's overrides
    run: Callable[[Context], Rows]
    published: Rows = field(default_factory=list)   # published figures (other hardware), as rows
    published_columns: Columns = ()
    published_source: str = ""            # where they come from and on what hardware
    plot: Optional[Callable[[Rows, Dict[str, Any]], Any]] = None
    full_run: str = ""                    # the full form's measured run time on the reference machine
    # (setting, bytes) of what a configuration must allocate at the least (its data, its largest model or batch):
    # checked against the memory available before the run (a batch of 10**12 once ended in NumPy's MemoryError)
    memory: Optional[Callable[[Dict[str, Any]], List[Tuple[str, float]]]] = None
    # every timing goes through hetnn.interleave, governed by the settings "repeat" and "max_duration": the run
    # can spread its repeats over worker processes (hetnn._workers)
    in_processes: bool = False
    # The paper's set-up where it states one, in the settings' terms (setting -> the paper's value), and where it
    # is stated; a default that is not the paper's value has its reason in ``differs`` (which also names what
    # differs outside the settings: data, hardware), said by --describe and every report's header.
    paper: Dict[str, Any] = field(default_factory=dict)
    paper_source: str = ""
    differs: Dict[str, str] = field(default_factory=dict)

    def resolve(self, quick: bool = False, config: Optional[Mapping[str, Any]] = None,
                overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The run's configuration (see the module's docstring); raises before anything runs."""
        if not isinstance(quick, bool):
            raise TypeError(f"study {self.name}: quick must be a bool, got {quick!r}")
        known = {**COMMON, **self.defaults}
        cfg = dict(known)
        if quick:
            cfg.update(self.quick)
        for source, values in (("config", dict(config or {})), ("argument", dict(overrides or {}))):
            for key, value in values.items():
                if key not in known:
                    raise ValueError(f"study {self.name}: unknown {source} key {key!r} (known: "
                                     f"{', '.join(sorted(known))})")
                try:
                    cfg[key] = _checked(self.name, key, value, known[key])
                except RecursionError:  # a list nested thousands deep
                    raise ValueError(f"study {self.name}: {key} is nested too deeply") from None
        if not is_int(cfg["seed"]) or cfg["seed"] < 0:
            raise ValueError(f"study {self.name}: seed must be an int >= 0, got {cfg['seed']!r}")
        self.check_memory(cfg)
        return cfg

    def check_memory(self, cfg: Dict[str, Any]) -> None:
        """ValueError naming the setting when what the run must allocate at the least exceeds the memory this
        machine has available (MemAvailable plus free swap, as the CPU allocator counts it)."""
        if self.memory is None:
            return
        from .._loader import _core

        available = _core.available_memory()
        for what, need in self.memory(cfg):
            if need > (available or 2**62):
                have = f"the {available / 2**30:.1f} GiB available here" if available else "any machine's memory"
                raise ValueError(f"study {self.name}: {what} needs at least {need / 2**30:,.1f} GiB, more than "
                                 f"{have}; choose a smaller value")


def read_config(config: Any, name: str) -> Tuple[Dict[str, Any], Optional[bool]]:
    """A run configuration, None, a dict or the path of a JSON file holding an object, as (settings, quick): its
    optional "study" entry must name this study, its optional "quick" entry asks for the short form."""
    if config is None:
        return {}, None
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as exc:
            raise ValueError(f"--config: cannot read {path} ({exc.strerror or exc})") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"--config: {path} is not JSON ({exc})") from None
        except UnicodeDecodeError as exc:  # UTF-16, a binary file: NumPy-like words without the file's name
            raise ValueError(f"--config: {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except RecursionError:
            raise ValueError(f"--config: {path} is nested too deeply to be a run configuration") from None
        where = path
    else:
        data, where = config, "config"
    if not isinstance(data, dict):
        raise TypeError(f"{where}: a run configuration is a JSON object of settings, got {type(data).__name__}")
    data = dict(data)
    named = data.pop("study", name)
    quick = data.pop("quick", None)
    if named != name:
        raise ValueError(f"{where}: the configuration is for study {named!r}, not {name!r}")
    if quick is not None and not isinstance(quick, bool):
        raise TypeError(f"{where}: quick must be true or false, got {quick!r}")
    return data, quick


def _checked(study: str, key: str, value: Any, default: Any) -> Any:
    """``value`` if it has the default's kind (bool, int, number, string, list of such), else TypeError."""
    def kind_ok(v: Any, d: Any) -> bool:
        if isinstance(d, bool):
            return isinstance(v, bool)
        if isinstance(d, int):
            return is_int(v)
        if isinstance(d, float):
            return is_real(v) and not isinstance(v, bool)
        if isinstance(d, str):
            return isinstance(v, str)
        if isinstance(d, (list, tuple)):
            if not isinstance(v, (list, tuple)):
                return False
            return not d or all(kind_ok(x, d[0]) for x in v)
        return True
    if not kind_ok(value, default):
        raise TypeError(f"study {study}: {key} must be like {json.dumps(default)}, got {shown(value)}")
    if isinstance(default, (list, tuple)):
        if not value:
            raise ValueError(f"study {study}: {key} must not be empty")
        return list(value)
    if isinstance(default, float):
        return float(value)
    return value


def positive(study: str, cfg: Dict[str, Any], *keys: str) -> None:
    """ValueError unless each key's number (or every number of its list) is > 0."""
    for key in keys:
        v = cfg[key]
        vals = v if isinstance(v, list) else [v]
        if any(isinstance(x, (int, float)) and not x > 0 for x in vals):
            raise ValueError(f"study {study}: {key} must be > 0, got {v!r}")


def keras_peer(study: str, ctx: Context) -> Any:
    """Keras 3 when the study's ``peers`` setting asks for it and it can be used (else None, with a note)."""
    unknown = [p for p in ctx.cfg["peers"] if p not in ("keras", "none")]
    if unknown:
        raise ValueError(f"study {study}: peers take keras (or none), got {unknown}")
    return keras_module(ctx.notes) if "keras" in ctx.cfg["peers"] else None


def setup_text(study: Study, cfg: Optional[Mapping[str, Any]] = None) -> List[str]:
    """How a study's defaults (or a run's settings ``cfg``) stand against the paper's stated set-up: what is as
    published, what hetnn changes and why, and what this run changes beyond that."""
    if not study.paper:
        return ["the paper's set-up: none stated in settings' terms (see the set-up above)"]
    cfg = study.defaults if cfg is None else cfg
    same = [k for k, v in study.paper.items() if study.defaults.get(k) == v]
    lines = [f"the paper's set-up ({study.paper_source}): " + ", ".join(f"{k}={v!r}" for k, v in study.paper.items()),
             "  as published by default: " + (", ".join(same) or "none")]
    lines += [f"  differs from the paper: {k}: {why}" for k, why in study.differs.items()]
    changed = [f"{k}={cfg.get(k)!r} (paper: {v!r})" for k, v in study.paper.items()
               if k in cfg and cfg.get(k) != v and study.defaults.get(k) == v]
    if changed:
        lines.append("  this run is not the paper's set-up in: " + ", ".join(changed))
    return lines


def published_text(study: Study) -> List[str]:
    """The published figures as a labelled table (they were measured on other hardware), or a line saying that
    none are stored."""
    if not study.published:
        return ["published figures: none stored for this study (compare the shape of the results, not the values)"]
    return [f"PUBLISHED figures ({study.published_source}; other hardware, not measured here):",
            format_table(study.published, study.published_columns)]
