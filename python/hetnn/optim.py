"""Optimizers for hetnn.nn models, with PyTorch's definitions. Their state (momentum, moments) lives on the
parameters' device; ``fit`` hands the same arrays to the C++ step loop, so ``step()`` and ``fit`` share one state."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ._loader import _core
from ._check import is_real
from ._schedules import CosineAnnealingLR, ExponentialLR, LinearLR, OneCycleLR, Schedule, StepLR


__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "Schedule", "StepLR", "ExponentialLR", "CosineAnnealingLR",
           "LinearLR", "OneCycleLR"]


class Optimizer:
    """The part every optimizer shares: its parameters, ``lr`` and the optional ``lr_schedule``: a function
    ``f(epoch, base_lr) -> lr``, applied by ``fit`` at the start of every epoch (for example
    ``lambda e, lr: lr * 0.5 ** (e // 10)``), or a :class:`Schedule` (StepLR, ExponentialLR, CosineAnnealingLR,
    LinearLR, OneCycleLR), a rate for every step, applied by ``fit``'s C++ loop and by ``step()``;
    ``iterations`` counts the steps taken (the schedule's position). ``lr`` may also be set directly between
    steps (it is the rate of the last step taken)."""

    def __init__(self, params: Sequence[Any], lr: float,
                 lr_schedule: Optional[Callable[[int, float], float]]) -> None:
        name = type(self).__name__
        self.params: List[Any] = list(params)
        if not self.params:
            raise ValueError(f"{name}: params is empty (pass model.parameters())")
        for p in self.params:
            if not hasattr(p, "value") or not hasattr(p, "grad"):
                raise TypeError(f"{name}: params must be hetnn.nn parameters (model.parameters()), got "
                                f"{type(p).__name__}")
        self.base_lr = self.lr = self._real(lr, "lr")
        if lr_schedule is not None and not callable(lr_schedule):
            raise TypeError(f"{name}: lr_schedule must be a hetnn.optim.Schedule or callable as f(epoch, base_lr) "
                            f"-> lr, got {type(lr_schedule).__name__}")
        self.lr_schedule = lr_schedule
        self.iterations = 0
        self._state: Dict[Tuple[int, str], Any] = {}

    def _real(self, v: Any, name: str, minimum: float = 0.0, below: Optional[float] = None) -> float:
        what = type(self).__name__
        if not is_real(v):
            raise TypeError(f"{what}: {name} must be a real number, got {type(v).__name__} ({v!r})")
        try:
            v = float(v)
        except OverflowError:  # an int beyond a double (a schedule returning 10**400)
            raise ValueError(f"{what}: {name} must be a finite number, got an int of {len(str(abs(v)))} digits")
        if not v >= minimum:  # also refuses NaN
            raise ValueError(f"{what}: {name} must be >= {minimum}, got {v}")
        if math.isinf(v):  # one epoch of an infinite lr or weight decay left the model all NaN, silently
            raise ValueError(f"{what}: {name} must be a finite number, got {v}")
        if below is not None and not v < below:
            raise ValueError(f"{what}: {name} must be < {below}, got {v}")
        return v

    def _bool(self, v: Any, name: str) -> bool:
        if v not in (True, False):
            raise TypeError(f"{type(self).__name__}: {name} must be a bool, got {v!r}")
        return bool(v)

    def _begin_epoch(self, epoch: int) -> None:
        if self.lr_schedule is not None and not isinstance(self.lr_schedule, Schedule):
            self.lr = self._real(self.lr_schedule(epoch, self.base_lr), "the lr the schedule returned")

    def _step_lr(self, step: int) -> float:
        assert isinstance(self.lr_schedule, Schedule)
        return self._real(self.lr_schedule(step, self.base_lr), f"the lr the schedule returned for step {step}")

    def _epoch_lrs(self, steps: int) -> Union[float, List[float]]:
        """What fit hands the C++ loop for an epoch of ``steps`` steps: the rate, or with a Schedule the rate of
        each step (checked here, before any step runs)."""
        if not isinstance(self.lr_schedule, Schedule):
            lr = self.lr
            return lr if type(lr) is float and 0.0 <= lr < math.inf else self._real(lr, "lr")
        return [self._step_lr(self.iterations + i) for i in range(steps)]

    def _epoch_done(self, lrs: Union[float, List[float]], steps: int) -> None:
        self.iterations += steps
        if isinstance(lrs, list) and lrs:
            self.lr = lrs[min(steps, len(lrs)) - 1]

    def _next_lr(self) -> float:
        """The rate of the step ``step()`` takes now."""
        if isinstance(self.lr_schedule, Schedule):
            self.lr = self._step_lr(self.iterations)
        return self._real(self.lr, "lr")

    def _buffer(self, p: Any, kind: str) -> Any:
        """p's state buffer ``kind`` on p's device (zeros when new, and again when p moved or changed shape)."""
        b = self._state.get((id(p), kind))
        if b is None or b.device.id != p.value.device.id or tuple(b.shape) != tuple(p.value.shape) \
                or b.dtype != p.value.dtype:
            b = self._state[(id(p), kind)] = _core.Array.zeros(p.value.device, list(p.value.shape), p.value.dtype)
        return b

    def zero_state(self) -> None:
        """Forgets the state (momentum buffers, moments, step count)."""
        self._state.clear()

    def step(self) -> None:  # pragma: no cover - every optimizer defines it
        raise NotImplementedError

    def _to_trainer(self, trainer: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def _after_epoch(self, trainer: Any) -> None:
        """Reads back what the C++ loop advanced (Adam's step count)."""


class SGD(Optimizer):
    """Stochastic gradient descent with PyTorch's definition (torch.optim.SGD, dampening 0)::

        g = grad + weight_decay * p
        v = momentum * v + g                 (momentum > 0; v starts at 0, so the first step takes v = g)
        g = g + momentum * v if nesterov else v
        p = p - lr * g

    ``lr_schedule`` as for every :class:`Optimizer`.
    """

    def __init__(self, params: Sequence[Any], lr: float, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, lr_schedule: Optional[Callable[[int, float], float]] = None) -> None:
        super().__init__(params, lr, lr_schedule)
        self.momentum = self._real(momentum, "momentum")
        self.weight_decay = self._real(weight_decay, "weight_decay")
        self.nesterov = self._bool(nesterov, "nesterov")
        if self.nesterov and self.momentum == 0:
            raise ValueError("SGD: nesterov=True needs momentum > 0")

    def _velocity_for(self, p: Any) -> Any:
        return self._buffer(p, "velocity") if self.momentum else None

    def step(self) -> None:
        """Applies one update from the gradients in the parameters (``fit`` runs its updates in its own loop)."""
        lr = self._next_lr()
        for p in self.params:
            _core.sgd_update(p.value, p.grad, self._velocity_for(p), lr, self.momentum, self.weight_decay,
                             self.nesterov)
        self.iterations += 1

    def _to_trainer(self, trainer: Any) -> None:
        for p in self.params:
            trainer.add_param(p.value, p.grad, self._velocity_for(p))
        trainer.set_sgd(self.momentum, self.weight_decay, self.nesterov)

    def __repr__(self) -> str:
        return (f"SGD(lr={self.lr}, momentum={self.momentum}, nesterov={self.nesterov}, "
                f"weight_decay={self.weight_decay})")


class Adam(Optimizer):
    """Adam with PyTorch's definition (torch.optim.Adam; step t counts from 1)::

        g = grad + weight_decay * p            (AdamW instead: p = p * (1 - lr * weight_decay))
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        v_hat = max(v_hat, v) if amsgrad else v
        p = p - lr / (1 - beta1**t) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

    The moments live on the parameters' device. ``lr_schedule`` as for every :class:`Optimizer`.
    """

    _decoupled = False

    def __init__(self, params: Sequence[Any], lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False,
                 lr_schedule: Optional[Callable[[int, float], float]] = None) -> None:
        super().__init__(params, lr, lr_schedule)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"{type(self).__name__}: betas must be a pair (beta1, beta2), got {betas!r}")
        self.betas = (self._real(betas[0], "betas[0]", 0.0, 1.0), self._real(betas[1], "betas[1]", 0.0, 1.0))
        self.eps = self._real(eps, "eps")
        self.weight_decay = self._real(weight_decay, "weight_decay")
        self.amsgrad = self._bool(amsgrad, "amsgrad")
        self.steps = 0  # the updates the moments have seen (PyTorch's state["step"])

    def _moments(self, p: Any) -> Tuple[Any, Any, Any]:
        return (self._buffer(p, "m"), self._buffer(p, "v"), self._buffer(p, "vmax") if self.amsgrad else None)

    def zero_state(self) -> None:
        super().zero_state()
        self.steps = 0

    def step(self) -> None:
        """Applies one update from the gradients in the parameters (``fit`` runs its updates in its own loop)."""
        lr = self._next_lr()
        b1, b2 = self.betas
        for p in self.params:
            m, v, vmax = self._moments(p)
            _core.adam_update(p.value, p.grad, m, v, vmax, lr, b1, b2, self.eps, self.weight_decay,
                              self.steps + 1, self.amsgrad, self._decoupled)
        self.steps += 1
        self.iterations += 1

    def _to_trainer(self, trainer: Any) -> None:
        trainer.set_adam(self.betas[0], self.betas[1], self.eps, self.weight_decay, self.amsgrad, self._decoupled,
                         self.steps)
        for p in self.params:
            trainer.add_adam_param(p.value, p.grad, *self._moments(p))

    def _after_epoch(self, trainer: Any) -> None:
        self.steps = int(trainer.adam_steps)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(lr={self.lr}, betas={self.betas}, eps={self.eps}, "
                f"weight_decay={self.weight_decay}, amsgrad={self.amsgrad})")


class AdamW(Adam):
    """Adam with decoupled weight decay (torch.optim.AdamW): ``p = p * (1 - lr * weight_decay)`` before the Adam
    step, the gradient left as it is. PyTorch's default ``weight_decay=0.01``."""

    _decoupled = True

    def __init__(self, params: Sequence[Any], lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01, amsgrad: bool = False,
                 lr_schedule: Optional[Callable[[int, float], float]] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, lr_schedule)
