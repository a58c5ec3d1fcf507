"""The summary table: events grouped by name, like torch.profiler's ``key_averages().table()``."""
from __future__ import annotations

from dataclasses import dataclass

from .events import Event


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


def key_averages(events: list[Event]) -> list[KeyAverage]:
    """One row per (name, category); a name nested in itself counts its outer total once."""
    rows: dict[tuple[str, str], KeyAverage] = {}
    for e in events:
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


def format_table(rows: list[KeyAverage], wall_ns: int, sort_by: str = "total", row_limit: int = 30) -> str:
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {sorted(SORT_KEYS)}, got {sort_by!r}")
    rows = sorted(rows, key=SORT_KEYS[sort_by])
    shown = rows[:row_limit]
    width = max([len("Name")] + [len(r.name) for r in shown])
    width = min(width, 60)
    header = (f"{'Name':<{width}}  {'Category':<9}  {'Self %':>7}  {'Self':>11}  "
              f"{'Total %':>7}  {'Total':>11}  {'Avg':>11}  {'# Calls':>7}")
    rule = "-" * len(header)
    wall = max(wall_ns, 1)
    lines = [rule, header, rule]
    for r in shown:
        name = r.name if len(r.name) <= width else r.name[: width - 3] + "..."
        lines.append(f"{name:<{width}}  {r.cat:<9}  {100 * r.self_ns / wall:>6.2f}%  {_time(r.self_ns):>11}  "
                     f"{100 * r.total_ns / wall:>6.2f}%  {_time(r.total_ns):>11}  {_time(r.avg_ns):>11}  "
                     f"{r.count:>7}")
    lines.append(rule)
    if len(rows) > len(shown):
        lines.append(f"({len(rows) - len(shown)} more rows; table(row_limit=...) shows them)")
    lines.append(f"Wall time of the profile: {_time(wall_ns)} (host track; Spyre rows are simulated time)")
    return "\n".join(lines)
