"""Graphs with loop nodes, for every backend: loop-free segments around each loop.

In:  a graph holding ``loop`` nodes (:mod:`minicompile.ir.ops.control`), its
     example inputs, and from the backend ``compile_graph(graph, example_inputs)
     -> callable`` for a graph without loops (its usual pipeline) and, where it
     has its own, ``make_loop(body, examples, carried) -> (compiled body, run)``
     (``carried``: how many of the body's inputs and outputs are carried) where
     ``run(n, start, step, carried, invariant, sliced, reverse) -> tuple`` runs
     the compiled body ``n`` times and returns the carried values' last values,
     then the stacked outputs (the C++ backend: one generated C++ function
     holding the loop).  By default the loop is a host loop calling the
     compiled body once per iteration (Triton launches the body's kernels that way).
Out: :class:`LoopCompiledGraph`, called like the graph: it runs, in graph
     order, each loop-free *segment* (compiled by the backend) and each loop
     (its body compiled once, whatever the trip count).

Kernels do not fuse across a loop's boundary; inside the body they fuse as in
any graph.  Values handed from one step to the next are made C-contiguous
(what the segments were compiled for: their example inputs for intermediates
are C-contiguous zeros), and a loop whose body hands an input on unchanged,
or runs no iteration, returns a copy (an op's result is a new array).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import ir
from ..ir.graph import _map_nodes
from ..ir.loops import has_loops  # noqa: F401  (re-exported for the backends)
from ..ir.ops.control import iteration_order, loop_parts
from ..ir.ops.registry import array_module, is_device_array
from ..ir.symbolic import SymbolicUnsupported, is_symbolic, substitute
from .compiled import CompiledGraph

LoopRunner = Callable[[int, int, int, list, list, list, bool], tuple]


def example(meta: ir.TensorMeta, xp: Any = np) -> Any:
    """Zeros of ``meta`` in the array module ``xp`` (CuPy's where the graph's inputs are)."""
    return xp.zeros(tuple(meta.shape), meta.dtype)


def contiguous(value: Any) -> Any:
    """C-contiguous in its own array module, 0-d kept 0-d (``ascontiguousarray``
    makes it 1-d)."""
    return array_module(value).asarray(value, order="C")


def host_loop(compiled_body: Callable[..., tuple], stacked_metas: tuple = ()) -> LoopRunner:
    """The loop in Python, calling the compiled body once per iteration (the index a
    0-d int64 array in the carried values' module: on the device for CuPy's).
    ``stacked_metas``: the metas of one row of each stacked output."""

    def run(n: int, start: int, step: int, carried: list, invariant: list, sliced: list = (),
            reverse: bool = False) -> tuple:
        values = list(carried)
        xp = array_module(next(iter((*values, *invariant, *sliced)), np.zeros(0)))
        stacked = [xp.empty((n, *m.shape), m.dtype) for m in stacked_metas]
        for k in iteration_order(n, reverse):
            index = xp.array(start + k * step, dtype=np.int64)
            results = compiled_body(*values, *invariant, *(s[k, ...] for s in sliced), index)
            values = [contiguous(v) for v in results[:len(carried)]]
            for s, r in zip(stacked, results[len(carried):]):
                s[k] = r
        return fresh_results(values, carried, invariant) + tuple(stacked)

    return run


def stacked_row_metas(body: ir.Graph, carried: int) -> tuple[ir.TensorMeta, ...]:
    """The meta of one row of each stacked output of a loop body (its outputs after the carried)."""
    return tuple(o.meta for o in body.outputs[carried:])


def fresh_results(values: list, carried: list, invariant: list) -> tuple:
    """The results, each a new array: one that is an input itself is copied."""
    inputs = {id(v) for v in (*carried, *invariant)}
    return tuple(v.copy() if id(v) in inputs else v for v in values)


class LoopCompiledGraph(CompiledGraph):
    """Segments and loops, run in order; ``steps`` describes each."""

    def __init__(self, graph: ir.Graph, call: Callable[..., tuple], parts: list[tuple[str, Any]]):
        kernels = [k for _, c in parts for k in getattr(c, "kernels", [])]
        source = "\n".join(f"// ---- {what} ----\n{getattr(c, 'kernel_source', '')}" for what, c in parts)
        wrapper = "\n".join(f"# ---- {what} ----\n{getattr(c, 'wrapper_source', '')}" for what, c in parts)
        schedule = "\n".join(f"{what}:\n{getattr(c, 'schedule', '')}" for what, c in parts)
        super().__init__(graph, call, kernels, source, wrapper, [], schedule)
        self.parts = parts
        reasons = [getattr(c, "fallback_reason", None) for _, c in parts]
        self.fallback_reason = next((r for r in reasons if r), None)
        for _, c in parts:
            self.kernel_origins.update(getattr(c, "kernel_origins", {}))


def _segment(nodes: list[ir.Node], later: set[ir.Node]) -> tuple[ir.Graph, list[ir.Node], list[ir.Node]]:
    """A graph of its own for ``nodes``: inputs are what they read from before, outputs
    what is read after them (``later``)."""
    inside = set(nodes)
    sub = ir.Graph()
    env: dict[ir.Node, ir.Node] = {}
    inputs: list[ir.Node] = []
    for node in nodes:
        for i in node.inputs:
            if i not in inside and i not in env:
                env[i] = sub.placeholder(i.name, i.meta)
                inputs.append(i)
    for node in nodes:
        env[node] = sub.call(node.op.name, *_map_nodes(node.args, env.__getitem__))
        env[node].user_stack = node.user_stack
    outputs = [n for n in nodes if n in later]
    sub.output([env[n] for n in outputs])
    return sub, inputs, outputs


def symbolic_count_only(graph: ir.Graph, users: dict) -> None:
    """Raise SymbolicUnsupported unless the only symbolic sizes are loop trip counts
    read from size inputs that nothing else reads: every segment and body is then
    static, and each call binds the count from its size input."""
    for p in graph.placeholders:
        if is_symbolic(p.meta.shape) and (users[p] or p in graph.outputs):
            raise SymbolicUnsupported("a loop node in a graph with symbolic array sizes")
    for node in graph.calls:
        bodies = [loop_parts(node).body] if node.op.name == "loop" else []
        if any(is_symbolic(m.shape) for m in node.metas) or any(b.is_dynamic for b in bodies):
            raise SymbolicUnsupported("a loop node in a graph with symbolic array sizes")


def compile_with_loops(graph: ir.Graph, example_inputs: list,
                       compile_graph: Callable[[ir.Graph, list], Callable[..., tuple]],
                       make_loop: Callable[[ir.Graph, list], tuple[Any, LoopRunner]] | None = None,
                       ) -> LoopCompiledGraph:
    """Compile a graph holding loop nodes (see the module docstring).  ``make_loop(body,
    examples) -> (compiled body, run)``; by default the body compiled by ``compile_graph``
    and run by :func:`host_loop`."""
    if make_loop is None:
        def make_loop(body: ir.Graph, examples: list, carried: int) -> tuple[Any, LoopRunner]:
            compiled = compile_graph(body, examples)
            return compiled, host_loop(compiled, stacked_row_metas(body, carried))
    users = graph.users()
    if graph.is_dynamic:
        symbolic_count_only(graph, users)
    xp = next((array_module(x) for x in example_inputs if is_device_array(x)), np)
    order = {n: i for i, n in enumerate(graph.nodes)}
    examples: dict[ir.Node, Any] = dict(zip(graph.placeholders, example_inputs))
    steps: list[tuple] = []
    parts: list[tuple[str, Any]] = []
    dynamic_counts = False
    pending: list[ir.Node] = []

    def flush() -> None:
        if not pending:
            return
        last = order[pending[-1]]
        later = {n for n in pending if n in graph.outputs or any(order[u] > last for u in users[n])}
        sub, inputs, outputs = _segment(list(pending), later)
        compiled = compile_graph(sub, [examples.get(i) if i in examples and i.kind == "placeholder"
                                       else example(i.meta, xp) for i in inputs])
        parts.append((f"segment {len(parts)}", compiled))
        steps.append(("segment", compiled, inputs, outputs))
        pending.clear()

    for node in graph.calls:
        if node.op.name == "loop":
            flush()
            loop = loop_parts(node)
            compiled_body, run = make_loop(loop.body, [example(p.meta, xp) for p in loop.body.placeholders],
                                           len(loop.carried))
            parts.append((f"{node.name}: body, run {loop.n} times{' in reverse' if loop.reverse else ''}",
                          compiled_body))
            steps.append(("loop", run, node, loop))
            n = loop.n
            dynamic_counts = dynamic_counts or is_symbolic(n)
        elif node.op.name == "loop_result":
            flush()
            steps.append(("pick", node))
        else:
            pending.append(node)
    flush()
    outputs = list(graph.outputs)
    placeholders = graph.placeholders

    def call(*inputs: Any) -> tuple:
        env: dict[ir.Node, Any] = dict(zip(placeholders, inputs))
        bindings = graph.bind_symbols(inputs) if dynamic_counts else {}
        for s in steps:
            if s[0] == "segment":
                _, compiled, ins, outs = s
                values = compiled(*[env[i] if i.kind == "placeholder" else contiguous(env[i]) for i in ins])
                if xp is not np:  # a segment of constants alone ran on the host: its values go to the device
                    values = [xp.asarray(v) if isinstance(v, np.ndarray) else v for v in values]
                env.update(zip(outs, values))
            elif s[0] == "loop":
                _, run, node, loop = s
                env[node] = run(substitute(loop.n, bindings), loop.start, loop.step,
                                *([contiguous(env[c]) for c in values]
                                  for values in (loop.carried, loop.invariant, loop.sliced)), loop.reverse)
            else:
                node = s[1]
                env[node] = env[node.args[0]][node.args[1]]
        return tuple(env[o] for o in outputs)

    return LoopCompiledGraph(graph, call, parts)
