"""How fit spreads an epoch's steps: over the model's device alone, over several devices of this process
(hetnn.nn._mirrored) or over MPI ranks (hetnn.nn._data_parallel). Each is one object under the same epoch loop
(_fit.run_fit): which rows an epoch takes, how its steps run, how its sums become the epoch's, and whether to stop."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .._loader import _core


class OneDevice:
    """The model's device alone: the core trainer runs all the steps of an epoch in one C++ call."""

    def __init__(self, model: Any, trainer: Any, data: Tuple[Any, Any, Any], accs: List[Any], n: int, bs: int,
                 shuffle: bool) -> None:
        self.trainer, (self.X, self.Y, self.labels), self.accs = trainer, data, accs
        self.n, self.bs, self.shuffle = n, bs, shuffle
        self.dev = model._device._dev
        self.idx = _core.Array.from_numpy(self.dev, np.arange(n, dtype=np.int64))
        self.order: Optional[np.ndarray] = None  # the next epoch's row order, set on the device by fit_epoch
        self._steps = int(_core.Trainer.epoch_steps(n, bs))
        self.params: Dict[str, Any] = {}
        self.extra_logs: List[str] = []
        self.reports = True  # this process shows the progress bars

    def begin(self, optimizer: Any) -> None:
        """Before the first epoch."""

    def rows(self, rng: np.random.Generator) -> Tuple[int, float]:
        """Sets the epoch's row order; returns the samples it counts and the progress bar's scale."""
        if self.shuffle:
            self.order = rng.permutation(self.n)
        return self.n, 1.0

    def accumulators(self) -> List[Any]:
        return self.accs

    def zero_sums(self) -> None:
        """Before the epoch's steps (fit_epoch zeroes this strategy's sums itself)."""

    def steps(self) -> int:
        """The steps of the epoch whose rows ``rows`` set."""
        return self._steps

    def run(self, lr: Union[float, List[float]], report: Any) -> Optional[List[float]]:
        """The epoch's steps (``lr``: the rate, or one per step); the loss and metric sums when the strategy has
        them at hand (else ``sums`` reads). One C++ call: the row order set, the sums zeroed, the steps, the sums
        read back."""
        order, self.order = self.order, None
        return self.trainer.fit_epoch(self.X, self.Y, self.labels, self.idx, order, self.bs, lr, self.accs[0],
                                      report)

    def sums(self) -> List[float]:
        return [float(a.to_numpy()[0]) for a in self.accs]  # reads back: the epoch is done

    def reduce(self, sums: List[float], epoch_time: float, samples: int) -> Tuple[List[float], float, int,
                                                                                   Dict[str, float]]:
        return sums, epoch_time, samples, {}

    def stop(self, stop: bool) -> bool:
        return stop

    def close(self) -> None:
        pass


class Ranks(OneDevice):
    """MPI ranks, one device each: every rank steps through its share of the global batch and the gradients are
    averaged in a step hook; the epoch's sums and time are reduced over the ranks, and a stop is every rank's."""

    def __init__(self, dp: Any, *args: Any) -> None:
        super().__init__(*args)
        self.dp = dp
        self.params = {"ranks": dp.size, "global_batch_size": self.bs * dp.size, "reduction": dp.reducer.mode}
        self.extra_logs = ["comm_time"]
        self.reports = dp.rank == 0

    def begin(self, optimizer: Any) -> None:
        self.dp.synchronise(optimizer)
        if self.dp.size > 1:
            self.trainer.set_step_hooks(self.dp.step_hook())
        self.trainer.set_dropout_stream(self.dp.rank)

    def rows(self, rng: np.random.Generator) -> Tuple[int, float]:
        self.idx = _core.Array.from_numpy(self.dev, self.dp.epoch_rows(rng))
        self._steps = int(_core.Trainer.epoch_steps(int(self.idx.shape[0]), self.bs))
        return self.n, float(self.dp.size)

    def reduce(self, sums: List[float], epoch_time: float, samples: int) -> Tuple[List[float], float, int,
                                                                                   Dict[str, float]]:
        sums, epoch_time, comm_time = self.dp.reduce_sums(sums, epoch_time)
        return sums, epoch_time, self.dp.samples, {"comm_time": comm_time}

    def stop(self, stop: bool) -> bool:
        return bool(self.dp.any_rank(stop))  # a rank that left the loop would leave the others waiting


class Devices(OneDevice):
    """Several devices of this process (hetnn.nn._mirrored): a slice of every step on each, the strategy's update."""

    def __init__(self, mirror: Any, *args: Any) -> None:
        super().__init__(*args)
        self.mirror = mirror

    def build(self, x: Any, y: Any, out_shape: Tuple[int, ...], loss_obj: Any, plan: Any,
              make_trainer: Callable[..., Any], optimizer: Any, strategy: str) -> None:
        m = self.mirror
        m.build(x, y, self.n, out_shape, loss_obj, plan, (self.trainer, self.X, self.Y, self.labels, self.accs),
                make_trainer, optimizer)
        self.params = {"devices": [d.id for d in m.devices], "rows_per_device": list(m.step_rows),
                       "strategy": strategy}

    def rows(self, rng: np.random.Generator) -> Tuple[int, float]:
        order = rng.permutation(self.n) if self.shuffle else np.arange(self.n)
        return self.mirror.epoch_rows(order, self.n), self.bs / self.mirror.step_rows[0]

    def accumulators(self) -> List[Any]:
        return self.accs + [a for m in self.mirror.members[1:] for a in m.accs]

    def zero_sums(self) -> None:
        zero = np.zeros(1, np.float32)
        for a in self.accumulators():
            a.write_from(zero)

    def steps(self) -> int:
        first = self.mirror.members[0]  # every device takes a slice of every step
        return int(_core.Trainer.epoch_steps(int(first.idx.shape[0]), first.batch))

    def run(self, lr: Union[float, List[float]], report: Any) -> Optional[List[float]]:
        return list(self.mirror.run_epoch(lr, report))

    def close(self) -> None:
        self.mirror.close()

