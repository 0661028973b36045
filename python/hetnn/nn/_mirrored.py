"""fit(..., devices=[...]): one model trained on several devices of this process. Each step's batch (``batch_size``
rows, the global batch) is split across one replica per device; every replica runs its forward and backward pass in
its own thread (the devices work at once); the gradients are summed on the host, each weighted by its replica's rows.
Then, by ``strategy``:

- "central" (TensorFlow's central storage): the variables live on the model's own device (the primary), which alone
  takes the update; the others copy its weights before their next step, so every replica computes with the same
  bits whatever its device's rounding.
- "mirrored" (TensorFlow's mirrored strategy): every replica holds its own copy of the variables and of the optimizer
  state and applies the same summed gradient itself, at once; no weights travel, and the copies agree to the
  rounding of each device's update.
"""
from __future__ import annotations

import copy
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .._device import devices as _all_devices, device as _resolve_device
from .._loader import _core
from .._shared_reduce import aligned_zeros
from ._data_parallel import FlatGradients, flat_size


def resolve_devices(model: Any, devices: Any) -> List[Any]:
    """The replicas' devices, the model's own first; ValueError/TypeError naming what is wrong."""
    if isinstance(devices, str) and devices == "all":
        found = _all_devices()
    elif isinstance(devices, (list, tuple)) and devices:
        found = [_resolve_device(d) for d in devices]
    else:
        raise TypeError(f"fit: devices must be 'all' or a non-empty list of devices (ids like 'cpu', "
                        f"'opencl:0:0', or hetnn.Device), got {devices!r}")
    ids = [d.id for d in found]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"fit: devices lists {', '.join(dup)} more than once")
    if model.device.id not in ids:
        raise ValueError(f"fit: the model is on {model.device.id}, which devices= does not list ({', '.join(ids)}); "
                         f"the model's own device holds the weights and takes the updates")
    if model.dtype == np.float64:
        lacking = [d.id for d in found if "float64" not in d.dtypes]
        if lacking:
            raise TypeError(f"fit: the model is float64 and {', '.join(lacking)} has no float64")
    if model.dtype not in (np.float32, np.float64):
        raise TypeError(f"fit: training on several devices reduces float32 or float64 gradients; the model is "
                        f"{model.dtype}")
    return [model.device] + [d for d in found if d.id != model.device.id]


STRATEGIES = ("central", "mirrored")


def strategy_arg(strategy: Any) -> str:
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise ValueError(f"fit: strategy must be 'central' (the model's device holds the variables and takes the "
                         f"update) or 'mirrored' (every device holds a copy and updates it), got {strategy!r}")
    return strategy


def replica_optimizer(optimizer: Any, model: Any, replica: Any) -> Any:
    """The optimizer over the replica's parameters that match ``optimizer``'s in ``model``, with the same settings,
    step count and state (momentum buffers, moments) copied to the replica's device."""
    index = {id(p): i for i, p in enumerate(model.parameters())}
    theirs = replica.parameters()
    out = copy.copy(optimizer)
    out.params = [theirs[index[id(p)]] for p in optimizer.params]
    out._state = {}
    mine = {id(p): q for p, q in zip(optimizer.params, out.params)}
    for (pid, kind), b in optimizer._state.items():  # whatever state the optimizer keeps, by its own names
        q = mine.get(pid)
        if q is not None and tuple(b.shape) == tuple(q.value.shape):
            out._buffer(q, kind).write_from(b.to_numpy())
    return out


def _shares(split: Any, k: int) -> Optional[List[float]]:
    """Explicit proportions, or None for "even" / "measured" (decided by the caller)."""
    if isinstance(split, str):
        if split not in ("even", "measured"):
            raise ValueError(f"fit: device_split must be 'even', 'measured' or one weight per device, got {split!r}")
        return None
    try:
        w = [float(v) for v in split]
    except (TypeError, ValueError):
        raise TypeError(f"fit: device_split must be 'even', 'measured' or one weight per device, got "
                        f"{split!r}") from None
    if len(w) != k or not all(np.isfinite(v) and v > 0 for v in w):
        raise ValueError(f"fit: device_split needs {k} positive weights (one per device, the model's first), got "
                         f"{split!r}")
    return w


