"""``with mc.profile() as prof:`` — where the time goes, eager and compiled.

A profile records, with wall times (``time.perf_counter_ns``):

* each eager NumPy call (function, ufunc, array method) and the Python time
  between calls (:mod:`.numpy_calls`);
* each call of a compiled function: the guard check, a compile on a cache
  miss, the wrapper, every kernel and every NumPy call it makes (extern ops,
  views), and for the Spyre backend each program's simulated time
  (:mod:`.compiled`).

Then ``prof.table()`` summarizes by name (like torch.profiler's
``key_averages().table()``), ``prof.export_chrome_trace(path)`` writes a
trace that Perfetto (ui.perfetto.dev) and chrome://tracing open, and
``prof.plot(path)`` draws the timeline to a PNG (needs matplotlib: the
``plot`` extra).  A call that compiles is warm-up: the table counts it apart
from the steady state, the trace puts each compile on a track of its own, and
the pictures draw it cut short (:mod:`.timeline`); call a compiled function
once before profiling to see only its steady state.  With no profile running, compiled code pays one flag test
per call (:mod:`.hooks`).
"""
from __future__ import annotations

from time import perf_counter_ns
from typing import Any

from . import hooks
from .compiled import Instrumenter, call_compiled
from .device import DeviceTimer, busy_ns
from .events import HOST, Event, compile_windows, nest, python_gaps
from .numpy_calls import NumpyRecorder
from .table import KeyAverage, key_averages, format_table


class Profile:
    """One recording; use as a context manager (``with mc.profile() as prof``)."""

    def __init__(self, record_numpy: bool = True):
        self.record_numpy = record_numpy
        self.device = DeviceTimer()
        self.numpy_recorder = NumpyRecorder(self._record_numpy, self.device)
        self.instrumenter = Instrumenter()
        self._raw: list[Event] = []
        self._events: list[Event] | None = None
        self.start_ns = self.end_ns = 0

    # -- recording ---------------------------------------------------------------

    def __enter__(self) -> "Profile":
        if hooks.active is not None:
            raise RuntimeError("minicompile.profile: another profile is already recording")
        self._raw.clear()
        self._events = None
        if self.record_numpy:
            self.numpy_recorder.start()
        hooks.active = self
        self.start_ns = perf_counter_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end_ns = perf_counter_ns()
        hooks.active = None
        if self.record_numpy:
            self.numpy_recorder.stop()
        self.instrumenter.restore()
        self._raw += self.device.events()

    def add(self, name: str, cat: str, start_ns: int, end_ns: int, args: dict | None = None,
            track: int = HOST) -> None:
        self._raw.append(Event(name, cat, start_ns, end_ns, track, args or {}))

    def _record_numpy(self, name: str, start_ns: int, end_ns: int) -> None:
        self.add(name, "numpy", start_ns, end_ns)

    def call_compiled(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        return call_compiled(self, fn, args, kwargs)

    # -- reading -----------------------------------------------------------------

    @property
    def events(self) -> list[Event]:
        """Every event, the Python gaps included, sorted and nested (after the block ends)."""
        if hooks.active is self:
            raise RuntimeError("minicompile.profile: read the events after the `with` block")
        if self._events is None:
            gaps = python_gaps(self._raw, self.start_ns, self.end_ns) if self.record_numpy else []
            self._events = nest(self._raw + gaps)
        return self._events

    @property
    def total_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def compile_windows(self) -> list[tuple[int, int]]:
        """The calls during which something compiled: warm-up, apart from the steady state."""
        return compile_windows(self.events)

    @property
    def warmup_ns(self) -> int:
        return sum(end - start for start, end in self.compile_windows)

    def key_averages(self) -> list[KeyAverage]:
        """One row per event name in the steady state, and one per compile (category ``compile``)."""
        return key_averages(self.events, self.compile_windows)

    def table(self, sort_by: str = "total", row_limit: int = 30) -> str:
        """A text table: one row per event name (``sort_by``: total, self, calls, name) in
        the steady state, then the compiles."""
        text = format_table(self.key_averages(), self.total_ns, sort_by, row_limit, self.warmup_ns)
        device = busy_ns(self.events, self.compile_windows)
        if device is None:
            return text
        busy, last = device  # the device may finish after the host's last call returned
        steady = max(max(self.end_ns, last) - self.start_ns - self.warmup_ns, 1)
        return text + (f"\nGPU busy {busy / 1e6:.3f}ms of {steady / 1e6:.3f}ms (the steady state until the "
                       f"device finished: {100 * busy / steady:.1f}%), idle the rest")

    def export_chrome_trace(self, path: str) -> str:
        """Write Chrome trace-event JSON (opens in Perfetto); returns the path."""
        from .chrome_trace import write_chrome_trace

        return write_chrome_trace(self.events, self.start_ns, path)

    def plot(self, path: str) -> str:
        """Draw the timeline to a PNG with matplotlib; returns the path."""
        from .plot import plot_timeline

        return plot_timeline(self.events, self.start_ns, self.end_ns, self.compile_windows, path)


def profile(record_numpy: bool = True) -> Profile:
    """``with mc.profile() as prof: ...`` then ``print(prof.table())``.

    ``record_numpy=False`` records compiled calls only (no NumPy hooks)."""
    return Profile(record_numpy)


__all__ = ["profile", "Profile", "Event", "KeyAverage"]
