"""The learning-rate range test (Smith, "Cyclical Learning Rates for Training Neural Networks", 2017; fastai's
lr_find): steps of training with a learning rate growing exponentially from ``start_lr`` to ``end_lr``, the loss of
each step's batch recorded, and the model and optimizer put back as they were afterwards."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._check import is_int, is_real


@dataclass
class LRFind:
    """What :func:`lr_find` returns: the learning rate of each step (``lrs``), the batch loss it met before its
    update (``raw_losses``) and that loss smoothed (``losses``: an exponential moving average with bias correction,
    as fastai plots it); ``suggestion``: the rate where the smoothed loss fell fastest against log(lr) (None when
    too few steps ran to tell); ``stopped``: why the test ended."""

    lrs: List[float] = field(default_factory=list)
    raw_losses: List[float] = field(default_factory=list)
    losses: List[float] = field(default_factory=list)
    suggestion: Optional[float] = None
    stopped: str = ""

    def plot(self, ax: Any = None) -> Any:
        """The smoothed loss against the learning rate (log axis), the suggestion marked; a matplotlib Figure
        (``ax``: draw into that Axes instead and return its figure)."""
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ImportError("LRFind.plot needs matplotlib: pip install 'hetnn[bench]'") from None
        if ax is None:
            fig = Figure(figsize=(5, 3.5), layout="constrained")
            ax = fig.subplots()
        ax.semilogx(self.lrs, self.losses, label="loss (smoothed)")
        if self.suggestion is not None:
            i = int(np.argmin(np.abs(np.log(self.lrs) - math.log(self.suggestion))))
            ax.plot([self.suggestion], [self.losses[i]], "o", color="red",
                    label=f"steepest descent: {self.suggestion:.2g}")
        ax.set(xlabel="learning rate", ylabel="training loss", title=f"learning-rate range test ({self.stopped})")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        return ax.figure


def _check(x: Any, start_lr: Any, end_lr: Any, num_iter: Any, batch_size: Any, smooth: Any,
           diverge: Any) -> None:
    for name, v in (("start_lr", start_lr), ("end_lr", end_lr)):
        if not is_real(v) or not math.isfinite(float(v)) or not float(v) > 0:
            raise ValueError(f"lr_find: {name} must be a finite number > 0, got {v!r}")
    if not float(end_lr) > float(start_lr):
        raise ValueError(f"lr_find: end_lr must be above start_lr, got start_lr={start_lr!r}, end_lr={end_lr!r}")
    if not is_int(num_iter) or num_iter < 2:
        raise ValueError(f"lr_find: num_iter must be an int >= 2, got {num_iter!r}")
    if not is_int(batch_size) or not 1 <= batch_size <= len(x):
        raise ValueError(f"lr_find: batch_size must be an int from 1 to the {len(x)} samples, got {batch_size!r}")
    if not is_real(smooth) or not 0 <= float(smooth) < 1:
        raise ValueError(f"lr_find: smooth must be a number in [0, 1), got {smooth!r}")
    if not is_real(diverge) or not float(diverge) > 1:
        raise ValueError(f"lr_find: diverge must be a number > 1, got {diverge!r}")


def _snapshot(model: Any, optimizer: Any) -> Tuple[Dict[str, Any], List[Any], Dict[str, Any], Dict[Any, Any]]:
    """What the test changes: the weights, the layers' fit progress (dropout streams), the optimizer's settings and
    its state buffers (momentum, moments) as host copies."""
    opt = {k: getattr(optimizer, k) for k in ("lr", "base_lr", "lr_schedule", "steps", "iterations")
           if hasattr(optimizer, k)}
    buffers = {key: b.to_numpy() for key, b in optimizer._state.items()}
    return model.state_dict(), [layer._fit_progress() for layer in model.layers], opt, buffers


def _restore(model: Any, optimizer: Any, snap: Tuple[Dict[str, Any], List[Any], Dict[str, Any], Dict[Any, Any]]
             ) -> None:
    weights, progress, opt, buffers = snap
    model.load_state_dict(weights)
    for layer, v in zip(model.layers, progress):
        layer._restore_fit_progress(v)
    for k, v in opt.items():
        setattr(optimizer, k, v)
    for key in list(optimizer._state):  # buffers made during the test did not exist before it
        if key not in buffers:
            del optimizer._state[key]
    for key, v in buffers.items():
        optimizer._state[key].write_from(np.ascontiguousarray(v))


def _steepest(lrs: List[float], losses: List[float]) -> Optional[float]:
    """The rate where the smoothed loss falls fastest against log(lr), leaving out the first tenth (the average
    still settling) and the last steps (the divergence): None with fewer than 5 points between."""
    lo, hi = max(1, len(lrs) // 10), len(lrs) - max(1, len(lrs) // 20)
    if hi - lo < 5:
        return None
    g = np.gradient(np.asarray(losses[lo:hi]), np.log(np.asarray(lrs[lo:hi])))
    if not np.all(np.isfinite(g)) or float(np.min(g)) >= 0:
        return None
    return float(lrs[lo + int(np.argmin(g))])


def lr_find(model: Any, x: Any, y: Any, *, loss: Any, optimizer: Any, start_lr: float = 1e-7, end_lr: float = 10.0,
            num_iter: int = 100, batch_size: int = 64, smooth: float = 0.98, diverge: float = 4.0,
            seed: int = 0) -> LRFind:
    """The learning-rate range test: ``num_iter`` training steps of ``model`` with ``optimizer`` (its ``lr`` set
    for each step, growing exponentially from ``start_lr`` to ``end_lr``), each on a batch of ``batch_size`` rows
    drawn without replacement (reshuffled after each pass) with ``seed``; the test stops early once the smoothed
    loss exceeds ``diverge`` times its lowest or is not finite. The model's weights, its layers' dropout streams
    and the optimizer's rate, schedule and state are restored afterwards, also after an error or an interrupt.
    Returns an :class:`LRFind` (``.plot()`` draws it)."""
    _check(x, start_lr, end_lr, num_iter, batch_size, smooth, diverge)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"lr_find: seed must be an int, got {seed!r}")
    x, y = np.asarray(x), np.asarray(y)
    if len(y) != len(x):
        raise ValueError(f"lr_find: x has {len(x)} samples but y has {len(y)}")
    rng = np.random.default_rng(seed)
    snap = _snapshot(model, optimizer)
    out = LRFind(stopped=f"{num_iter} steps")
    ratio = float(end_lr) / float(start_lr)
    avg, best = 0.0, math.inf
    order, at = rng.permutation(len(x)), 0
    try:
        optimizer.lr_schedule = None  # fit would otherwise set the epoch's rate over the one given here
        for i in range(num_iter):
            if at + batch_size > len(x):
                order, at = rng.permutation(len(x)), 0
            rows = order[at:at + batch_size]
            at += batch_size
            lr = float(start_lr) * ratio ** (i / (num_iter - 1))
            optimizer.lr = lr
            h = model.fit(x[rows], y[rows], loss=loss, optimizer=optimizer, epochs=1, batch_size=batch_size,
                          shuffle=False, seed=seed + i)
            raw = float(h.history["loss"][0])
            avg = smooth * avg + (1 - smooth) * raw
            smoothed = avg / (1 - smooth ** (i + 1))
            out.lrs.append(lr)
            out.raw_losses.append(raw)
            out.losses.append(smoothed)
            if not math.isfinite(smoothed) or smoothed > float(diverge) * best:
                out.stopped = f"diverged at step {i + 1} of {num_iter}"
                break
            best = min(best, smoothed)
    finally:
        _restore(model, optimizer, snap)
    out.suggestion = _steepest(out.lrs, out.losses)
    return out
