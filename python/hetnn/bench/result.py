"""What :func:`hetnn.bench.run` returns: the rows of a benchmark run with the report printed for them, the run's
metadata, and writers for CSV, JSON and PNG plots."""
from __future__ import annotations

import csv
import io
import json
import os
import warnings
from typing import Any, Callable, Dict, List, Optional

from .._loader import _core


class Report:
    """What a suite run or a comparison returns (one timed call is a :class:`hetnn.BenchmarkResult`): rows (a list
    of dicts, one per measured case, tagged ``suite``), ``text`` (the report as the command line prints it) and
    ``environment`` (devices, drivers, versions, threads, environment variables, timing method,
    date)."""

    def __init__(self, suite: str, rows: List[Dict[str, Any]], text: str, environment: Dict[str, Any],
                 figures: Optional[Callable[[List[Dict[str, Any]], Dict[str, Any]], Dict[str, Any]]] = None) -> None:
        self.suite, self.rows, self.text, self.environment = suite, rows, text, environment
        self._figures = figures  # {name: Figure} from rows and environment; None: the suites' plots

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __repr__(self) -> str:
        return f"<hetnn.bench.Report {self.suite}: {len(self.rows)} rows>\n{self.text}"

    def select(self, **match: Any) -> List[Dict[str, Any]]:
        """The rows whose fields equal every ``key=value`` given (``select(suite="matmul", library="hetnn")``)."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in match.items())]

    def flagged(self) -> List[Dict[str, Any]]:
        """Rows with a figure above its device's measured ceiling (a measurement error, printed as ERR>peak)."""
        return [r for r in self.rows if r.get("flagged")]

    def excluded(self) -> List[Dict[str, Any]]:
        """Rows that enter no ratio or aggregate: above the ceiling, a wrong result (``wrong``), or unreliable
        (preempted in at least half of the repeats; their ``noise`` says how many)."""
        return [r for r in self.rows if r.get("flagged") or r.get("wrong") or r.get("unreliable")]

    def to_csv(self, path: Optional[str] = None) -> str:
        """The rows as CSV (every key of every row is a column); written to ``path`` when given."""
        keys: List[str] = []
        for r in self.rows:
            keys.extend(k for k in r if k not in keys)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        w.writeheader()
        w.writerows(self.rows)
        if path:
            _write_atomic(path, buf.getvalue())
        return buf.getvalue()

    def to_json(self, path: Optional[str] = None) -> str:
        """``{"environment": ..., "rows": ...}`` as JSON; written to ``path`` when given."""
        text = json.dumps({"suite": self.suite, "environment": self.environment, "rows": self.rows}, indent=1,
                          default=str)
        if path:
            _write_atomic(path, text)
        return text

    def plot(self, prefix: Optional[str] = None) -> Dict[str, Any]:
        """One matplotlib figure per plot this run's rows support ({name: Figure}); with ``prefix``, also written
        as ``PREFIX-NAME.png``. Needs matplotlib (``pip install 'hetnn[bench]'``)."""
        from .plots import make_figures, require_matplotlib

        require_matplotlib()
        figs = (self._figures or make_figures)(self.rows, self.environment)
        if prefix:
            for name, fig in figs.items():
                path = f"{prefix}-{name}.png"
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                fig.savefig(path, dpi=110, bbox_inches="tight")
        return figs

    def save(self, prefix: str, plots: bool = True) -> List[str]:
        """Writes PREFIX.csv, PREFIX.json and (with matplotlib installed) PREFIX-*.png; returns the paths. Without
        matplotlib the PNGs are skipped with a warning that says how to get them. Where the rows cannot be written
        (a full disk, a read-only file system, a directory in the way) they are written to a rescue file first, and
        the OSError raised names both."""
        paths = [prefix + ".csv", prefix + ".json"]
        try:
            os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
            self.to_json(paths[1])
            self.to_csv(paths[0])
        except OSError as exc:
            raise rescue(self, prefix, exc) from exc
        if plots:
            from .plots import PLOTS_NEED
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                warnings.warn(f"no PNG plots written: {PLOTS_NEED}", stacklevel=2)
                return paths
            paths += [f"{prefix}-{name}.png" for name in self.plot(prefix)]
        return paths


def keep_partial(exc: BaseException, report: Report, prefix: Optional[str]) -> str:
    """``report`` holds the rows a run measured before ``exc`` stopped it: marked partial, attached as
    ``exc.partial_report`` and, with ``prefix``, written as PREFIX-partial.*. Returns the line that says where the
    rows are; raises nothing (the run's own exception is the one to propagate)."""
    how = f"stopped by {type(exc).__name__}: the {len(report.rows)} row(s) measured so far"
    try:
        report.environment.update(partial=True, stopped_by=repr(exc))
        exc.partial_report = report  # type: ignore[attr-defined]
        if prefix:
            path = f"{prefix}-partial"
            report.save(path, plots=False)  # the rows first: save rescues them itself where they cannot be written
            try:
                report.plot(path)
            except Exception:  # noqa: BLE001 - a plot of partial rows must not cost the data
                pass
            how += f" are in {path}.csv and {path}.json"
        else:
            how += " are in the exception's partial_report"
    except Exception as err:  # noqa: BLE001
        how += f" could not be kept ({err})"
    if hasattr(exc, "add_note"):  # Python >= 3.11: the traceback says it too
        exc.add_note(how)
    return how


def rescue(report: Report, prefix: str, exc: OSError) -> OSError:
    """The rows of a run that could not be written at ``prefix`` (hours of measurement), written as JSON to the first
    place that takes them: the temporary directory, hetnn's cache, the home directory. Returns the OSError to raise,
    naming what failed and where the rows are (or that nowhere took them: the printed report is all there is)."""
    import tempfile

    from .._cache import cache_dir

    name = f"hetnn-rescued-{os.path.basename(prefix) or 'report'}-{os.getpid()}.json"
    tried = []
    for place in (tempfile.gettempdir(), cache_dir(), os.path.expanduser("~")):
        if not place or place in tried:
            continue
        tried.append(place)
        path = os.path.join(place, name)
        try:
            report.to_json(path)
        except OSError:
            continue
        where = f"the rows are in {path}"
        break
    else:
        where = f"and nowhere else took them ({', '.join(tried)}): the printed report is all that is left"
    return OSError(exc.errno, f"cannot write {prefix}.json/.csv ({exc.strerror or exc}); {where}")


def _write_atomic(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _core.write_file_atomic(path, text.encode())
