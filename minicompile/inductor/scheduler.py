"""The scheduler: which values get a buffer, and which loops run together.

In:  an ``ir.Graph`` (dead code removed), its example inputs (for strides),
     each call node lowered to loop IR (:mod:`.lowering`), and optionally the
     backend's ``cannot_generate`` (which lowered nodes it cannot generate
     as kernels: those become Externs, see :func:`schedule`).
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

   Reductions and Externs are always realized.  Inlining into a padded read
   (:func:`.lowering.map_loads_guarded`) expands only the value it guards, never the guard,
   so a matmul's bias and clip can run under a depthwise convolution's mask.
2. **Loop merging** (horizontal/epilogue/row fusion).  A realized node joins
   the previous kernel instead of starting its own when every value it reads
   from that kernel is the one computed for the same element — decided from
   index expressions alone (:meth:`_Scheduler._join`):

   * two pointwise outputs over the same loops (an Adam step's three arrays);
   * sibling reductions over the same rows (``x.sum(1)`` and ``x.max(1)``);
   * a reduction that reads an earlier reduction of the same row: a new
     *stage*, one more pass over the row (softmax's sum after its max, layer
     norm's variance after its mean);
   * a pointwise epilogue at the reduction's element (``sqrt(var + eps)``);
   * a pointwise node over the whole row space (``exp(x - max) / sum``): the
     kernel's final *row pass*.

   So softmax and layer norm are one kernel each: per row, one pass per stage
   and a last pass writing the result, with the row in cache throughout.  An
   expensive value read by several of those passes is recomputed in each
   rather than stored (storing costs a write and a read of the whole array).
   Only the previous step is considered, which keeps every kernel's inputs
   computed before it runs; each decision, with the bytes of traffic it saves
   or the reason it could not fuse, is in the schedule log
   (``MINICOMPILE_LOGS=schedule``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import graph_id, ir
from ..ir.symbolic import is_symbolic
from . import loop_ir as L
from .lowering import TRANSCENDENTAL, data_loads, lower, lower_extern, map_loads_guarded, reduced_axes

# An expensive expression read by several row passes is recomputed in each while
# it is this short (softmax's exp(x - max)); a longer one (a whole GELU before a
# layer norm) costs more to recompute per pass than to write once and re-read.
ROW_RECOMPUTE_OPS = 4
# Expressions up to this many ops are recomputed rather than stored.
CHEAP_OPS = 8
# An expression inlined into its one consumer is kept as a tree; past this many ops it is
# realized instead, so a value read twice at each of many levels (lst[0] += lst[1] with both
# items one array, unrolled) does not grow into 2**levels ops.
MAX_INLINED_OPS = 512
EXPENSIVE = TRANSCENDENTAL | {"floor_divide", "remainder"}
MAX_NAME_LEN = 48
# A backend's answer to "can you generate this lowered node as a kernel?":
# None for yes, else the reason it cannot (see :func:`schedule`).
CannotGenerate = Callable[[L.Pointwise | L.Reduction], str | None]


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
    """``buffer[index] = body`` (pointwise) or ``= reduce(body)`` (``reduction`` set).

    ``index`` is ``None`` for a store at the kernel's output element (``x...``);
    a row store (:attr:`Kernel.row_pointwise`) gives its index over ``x...`` and
    ``r...``.  ``stage`` orders the reductions of one kernel: a stage-``k``
    reduction reads results of stages ``< k`` from the same row (softmax's sum
    reads its max), so each stage is its own pass over the row.  A pointwise
    store at the output element runs right after the reductions of its stage
    (layer norm's ``mean = sum / n`` before the variance pass reads it).
    """

    buffer: str
    body: L.Value
    reduction: L.Reduction | None = None
    index: tuple[L.Expr, ...] | None = None
    stage: int = 0


@dataclass
class Kernel:
    """One loop nest: output loops over ``ranges``; reductions run in inner
    loops over ``reduction_ranges``, one pass per stage, then the pointwise
    epilogues at the output element, then (a *row kernel*) one more inner pass
    writing the ``row_pointwise`` stores over the whole row — softmax and layer
    norm read each row from memory once and keep it in cache for the passes.

    ``row_shape``/``row_index``: the iteration space the reductions read, and
    its index over ``x...`` and ``r...`` (set once the kernel has reductions)."""

    name: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...] = ()
    reductions: list[Store] = field(default_factory=list)
    pointwise: list[Store] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)  # graph nodes computed here
    row_pointwise: list[Store] = field(default_factory=list)
    row_shape: tuple[int, ...] | None = None
    row_index: tuple[L.Expr, ...] | None = None

    @property
    def stores(self) -> list[Store]:
        return self.reductions + self.pointwise + self.row_pointwise

    @property
    def stages(self) -> list[list[Store]]:
        """The reductions grouped by stage, in order."""
        count = 1 + max((s.stage for s in self.reductions), default=-1)
        return [[s for s in self.reductions if s.stage == k] for k in range(count)]

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
    # Extern name -> what the backend runs in place of its NumPy call (the C++
    # backend's generated GEMM, the Spyre card's matrix unit), as the schedule says it.
    runs: dict[str, str] = field(default_factory=dict)
    # What generated names start with: the graph's ``g1_`` (graph_id.py), so that a
    # kernel's name is its own across all graphs of a function.
    name_prefix: str = ""

    @property
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def live_after(self, reads: Callable[[Any], set[str]] | None = None) -> list[set[str]]:
        """For each step, the buffers read after it: by a later step, as a graph
        output, or as a view handed out (and its base).  ``reads(step)`` says what
        a step reads (a backend's own step kinds: Triton's templates and row groups)."""
        reads = reads or step_reads
        live = {n.name for n in self.graph.outputs}
        for view in self.views.values():
            live |= {view.name} | {i.name for i in view.inputs}
        out = []
        for step in reversed(self.steps):
            out.append(set(live))
            live |= reads(step)
        return out[::-1]

    def never_stored(self, reads: Callable[[Any], set[str]] | None = None) -> dict[str, frozenset[str]]:
        """Kernel name -> the buffers it writes whose values never leave it: read
        after it by nothing (:meth:`live_after`), and by the kernel itself only at
        the element that computes them (an epilogue at a reduction's element, a
        later stage, the row pass reading a per-row result: softmax's sum, layer
        norm's variance; a depthwise convolution's window sum read by its clip).
        Backends keep them in registers: no store, no argument, no allocation."""
        kept = {}
        for step, after in zip(self.steps, self.live_after(reads)):
            if not isinstance(step, Kernel):
                continue
            identity = L.loop_index("x", step.ranges)
            elsewhere = {ld.buffer for s in step.stores for ld in data_loads(s.body) if ld.index != identity}
            kept[step.name] = frozenset(s.buffer for s in step.reductions + step.pointwise
                                        if s.index is None and s.buffer not in after and s.buffer not in elsewhere)
        return kept

    def __str__(self) -> str:
        return self.describe()

    def describe(self, kept: dict[str, frozenset[str]] | None = None) -> str:
        """The schedule as text: each kernel with what it computes and why, each
        Extern as the NumPy call it is — or as what the backend runs instead
        (:attr:`runs`); ``kept`` (:meth:`never_stored`) marks the values held
        in registers."""
        runs, kept = self.runs, kept or {}
        lines = []
        for step in self.steps:
            if isinstance(step, Kernel):
                loops = f"[{', '.join(map(str, step.ranges))}]"
                if step.reductions:
                    loops += f" x [{', '.join(map(str, step.reduction_ranges))}]"
                lines.append(f"{step.name}  loops {loops}")
                for name in step.origins:
                    note = "; kept in registers, never stored" if name in kept.get(step.name, ()) else ""
                    lines.append(f"    {name:<16} {self.decisions[name]}{note}")
            elif step.name in runs:
                lines.append(runs[step.name])
            else:
                lines.append(f"extern {step.name} = np.{step.op_name}(...)  {step.reason}")
        rest = [n for n in self.decisions if not any(n in getattr(s, "origins", ()) for s in self.steps)]
        rest = [n for n in rest if not any(isinstance(s, L.Extern) and s.name == n for s in self.steps)]
        if rest:
            lines.append("not in any kernel:")
            lines += [f"    {n:<16} {self.decisions[n]}" for n in rest]
        return "\n".join(lines) if lines else "(no computation: outputs are inputs)"


def step_reads(step: Any) -> set[str]:
    """The buffers a step (a Kernel or an Extern) reads."""
    if isinstance(step, Kernel):
        return {ld.buffer for s in step.stores for ld in L.loads(s.body)}
    return set(step.inputs)


def _input_buffer(node: ir.Node, example: Any) -> tuple[Buffer, InputLayout]:
    arr = example if isinstance(example, np.ndarray) else np.asarray(example)
    itemsize = node.dtype.itemsize
    if is_symbolic(node.shape):  # guarded C-contiguous: strides follow from the sizes
        return (Buffer(node.name, node.shape, node.dtype, L.contiguous_strides(node.shape), "input"),
                InputLayout(node.name, False))
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


def _row_space(node: ir.Node, low: L.Reduction) -> tuple[tuple[int, ...], tuple[L.Expr, ...]]:
    """The shape a reduction reads and its index over the reduction's x and r loops."""
    a, axes, keepdims = node.arg("a"), reduced_axes(node), node.arg("keepdims")
    out_index = iter(L.loop_index("x", low.ranges))
    red_index = L.loop_index("r", low.reduction_ranges)
    index = []
    for i in range(len(a.shape)):
        if i in axes:
            index.append(red_index[axes.index(i)])
            if keepdims:
                next(out_index)
        else:
            index.append(next(out_index))
    return tuple(a.shape), tuple(index)


def _kernel_name(prefix: str, index: int, origins: list[str], op_of: dict[str, str]) -> str:
    name = f"{prefix}kernel_{index}"
    for origin in origins:
        if len(name) + 1 + len(op_of[origin]) > MAX_NAME_LEN:
            break
        name += "_" + op_of[origin]
    return name


def no_gathers(node: L.Pointwise | L.Reduction) -> str | None:
    """What a backend that writes no gathers says (the default): a node that reads
    an index from memory (``table[tokens]``, ``np.take``) calls NumPy instead."""
    if any(L.indirect_atoms(ld) for ld in L.loads(node.body)):
        return "a gather (an index read from memory)"
    return None


def complex_values(node: L.Pointwise | L.Reduction) -> str | None:
    """What a backend that computes no complex values says (Triton, Spyre): a node
    that reads or makes one calls NumPy instead (the C++ backend generates them)."""
    for v in L.walk(node.body):
        if v.dtype.kind == "c":
            return f"complex values ({v.dtype}): NumPy computes them"
    return None


def no_gathers_or_complex(node: L.Pointwise | L.Reduction) -> str | None:
    return no_gathers(node) or complex_values(node)


def concatenations(node: L.Pointwise | L.Reduction) -> str | None:
    """What a backend that moves a concatenation's pieces itself says (Spyre): a node
    that reads pieces by nested masked reads (``np.concatenate``'s lowering) stays the
    Extern its planner maps."""
    for v in L.walk(node.body):
        if isinstance(v, L.Op) and v.name == "pad_select" and isinstance(v.args[2], L.Op) \
                and v.args[2].name == "pad_select":
            return "a concatenation: the planner moves its pieces itself"
    return None


def _lower_for(node: ir.Node, cannot_generate: CannotGenerate | None) -> L.Node:
    """``node`` in loop IR, an Extern when the backend cannot generate it as a kernel."""
    low = lower(node)
    if cannot_generate is not None and isinstance(low, (L.Pointwise, L.Reduction)):
        why = cannot_generate(low)
        if why is not None:
            return lower_extern(node, f"fallback: {why}")
    return low


class _Scheduler:
    def __init__(self, graph: ir.Graph, example_inputs: list, row_fusion: bool = False,
                 cannot_generate: CannotGenerate | None = None):
        self.graph = graph
        self.row_fusion = row_fusion
        self.order = {n.name: i for i, n in enumerate(graph.nodes)}
        self.lowered: dict[str, L.Node] = {n.name: _lower_for(n, cannot_generate or no_gathers)
                                           for n in graph.calls}
        self.users = graph.users()
        self.by_name = {n.name: n for n in graph.nodes}
        self.buffers: dict[str, Buffer] = {}
        self.inputs: list[InputLayout] = []
        for node, example in zip(graph.placeholders, example_inputs):
            buf, layout = _input_buffer(node, example)
            self.buffers[node.name] = buf
            self.inputs.append(layout)
        # Inlinable definitions: name -> (its loop variables, expanded body, origins).
        self.inline: dict[str, tuple[tuple[L.Var, ...], L.Value, list[str]]] = {}
        self.decisions: dict[str, str] = {}
        self.fusion: dict[str, str] = {}  # node name -> why it joined or started a kernel
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

        return map_loads_guarded(value, inline_load), origins

    def _feeds_reduction(self, name: str, depth: int = 3) -> bool:
        """Whether ``name`` is a reduction, or a same-sized pointwise node read by one."""
        low = self.lowered[name]
        if isinstance(low, L.Reduction):
            return True
        if depth == 0 or not isinstance(low, L.Pointwise):
            return False
        node = self.by_name[name]
        return any(_iteration_numel(self.lowered[c]) == math.prod(node.shape) and self._feeds_reduction(c, depth - 1)
                   for c, _ in self._uses(node))

    def _inline_reason(self, node: ir.Node, body: L.Value) -> tuple[bool, str]:
        uses = self._uses(node)
        consumers = sorted({c for c, _ in uses}, key=self.order.__getitem__)
        own = math.prod(node.shape)
        amplified = [c for c in consumers if _iteration_numel(self.lowered[c]) > own]
        ops, expensive = _op_count(body)
        if len(uses) <= 1 and not amplified:
            if ops > MAX_INLINED_OPS:  # (x + x) inlined into (y + y) ...: the tree doubles per level
                return False, f"realized: {ops} ops as one expression (a value its consumer reads twice, nested)"
            return True, f"inlined into its only consumer {consumers[0]}" if consumers else "inlined (unused)"
        why = f"{len(uses)} reads by {', '.join(consumers)}" + (" (broadcast)" if amplified else "")
        divides = any(isinstance(v, L.Op) and v.name == "divide" for v in L.walk(body))
        if not expensive and ops <= CHEAP_OPS and not (amplified and divides):
            return True, f"inlined, recomputed: cheap ({ops} ops), {why}"
        cost = "contains a transcendental or division" if expensive or divides else f"{ops} ops"
        if self.row_fusion and not amplified and ops <= ROW_RECOMPUTE_OPS \
                and any(self._feeds_reduction(c) for c in consumers):
            # Its readers can all run as passes over the same rows (softmax's
            # exp is read by the sum and by the division): recomputing it per
            # pass costs arithmetic, a buffer would cost a write and a re-read.
            saved = 2 * own * node.dtype.itemsize
            return True, f"inlined, recomputed in the row passes ({cost}, {why}; saves {saved} bytes)"
        return False, f"realized: {cost}, {why}"

    # -- kernels ------------------------------------------------------------

    def _add_store(self, node: ir.Node, store: Store, ranges: tuple[int, ...], red_ranges: tuple[int, ...],
                   origins: list[str], row: tuple[tuple[int, ...], tuple[L.Expr, ...]] | None = None) -> None:
        last = self.steps[-1] if self.steps else None
        joined, why = (None, "first step") if not isinstance(last, Kernel) else \
            self._join(last, store, ranges, red_ranges)
        if joined is None:
            kernel = Kernel("", ranges, red_ranges)
            self.steps.append(kernel)
            if isinstance(last, Kernel):
                self.fusion[node.name] = f"new kernel: {why}"
            joined = store
        else:
            kernel = last
            saved = self._traffic_saved(kernel, joined)
            self.fusion[node.name] = f"fused into the previous kernel: {why} (saves {saved} bytes of traffic)"
        if joined.reduction is not None:
            kernel.reductions.append(joined)
            kernel.reduction_ranges = red_ranges
            if kernel.row_shape is None and row is not None:
                kernel.row_shape, kernel.row_index = row
        elif joined.index is not None:
            kernel.row_pointwise.append(joined)
        else:
            kernel.pointwise.append(joined)
        for o in origins + [node.name]:
            if o not in kernel.origins:
                kernel.origins.append(o)

    def _traffic_saved(self, kernel: Kernel, store: Store) -> int:
        """Bytes a separate kernel would move that this fusion does not: each
        buffer the store reads that the kernel already reads or writes."""
        touched = kernel.buffers_written | {ld.buffer for s in kernel.stores for ld in L.loads(s.body)}
        shared = {ld.buffer for ld in L.loads(store.body)} & touched
        return sum(self.buffers[b].numel * self.buffers[b].dtype.itemsize for b in shared if b in self.buffers)

    @staticmethod
    def _reads_ok(kernel: Kernel, body: L.Value, allow_rows: bool) -> str | None:
        """Why ``body`` cannot run inside ``kernel``, or None: each value it reads
        from the kernel must be the one computed for the same element."""
        identity = L.loop_index("x", kernel.ranges)
        at = {s.buffer: (s.index if s.index is not None else identity) for s in kernel.stores}
        for ld in L.loads(body):
            if ld.buffer not in at:
                continue
            if ld.buffer in {s.buffer for s in kernel.row_pointwise} and not allow_rows:
                return f"reads row store {ld.buffer}, written in the kernel's last pass"
            if ld.index != at[ld.buffer]:
                return f"reads {ld.buffer} at another element ({', '.join(map(str, ld.index))})"
        return None

    def _join(self, kernel: Kernel, store: Store, ranges: tuple[int, ...],
              red_ranges: tuple[int, ...]) -> tuple[Store | None, str]:
        """``store`` rewritten to run in ``kernel`` (and why), or None and why not.

        Legality comes from index expressions only: a value computed in the
        kernel may be read only at the element where it is computed.
        """
        if store.reduction is not None:
            if kernel.ranges != ranges or (kernel.reductions and kernel.reduction_ranges != red_ranges):
                return None, f"loops {ranges} x {red_ranges} differ from the kernel's"
            if not kernel.reductions:
                return None, "the kernel is pointwise"
            if kernel.row_pointwise:
                return None, "the kernel's row pass has started"
            why = self._reads_ok(kernel, store.body, allow_rows=False)
            if why:
                return None, why
            # Per-row values (the kernel's reductions and their pointwise
            # epilogues) are ready once their stage has run.
            written = {s.buffer: s.stage for s in kernel.reductions + kernel.pointwise}
            deps = [written[ld.buffer] for ld in L.loads(store.body) if ld.buffer in written]
            if deps and not self.row_fusion:
                return None, "reads a reduction of this kernel (row fusion is off)"
            stage = 1 + max(deps) if deps else 0
            fused = Store(store.buffer, store.body, store.reduction, None, stage)
            how = f"reduction stage {stage} over the same rows" if deps else "sibling reduction, same loops"
            return fused, how
        if kernel.ranges == ranges:
            if kernel.row_pointwise:
                return None, "the kernel's row pass has started"
            why = self._reads_ok(kernel, store.body, allow_rows=False)
            if why:
                return None, why
            if not kernel.reductions:
                return store, "same loops"
            last = max(s.stage for s in kernel.reductions)
            return Store(store.buffer, store.body, None, None, last), f"epilogue of reduction stage {last}"
        if self.row_fusion and kernel.row_shape is not None and kernel.row_shape == ranges:
            mapping = {v: i for v, i in zip(L.loop_vars("x", ranges), kernel.row_index) if v.size != 1}
            body = L.substitute(store.body, mapping)
            why = self._reads_ok(kernel, body, allow_rows=True)
            if why:
                return None, why
            return Store(store.buffer, body, None, kernel.row_index), "row epilogue: same rows as the reductions"
        return None, f"loops {ranges} differ from the kernel's {kernel.ranges}"

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
                self._realize(node, Store(node.name, body, red), low.ranges, low.reduction_ranges, origins,
                              _row_space(node, low))
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
        for name, why in self.fusion.items():
            self.decisions[name] += f"; {why}"
        op_of = {n.name: n.op.name for n in self.graph.calls}
        prefix = graph_id.kernel_prefix()
        for i, kernel in enumerate(self.kernels()):
            kernel.origins.sort(key=self.order.__getitem__)
            kernel.name = _kernel_name(prefix, i, kernel.origins, op_of)
        return Schedule(self.graph, self.inputs, self.buffers, self.steps, self.views, self.decisions,
                        name_prefix=prefix)

    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def _realize(self, node: ir.Node, store: Store, ranges, red_ranges, origins, row=None) -> None:
        self.buffers[node.name] = Buffer(node.name, node.shape, node.dtype, L.contiguous_strides(node.shape), "kernel")
        self._add_store(node, store, ranges, red_ranges, origins, row)


def schedule(graph: ir.Graph, example_inputs: list, row_fusion: bool = True,
             cannot_generate: CannotGenerate | None = None) -> Schedule:
    """Lower, decide inlining and realization, and group loops into kernels.

    ``row_fusion=False`` keeps every kernel to one reduction pass and no row
    stores (for a backend that cannot generate row kernels yet).
    ``cannot_generate`` is the backend's say over what becomes a kernel: given a
    lowered pointwise or reduction node it returns None when the backend can
    generate it, else why not, and the node becomes an Extern (its NumPy
    reference) whose reason reads ``fallback: <why>``.  It is asked before any
    decision, so inlining and fusion treat that node like any other Extern.
    Without it, everything that lowers to loops is generated but gathers
    (:func:`no_gathers`): a backend that writes them says so by passing its own."""
    return _Scheduler(graph, example_inputs, row_fusion, cannot_generate).run()
