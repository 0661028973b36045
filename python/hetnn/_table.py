"""Plain-text tables of rows (lists of dicts), used by the profiler and every benchmark report."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence, Tuple


def _cell(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, fmt) if fmt else str(v)


FLAG_KEYS = ("noise", "unreliable", "wrong", "preempted", "rerun", "flagged")


def row_flags(r: Dict[str, Any]) -> str:
    """What a row says about how far to trust it, in one cell: its ``noise`` text (preempted repeats, re-runs,
    unreliable, WRONG), else what its other flag fields say ('' for a clean row)."""
    text = str(r.get("noise") or "")
    if not text:
        if r.get("wrong"):
            text = "WRONG"
        elif r.get("unreliable"):
            text = "unreliable"
        elif r.get("preempted"):
            text = f"preempted {r['preempted']}"
        elif r.get("rerun"):
            text = f"re-ran {r['rerun']} preempted"
    if r.get("flagged") and "ERR>peak" not in text:
        text = "; ".join(x for x in (text, "ERR>peak") if x)
    return text


def row_spread(r: Dict[str, Any]) -> Any:
    """A row's spread over its repeats (IQR over the median, in %): its ``spread_pct``, else from the repeat times
    it carries (``times_s``, ``times_ms``); None for a row that has neither (an aggregate, a single timing)."""
    if r.get("spread_pct") is not None:
        return r["spread_pct"]
    times = r.get("times_s", r.get("times_ms"))
    if isinstance(times, (list, tuple)) and times:
        from ._measurement import spread_pct

        return spread_pct(times)
    return None


def row_first_use(r: Dict[str, Any]) -> Any:
    """What a row's first call cost (compile, allocation, disk cache), as text: ``first_use``, else
    ``first_use_s``."""
    if r.get("first_use"):
        return r["first_use"]
    s = r.get("first_use_s")
    return f"{s * 1e3:.1f} ms" if isinstance(s, (int, float)) and not math.isnan(s) else None


# what every table shows when its rows carry it, whatever the table's columns say: how far to trust a figure
# (flags), how much it moved between repeats (spread) and what its first call cost (first use)
_TRUST = (("noise", "flags", "", row_flags, ("noise",)),
          ("spread_pct", "IQR %", ".0f", row_spread, ("spread_pct", "speedup_ci")),
          ("first_use", "first use", "", row_first_use, ("first_use", "first_use_s")))


def format_table(rows: List[Dict[str, Any]], columns: Sequence[Tuple[str, ...]], details: bool = False) -> str:
    """``columns``: (key, header, format spec) or (key, header, format spec, "detail"): a detail column is shown
    only with ``details`` (``-v``). Numbers right-aligned. A table of rows that carry flags, repeat times or a
    first-use cost always shows them: the columns are added when ``columns`` has none of their kind."""
    columns = [c[:3] for c in columns if details or len(c) < 4 or c[3] != "detail"]
    for key, title, spec, get, kinds in _TRUST:
        if not any(k in kinds for k, _, _ in columns) and any(get(r) not in (None, "") for r in rows):
            rows = [{**r, key: get(r)} for r in rows]
            columns = [*columns, (key, title, spec)]
    if rows:  # a column no row fills (a note no peer had, a device time no row measured) says nothing: left out
        columns = [c for c in columns if c[0] in ("noise", "flagged") or
                   any(_cell(r.get(c[0]), c[2]) not in ("-", "") for r in rows)]
    head = [h for _, h, _ in columns]
    # a figure above its device's measured ceiling is a measurement error: never printed as a result
    # ("CEIL@load" when the ceiling itself was measured on a busy machine: then the ceiling is what is wrong)
    body = [[("CEIL@load" if r.get("ceiling_under_load") else "ERR>peak")
             if k in str(r.get("flagged") or "").split(",") else _cell(r.get(k), f) for k, _, f in columns]
            for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    numeric = [bool(f) for _, _, f in columns]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    return "\n".join([line(head), "  ".join("-" * w for w in widths)] + [line(b) for b in body])
