"""The Spyre backend: a scheduled graph -> programs for the simulated card, run in its simulator.

In:  an ``ir.Graph`` and example inputs (as for every backend).
Out: :class:`SpyreCompiled`, called like the graph: it converts the inputs to
     fp16 at the card's boundary, runs each step (a device program in
     :func:`minicompile.spyre.simulate`, or the host), and returns the graph's
     outputs as NumPy arrays in the graph's dtypes.  ``.program`` is every
     step's program (per core), ``.report`` the last run's cycles, and
     ``str()`` shows both with the schedule.

The backend reads the same :class:`~...scheduler.Schedule` as the C++ and
Triton generators, and maps its steps:

==========================  ===============================================
schedule step               on the card
==========================  ===============================================
pointwise kernel            vector instructions on tiles (:mod:`.loops`)
row kernel (sum/max/mean,   whole rows per core: stages, epilogues and the
 softmax, layer norm)        row pass all in scratchpad (:mod:`.loops`)
matmul Extern (2-D or       tiled matrix unit, K split over the ring, plus
 batched, operands plain     its epilogue on the accumulator; the batches'
 or views such as ``W.T``,   output tiles dealt over the cores together;
 + the pointwise kernel      a viewed operand read by strided DMA
 reading it)                 (:mod:`.matmul`)
concatenate Extern          DMA through the scratchpad (:mod:`.copy`)
anything else               the host runs that step's ops with NumPy
==========================  ===============================================

Comparisons, ``np.where`` and logic on masks, int8/int16/int32 and boolean
data, transposed and strided reads (strided DMA, see :mod:`.gather`),
reductions over any axis, and rows longer than the scratchpad (walked in
chunks, once per pass) run on the card.  int64 values that NumPy makes by
widening masks and small integers (``m.sum()``, ``m.any()``) run exactly in
int32 where every value they can take fits 32 bits, and the host widens the
result; // and % of 8- and 16-bit integers by a constant run exactly through
fp32.  A kernel with no mapping (int64 or uint32 data, other integer division,
sums that may not fit 32 bits, a float-to-int cast) runs on the host between
device programs, and the compile log and the report say so; it never gives a
wrong answer.

Consecutive device steps are merged into one program (:mod:`.merge`):
values between them stay in DRAM, a barrier orders each step's stores before
the next step's loads, and the next step's loads of graph inputs are issued
while the previous step still computes.

Precision: float data lives in DRAM as fp16 and is computed in fp32 (the
matrix unit accumulates in fp32), so each stored value carries fp16 rounding (a
relative error of about 2^-11 per store, 1e-3) plus fp32 rounding inside a
kernel; a comparison sees the card's fp16 copy of its operands, so it is exact
where they are fp16 values and may flip where two floats differ by less than
fp16 resolves.  Integer and boolean data keep their own format and are exact.  Results match NumPy to ``rtol=atol=2e-2`` for values of order one;
a sum over n elements is compared relative to the sum of magnitudes.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .... import ir, logs
from ....spyre.checks import validate
from ....spyre.device import DTYPES, SpyreConfig
from ....spyre.errors import ScratchpadOverflowError
from ....spyre.report import CoreCycles, Report
from ....spyre.simulator import simulate
from ... import decompositions, loop_ir as L, scheduler
from ... import loops as loop_nodes
from ...lowering import eager_scalar
from ...scheduler import Kernel, Schedule
from .copy import plan_concatenate
from .loops import DeviceStep, plan_loops
from .matmul import epilogue_of, plan_matmul_step
from .merge import merge_steps
from .tiles import Unmappable

F16 = np.dtype(np.float16)


@dataclass
class HostStep:
    """A step the card cannot run yet: its buffers are computed by NumPy on the host."""
    name: str
    buffers: list[str]
    reason: str


# -- planning ---------------------------------------------------------------------------

def _is_matmul(step) -> bool:
    return isinstance(step, L.Extern) and step.op_name == "matmul"


def _epilogue_index(schedule: Schedule, i: int) -> int | None:
    """The kernel after matmul step i that can be its epilogue (host Externs between
    that do not read the product run first)."""
    ext = schedule.steps[i]
    for j in range(i + 1, len(schedule.steps)):
        step = schedule.steps[j]
        if isinstance(step, Kernel):
            return j if epilogue_of(ext, step) else None
        if _is_matmul(step) or ext.name in step.inputs:
            return None
    return None


def plan(schedule: Schedule, cfg: SpyreConfig, fuse: bool = True) -> list:
    """The steps in execution order: DeviceStep or HostStep."""
    live = schedule.live_after()  # what each step's results must leave the card for
    steps = schedule.steps
    deferred: dict[int, int] = {}  # epilogue kernel index -> its matmul's index
    out: list = []
    for i, step in enumerate(steps):
        if _is_matmul(step) and fuse:
            j = _epilogue_index(schedule, i)
            if j is not None and step.name not in live[j]:
                deferred[j] = i
                continue
        if i in deferred:
            ext = steps[deferred[i]]
            try:
                out.append(_checked(plan_matmul_step(ext, step, schedule, live[i], cfg)))
                continue
            except (Unmappable, KeyError, ScratchpadOverflowError) as why:
                logs.log("spyre", f"{ext.name}: epilogue {step.name} not fused: {why}")
                out.append(_device_or_host(ext, schedule, {ext.name}, cfg))
        out.append(_device_or_host(step, schedule, live[i], cfg))
    return out


def _device_or_host(step, schedule: Schedule, live: set[str], cfg: SpyreConfig):
    try:
        if isinstance(step, Kernel):
            return _checked(plan_loops(step, schedule, live, cfg))
        if _is_matmul(step):
            return _checked(plan_matmul_step(step, None, schedule, live | {step.name}, cfg))
        if step.op_name == "concatenate":
            return _checked(plan_concatenate(step, schedule, cfg))
        reason = f"np.{step.op_name} has no Spyre mapping ({step.reason})"
    except Unmappable as why:
        reason = str(why)
    except ScratchpadOverflowError as why:  # even the smallest tile does not fit this card
        reason = f"its smallest tile does not fit the scratchpad ({why})"
    except KeyError as missing:
        # A value the kernel reads through a loop-IR form the tile planner does not
        # know (a masked window read of an inlined producer, a reshaped extern
        # input): the host computes it rather than the planner guessing.
        reason = f"reads {missing} in a form the Spyre planner does not map yet"
    buffers = [s.buffer for s in step.stores] if isinstance(step, Kernel) else [step.name]
    return HostStep(step.name, buffers, reason)


def _checked(step: DeviceStep) -> DeviceStep:
    validate(step.program)  # refuses a bad plan at compile time, not on the first call
    return step


# -- the report of a run ------------------------------------------------------------------

@dataclass
class SpyreReport:
    """The last run: one :class:`Report` per device program, and their sum (``total``).

    Attributes of ``total`` (``total_cycles``, ``matrix_utilization``,
    ``dram_bytes_written``, ``bottleneck``, ...) read through this object."""
    total: Report
    steps: list[tuple[str, Report]] = field(default_factory=list)
    host_steps: list[str] = field(default_factory=list)
    host_reasons: list[str] = field(default_factory=list)  # why each host step fell back

    def __getattr__(self, name: str) -> Any:
        if name == "total":
            raise AttributeError(name)
        return getattr(self.total, name)

    @property
    def dram_bytes(self) -> int:
        return self.total.dram_bytes_read + self.total.dram_bytes_written

    def __str__(self) -> str:
        lines = [str(self.total)]
        lines += [f"  step {name:<40} {r.total_cycles:>10} cycles  {r.bottleneck:<8} "
                  f"mm {r.matrix_utilization:6.1%}  DRAM {r.dram_bytes_read + r.dram_bytes_written} B"
                  for name, r in self.steps]
        lines.append(f"host fallbacks      {len(self.host_steps)}"
                     + (f" ({', '.join(self.host_steps)})" if self.host_steps else ""))
        lines += [f"  host {name}: {why}" for name, why in zip(self.host_steps, self.host_reasons)]
        return "\n".join(lines)


def combine(steps: list[tuple[str, Report]], host_steps: list[str], cores: int,
            host_reasons: list[str] | None = None) -> SpyreReport:
    """Programs run one after another: cycles and bytes add, peaks take the maximum."""
    reports = [r for _, r in steps]
    total = sum(r.total_cycles for r in reports)
    span = max(total, 1)
    weight = lambda attr: sum(getattr(r, attr) * r.total_cycles for r in reports) / span  # noqa: E731
    per_core = [CoreCycles(*(sum(getattr(r.cores[c], f) for r in reports)
                             for f in ("compute", "dma", "ring", "stall"))) for c in range(cores)]
    links = {}
    for r in reports:
        for key, u in r.ring_link_utilization.items():
            links[key] = links.get(key, 0.0) + u * r.total_cycles / span
    longest = max(reports, key=lambda r: r.total_cycles, default=None)
    summary = Report(
        total_cycles=total, cores=per_core, matrix_utilization=weight("matrix_utilization"),
        scratchpad_high_water=[max((r.scratchpad_high_water[c] for r in reports), default=0)
                               for c in range(cores)],
        dram_bytes_read=sum(r.dram_bytes_read for r in reports),
        dram_bytes_written=sum(r.dram_bytes_written for r in reports),
        dram_utilization=weight("dram_utilization"), ring_link_utilization=links,
        bottleneck=longest.bottleneck if longest else "none",
        clock_hz=longest.clock_hz if longest else 1e9)
    return SpyreReport(summary, steps, host_steps, list(host_reasons or []))


# -- the compiled callable ------------------------------------------------------------------

class SpyreProgram:
    """Every step of a compiled graph, printable per core."""

    def __init__(self, steps: list):
        self.steps = steps

    @property
    def device_steps(self) -> list[DeviceStep]:
        return [s for s in self.steps if isinstance(s, DeviceStep)]

    def __str__(self) -> str:
        parts = []
        for s in self.steps:
            if isinstance(s, DeviceStep):
                parts += [f"# ---- device: {s.plan} ----", str(s.program)]
            else:
                parts.append(f"# ---- host: {s.name} computes {', '.join(s.buffers)}: {s.reason} ----")
        return "\n".join(parts)


class SpyreCompiled:
    def __init__(self, graph: ir.Graph, schedule: Schedule, steps: list, cfg: SpyreConfig,
                 functional: bool = True):
        self.graph, self.schedule, self.config = graph, schedule, cfg
        self.program = SpyreProgram(steps)
        self.functional = functional
        self.report: SpyreReport | None = None
        self._nodes = {n.name: n for n in graph.nodes}

    def __call__(self, *inputs: Any) -> tuple:
        env: dict[str, Any] = {p.name: x for p, x in zip(self.graph.placeholders, inputs)}
        runs, host = [], []
        for step in self.program.steps:
            if isinstance(step, HostStep):
                host.append(step)
                for b in step.buffers:
                    self._value(b, env)
                continue
            feed = {dram: np.ascontiguousarray(self._value(buf, env), dtype=_numpy(step, dram))
                    .reshape(view) for dram, (buf, view) in step.inputs.items()}
            outputs, report = simulate(step.program, feed, functional=self.functional)
            runs.append((step.name, report))
            for dram, buf in step.outputs.items():
                node = self._nodes[buf]
                value = outputs.get(dram, np.zeros(step.program.dram[dram].shape,
                                                   _numpy(step, dram)))
                env[buf] = value.reshape(node.shape).astype(node.dtype)
        self.report = combine(runs, [h.name for h in host], self.config.cores,
                              [h.reason for h in host])
        return tuple(self._value(n.name, env) for n in self.graph.outputs)

    def _value(self, name: str, env: dict[str, Any]) -> Any:
        """A buffer's value; a node no step stored is computed from its inputs with NumPy."""
        if name not in env:
            node = self._nodes[name]
            env[name] = node.op.impl(*_map(node.args, lambda n: self._argument(n, env)))
        return env[name]

    def _argument(self, node: ir.Node, env: dict[str, Any]) -> Any:
        """A node's value as a host call takes it: a NumPy scalar where eager had one."""
        value = self._value(node.name, env)
        return value[()] if eager_scalar(node) and isinstance(value, np.ndarray) else value

    def __str__(self) -> str:
        parts = ["# ---- graph ----", self.graph.python_code(), "# ---- schedule ----",
                 str(self.schedule), "# ---- programs ----", str(self.program)]
        if self.report is not None:
            parts += ["# ---- last run ----", str(self.report)]
        return "\n".join(parts)

    def __repr__(self) -> str:
        device = len(self.program.device_steps)
        return f"<SpyreCompiled {device} device program(s), {len(self.program.steps) - device} on the host>"


