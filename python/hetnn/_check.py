"""The type tests of argument checks that stay in Python (options of Python-only objects: bench options, fit,
layers): an int is an int or a NumPy integer but never a bool; a real number likewise."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np


def is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def shown(v: Any, limit: int = 60) -> str:
    """``repr(v)`` for an error message, cut to ``limit`` characters with its length said (a 100,000-character
    option was once echoed whole)."""
    text = repr(v)
    if len(text) <= limit:
        return text
    size = f" ({len(v)} characters)" if isinstance(v, str) else ""
    return text[:limit] + "..." + size


def check_records(where: str, arg: str, items: Any, fields: Sequence[str], at_least: Sequence[int]) -> None:
    """Each of ``items`` is a (label, int, ...) tuple or list whose entries are ``fields``, the ints at least
    ``at_least`` (one bound per int field): else a ValueError naming the function, the argument and the item."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence) or not items:
        raise ValueError(f"{where}: {arg} must be a non-empty list of ({', '.join(fields)}) tuples, got {shown(items)}")
    for i, it in enumerate(items):
        ok = isinstance(it, (tuple, list)) and len(it) == len(fields) and isinstance(it[0], str) and \
            all(is_int(v) and v >= low for v, low in zip(it[1:], at_least))
        if not ok:
            bounds = ", ".join(f"{f} >= {low}" for f, low in zip(fields[1:], at_least))
            raise ValueError(f"{where}: {arg}[{i}] must be ({', '.join(fields)}) with a str label and ints ({bounds}), "
                             f"got {shown(it)}")
