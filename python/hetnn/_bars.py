"""The progress-bar class of fit and the bench: tqdm.auto (a widget in Jupyter) when ipywidgets is there to draw
it, else tqdm's text bar. tqdm.auto without ipywidgets in a notebook raises "IProgress not found"."""
from __future__ import annotations

from typing import Any


def tqdm_class() -> Any:
    try:
        import ipywidgets  # noqa: F401

        from tqdm.auto import tqdm
    except ImportError:
        from tqdm import tqdm
    return tqdm
