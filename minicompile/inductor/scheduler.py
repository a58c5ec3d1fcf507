"""The scheduler: which values get a buffer, and which loops run together.

In:  an ``ir.Graph`` (dead code removed), its example inputs (for strides),
     and each call node lowered to loop IR (:mod:`.lowering`).
Out: a :class:`Schedule` — buffers with their layouts, and an ordered list of
     steps: :class:`Kernel` (one generated loop nest) or ``loop_ir.Extern``.

Fusion happens in two ways.

1. **Inlining** (vertical fusion).  A pointwise node that is not *realized*
   (given its own buffer) is substituted into every consumer's body, so a chain
   ``tanh(x*2+1)`` becomes one expression and a pointwise prologue becomes part
   of the reduction reading it.  Views (transpose, reshape) are always inlined:
   they are index arithmetic.  A pointwise node is **realized** when

   * it must exist as a NumPy array: a graph output, or an Extern's input;
   * or it would be computed more than once — several consumers, or one that
     broadcasts it over a larger iteration space — *and* it is expensive:
     contains a transcendental (exp, log, tanh, sqrt, sin, cos, power), a
     floor-division/remainder, or more than :data:`CHEAP_OPS` ops.  Cheap
     expressions are recomputed: re-reading a buffer costs more than a few
     adds, and the buffer's round trip through memory is the bigger cost.

   Reductions and Externs are always realized.
2. **Loop merging** (horizontal/epilogue fusion).  A realized node joins the
   previous kernel instead of starting its own when their output loops are the
   same and it reads that kernel's results only at the current element: two
   pointwise outputs of one shape, sibling reductions over the same axes
   (``x.sum(1)`` and ``x.max(1)``), or a pointwise epilogue on a reduction's
   result.  Only the previous step is considered, which keeps every kernel's
   inputs computed before it runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import ir, logs
from . import loop_ir as L
from .lowering import TRANSCENDENTAL, lower

# Expressions up to this many ops are recomputed rather than stored.
CHEAP_OPS = 8
EXPENSIVE = TRANSCENDENTAL | {"floor_divide", "remainder"}
MAX_NAME_LEN = 48


@dataclass(frozen=True)
class Buffer:
    """An array the compiled code reads or writes; strides in elements."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]
    kind: str  # "input" | "kernel" | "extern"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Store:
    """``buffer[x...] = body`` (pointwise) or ``= reduce(body)`` (``reduction`` set)."""

    buffer: str
    body: L.Value
    reduction: L.Reduction | None = None


@dataclass
class Kernel:
    """One loop nest: output loops over ``ranges``; reductions share the inner
    loops over ``reduction_ranges`` and are stored before pointwise epilogues."""

    name: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...] = ()
    reductions: list[Store] = field(default_factory=list)
    pointwise: list[Store] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)  # graph nodes computed here

    @property
    def stores(self) -> list[Store]:
        return self.reductions + self.pointwise

    @property
    def buffers_written(self) -> set[str]:
        return {s.buffer for s in self.stores}

    @property
    def work(self) -> int:
        return math.prod(self.ranges) * math.prod(self.reduction_ranges)


@dataclass
class InputLayout:
    name: str
    needs_array: bool  # a NumPy scalar or odd strides: converted on entry


@dataclass
class Schedule:
    graph: ir.Graph
    inputs: list[InputLayout]
    buffers: dict[str, Buffer]
    steps: list[Any]  # Kernel | L.Extern, in execution order
    views: dict[str, ir.Node]  # views that outputs/externs need as NumPy views
    decisions: dict[str, str]  # node name -> what happened to it and why

    @property
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def __str__(self) -> str:
        lines = []
        for step in self.steps:
            if isinstance(step, Kernel):
                loops = f"[{', '.join(map(str, step.ranges))}]"
                if step.reductions:
                    loops += f" x [{', '.join(map(str, step.reduction_ranges))}]"
                lines.append(f"{step.name}  loops {loops}")
                for name in step.origins:
                    lines.append(f"    {name:<16} {self.decisions[name]}")
            else:
                lines.append(f"extern {step.name} = np.{step.op_name}(...)  {step.reason}")
        rest = [n for n in self.decisions if not any(n in getattr(s, "origins", ()) for s in self.steps)]
        rest = [n for n in rest if not any(isinstance(s, L.Extern) and s.name == n for s in self.steps)]
        if rest:
            lines.append("not in any kernel:")
            lines += [f"    {n:<16} {self.decisions[n]}" for n in rest]
        return "\n".join(lines) if lines else "(no computation: outputs are inputs)"


