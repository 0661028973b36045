"""hetnn.Stream and hetnn.Event, as CUDA's and CuPy's.

A Stream is another in-order queue of commands on a device. Work on two streams may overlap (a copy beside a kernel);
hetnn orders what two streams share: a command waits for the last command on another queue that used one of its
arrays' memory, so no stream reads what another has not finished writing, nor overwrites what another still reads.
On the CPU device, whose commands finish before they return, a stream is synchronous (``synchronous`` is True) and
changes nothing.

An Event is a point in a queue of commands. Recording one costs no wait; ``synchronize`` waits for the commands
before it, ``done`` asks without waiting, ``wait`` makes a queue wait for it, and ``elapsed_time`` gives the device's
own time between two events (OpenCL: the profiling clock of a marker on the queue; the CPU device: the host's steady
clock at the record)."""
from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, List, Optional, Tuple, Type

from ._device import Device, DeviceLike, device as _resolve_device, get_default_device
from ._loader import _core

_previous = threading.local()  # per thread: (stream, the handle it replaced) of each open `with`, innermost last


def _stack() -> List[Tuple["Stream", Any]]:
    stack: List[Tuple[Stream, Any]] = _previous.__dict__.setdefault("stack", [])
    return stack


class Stream:
    """A queue of its own on ``device`` (None: the default device)::

        s = hetnn.Stream(d)
        with s:                               # this thread's commands on d go to s
            y = x @ w
        host = hetnn.pinned_empty(y.shape, y.dtype, d)
        y.copy_to_host(out=host, stream=s)    # not waited for: page-locked memory
        s.synchronize()                       # now `host` holds y

    Commands on ``d`` issued by this thread inside ``with s:`` go to ``s``; elsewhere they go to the device's own
    queue. ``synchronize`` waits for the stream's commands, ``done`` asks without waiting, ``wait_event`` makes the
    stream's later commands wait for an event of the device (another stream's), ``record_event`` marks a point."""

    __slots__ = ("device", "_s")

    def __init__(self, device: DeviceLike = None) -> None:
        self.device: Device = get_default_device() if device is None else _resolve_device(device)
        self._s = _core.create_stream(self.device._dev)

    @property
    def synchronous(self) -> bool:
        """True where the device runs every command before returning (the CPU device): nothing can overlap."""
        return bool(self._s.synchronous)

    def __enter__(self) -> "Stream":
        _stack().append((self, _core.swap_stream(self.device._dev, self._s)))
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        stack = _stack()
        if not stack or stack[-1][0] is not self:
            raise RuntimeError("hetnn.Stream: `with` blocks of streams must nest (this one is not the innermost)")
        _, prev = stack.pop()
        _core.swap_stream(self.device._dev, None if prev.synchronous else prev)

    def record_event(self, event: Any = None) -> Any:
        """Records ``event`` (a new hetnn.Event when None) after the stream's commands so far; returns it."""
        ev = Event(self.device) if event is None else event
        return ev.record(stream=self)

    def wait_event(self, event: Any) -> None:
        """The stream's later commands wait for ``event`` (recorded on any queue of the same device); the host does
        not wait (on a synchronous stream it does)."""
        if not isinstance(event, Event):
            raise TypeError(f"Stream.wait_event: event must be a hetnn.Event, got {type(event).__name__}")
        if event.device.id != self.device.id:
            raise ValueError(f"Stream.wait_event: the event is on {event.device.id}, the stream on {self.device.id}")
        self._s.wait_marker(event._recorded("wait"))

    def wait_stream(self, other: "Stream") -> None:
        """The stream's later commands wait for the commands issued so far on ``other`` (same device)."""
        if not isinstance(other, Stream):
            raise TypeError(f"Stream.wait_stream: other must be a hetnn.Stream, got {type(other).__name__}")
        self.wait_event(other.record_event())

    def synchronize(self) -> None:
        """Blocks until the stream's commands issued so far have finished."""
        self._s.record_marker().wait()

    @property
    def done(self) -> bool:
        """Whether the stream's commands issued so far have finished (no wait)."""
        return bool(self._s.done())

    def query(self) -> bool:
        """``done``, as a call (CUDA's spelling)."""
        return self.done

    def __repr__(self) -> str:
        kind = "synchronous" if self.synchronous else "queue"
        return f"hetnn.Stream(device='{self.device.id}', {kind})"


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
            self._marker = check_stream(stream, self.device, "Event.record")._s.record_marker()
        return self

    def wait(self, stream: Any = None) -> None:
        """Makes ``stream``'s later commands (None: this thread's current queue of the device) wait for the commands
        before the record, without the host waiting (CUDA's stream-wait-event)."""
        if stream is None:
            _core.stream_wait(self.device._dev, self._recorded("wait"))
        else:
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


def check_stream(stream: Any, dev: Device, where: str) -> Stream:
    """``stream`` as a Stream on ``dev`` (the call's device), else the error naming ``where``."""
    if not isinstance(stream, Stream):
        raise TypeError(f"{where}: stream must be a hetnn.Stream, got {type(stream).__name__}")
    if stream.device.id != dev.id:
        raise ValueError(f"{where}: the stream is on {stream.device.id}, the copy on {dev.id}")
    return stream


def current_stream(device: DeviceLike = None) -> Optional[Stream]:
    """The stream this thread's commands on ``device`` (None: the default device) go to: the innermost open
    ``with stream:`` of that device, else None (the device's own queue)."""
    dev = get_default_device() if device is None else _resolve_device(device)
    for s, _ in reversed(_stack()):
        if s.device.id == dev.id:
            return s
    return None
