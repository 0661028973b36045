"""Plain-text tables of rows (lists of dicts), used by the profiler and every benchmark report."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence, Tuple


def _cell(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, fmt) if fmt else str(v)


def format_table(rows: List[Dict[str, Any]], columns: Sequence[Tuple[str, str, str]]) -> str:
    """``columns``: (key, header, format spec). Numbers right-aligned."""
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
