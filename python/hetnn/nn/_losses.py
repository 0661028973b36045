"""Losses of hetnn.nn, with PyTorch's definitions and mean reduction. They run fused on the device (the loss and
its gradient in one pass); the model keeps the running sum on the device and reads it back once per epoch."""
from __future__ import annotations

from typing import Any, Dict


class Loss:
    kind = ""
    name = ""

    def config(self) -> Dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CrossEntropyLoss(Loss):
    """Softmax cross-entropy on logits, as torch.nn.CrossEntropyLoss (mean over the batch): targets are integer
    class labels (N,) or class probabilities / one-hot rows (N, C). The softmax is fused into the loss and computed
    stably. A model whose last layer is :class:`Softmax` hands the loss the logits before it."""

    kind = "cross_entropy"
    name = "cross_entropy"


class MSELoss(Loss):
    """Mean squared error over all elements, as torch.nn.MSELoss (reduction "mean")."""

    kind = "mse"
    name = "mse"


LOSSES = {"cross_entropy": CrossEntropyLoss, "mse": MSELoss}


def as_loss(value: Any, what: str = "loss") -> Loss:
    if isinstance(value, Loss):
        return value
    if isinstance(value, type) and issubclass(value, Loss) and value is not Loss:
        return value()
    if isinstance(value, str) and value in LOSSES:
        return LOSSES[value]()
    raise TypeError(f"{what} must be a hetnn.nn loss (CrossEntropyLoss(), MSELoss()) or one of {list(LOSSES)}, "
                    f"got {value!r}")
