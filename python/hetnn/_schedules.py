"""Learning rates per training step, with PyTorch's definitions (torch.optim.lr_scheduler), counted in steps: given
as an optimizer's ``lr_schedule``, ``fit`` hands the C++ step loop a table of the epoch's rates (no Python per step)
and ``step()`` applies the next one at each call. ``optimizer.iterations`` is the step the schedule has reached."""
from __future__ import annotations

import math
from typing import Any

from ._check import is_int, is_real

__all__ = ["Schedule", "StepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR"]


def _number(owner: str, name: str, v: Any, low: float = 0.0, low_open: bool = False,
            high: float = math.inf, high_open: bool = False) -> float:
    if not is_real(v) or not math.isfinite(float(v)):
        raise ValueError(f"{owner}: {name} must be a finite number, got {v!r}")
    f = float(v)
    if f < low or (low_open and f == low) or f > high or (high_open and f == high):
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{owner}: {name} must be in {lo}{low:g}, {high:g}{hi}, got {v!r}")
    return f


def _steps(owner: str, name: str, v: Any) -> int:
    if not is_int(v) or v < 1:
        raise ValueError(f"{owner}: {name} must be an int >= 1, got {v!r}")
    return int(v)


class Schedule:
    """A learning rate for every training step: ``schedule(step, base_lr)`` with step counted from 0 over every
    fit (``optimizer.iterations``) and base_lr the optimizer's ``lr`` when it was made."""

    def __call__(self, step: int, base_lr: float) -> float:  # pragma: no cover - every schedule defines it
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class StepLR(Schedule):
    """base_lr * gamma ** (step // step_size)."""

    def __init__(self, step_size: int, gamma: float = 0.1) -> None:
        self.step_size = _steps("StepLR", "step_size", step_size)
        self.gamma = _number("StepLR", "gamma", gamma)

    def __call__(self, step: int, base_lr: float) -> float:
        return base_lr * self.gamma ** (step // self.step_size)


class ExponentialLR(Schedule):
    """base_lr * gamma ** step."""

    def __init__(self, gamma: float) -> None:
        self.gamma = _number("ExponentialLR", "gamma", gamma)

    def __call__(self, step: int, base_lr: float) -> float:
        return base_lr * self.gamma ** step


class CosineAnnealingLR(Schedule):
    """From base_lr down to eta_min along half a cosine over T_max steps, then eta_min (PyTorch's closed form)."""

    def __init__(self, T_max: int, eta_min: float = 0.0) -> None:  # noqa: N803 - PyTorch's name
        self.T_max = _steps("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = _number("CosineAnnealingLR", "eta_min", eta_min)

    def __call__(self, step: int, base_lr: float) -> float:
        t = min(step, self.T_max)
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * t / self.T_max)) / 2


class LinearLR(Schedule):
    """A linear warm-up (or decay): base_lr times a factor going linearly from start_factor to end_factor over
    total_iters steps, then end_factor."""

    def __init__(self, start_factor: float = 1.0 / 3, end_factor: float = 1.0, total_iters: int = 5) -> None:
        self.start_factor = _number("LinearLR", "start_factor", start_factor, 0.0, True, 1.0)
        self.end_factor = _number("LinearLR", "end_factor", end_factor, 0.0, False, 1.0)
        self.total_iters = _steps("LinearLR", "total_iters", total_iters)

    def __call__(self, step: int, base_lr: float) -> float:
        t = min(step, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * t)


class OneCycleLR(Schedule):
    """The one-cycle policy (Smith and Topin 2018; PyTorch's OneCycleLR with cosine annealing, two phases): from
    max_lr / div_factor up to max_lr over the first pct_start of total_steps, then down to
    max_lr / div_factor / final_div_factor; base_lr is not used. Steps past total_steps keep the last rate."""

    def __init__(self, max_lr: float, total_steps: int, pct_start: float = 0.3, div_factor: float = 25.0,
                 final_div_factor: float = 1e4) -> None:
        self.max_lr = _number("OneCycleLR", "max_lr", max_lr, 0.0, True)
        self.total_steps = _steps("OneCycleLR", "total_steps", total_steps)
        self.pct_start = _number("OneCycleLR", "pct_start", pct_start, 0.0, True, 1.0, True)
        self.div_factor = _number("OneCycleLR", "div_factor", div_factor, 0.0, True)
        self.final_div_factor = _number("OneCycleLR", "final_div_factor", final_div_factor, 0.0, True)

    def __call__(self, step: int, base_lr: float) -> float:
        initial = self.max_lr / self.div_factor
        final = initial / self.final_div_factor
        up = float(self.pct_start * self.total_steps) - 1  # PyTorch's phase ends
        end = float(self.total_steps - 1)
        s = min(step, self.total_steps - 1)
        if s <= up:
            start_lr, end_lr, pct = initial, self.max_lr, s / up if up > 0 else 1.0
        else:
            start_lr, end_lr, pct = self.max_lr, final, (s - up) / (end - up) if end > up else 1.0
        return end_lr + (start_lr - end_lr) * (1 + math.cos(math.pi * pct)) / 2
