"""hetnn.Event: a point in a device's stream of commands, as CUDA's and CuPy's events. Recording one costs no wait;
``synchronize`` waits for the commands before it, ``done`` asks without waiting, and ``elapsed_time`` gives the
device's own time between two events (OpenCL: the profiling clock of a marker on the device's queue; the CPU device,
whose commands finish before they return: the host's steady clock at the record)."""
from __future__ import annotations

from typing import Any, Optional

from ._device import Device, DeviceLike, device as _resolve_device, get_default_device
from ._loader import _core


class Event:
    """A marker after every command issued so far on a queue of ``device`` (None: the default device), once
    recorded (``record(stream=)``: a hetnn.Stream's; else this thread's current queue)::

        start, end = hetnn.Event(d), hetnn.Event(d)
        start.record()
        y = x @ w                         # asynchronous on an OpenCL device
        end.record()
        end.synchronize()                 # the host waits for the work before `end`
        seconds = start.elapsed_time(end)

    An event may be recorded again (it then marks the later point)."""

    __slots__ = ("device", "_marker")

    def __init__(self, device: DeviceLike = None) -> None:
        self.device: Device = get_default_device() if device is None else _resolve_device(device)
        self._marker: Optional[Any] = None

    def record(self, stream: Any = None) -> "Event":
        """Marks the point after every command issued so far on ``stream`` (a hetnn.Stream of the event's device;
        None: this thread's current queue of the device, a ``with stream:``'s or the device's own); returns the
        event."""
        if stream is None:
            self._marker = _core.record_marker(self.device._dev)
        else:
            from ._streams import check_stream
            self._marker = check_stream(stream, self.device, "Event.record")._s.record_marker()
        return self

    def wait(self, stream: Any = None) -> None:
        """Makes ``stream``'s later commands (None: this thread's current queue of the device) wait for the commands
        before the record, without the host waiting (CUDA's stream-wait-event)."""
        if stream is None:
            _core.stream_wait(self.device._dev, self._recorded("wait"))
        else:
            from ._streams import check_stream
            check_stream(stream, self.device, "Event.wait").wait_event(self)

    def _recorded(self, what: str) -> Any:
        if self._marker is None:
            raise ValueError(f"Event.{what}: this event was never recorded (call .record() first)")
        return self._marker

    @property
    def done(self) -> bool:
        """Whether the commands before the record have finished (no wait)."""
        return bool(self._recorded("done").done())

    def query(self) -> bool:
        """``done``, as a call (CUDA's spelling)."""
        return self.done

    def synchronize(self) -> None:
        """Blocks until the commands before the record have finished."""
        self._recorded("synchronize").wait()

    def elapsed_time(self, end: "Event") -> float:
        """Seconds from this event's record to ``end``'s on the device's clock (waits for both; negative when
        ``end`` was recorded first). Both must be recorded on the same device."""
        if not isinstance(end, Event):
            raise TypeError(f"Event.elapsed_time: end must be a hetnn.Event, got {type(end).__name__}")
        if end.device.id != self.device.id:
            raise ValueError(f"Event.elapsed_time: the events are on {self.device.id} and {end.device.id}; device "
                             f"clocks are not comparable across devices")
        start_s = self._recorded("elapsed_time").seconds()
        return float(end._recorded("elapsed_time").seconds() - start_s)

    def __repr__(self) -> str:
        state = "not recorded" if self._marker is None else "recorded"
        return f"hetnn.Event(device='{self.device.id}', {state})"
