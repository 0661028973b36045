"""Training history and callbacks of Sequential.fit."""
from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional, Sequence, Union

from .._check import is_int

class History:
    """What :meth:`Sequential.fit` returns. ``history``: per-epoch lists under "loss", each metric, "val_loss" and
    "val_<metric>" with validation data, and "epoch_time" (seconds, wall clock, synchronised at the epoch's end).
    ``device_time``: seconds of device time per kind of command over the whole fit (matmul, activation_backward,
    loss, sgd_update, take_rows, ...), from the devices' own timers. ``epochs``: the epochs run."""

    def __init__(self) -> None:
        self.history: Dict[str, List[float]] = {}
        self.step_times: List[List[float]] = []  # per epoch, each step's seconds (fit(step_times=True))
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
    after an error. ``on_batch_end(step, logs, model)``, when a callback defines it, runs after every step with
    logs "batch" (the step within the epoch), "size", "loss" (the batch's mean), "lr" and "step_time" (seconds,
    synchronised): the C++ loop then waits for each step, which costs time on a fast device."""

    def on_train_begin(self, keys: Sequence[str], model: Any) -> None:
        return None

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        return None

    def on_batch_end(self, step: int, logs: Dict[str, float], model: Any) -> None:
        return None

    def on_train_end(self, model: Any) -> None:
        return None


class _Monitor(Callback):
    """What EarlyStopping and ModelCheckpoint share: a History key to watch, whether a value improves on the best
    (``mode`` "auto" minimises losses and errors and maximises accuracy), and the refusal, before any epoch runs, of
    a fit whose logs do not hold it."""

    def _watch(self, what: str, monitor: str, mode: str, min_delta: float) -> None:
        if mode not in ("min", "max", "auto"):
            raise ValueError(f"{what}: mode must be 'min', 'max' or 'auto', got {mode!r}")
        if not isinstance(monitor, str):
            raise TypeError(f"{what}: monitor must be a History key (str), got {type(monitor).__name__}")
        if isinstance(min_delta, bool) or not isinstance(min_delta, (int, float)) or not math.isfinite(min_delta):
            raise ValueError(f"{what}: min_delta must be a finite number, got {min_delta!r}")
        self._what, self.monitor, self.min_delta = what, monitor, abs(float(min_delta))
        self.mode = mode if mode != "auto" else ("max" if monitor.endswith("accuracy") else "min")
        self.best = math.inf if self.mode == "min" else -math.inf
        self.best_epoch = -1

    def _check_keys(self, keys: Sequence[str]) -> None:
        if self.monitor not in keys:
            hint = " (pass validation_data or validation_split)" if self.monitor.startswith("val_") else ""
            raise ValueError(f"{self._what}: monitor {self.monitor!r} is not in this fit's logs{hint}; they hold "
                             f"{', '.join(keys)}")
        self.best = math.inf if self.mode == "min" else -math.inf
        self.best_epoch = -1

    def _improved(self, epoch: int, logs: Dict[str, float]) -> bool:
        v = logs[self.monitor]
        better = v < self.best - self.min_delta if self.mode == "min" else v > self.best + self.min_delta
        if better:
            self.best, self.best_epoch = v, epoch
        return bool(better)


class EarlyStopping(_Monitor):
    """Stops when ``monitor`` (a History key, default "val_loss") has not improved by ``min_delta`` for ``patience``
    epochs; ``mode`` "auto" minimises losses and errors and maximises accuracy. A fit whose logs do not hold
    ``monitor`` (val_loss without validation data) is refused before it starts. ``restore_best_weights``: when
    training ends, the model gets the parameters of its best epoch back (Keras's option)."""

    def __init__(self, monitor: str = "val_loss", patience: int = 0, min_delta: float = 0.0, mode: str = "auto",
                 restore_best_weights: bool = False):
        self._watch("EarlyStopping", monitor, mode, min_delta)
        if not is_int(patience) or patience < 0:
            raise ValueError(f"EarlyStopping: patience must be an int >= 0, got {patience!r}")
        if not isinstance(restore_best_weights, bool):
            raise TypeError(f"EarlyStopping: restore_best_weights must be a bool, got {restore_best_weights!r}")
        self.patience = int(patience)
        self.restore_best_weights = bool(restore_best_weights)
        self.wait = 0
        self.best_weights: Optional[Dict[str, Any]] = None

    def on_train_begin(self, keys: Sequence[str], model: Any) -> None:
        self._check_keys(keys)
        self.wait = 0
        self.best_weights = None

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        if self._improved(epoch, logs):
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = model.state_dict()
            return None
        self.wait += 1
        return self.wait > self.patience

    def on_train_end(self, model: Any) -> None:
        if self.restore_best_weights and self.best_weights is not None:
            model.load_state_dict(self.best_weights)


class ModelCheckpoint(_Monitor):
    """Saves the model (:meth:`Sequential.save`: written atomically, so an interrupted save leaves the previous file)
    at the end of every epoch, or with ``save_best_only`` only when ``monitor`` improved (by more than
    ``min_delta``; ``mode`` as EarlyStopping). ``path`` may name fields of the epoch's logs and ``epoch`` (counted
    from 1, as Keras names them): ``"ckpt/model-{epoch:02d}-{val_loss:.3f}.npz"``. A path whose fields the fit
    does not log, a monitor it does not log, or a folder that does not exist is refused before the first epoch.
    ``saved`` lists the files written; ``best`` and ``best_epoch`` (from 0, as History) the best value seen."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], monitor: str = "val_loss", save_best_only: bool = False,
                 mode: str = "auto", min_delta: float = 0.0):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"ModelCheckpoint: path must be a str or os.PathLike, got {type(path).__name__}")
        if not isinstance(save_best_only, bool):
            raise TypeError(f"ModelCheckpoint: save_best_only must be a bool, got {save_best_only!r}")
        self.path = os.fspath(path)
        if not self.path:
            raise ValueError("ModelCheckpoint: path is empty")
        self._watch("ModelCheckpoint", monitor, mode, min_delta)
        self.save_best_only = save_best_only
        self.saved: List[str] = []

    def _name(self, epoch: int, logs: Dict[str, float]) -> str:
        return self.path.format(**{**logs, "epoch": epoch + 1})

    def on_train_begin(self, keys: Sequence[str], model: Any) -> None:
        if self.save_best_only:
            self._check_keys(keys)
        try:
            name = self._name(0, {k: 0.0 for k in keys})
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"ModelCheckpoint: path {self.path!r} names a field this fit does not log ({exc}); "
                             f"it can use epoch and {', '.join(keys)}") from None
        folder = os.path.dirname(os.path.abspath(name))
        if not os.path.isdir(folder):
            raise ValueError(f"ModelCheckpoint: folder {folder!r} of path {self.path!r} does not exist")
        self.saved = []

    def on_epoch_end(self, epoch: int, logs: Dict[str, float], model: Any) -> Optional[bool]:
        if not self.save_best_only or self._improved(epoch, logs):
            name = self._name(epoch, logs)
            model.save(name)
            self.saved.append(name)
        return None
