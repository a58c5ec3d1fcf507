"""The summary table: events grouped by name, like torch.profiler's ``key_averages().table()``.

In:  the profile's events and its compile windows (:func:`.events.compile_windows`).
Out: :func:`key_averages`, one row per name, and :func:`format_table`, the text.

Compiling is warm-up, not steady state: a first call can take a thousand
times longer than the calls after it and would fill the table alone.  So the
rows are the steady state — every event outside the calls that compiled, with
percentages of that time — and each compile is one line below them, with the
calls it took.
"""
from __future__ import annotations

from dataclasses import dataclass

from .events import Event, in_windows


@dataclass
class KeyAverage:
    name: str
    cat: str
    count: int = 0
    total_ns: int = 0
    self_ns: int = 0

    @property
    def avg_ns(self) -> float:
        return self.total_ns / self.count if self.count else 0.0


def key_averages(events: list[Event], windows: list[tuple[int, int]] = ()) -> list[KeyAverage]:
    """One row per (name, category); a name nested in itself counts its outer total once.
    Events inside ``windows`` (calls that compiled) count only as their compile row."""
    rows: dict[tuple[str, str], KeyAverage] = {}
    for e in events:
        if e.cat != "compile" and in_windows(e, windows):
            continue
        row = rows.setdefault((e.name, e.cat), KeyAverage(e.name, e.cat))
        row.count += 1
        row.total_ns += e.dur_ns
        row.self_ns += e.self_ns
    return list(rows.values())


def _time(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.3f}s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e3:.3f}us"


SORT_KEYS = {
    "total": lambda r: -r.total_ns,
    "self": lambda r: -r.self_ns,
    "calls": lambda r: -r.count,
    "name": lambda r: r.name,
}


def format_table(rows: list[KeyAverage], wall_ns: int, sort_by: str = "total", row_limit: int = 30,
                 warmup_ns: int = 0) -> str:
    """The steady-state rows (percentages of the wall time minus ``warmup_ns``, the
    calls that compiled), then one line per compile."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {sorted(SORT_KEYS)}, got {sort_by!r}")
    compiles = sorted((r for r in rows if r.cat == "compile"), key=SORT_KEYS["total"])
    rows = sorted((r for r in rows if r.cat != "compile"), key=SORT_KEYS[sort_by])
    shown = rows[:row_limit]
    width = max([len("Name")] + [len(r.name) for r in shown + compiles])
    width = min(width, 60)
    header = (f"{'Name':<{width}}  {'Category':<9}  {'Self %':>7}  {'Self':>11}  "
              f"{'Total %':>7}  {'Total':>11}  {'Avg':>11}  {'# Calls':>7}")
    rule = "-" * len(header)
    steady = max(wall_ns - warmup_ns, 1)

    def name(r: KeyAverage) -> str:
        return r.name if len(r.name) <= width else r.name[: width - 3] + "..."

    lines = [rule, header, rule]
    for r in shown:
        lines.append(f"{name(r):<{width}}  {r.cat:<9}  {100 * r.self_ns / steady:>6.2f}%  {_time(r.self_ns):>11}  "
                     f"{100 * r.total_ns / steady:>6.2f}%  {_time(r.total_ns):>11}  {_time(r.avg_ns):>11}  "
                     f"{r.count:>7}")
    if not shown:
        lines.append("(no steady state: every call compiled; call once before profiling to warm up)")
    lines.append(rule)
    if len(rows) > len(shown):
        lines.append(f"({len(rows) - len(shown)} more rows; table(row_limit=...) shows them)")
    if compiles:
        lines.append(f"Compile (capture, backend, first run), not in the rows above: "
                     f"{_time(warmup_ns)} in the calls that compiled")
        lines += [f"{name(r):<{width}}  {r.cat:<9}  {'':>7}  {'':>11}  {'':>7}  {_time(r.total_ns):>11}  "
                  f"{_time(r.avg_ns):>11}  {r.count:>7}" for r in compiles]
        lines.append(rule)
    lines.append(f"Wall time of the profile: {_time(wall_ns)}, steady state {_time(wall_ns - warmup_ns)} "
                 "(host track; Spyre rows are simulated time)")
    return "\n".join(lines)
