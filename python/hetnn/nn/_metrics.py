"""The confusion matrix of a classifier, and its plot."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np



def confusion_matrix(model: Any, x: Any, y: Any, *, batch_size: int = 1024) -> np.ndarray:
    """Counts of (true class, predicted class) of ``model`` on ``x``: entry [i, j] is the number of samples of class
    i whose largest output is j. ``y``: integer labels (n,) or one-hot rows (n, C). Returns int64 (C, C), C the
    model's outputs; the diagonal's sum over the total is the accuracy ``evaluate`` reports."""
    from ._model import Sequential

    if not isinstance(model, Sequential):
        raise TypeError(f"confusion_matrix: model must be a hetnn.nn.Sequential, got {type(model).__name__}")
    out = model.predict(x, batch_size=batch_size)
    if out.ndim != 2 or out.shape[1] < 2:
        raise ValueError(f"confusion_matrix: the model's outputs have shape {out.shape}; a classifier's are (n, C) "
                         f"with C >= 2")
    n, c = out.shape
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape == (n, c):
        labels = labels.argmax(axis=1)
    if labels.shape != (n,):
        raise ValueError(f"confusion_matrix: y must be {n} labels or ({n}, {c}) one-hot rows, got shape "
                         f"{labels.shape}")
    if labels.dtype.kind not in "iub" and not (labels.dtype.kind == "f" and np.all(labels == np.round(labels))):
        raise TypeError(f"confusion_matrix: y must hold integer class labels, got dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    bad = (labels < 0) | (labels >= c)
    if bad.any():
        raise ValueError(f"confusion_matrix: label {int(labels[bad][0])} is out of range for {c} classes "
                         f"(expected 0..{c - 1})")
    cm = np.zeros((c, c), dtype=np.int64)
    np.add.at(cm, (labels, out.argmax(axis=1)), 1)
    return cm


def plot_confusion_matrix(cm: Any, labels: Optional[Sequence[str]] = None, normalize: bool = True) -> Any:
    """A matplotlib Figure of ``cm`` (from :func:`confusion_matrix`): rows the true class, columns the predicted
    one, each cell's count written in it; ``normalize`` colours each row by its share (the per-class recall)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plot_confusion_matrix needs matplotlib: pip install 'hetnn[bench]'") from None

    m = np.asarray(cm)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.dtype.kind not in "iu":
        raise ValueError(f"plot_confusion_matrix: cm must be a square matrix of counts, got shape {m.shape} "
                         f"dtype {m.dtype}")
    c = m.shape[0]
    names = [str(i) for i in range(c)] if labels is None else [str(v) for v in labels]
    if len(names) != c:
        raise ValueError(f"plot_confusion_matrix: {c} classes but {len(names)} labels")
    share = m / np.maximum(m.sum(axis=1, keepdims=True), 1) if normalize else m
    fig = Figure(figsize=(0.55 * c + 2.5, 0.5 * c + 2), layout="constrained")
    ax = fig.subplots()
    ax.imshow(share, cmap="Blues")
    for i in range(c):
        for j in range(c):
            ax.text(j, i, str(int(m[i, j])), ha="center", va="center", fontsize=7,
                    color="white" if share[i, j] > 0.6 * share.max() else "black")
    ax.set_xticks(range(c), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(c), names, fontsize=8)
    total = max(int(m.sum()), 1)
    ax.set(xlabel="predicted", ylabel="true", title=f"accuracy {np.trace(m) / total:.4f} over {total} samples")
    return fig
