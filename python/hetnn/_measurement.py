"""One measurement: the per-repeat wall and device times of a timed call, their statistics, throughput and the
OS's view of the repeats (BenchmarkResult), as hetnn.benchmark and hetnn.interleave return them."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from ._device import Device
from ._oscounters import Counters, preempted as _preempted, summarize


def _stats(x: np.ndarray) -> Dict[str, float]:
    if x.size == 0 or np.all(np.isnan(x)):
        return {"min": math.nan, "median": math.nan, "mean": math.nan, "std": math.nan, "max": math.nan,
                "iqr": math.nan}
    q1, q3 = np.nanpercentile(x, [25, 75])
    return {"min": float(np.nanmin(x)), "median": float(np.nanmedian(x)), "mean": float(np.nanmean(x)),
            "std": float(np.nanstd(x)), "max": float(np.nanmax(x)), "iqr": float(q3 - q1)}


def spread_pct(times: Any) -> float:
    """Interquartile range of repeat times over their median, in percent: how noisy a measurement was (a robust
    spread: one outlier repeat does not move it). NaN for fewer than 4 repeats."""
    x = np.asarray(times, dtype=np.float64)
    x = x[~np.isnan(x)]
    if x.size < 4:
        return math.nan
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return float(100 * (q3 - q1) / med) if med > 0 else math.nan


class BenchmarkResult:
    """Per-repeat times of :func:`benchmark` (seconds) and their statistics.

    ``wall_times``: host clock around each call plus synchronize. ``device_times``: summed device durations of
    every command each call issued (NaN when the call ran nothing on a hetnn device, e.g. a NumPy function).
    """

    def __init__(self, name: str, wall_times: np.ndarray, device_times: np.ndarray, devices: List[Device],
                 flops: Optional[float], nbytes: Optional[float], n_warmup: int, commands: int,
                 counters: Optional[List[Counters]] = None, first_use: Optional[Dict[str, Any]] = None,
                 rounds: Optional[np.ndarray] = None) -> None:
        self.name = name
        self.counters: List[Counters] = list(counters or [])
        #: OS view of the repeats: preempted (count), unreliable, noise (text), runqueue/steal/others_pct
        self.noise: Dict[str, Any] = summarize(self.counters)
        self.quiet_machine = False  # set by interleave when the whole run saw no other load
        #: warm-up cost: first call seconds, warm-up seconds, programs/primitives built, disk-cache hits
        self.first_use: Dict[str, Any] = dict(first_use or {})
        self.wall_times = wall_times
        self.device_times = device_times
        #: the interleaved round of each repeat (cases timed in one round ran side by side: ratios pair them)
        self.rounds = np.arange(wall_times.size) if rounds is None else rounds
        self.devices = devices
        self.flops = flops
        self.nbytes = nbytes
        self.n_warmup = n_warmup
        self.commands_per_call = commands
        self.wall = _stats(wall_times)
        self.device = _stats(device_times)

    @property
    def preempted(self) -> np.ndarray:
        """Per repeat: True where the OS reports it was preempted (see :mod:`hetnn._oscounters`)."""
        return np.array(_preempted(self.counters, self.quiet_machine), dtype=bool)

    @property
    def flags(self) -> Dict[str, Any]:
        """The fields a benchmark row carries about noise: ``preempted`` (count), ``unreliable``, ``noise`` (text),
        ``rerun`` (preempted repeats dropped and run again), and what they were judged from: ``runqueue_pct`` (the
        share of the wall time its threads waited for a CPU), ``others_pct`` and ``steal_pct`` (other processes'
        and the hypervisor's use of this process's CPUs over the run) and ``quiet_machine``; with it, the case's
        working set: ``peak_bytes``, the most bytes hetnn's allocators held on its devices during a timed call."""
        out = {k: self.noise.get(k, 0) for k in ("preempted", "unreliable", "noise", "rerun")}
        out.update({k: self.noise[k] for k in ("runqueue_pct", "others_pct", "steal_pct", "quiet_machine",
                                               "peak_bytes") if k in self.noise})
        return out

    @property
    def unreliable(self) -> bool:
        """At least half of the repeats were preempted: the median is a figure of the machine's load."""
        return bool(self.noise["unreliable"])

    @property
    def first_use_text(self) -> str:
        """The warm-up's cost in one cell: first call time, and programs or primitives built / read from disk."""
        f = self.first_use
        if not f:
            return ""
        text = f"{f.get('call_s', math.nan) * 1e3:.1f} ms"
        if f.get("built") or f.get("disk_hits"):
            text += f" ({f.get('built', 0)} built, {f.get('disk_hits', 0)} from disk)"
        return text

    @property
    def n_repeat(self) -> int:
        return int(self.wall_times.size)

    # statistics of the wall time, the figure a user experiences
    @property
    def min(self) -> float:
        return self.wall["min"]

    @property
    def median(self) -> float:
        return self.wall["median"]

    @property
    def mean(self) -> float:
        return self.wall["mean"]

    @property
    def std(self) -> float:
        return self.wall["std"]

    @property
    def spread_pct(self) -> float:
        """Interquartile range of the wall times over their median, in percent (NaN below 4 repeats): how noisy
        the measurement was; compare two figures only when their difference clearly exceeds it."""
        return spread_pct(self.wall_times)

    def _rate(self, amount: Optional[float], t: float) -> float:
        return amount / t / 1e9 if amount and t and not math.isnan(t) else math.nan

    @property
    def gflops(self) -> float:
        """GFLOP/s from the median wall time (NaN without ``flops``)."""
        return self._rate(self.flops, self.median)

    @property
    def gflops_device(self) -> float:
        """GFLOP/s from the median device time."""
        return self._rate(self.flops, self.device["median"])

    @property
    def gbps(self) -> float:
        """GB/s (1e9 bytes) from the median wall time (NaN without ``nbytes``)."""
        return self._rate(self.nbytes, self.median)

    @property
    def gbps_device(self) -> float:
        return self._rate(self.nbytes, self.device["median"])

    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "n_repeat": self.n_repeat, "n_warmup": self.n_warmup,
                "devices": [d.id for d in self.devices],
                **{f"wall_{k}": v for k, v in self.wall.items()},
                **{f"device_{k}": v for k, v in self.device.items()},
                "gflops": self.gflops, "gflops_device": self.gflops_device, "gbps": self.gbps,
                "gbps_device": self.gbps_device, "spread_pct": self.spread_pct,
                "commands_per_call": self.commands_per_call,
                **{k: v for k, v in self.noise.items()},
                **{f"first_{k}": v for k, v in self.first_use.items()}}

    def __repr__(self) -> str:
        def us(v: float) -> str:
            return f"{v * 1e6:12.3f}"

        w, d = self.wall, self.device
        s = (f"{self.name:<20s}:    wall:{us(w['median'])} us   +/- {w['std'] * 1e6:.3f} "
             f"(min:{us(w['min'])} / max:{us(w['max'])}) us")
        if not math.isnan(d["median"]):
            where = ",".join(x.id for x in self.devices)
            s += (f"     device ({where}):{us(d['median'])} us   +/- {d['std'] * 1e6:.3f} "
                  f"(min:{us(d['min'])} / max:{us(d['max'])}) us")
        if self.flops:
            s += f"   {self.gflops:.2f} GFLOP/s"
        if self.nbytes:
            s += f"   {self.gbps:.2f} GB/s"
        if not math.isnan(self.spread_pct):
            s += f"   IQR {self.spread_pct:.0f}%"
        if self.noise["noise"]:
            s += f"   [{self.noise['noise']}]"
        return s + f"   [n={self.n_repeat}, median]"


def rerun_text(dropped: int, kept: int, asked: int) -> str:
    """The noise cell of a row whose preempted repeats were dropped and run again; it says so when the re-runs
    left fewer clean repeats than were asked for (the median is then of those)."""
    text = f"re-ran {dropped} preempted"
    return text + (f"; {kept} clean of the {asked} asked for" if kept < asked else "")
