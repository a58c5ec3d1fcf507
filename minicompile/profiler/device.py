"""Device time on the GPU: when each launch a profile times ran on the device.

A call timed on the host (a kernel, a NumPy call made by compiled code, an eager
``np.*`` call given CuPy arrays, a CUDA graph replay) only *enqueues* work on the
GPU: its host time says nothing of when the device ran it, nor of the time the
device sat idle between launches — what ``mode="reduce-overhead"`` removes.  So a
call whose arguments hold a CuPy array also records a CUDA event on the current
stream before and after it.

In:  :meth:`DeviceTimer.begin` before such a call (None when no argument is a CuPy
     array: nothing to time), :meth:`DeviceTimer.end` after it.
Out: :meth:`DeviceTimer.events`, at the end of the profile: one event per call on
     the GPU track, placed on the host clock.  The first ``begin`` waits for the
     device and records a reference event with the host's time beside it; every
     other event is that time plus the device time elapsed since the reference.
     A device that is ahead of the host reaches the start event as soon as it is
     recorded, before the host has made the launch, so an event starts no earlier
     than the host's call returned: the device cannot run a launch before it is
     made.  The gaps between events on the track are the device's idle time, to
     within the few microseconds by which the reference places the two clocks.

torch.profiler's twin is its CUDA activity (CUPTI), which sees every kernel;
events here see the launches the profile times, so CuPy's operators in eager code
(``x + y``, no call Python can see) are not on the track.
"""
from __future__ import annotations

import sys
from time import perf_counter_ns
from typing import Any

from .events import GPU, Event, in_windows


def _holds_cupy(values: Any) -> bool:
    """Whether ``values`` (or a tuple or list among them: a replay's inputs) hold a CuPy array."""
    return any(_holds_cupy(v) if isinstance(v, (tuple, list)) else type(v).__module__.startswith("cupy")
               for v in values)


class DeviceTimer:
    """Pairs of CUDA events around the timed calls that launch on the GPU."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, str, Any, Any, int]] = []  # (name, category, start, end, host end)
        self._reference: Any = None
        self._reference_ns = 0

    def begin(self, args: tuple, kwargs: dict | None = None) -> Any:
        """A started CUDA event when ``args``/``kwargs`` hold a CuPy array, else None."""
        if not (_holds_cupy(args) or (kwargs and _holds_cupy(kwargs.values()))):
            return None
        cp = sys.modules["cupy"]  # the caller's arrays are CuPy's: it is imported
        if cp.cuda.get_current_stream().is_capturing():
            return None  # a CUDA graph being recorded: nothing runs now, and a wait would end the capture
        if self._reference is None:
            cp.cuda.Device().synchronize()  # the device idle: the reference runs when recorded
            self._reference = cp.cuda.Event()
            self._reference.record()
            self._reference_ns = perf_counter_ns()
        start = cp.cuda.Event()
        start.record()
        return start

    def end(self, name: str, cat: str, start: Any, host_end_ns: int) -> None:
        """After the call that ``begin`` returned ``start`` for; it returned at ``host_end_ns``."""
        end = sys.modules["cupy"].cuda.Event()
        end.record()
        self._pending.append((name, cat, start, end, host_end_ns))

    def events(self) -> list[Event]:
        """The GPU track's events (waits for the device to finish them)."""
        if not self._pending:
            return []
        cp = sys.modules["cupy"]
        self._pending[-1][3].synchronize()
        found = []
        for name, cat, start, end, host_end_ns in self._pending:
            begun, done = (self._reference_ns + round(cp.cuda.get_elapsed_time(self._reference, e) * 1e6)
                           for e in (start, end))
            at = min(max(begun, host_end_ns), done - 1)
            found.append(Event(name, cat, at, done, GPU, {"device_us": round((done - at) / 1e3, 3)}))
        self._pending.clear()
        self._reference = None
        return found


def busy_ns(events: list[Event], windows: list[tuple[int, int]]) -> tuple[int, int] | None:
    """(nanoseconds the GPU ran launches outside ``windows``, the calls that compiled: the
    union of the GPU track's events; the instant its last event ended), or None when the
    profile launched nothing there."""
    spans = sorted((e.start_ns, e.end_ns) for e in events if e.track == GPU and not in_windows(e, windows))
    if not spans:
        return None
    last = max(e for _, e in spans)
    total, (start, end) = 0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            total, start = total + end - start, s
        end = max(end, e)
    return total + end - start, last
