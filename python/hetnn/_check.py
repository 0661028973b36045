"""The type tests of argument checks that stay in Python (options of Python-only objects: bench options, fit,
layers): an int is an int or a NumPy integer but never a bool; a real number likewise."""
from __future__ import annotations

import numbers
from typing import Any

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
