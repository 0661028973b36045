"""Optimizers for hetnn.nn models. State (momentum buffers) lives on the parameters' device."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from ._loader import _core
from ._check import is_real


__all__ = ["SGD"]

def _real(v: Any, name: str, minimum: float = 0.0) -> float:
    if not is_real(v):
        raise TypeError(f"SGD: {name} must be a real number, got {type(v).__name__} ({v!r})")
    v = float(v)
    if not v >= minimum:  # also refuses NaN
        raise ValueError(f"SGD: {name} must be >= {minimum}, got {v}")
    return v


class SGD:
    """Stochastic gradient descent with PyTorch's definition (torch.optim.SGD, dampening 0)::

        g = grad + weight_decay * p
        v = momentum * v + g                 (momentum > 0; v starts at 0, so the first step takes v = g)
        g = g + momentum * v if nesterov else v
        p = p - lr * g

    ``lr_schedule``: optional ``f(epoch, base_lr) -> lr``, applied by ``fit`` at the start of every epoch (for
    example ``lambda e, lr: lr * 0.5 ** (e // 10)``). ``lr`` may also be set directly between steps.
    """

    def __init__(self, params: Sequence[Any], lr: float, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, lr_schedule: Optional[Callable[[int, float], float]] = None) -> None:
        self.params: List[Any] = list(params)
        if not self.params:
            raise ValueError("SGD: params is empty (pass model.parameters())")
        for p in self.params:
            if not hasattr(p, "value") or not hasattr(p, "grad"):
                raise TypeError(f"SGD: params must be hetnn.nn parameters (model.parameters()), got "
                                f"{type(p).__name__}")
        self.base_lr = self.lr = _real(lr, "lr")
        self.momentum = _real(momentum, "momentum")
        self.weight_decay = _real(weight_decay, "weight_decay")
        if nesterov not in (True, False):
            raise TypeError(f"SGD: nesterov must be a bool, got {nesterov!r}")
        if nesterov and self.momentum == 0:
            raise ValueError("SGD: nesterov=True needs momentum > 0")
        self.nesterov = bool(nesterov)
        if lr_schedule is not None and not callable(lr_schedule):
            raise TypeError("SGD: lr_schedule must be callable as f(epoch, base_lr) -> lr")
        self.lr_schedule = lr_schedule
        self._velocity: dict = {}

    def _begin_epoch(self, epoch: int) -> None:
        if self.lr_schedule is not None:
            self.lr = _real(self.lr_schedule(epoch, self.base_lr), "the lr the schedule returned")

    def _velocity_for(self, p: Any) -> Any:
        """p's momentum buffer on p's device (created as zeros, and again when p moved); None without momentum."""
        if not self.momentum:
            return None
        v = self._velocity.get(id(p))
        if v is None or v.device.id != p.value.device.id or tuple(v.shape) != tuple(p.value.shape):
            v = self._velocity[id(p)] = _core.Array.zeros(p.value.device, list(p.value.shape), p.value.dtype)
        return v

    def step(self) -> None:
        """Applies one update from the gradients in the parameters (``fit`` runs its updates in its own loop)."""
        lr = _real(self.lr, "lr")
        for p in self.params:
            _core.sgd_update(p.value, p.grad, self._velocity_for(p), lr, self.momentum, self.weight_decay,
                             self.nesterov)

    def zero_state(self) -> None:
        """Forgets the momentum buffers."""
        self._velocity.clear()

    def __repr__(self) -> str:
        return (f"SGD(lr={self.lr}, momentum={self.momentum}, nesterov={self.nesterov}, "
                f"weight_decay={self.weight_decay})")
