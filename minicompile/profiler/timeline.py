"""The profile laid out for a picture: named rows on one time axis.

In:  a profile's events, its start and its compile windows
     (:func:`.events.compile_windows`).
Out: a :class:`Timeline` — rows (:class:`Row`), each named by what it holds,
     and :meth:`Timeline.x`, where an instant is drawn.  The report draws it as
     SVG (:mod:`minicompile.report.html`), ``prof.plot`` as a PNG (:mod:`.plot`).

Rows: the compiles first, then the eager Python and NumPy, the compiled calls,
their guard checks and wrappers, and one row per kernel, extern call and
Spyre program, named by its name (``g0_kernel_1_sum_divide``), in the order
they first ran.  On the axis each compile window is cut down to a short
stretch (:data:`WINDOW_SHARE` of the steady state's time), their real length
in the compile row's label: a compile can take a thousand times longer than the calls
after it, and drawn to scale it would leave them invisible.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .events import CATEGORIES, COMPILE, SPYRE, Event

COLOURS = dict(zip(CATEGORIES, ("#1f77b4", "#c7c7c7", "#2ca02c", "#ff7f0e", "#d62728",
                                "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")))

# The rows of the categories that are not one row per name, in drawing order.
CATEGORY_ROWS = {
    "compile": "compile (first calls)",
    "python": "Python (between calls)",
    "numpy": "NumPy calls (eager)",
    "compiled": "compiled calls",
    "guard": "guard checks",
    "wrapper": "wrappers (allocation, calls)",
    "device": "GPU (device time; gaps: idle)",
}
PER_NAME = ("kernel", "extern", "spyre")  # one row per kernel, extern call, Spyre program
WINDOW_SHARE = 0.08  # each compile window is drawn this share of the steady state's time
MAX_NAMED_ROWS = 60  # beyond this many kernels, the rest share one row


@dataclass
class Row:
    label: str
    events: list[Event] = field(default_factory=list)


@dataclass
class Timeline:
    rows: list[Row]
    start_ns: int
    windows: list[tuple[int, int]]  # compile windows, drawn cut short
    window_ns: float  # the drawn length of each window
    span_ns: float  # the drawn length of the whole axis

    def x(self, t_ns: float) -> float:
        """Where the instant ``t_ns`` is drawn, in nanoseconds from the axis' start."""
        x = t_ns - self.start_ns
        for start, end in self.windows:
            length = end - start
            drawn = min(self.window_ns, length)
            if t_ns >= end:
                x -= length - drawn
            elif t_ns > start:
                x -= (t_ns - start) * (1 - drawn / length)
        return x

    def drawn(self, e: Event) -> tuple[float, float]:
        """(start, length) of ``e`` on the axis."""
        start = self.x(e.start_ns)
        return start, self.x(e.end_ns) - start


def _row_of(e: Event) -> str:
    if e.track == COMPILE:
        return CATEGORY_ROWS["compile"]
    if e.cat in PER_NAME:
        return f"{e.name} (Spyre, simulated)" if e.track == SPYRE else e.name
    return CATEGORY_ROWS.get(e.cat, e.cat)


def layout(events: list[Event], start_ns: int, end_ns: int, windows: list[tuple[int, int]]) -> Timeline:
    """The rows of ``events`` and the axis from ``start_ns`` to ``end_ns``."""
    by_label: dict[str, Row] = {label: Row(label) for label in CATEGORY_ROWS.values()}
    for e in events:
        label = _row_of(e)
        by_label.setdefault(label, Row(label)).events.append(e)
    fixed = [by_label.pop(label) for label in CATEGORY_ROWS.values()]
    named = list(by_label.values())  # in the order they first ran
    if len(named) > MAX_NAMED_ROWS:
        rest = Row(f"{len(named) - MAX_NAMED_ROWS + 1} more kernels and calls",
                   [e for r in named[MAX_NAMED_ROWS - 1:] for e in r.events])
        named = named[:MAX_NAMED_ROWS - 1] + [rest]
    compiles = fixed[0]
    if compiles.events:  # drawn cut short: the row says how long they took
        total = sum(e.dur_ns for e in compiles.events if e.depth == 0)
        compiles.label += f": {total / 1e6:.1f} ms, cut short"
    rows = [r for r in fixed + named if r.events]
    end = max([end_ns] + [e.end_ns for e in events])
    steady = (end - start_ns) - sum(e - s for s, e in windows)
    window_ns = max(steady * WINDOW_SHARE, 1) if steady > 0 else float(end - start_ns)
    timeline = Timeline(rows, start_ns, windows, window_ns, 0.0)
    timeline.span_ns = max(timeline.x(end), 1.0)
    return timeline

