"""Training history and callbacks of Sequential.fit."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

from .._check import is_int

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
    """Hooks of Sequential.fit. ``on_train_begin`` gets the keys every epoch's logs will hold (raise there to refuse
    a fit that cannot work, before any epoch runs); ``on_epoch_end`` the epoch number and that epoch's logs (return
    True, or set ``model.stop_training = True``, to stop training); ``on_train_end`` runs when training ends, also
    after an error."""

    def on_train_begin(self, keys: Sequence[str], model: Any) -> None:
        return None

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        return None

    def on_train_end(self, model: Any) -> None:
        return None


class EarlyStopping(Callback):
    """Stops when ``monitor`` (a History key, default "val_loss") has not improved by ``min_delta`` for ``patience``
    epochs; ``mode`` "auto" minimises losses and errors and maximises accuracy. A fit whose logs do not hold
    ``monitor`` (val_loss without validation data) is refused before it starts. ``restore_best_weights``: when
    training ends, the model gets the parameters of its best epoch back (Keras's option)."""

    def __init__(self, monitor: str = "val_loss", patience: int = 0, min_delta: float = 0.0, mode: str = "auto",
                 restore_best_weights: bool = False):
        if mode not in ("min", "max", "auto"):
            raise ValueError(f"EarlyStopping: mode must be 'min', 'max' or 'auto', got {mode!r}")
        if not isinstance(monitor, str):
            raise TypeError(f"EarlyStopping: monitor must be a History key (str), got {type(monitor).__name__}")
        if not is_int(patience) or patience < 0:
            raise ValueError(f"EarlyStopping: patience must be an int >= 0, got {patience!r}")
        if not isinstance(restore_best_weights, bool):
            raise TypeError(f"EarlyStopping: restore_best_weights must be a bool, got {restore_best_weights!r}")
        self.monitor, self.patience, self.min_delta = monitor, int(patience), abs(float(min_delta))
        self.mode = mode if mode != "auto" else ("max" if monitor.endswith("accuracy") else "min")
        self.restore_best_weights = bool(restore_best_weights)
        self._reset()

    def _reset(self) -> None:
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait, self.best_epoch = 0, -1
        self.best_weights: Optional[Dict[str, Any]] = None

    def on_train_begin(self, keys: Sequence[str], model: Any) -> None:
        if self.monitor not in keys:
            hint = " (pass validation_data or validation_split)" if self.monitor.startswith("val_") else ""
            raise ValueError(f"EarlyStopping: monitor {self.monitor!r} is not in this fit's logs{hint}; they hold "
                             f"{', '.join(keys)}")
        self._reset()

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        v = logs[self.monitor]
        better = v < self.best - self.min_delta if self.mode == "min" else v > self.best + self.min_delta
        if better:
            self.best, self.wait, self.best_epoch = v, 0, epoch
            if self.restore_best_weights:
                self.best_weights = model.state_dict()
            return None
        self.wait += 1
        return self.wait > self.patience

    def on_train_end(self, model: Any) -> None:
        if self.restore_best_weights and self.best_weights is not None:
            model.load_state_dict(self.best_weights)