def _rows(total: int, shares: Sequence[float]) -> List[int]:
    """total rows split in proportion to shares, each part at least 1 (total >= len(shares))."""
    k = len(shares)
    exact = np.asarray(shares, np.float64) / np.sum(shares) * (total - k)
    parts = np.floor(exact).astype(np.int64) + 1
    for i in np.argsort(-(exact - np.floor(exact)))[: total - int(parts.sum())]:
        parts[i] += 1
    return [int(v) for v in parts]


class _Member:
    """One replica: its model, data on its device, trainer, accumulators and gradient buffer."""

    def __init__(self, model: Any, grads: FlatGradients, trainer: Any, data: Tuple[Any, Any, Any],
                 accs: List[Any], keep: Any = None) -> None:
        self.model, self.grads, self.trainer, self.data, self.accs = model, grads, trainer, data, accs
        self.params = model.parameters()
        self.keep = keep  # host arrays the device's views of the data borrow
        self.rows = self.batch = 0
        self.idx: Any = None


def _flat_grads(model: Any) -> FlatGradients:
    """The model's gradients in one flat host buffer of its own."""
    return FlatGradients(model.parameters(), model._device._dev,
                         aligned_zeros(flat_size(model.parameters()), np.dtype(model.dtype)))


class Mirrored:
    """The replicas of one fit and their step protocol (two barriers a step)."""

    def __init__(self, model: Any, devices: Sequence[Any], split: Any, batch_size: int,
                 strategy: str = "central") -> None:
        self.model, self.devices, self.bs, self.strategy = model, list(devices), batch_size, strategy
        self.k = len(self.devices)
        if batch_size < self.k:
            raise ValueError(f"fit: batch_size {batch_size} cannot be split across {self.k} devices (it is the "
                             f"global batch: at least one row per device)")
        self.split, self.shares = split, _shares(split, self.k)
        self.members: List[_Member] = []
        self._primary_grads = _flat_grads(model)  # before the primary's trainer is built: it writes into them

    def build(self, x: Any, y: Any, n: int, out_shape: Tuple[int, ...], loss_obj: Any,
              plan: Sequence[Tuple[str, str]], primary: Tuple[Any, Any, Any, Any, List[Any]],
              make_trainer: Callable[..., Any], optimizer: Any) -> None:
        """The replicas: the primary (trainer, X, Y, labels, accumulators as fit built them) and one copy of the
        model per other device, with the data uploaded to it (mirrored: its weights and an optimizer of its own,
        copied from the model's)."""
        trainer, X, Y, labels, accs = primary
        self.loss_kind = loss_obj.kind
        needs_labels = labels is not None
        if hasattr(x, "numpy"):  # a hetnn Array lives on one device; the replicas upload from the host
            x = x.numpy()
        if hasattr(y, "numpy"):
            y = y.numpy()
        self.members = [_Member(self.model, self._primary_grads, trainer, (X, Y, labels), accs)]
        for i, dev in enumerate(self.devices[1:], start=1):
            replica = self.model._replica(dev)
            ropt = None
            if self.strategy == "mirrored":
                for p, q in zip(replica.parameters(), self.model.parameters()):
                    p.value.write_from(q.value.to_numpy())
                ropt = replica_optimizer(optimizer, self.model, replica)
            RX, _, keep_x = replica._x(x, "fit")
            RY, rlabels, keep_y = replica._y(y, n, out_shape, loss_obj, "fit")
            raccs = [_core.Array.zeros(dev._dev, [1], "float32") for _ in plan]
            acc_loss = _core.Array.zeros(dev._dev, [1], "float32")
            grads = _flat_grads(replica)
            m = _Member(replica, grads, make_trainer(replica, raccs, ropt), (RX, RY, rlabels if needs_labels else None),
                        [acc_loss, *raccs], (keep_x, keep_y))
            m.trainer.set_dropout_stream(i)
            self.members.append(m)
        self.shares = self.shares or ([1.0] * self.k if self.split == "even" else self._measure())
        self.step_rows = _rows(self.bs, self.shares)
        self._hooks()

    def _measure(self) -> List[float]:
        """Each replica's samples per second on one step of the global batch (forward, loss, backward; no update),
        one after another, after a warm-up: the shares of the "measured" split."""
        speeds = []
        for m in self.members:
            t, _ = m.model._trainer_layers()
            t.set_loss(self.loss_kind)
            X, Y, _ = m.data
            n = min(self.bs, X.shape[0])
            idx = _core.Array.from_numpy(m.model._device._dev, np.arange(n, dtype=np.int64))
            acc = _core.Array.zeros(m.model._device._dev, [1], "float32")
            best = np.inf
            for r in range(4):
                t0 = time.perf_counter()
                t.run_epoch(X, Y, None, idx, n, 0.0, acc)
                acc.to_numpy()  # synchronises
                if r:
                    best = min(best, time.perf_counter() - t0)
            speeds.append(n / best)
        return speeds

    def _hooks(self) -> None:
        k = self.k
        self.start = threading.Barrier(k)
        self.grads_ready = threading.Barrier(k)
        self.reduced = threading.Barrier(k)
        primary = self.members[0]
        host_params = [p.value.host_numpy() if hasattr(p.value, "host_numpy") else None for p in primary.params]
        size = self.members[0].grads.flat.size
        bounds = [size * i // k for i in range(k + 1)]

        def before_step(i: int) -> Callable[[int], None]:
            member = self.members[i]

            def hook(rows: int) -> None:
                self.start.wait()  # the primary's last update is done
                if i:
                    for p, q, h in zip(member.params, primary.params, host_params):
                        p.value.write_from(h if h is not None else q.value.to_numpy())
            return hook

        def before_update(i: int) -> Callable[[int], None]:
            member = self.members[i]

            def hook(rows: int) -> None:
                g = member.grads
                g.gather()
                member.rows = rows
                self.grads_ready.wait()
                total = sum(m.rows for m in self.members)
                weights = [m.rows / total for m in self.members]
                flats = [m.grads.flat for m in self.members]
                if self.strategy == "mirrored":  # each replica sums its own slice into every copy, then updates
                    _core._reduce_slices(flats, weights, bounds[i], bounds[i + 1], flats)
                    self.reduced.wait()
                    g.scatter()
                elif i == 0:
                    _core._reduce_slices(flats, weights, 0, g.flat.size, [g.flat])
                    g.scatter()
            return hook

        for i, m in enumerate(self.members):
            m.trainer.set_step_hooks(before_update(i), None if self.strategy == "mirrored" else before_step(i))

    def epoch_rows(self, order: np.ndarray, n: int) -> int:
        """Each replica's rows for the epoch from the shared order; returns the samples trained on."""
        full, rem = divmod(n, self.bs)
        offs = np.concatenate([[0], np.cumsum(self.step_rows)])
        last = _rows(rem, self.shares) if rem >= self.k else []  # type: ignore[arg-type]
        last_offs = np.concatenate([[0], np.cumsum(last)]) if last else None
        for i, m in enumerate(self.members):
            parts = [order[s * self.bs + offs[i]:s * self.bs + offs[i + 1]] for s in range(full)]
            if last_offs is not None:
                parts.append(order[full * self.bs + last_offs[i]:full * self.bs + last_offs[i + 1]])
            rows = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
            m.idx = _core.Array.from_numpy(m.model._device._dev, rows)
            m.batch = self.step_rows[i]
        return full * self.bs + (rem if last else 0)

    def close(self) -> None:
        """Drops the step hooks: each trainer (a C++ object) holds its hooks, which hold this object and through it
        every trainer, a cycle Python's collector cannot see; left in place, each fit kept its replicas, their data
        and their batch workspaces alive for good."""
        for m in self.members:
            m.trainer.set_step_hooks(None, None)

    def run_epoch(self, lr: Union[float, List[float]], progress: Any) -> List[float]:
        """One epoch on every replica at once; the loss and metric sums over all of them."""
        self.start.reset()
        self.grads_ready.reset()
        self.reduced.reset()
        errors: List[BaseException] = []

        def fail(exc: BaseException) -> None:
            errors.append(exc)
            self.start.abort()
            self.grads_ready.abort()
            self.reduced.abort()

        def work(m: _Member, report: Any) -> None:
            X, Y, labels = m.data
            try:
                m.trainer.run_epoch(X, Y, labels, m.idx, m.batch, lr, m.accs[0], report)
            except BaseException as exc:  # noqa: B902 - handed to the caller's thread
                fail(exc)

        threads = [threading.Thread(target=work, args=(m, None), daemon=True, name=f"hetnn replica {i}")
                   for i, m in enumerate(self.members[1:], start=1)]
        for t in threads:
            t.start()
        work(self.members[0], progress)
        for t in threads:
            t.join()
        real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
        if real or errors:
            raise (real or errors)[0]
        return list(np.sum([[float(a.to_numpy()[0]) for a in m.accs] for m in self.members], axis=0))
