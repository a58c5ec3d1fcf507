"""What a simulated run tells you: cycles, where they went, and a timeline.

In:  the simulator's record of a finished run (events, bytes, MACs, link
     calendars, per-core scratchpad high-water marks).
Out: :class:`Report` — total cycles; per core the cycles spent computing,
     moving data by DMA, on the ring and stalled; matrix-unit utilization;
     DRAM bytes; ring link utilization; a bottleneck label; and the timeline,
     which writes Chrome trace JSON (open it in https://ui.perfetto.dev) and,
     when matplotlib is installed, a PNG.

A core's cycle is counted once, by the most useful thing happening in it:
compute (matrix or vector unit busy), else DMA (a transfer of this core in
flight), else ring (a message of this core in flight), else stall.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Event:
    """One instruction's time on a unit: cycles [start, end)."""
    core: int
    unit: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class CoreCycles:
    compute: int
    dma: int
    ring: int
    stall: int

    def __str__(self) -> str:
        return (f"compute {self.compute:>10}  dma {self.dma:>10}  ring {self.ring:>8}  "
                f"stall {self.stall:>10}")


@dataclass
class Report:
    total_cycles: int
    cores: list[CoreCycles]
    matrix_utilization: float
    scratchpad_high_water: list[int]
    dram_bytes_read: int
    dram_bytes_written: int
    dram_utilization: float
    ring_link_utilization: dict[tuple[int, int], float]
    bottleneck: str
    clock_hz: float
    events: list[Event] = field(repr=False, default_factory=list)

    @property
    def seconds(self) -> float:
        return self.total_cycles / self.clock_hz

    @property
    def max_ring_utilization(self) -> float:
        return max(self.ring_link_utilization.values(), default=0.0)

    def __str__(self) -> str:
        busy = [c for c, cyc in enumerate(self.cores) if cyc.stall < self.total_cycles]
        lines = [
            f"total cycles        {self.total_cycles}  ({self.seconds * 1e6:.1f} us)",
            f"bottleneck          {self.bottleneck}",
            f"matrix utilization  {self.matrix_utilization:.1%}",
            f"DRAM                {self.dram_bytes_read} B read, {self.dram_bytes_written} B "
            f"written, port busy {self.dram_utilization:.1%}",
            f"ring                busiest link {self.max_ring_utilization:.1%}",
            f"scratchpad peak     {max(self.scratchpad_high_water, default=0)} B",
        ]
        lines += [f"  core {c:2}  {self.cores[c]}" for c in busy[:8]]
        if len(busy) > 8:
            lines.append(f"  ... {len(busy) - 8} more cores")
        return "\n".join(lines)

    # -- the timeline ---------------------------------------------------------------------
    def chrome_trace(self) -> dict:
        """Trace Event Format: one process per core, one thread per unit, times in us."""
        us = 1e6 / self.clock_hz
        units = {"dma": 0, "ring": 1, "matrix": 2, "vector": 3}
        trace = []
        for core in sorted({e.core for e in self.events}):
            trace.append({"name": "process_name", "ph": "M", "pid": core,
                          "args": {"name": f"core {core}"}})
            for unit, tid in units.items():
                trace.append({"name": "thread_name", "ph": "M", "pid": core, "tid": tid,
                              "args": {"name": unit}})
        for e in self.events:
            trace.append({"name": e.text.split()[0], "ph": "X", "pid": e.core,
                          "tid": units[e.unit], "ts": e.start * us,
                          "dur": max(e.end - e.start, 1) * us, "args": {"instruction": e.text}})
        return {"traceEvents": trace, "displayTimeUnit": "ns"}

    def write_chrome_trace(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.chrome_trace()))
        return path

    def write_png(self, path: str | Path, max_cores: int = 8) -> str:
        """Draw the first max_cores cores' units as bars; say what happened."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return ("matplotlib is not installed, so no PNG was drawn; open the Chrome "
                    "trace JSON in https://ui.perfetto.dev instead")
        colors = {"dma": "tab:blue", "ring": "tab:green", "matrix": "tab:red",
                  "vector": "tab:orange"}
        cores = sorted({e.core for e in self.events})[:max_cores]
        rows = [(c, u) for c in cores for u in colors]
        fig, ax = plt.subplots(figsize=(12, 0.3 * len(rows) + 1))
        for y, (c, u) in enumerate(rows):
            bars = [(e.start, e.end - e.start) for e in self.events if e.core == c and e.unit == u]
            ax.broken_barh(bars, (y - 0.4, 0.8), color=colors[u])
        ax.set_yticks(range(len(rows)), [f"core {c} {u}" for c, u in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("cycle")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return f"wrote {path}"


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _length(intervals) -> int:
    return sum(e - s for s, e in _union(intervals))


def _split(events: list[Event], total: int) -> CoreCycles:
    by_unit: dict[str, list] = {"dma": [], "ring": [], "matrix": [], "vector": []}
    for e in events:
        by_unit[e.unit].append((e.start, e.end))
    compute = _length(by_unit["matrix"] + by_unit["vector"])
    with_dma = _length(by_unit["matrix"] + by_unit["vector"] + by_unit["dma"])
    everything = _length([i for unit in by_unit.values() for i in unit])
    return CoreCycles(compute, with_dma - compute, everything - with_dma, total - everything)


def build_report(sim, total: int) -> Report:
    """Summarize a finished Simulator run (see simulator.py)."""
    cfg = sim.cfg
    n = len(sim.p.cores)
    per_core: list[list[Event]] = [[] for _ in range(n)]
    for e in sim.events:
        per_core[e.core].append(e)
    cores = [_split(evs, total) for evs in per_core]
    span = max(total, 1)
    links = {key: cal.busy / span for key, cal in sim.links.items()}
    compute_busy = max((c.compute for c in cores), default=0) / span
    dram_busy = sim.dram_port.busy / span
    # The unit that is busiest relative to the run is what bounds it.
    fractions = {"compute": compute_busy, "memory": dram_busy,
                 "ring": max(links.values(), default=0.0)}
    return Report(
        total_cycles=total,
        cores=cores,
        matrix_utilization=sim.macs / (n * cfg.macs_per_cycle * span),
        scratchpad_high_water=sim.high_water,
        dram_bytes_read=sim.bytes_read,
        dram_bytes_written=sim.bytes_written,
        dram_utilization=dram_busy,
        ring_link_utilization=links,
        bottleneck=max(fractions, key=fractions.get),
        clock_hz=cfg.clock_hz,
        events=sim.events,
    )
