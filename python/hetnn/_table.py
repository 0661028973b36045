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


def format_table(rows: List[Dict[str, Any]], columns: Sequence[Tuple[str, str, str]]) -> str:
    """``columns``: (key, header, format spec). Numbers right-aligned. A table of rows that carry flags always
    shows them: a ``flags`` column is added when ``columns`` has none."""
    if not any(k == "noise" for k, _, _ in columns) and any(row_flags(r) for r in rows):
        rows = [{**r, "noise": row_flags(r)} for r in rows]
        columns = [*columns, ("noise", "flags", "")]
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
