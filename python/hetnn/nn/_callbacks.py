"""Training history and callbacks of Sequential.fit."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

class History:
    """What :meth:`Sequential.fit` returns. ``history``: per-epoch lists under "loss", each metric, "val_loss" and
    "val_<metric>" with validation data, and "epoch_time" (seconds, wall clock, synchronised at the epoch's end).
    ``device_time``: seconds of device time per kind of command over the whole fit (matmul, activation_backward,
    loss, sgd_update, take_rows, ...), from the devices' own timers. ``epochs``: the epochs run."""

    def __init__(self) -> None:
        self.history: Dict[str, List[float]] = {}
        self.device_time: Dict[str, float] = {}
        self.epochs: List[int] = []
        self.params: Dict[str, Any] = {}

    def _add(self, key: str, value: float) -> None:
        self.history.setdefault(key, []).append(float(value))

    def __repr__(self) -> str:
        last = {k: round(v[-1], 4) for k, v in self.history.items() if v}
        return f"History(epochs={len(self.epochs)}, last={last})"


class Callback:
    """Called at the end of every epoch with the epoch number and that epoch's logs (the History keys). Return True
    (or set ``model.stop_training = True``) to stop training."""

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        return None


class EarlyStopping(Callback):
    """Stops when ``monitor`` (default "val_loss", else "loss") has not improved by ``min_delta`` for ``patience``
    epochs."""

    def __init__(self, monitor: str = "val_loss", patience: int = 0, min_delta: float = 0.0, mode: str = "min"):
        if mode not in ("min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'min' or 'max', got {mode!r}")
        self.monitor, self.patience, self.min_delta, self.mode = monitor, int(patience), float(min_delta), mode
        self.best = math.inf if mode == "min" else -math.inf
        self.wait = 0

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        key = self.monitor if self.monitor in logs else "loss"
        v = logs[key]
        better = v < self.best - self.min_delta if self.mode == "min" else v > self.best + self.min_delta
        if better:
            self.best, self.wait = v, 0
            return None
        self.wait += 1
        return self.wait > self.patience
