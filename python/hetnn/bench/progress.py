"""The progress protocol of the suite runners: ``progress(msg)`` once per step, and ``expect(progress, n)`` before
a loop of n steps, so that a bar can show its total (a plain callable ignores it)."""
from __future__ import annotations

from typing import Any


def expect(progress: Any, n: int) -> None:
    fn = getattr(progress, "expect", None)
    if fn is not None:
        fn(n)
