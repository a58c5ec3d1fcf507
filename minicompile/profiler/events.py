"""What a profile records: timed events, and how they nest.

An :class:`Event` is one span of wall time on one track: a NumPy call, the
Python between calls, a guard check, a kernel.  Events nest by time (a kernel
inside its compiled call); :func:`nest` finds each event's depth and self time
(its duration minus that of its direct children), which the table and the
pictures use.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Tracks (Chrome trace "threads"): host wall time, the simulated Spyre card, the
# GPU's device time (:mod:`.device`), and compiles (capture, backend and the first
# run of a cache miss, on the host too): warm-up, kept apart from the steady state.
HOST = 0
SPYRE = 1
COMPILE = 2
GPU = 3
TRACK_NAMES = {HOST: "host (wall time)", SPYRE: "Spyre card (simulated cycles)",
               COMPILE: "compile (capture, backend, first run)", GPU: "GPU (device time, CUDA events)"}

# Categories, in the order the table and legends list them.
CATEGORIES = (
    "numpy",      # one eager NumPy function, ufunc or ndarray method call
    "python",     # Python between recorded events
    "compiled",   # one call of a compiled function (guards + run)
    "guard",      # binding the arguments and checking cache entries' guards
    "compile",    # a cache miss: capture, compile, and the first run
    "wrapper",    # the generated wrapper: allocation, kernel calls, rebuilding results
    "kernel",     # one generated kernel (C++, Triton)
    "extern",     # a NumPy library call made by compiled code (matmul, views)
    "spyre",      # one Spyre program, timed by the simulator's cycle count
    "device",     # the GPU running one launch (a kernel, a CuPy call, a CUDA graph replay)
)


@dataclass
class Event:
    name: str
    cat: str
    start_ns: int
    end_ns: int
    track: int = HOST
    args: dict = field(default_factory=dict)
    depth: int = 0
    self_ns: int = 0

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


def nest(events: list[Event]) -> list[Event]:
    """Sort ``events`` by start (outer first on ties) and fill ``depth`` and ``self_ns`` per track."""
    ordered = sorted(events, key=lambda e: (e.track, e.start_ns, -e.end_ns))
    stack: list[Event] = []
    for e in ordered:
        while stack and (stack[-1].track != e.track or stack[-1].end_ns <= e.start_ns):
            stack.pop()
        e.depth = len(stack)
        e.self_ns = e.dur_ns
        if stack:
            stack[-1].self_ns -= e.dur_ns
        stack.append(e)
    return ordered


def python_gaps(events: list[Event], start_ns: int, end_ns: int) -> list[Event]:
    """Events for the host time between top-level events (Python running user code)."""
    gaps = []
    cursor = start_ns
    for e in sorted((e for e in events if e.track == HOST), key=lambda e: e.start_ns):
        if e.start_ns > cursor:
            gaps.append(Event("Python (between calls)", "python", cursor, e.start_ns))
        cursor = max(cursor, e.end_ns)
    if end_ns > cursor:
        gaps.append(Event("Python (between calls)", "python", cursor, end_ns))
    return gaps


def compile_windows(events: list[Event]) -> list[tuple[int, int]]:
    """The spans of the calls during which something compiled: each top-level
    host event that a compile event overlaps (a first call, a recompile, a resume
    function compiled inside a later call).  They are warm-up, not steady state."""
    compiles = [e for e in events if e.track == COMPILE]
    return [(e.start_ns, e.end_ns) for e in events if e.track == HOST and e.depth == 0
            and any(c.start_ns < e.end_ns and e.start_ns < c.end_ns for c in compiles)]


def in_windows(e: Event, windows: list[tuple[int, int]]) -> bool:
    return any(start < e.end_ns and e.start_ns < end for start, end in windows)
