"""hetnn.profile(): records every command the devices run inside a ``with`` block — its op, operands, host enqueue
time and device start/end — with per-op totals and a Chrome/Perfetto trace."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Union

from ._table import format_table
from ._timing import Stopwatch


class profile(Stopwatch):
    """Context manager::

        with hetnn.profile() as prof:
            model.fit(x, y, ...)
        print(prof.table())                      # per-op count, device time, share
        prof.export_chrome_trace("trace.json")   # open in chrome://tracing or ui.perfetto.dev

    ``device``: the device(s) to record (default: the default device and every device already in use). As a
    :class:`hetnn.Stopwatch`, it synchronises the devices on entry and exit (so the block's work, and only it, is
    recorded); inside, nothing is synchronised, so the program runs as it would unprofiled. ``records``: one dict per
    command (``name``, ``device``, ``detail`` — the op's operands —, ``host_enqueue``, ``start``, ``end``,
    ``duration`` in seconds, ``bytes``); ``device_time``: their summed durations; ``elapsed``: the block's wall time.
    """

    def __enter__(self) -> "profile":
        super().__enter__()
        return self

    def totals(self, by_detail: bool = False) -> List[Dict[str, Any]]:
        """Per (device, op name[, operands]): count, total and mean device seconds, share of the device time;
        largest first."""
        groups: Dict[tuple, Dict[str, Any]] = {}
        for r in self.records:
            key = (r["device"], r["name"], r["detail"] if by_detail else "")
            g = groups.setdefault(key, {"device": r["device"], "name": r["name"], "detail": key[2], "count": 0,
                                        "total_s": 0.0, "bytes": 0})
            g["count"] += 1
            g["total_s"] += r["duration"]
            g["bytes"] += r["bytes"]
        out = sorted(groups.values(), key=lambda g: -g["total_s"])
        for g in out:
            g["mean_s"] = g["total_s"] / g["count"]
            g["share"] = g["total_s"] / self.device_time if self.device_time else math.nan
        return out

    def table(self, by_detail: bool = False) -> str:
        """The per-op totals as a text table (``by_detail``: one row per distinct operand list too)."""

        rows = [{**g, "total_ms": g["total_s"] * 1e3, "mean_us": g["mean_s"] * 1e6, "pct": 100 * g["share"]}
                for g in self.totals(by_detail)]
        cols = [("device", "device", ""), ("name", "op", "")] + ([("detail", "operands", "")] if by_detail else [])
        cols += [("count", "calls", ","), ("total_ms", "device ms", ".3f"), ("mean_us", "mean us", ".1f"),
                 ("pct", "% of device time", ".1f")]
        return (format_table(rows, cols) +
                f"\n(device time {self.device_time * 1e3:.3f} ms in {len(self.records)} commands; wall "
                f"{self.elapsed * 1e3:.3f} ms)")

    def export_chrome_trace(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the records in the Trace Event format (chrome://tracing, ui.perfetto.dev): one process per device,
        a "device" track with each command as a span and a "host" track with its enqueue instant.

        Device clocks are not the host's: each device's times are shifted so that no command starts before the host
        enqueued it and the tightest one starts exactly at its enqueue (the CPU device already uses the host clock).
        """
        events: List[Dict[str, Any]] = []
        if self.records:
            origin = min(r["host_enqueue"] for r in self.records)
            shift: Dict[str, float] = {}
            for r in self.records:
                s = r["host_enqueue"] - r["start"]
                shift[r["device"]] = max(shift.get(r["device"], -math.inf), s)
            pids = {d: i + 1 for i, d in enumerate(dict.fromkeys(r["device"] for r in self.records))}
            for dev, pid in pids.items():
                events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": dev}})
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "device"}})
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 2, "args": {"name": "host"}})
            for r in self.records:
                pid = pids[r["device"]]
                args = {"operands": r["detail"], "bytes": r["bytes"]}
                events.append({"name": r["name"], "cat": "device", "ph": "X", "pid": pid, "tid": 1,
                               "ts": (r["start"] + shift[r["device"]] - origin) * 1e6,
                               "dur": r["duration"] * 1e6, "args": args})
                events.append({"name": r["name"], "cat": "enqueue", "ph": "i", "s": "t", "pid": pid, "tid": 2,
                               "ts": (r["host_enqueue"] - origin) * 1e6, "args": args})
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)

    def __repr__(self) -> str:
        return (f"profile({len(self.records)} commands, device_time={self.device_time * 1e3:.3f} ms, "
                f"elapsed={self.elapsed * 1e3:.3f} ms)")
