"""Per-step hooks of fit: ``Callback.on_batch_end`` and ``fit(step_times=True)``. The C++ step loop calls back into
Python only when one of them is asked for; each call reads the epoch's loss sum from the device (which waits for the
step), so a step's time and loss are its own, at the cost of one synchronisation per step."""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence, Union

from ._callbacks import Callback, History


def _defines_on_batch_end(cb: Any) -> bool:
    own = getattr(type(cb), "on_batch_end", None)
    return own is not None and own is not Callback.on_batch_end


class StepHooks:
    """The per-step work of one fit: ``on_batch_end(step, logs, model)`` of the callbacks that define it, with logs
    ``{"batch", "size", "loss", "lr", "step_time"}`` (step counted within the epoch; loss: the batch's mean), and
    with ``step_times`` each epoch's step times in ``History.step_times``."""

    def __init__(self, cbs: Sequence[Any], step_times: bool, model: Any) -> None:
        self.cbs = [cb for cb in cbs if _defines_on_batch_end(cb)]
        self.timed, self.model = step_times, model
        self.acc: Any = None
        self.lrs: Union[float, List[float]] = 0.0
        self.step, self.prev, self.t = 0, 0.0, 0.0
        self.times: List[float] = []

    @staticmethod
    def wanted(cbs: Sequence[Any], step_times: bool) -> bool:
        return bool(step_times) or any(_defines_on_batch_end(cb) for cb in cbs)

    def attach(self, how: Any) -> None:
        """Sets the trainer's after-step hook; one device only (the other strategies use the hooks themselves)."""
        from ._strategies import OneDevice

        if type(how) is not OneDevice:  # Ranks and Devices set the trainer's hooks for themselves
            raise ValueError("fit: per-step callbacks (on_batch_end) and step_times run on one device; with several "
                             "devices or MPI ranks use epoch-level callbacks")
        self.acc = how.accumulators()[0]
        how.trainer.set_step_hooks(None, self.before_step, self.after_step)

    def begin_epoch(self, lrs: Union[float, List[float]]) -> None:
        self.lrs, self.step, self.prev, self.times = lrs, 0, 0.0, []
        self.t = time.perf_counter()

    def before_step(self, rows: int) -> None:
        if self.step == 0:  # the first step's time starts here, after the epoch's row order and zeroed sums
            self.t = time.perf_counter()

    def after_step(self, rows: int) -> None:
        total = float(self.acc.to_numpy()[0])  # the loss sum so far: waits for this step's work
        now = time.perf_counter()
        logs: Dict[str, float] = {"batch": self.step, "size": rows, "loss": (total - self.prev) / rows,
                                  "lr": self.lrs[self.step] if isinstance(self.lrs, list) else self.lrs,
                                  "step_time": now - self.t}
        self.times.append(now - self.t)
        self.step, self.prev = self.step + 1, total
        for cb in self.cbs:
            cb.on_batch_end(logs["batch"], dict(logs), self.model)
        self.t = time.perf_counter()  # a callback's own time is not the next step's

    def end_epoch(self, hist: History) -> None:
        if self.timed:
            hist.step_times.append(self.times)


def step_hooks(cbs: Sequence[Any], step_times: Any, model: Any, how: Any) -> Optional[StepHooks]:
    """The fit's StepHooks, attached to its strategy, or None when nothing asks for per-step work."""
    if not isinstance(step_times, bool):
        raise TypeError(f"fit: step_times must be a bool, got {step_times!r}")
    if not StepHooks.wanted(cbs, step_times):
        return None
    hooks = StepHooks(cbs, step_times, model)
    hooks.attach(how)
    return hooks