def _input_buffer(node: ir.Node, example: Any) -> tuple[Buffer, InputLayout]:
    arr = example if isinstance(example, np.ndarray) else np.asarray(example)
    itemsize = node.dtype.itemsize
    odd = any(s % itemsize for s in arr.strides) or arr.shape != node.shape
    if odd or not isinstance(example, np.ndarray):
        strides = L.contiguous_strides(node.shape)
    else:
        strides = tuple(s // itemsize for s in arr.strides)
    # A size-1 dimension is only ever read at index 0: its stride is irrelevant.
    strides = tuple(0 if n == 1 else s for n, s in zip(node.shape, strides))
    layout = InputLayout(node.name, odd or not isinstance(example, np.ndarray))
    return Buffer(node.name, node.shape, node.dtype, strides, "input"), layout


def _op_count(value: L.Value) -> tuple[int, bool]:
    """Ops in ``value`` as a tree (what recomputing it costs), and whether any is expensive."""
    memo: dict[L.Value, int] = {}
    expensive = False

    def count(v: L.Value) -> int:
        nonlocal expensive
        if v in memo:
            return memo[v]
        if isinstance(v, L.Op):
            expensive |= v.name in EXPENSIVE
            n = 1 + sum(count(a) for a in v.args)
        elif isinstance(v, L.Cast):
            n = count(v.value)
        else:
            n = 0
        memo[v] = n
        return n

    return count(value), expensive


def _iteration_numel(node: L.Node) -> int:
    if isinstance(node, L.Reduction):
        return math.prod(node.ranges) * math.prod(node.reduction_ranges)
    return math.prod(node.ranges)


def _kernel_name(index: int, origins: list[str], op_of: dict[str, str]) -> str:
    name = f"kernel_{index}"
    for origin in origins:
        if len(name) + 1 + len(op_of[origin]) > MAX_NAME_LEN:
            break
        name += "_" + op_of[origin]
    return name


class _Scheduler:
    def __init__(self, graph: ir.Graph, example_inputs: list):
        self.graph = graph
        self.order = {n.name: i for i, n in enumerate(graph.nodes)}
        self.lowered: dict[str, L.Node] = {n.name: lower(n) for n in graph.calls}
        self.users = graph.users()
        self.buffers: dict[str, Buffer] = {}
        self.inputs: list[InputLayout] = []
        for node, example in zip(graph.placeholders, example_inputs):
            buf, layout = _input_buffer(node, example)
            self.buffers[node.name] = buf
            self.inputs.append(layout)
        # Inlinable definitions: name -> (its loop variables, expanded body, origins).
        self.inline: dict[str, tuple[tuple[L.Var, ...], L.Value, list[str]]] = {}
        self.decisions: dict[str, str] = {}
        self.views: dict[str, ir.Node] = {}
        self.steps: list[Any] = []

    # -- what must be an array ------------------------------------------------

    def _needs_array(self) -> dict[ir.Node, str]:
        need: dict[ir.Node, str] = {}
        for n in self.graph.outputs:
            need.setdefault(n, "graph output")
        for n in self.graph.calls:
            if isinstance(self.lowered[n.name], L.Extern):
                for i in n.inputs:
                    need.setdefault(i, f"input of extern {n.name}")
        # A view handed out as an array is a NumPy view of its base's array.
        for n in reversed(self.graph.calls):
            low = self.lowered[n.name]
            if n in need and isinstance(low, L.Pointwise) and low.is_view:
                need.setdefault(n.inputs[0], f"base of view {n.name}")
        return need

    def _uses(self, node: ir.Node) -> list[tuple[str, L.Load]]:
        """Distinct (consumer, load) pairs reading ``node``, looking through views."""
        out: list[tuple[str, L.Load]] = []
        for user in dict.fromkeys(self.users[node]):
            low = self.lowered.get(user.name)
            if low is None or isinstance(low, L.Extern):
                continue
            if isinstance(low, L.Pointwise) and low.is_view:
                out += self._uses(user)
                continue
            out += [(user.name, ld) for ld in L.loads(low.body) if ld.buffer == node.name]
        return out

    # -- inlining -------------------------------------------------------------

    def _expand(self, value: L.Value) -> tuple[L.Value, list[str]]:
        origins: list[str] = []

        def inline_load(ld: L.Load) -> L.Value:
            entry = self.inline.get(ld.buffer)
            if entry is None:
                return ld
            variables, body, names = entry
            origins.extend(names)
            return L.substitute(body, {v: i for v, i in zip(variables, ld.index) if v.size != 1})

        return L.map_loads(value, inline_load), origins

    def _inline_reason(self, node: ir.Node, body: L.Value) -> tuple[bool, str]:
        uses = self._uses(node)
        consumers = sorted({c for c, _ in uses}, key=self.order.__getitem__)
        own = math.prod(node.shape)
        amplified = [c for c in consumers if _iteration_numel(self.lowered[c]) > own]
        if len(uses) <= 1 and not amplified:
            return True, f"inlined into its only consumer {consumers[0]}" if consumers else "inlined (unused)"
        ops, expensive = _op_count(body)
        why = f"{len(uses)} reads by {', '.join(consumers)}" + (" (broadcast)" if amplified else "")
        if not expensive and ops <= CHEAP_OPS:
            return True, f"inlined, recomputed: cheap ({ops} ops), {why}"
        cost = "contains a transcendental or division" if expensive else f"{ops} ops"
        return False, f"realized: {cost}, {why}"

    # -- kernels ------------------------------------------------------------

    def _add_store(self, node: ir.Node, store: Store, ranges: tuple[int, ...], red_ranges: tuple[int, ...], origins: list[str]) -> None:
        last = self.steps[-1] if self.steps else None
        if isinstance(last, Kernel) and self._can_join(last, store, ranges, red_ranges):
            kernel = last
        else:
            kernel = Kernel("", ranges, red_ranges)
            self.steps.append(kernel)
        if store.reduction is not None:
            kernel.reductions.append(store)
            kernel.reduction_ranges = red_ranges
        else:
            kernel.pointwise.append(store)
        for o in origins + [node.name]:
            if o not in kernel.origins:
                kernel.origins.append(o)

    @staticmethod
    def _can_join(kernel: Kernel, store: Store, ranges: tuple[int, ...], red_ranges: tuple[int, ...]) -> bool:
        if kernel.ranges != ranges:
            return False
        written = kernel.buffers_written
        reads = [ld for ld in L.loads(store.body) if ld.buffer in written]
        if store.reduction is not None:
            # Sibling reduction: same inner loops, independent of this kernel's results.
            return not kernel.pointwise and kernel.reduction_ranges == red_ranges and not reads
        identity = L.loop_index("x", ranges)
        return all(ld.index == identity for ld in reads)

    def run(self) -> Schedule:
        need = self._needs_array()
        for node in self.graph.calls:
            low = self.lowered[node.name]
            if isinstance(low, L.Extern):
                self.decisions[node.name] = f"extern: {low.reason}"
                self.buffers[node.name] = Buffer(node.name, node.shape, node.dtype, L.contiguous_strides(node.shape), "extern")
                self.steps.append(low)
                continue
            body, origins = self._expand(low.body)
            if isinstance(low, L.Reduction):
                red = L.Reduction(low.name, low.ranges, low.reduction_ranges, low.reduction_type, body, low.dtype, low.acc_dtype)
                self.decisions[node.name] = "reduction" + (f", realized: {need[node]}" if node in need else "")
                self._realize(node, Store(node.name, body, red), low.ranges, low.reduction_ranges, origins)
                continue
            if low.is_view:
                self.inline[node.name] = (low.vars, body, origins + [node.name])
                self.decisions[node.name] = "view: index arithmetic in its readers"
                if node in need:
                    self.views[node.name] = node
                    self.decisions[node.name] += f"; NumPy view for the {need[node]}"
                continue
            if node in need:
                inline, why = False, f"realized: {need[node]}"
            else:
                inline, why = self._inline_reason(node, body)
            self.decisions[node.name] = why
            if not inline:
                self._realize(node, Store(node.name, body), low.ranges, (), origins)
            else:
                self.inline[node.name] = (low.vars, body, origins + [node.name])
        op_of = {n.name: n.op.name for n in self.graph.calls}
        for i, kernel in enumerate(self.kernels()):
            kernel.origins.sort(key=self.order.__getitem__)
            kernel.name = _kernel_name(i, kernel.origins, op_of)
        schedule = Schedule(self.graph, self.inputs, self.buffers, self.steps, self.views, self.decisions)
        logs.log("schedule", lambda: str(schedule))
        return schedule

    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def _realize(self, node: ir.Node, store: Store, ranges, red_ranges, origins) -> None:
        self.buffers[node.name] = Buffer(node.name, node.shape, node.dtype, L.contiguous_strides(node.shape), "kernel")
        self._add_store(node, store, ranges, red_ranges, origins)


def schedule(graph: ir.Graph, example_inputs: list) -> Schedule:
    """Lower, decide inlining and realization, and group loops into kernels."""
    return _Scheduler(graph, example_inputs).run()