def _numpy(step: DeviceStep, dram: str) -> np.dtype:
    """The NumPy type of a DRAM tensor's card format (floats cross the boundary as fp16)."""
    return np.dtype(DTYPES[step.program.dram[dram].dtype].numpy)


def _map(value: Any, fn) -> Any:
    if isinstance(value, ir.Node):
        return fn(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _unfused(graph: ir.Graph) -> ir.Graph:
    """The graph with every value an output: each op's result goes to DRAM (for comparison)."""
    every = copy.deepcopy(graph)
    every.output_node.args = tuple(every.calls)
    return every


def compile_graph(graph: ir.Graph, example_inputs: list, *, config: SpyreConfig | None = None,
                  fuse: bool = True, functional: bool = True,
                  merge: bool = True) -> SpyreCompiled:
    """Compile ``graph`` for the card; ``fuse=False`` stores every op's result (no fusion);
    ``merge=False`` runs each step as its own program (see :mod:`.merge`)."""
    cfg = config or SpyreConfig()
    if loop_nodes.has_loops(graph):
        # The body is planned once, as a program of its own; the loop around it runs
        # on the host, calling that program once per iteration.
        logs.log("spyre", "a loop node: its body is one program, the loop runs on the host")
        return loop_nodes.compile_with_loops(
            graph, example_inputs,
            lambda g, ex: compile_graph(g, ex, config=cfg, fuse=fuse, functional=functional, merge=merge))
    graph = decompositions.before_lowering(graph)
    scheduled = _unfused(graph) if not fuse else graph
    sched = scheduler.schedule(scheduled, list(example_inputs), row_fusion=fuse,
                               cannot_generate=lambda n: scheduler.no_gathers_or_complex(n) or scheduler.concatenations(n))
    steps = plan(sched, cfg, fuse)
    externs = {s.name for s in sched.steps if isinstance(s, L.Extern)}
    for s in steps:  # an Extern the card computes (a matmul, with its epilogue): say so
        first = s.name.split("+")[0]
        if isinstance(s, DeviceStep) and first in externs:
            sched.runs[first] = f"{first} = on the card, not NumPy: {s.plan}"
    logs.log("schedule", lambda: str(sched))
    if merge:
        steps = [_checked(s) if isinstance(s, DeviceStep) else s for s in merge_steps(steps)]
    for s in steps:
        if isinstance(s, HostStep):
            logs.log("spyre", f"{s.name}: runs on the host with NumPy: {s.reason}")
    compiled = SpyreCompiled(graph, sched, steps, cfg, functional)
    logs.log("spyre", lambda: str(compiled.program))
    return compiled
