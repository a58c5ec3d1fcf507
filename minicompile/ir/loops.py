"""Graph -> Graph passes over loop nodes (the ``loop`` op of :mod:`.ops.control`).

* :func:`has_loops`    — does a graph hold a loop node?
* :func:`unroll_loops` — the same computation with every loop written out:
  the body's nodes copied once per iteration, the index a constant.  Its
  size grows with the trip count: it is for the stages that need a graph
  without loops and can afford one — differentiation (``aot/``), where the
  backward of an unrolled loop is the reversed loop over every carry the
  forward saved, which the partitioner then cuts like any other graph.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .graph import Graph, Node
from .ops.control import iteration_order, loop_parts
from .symbolic import SymbolicUnsupported, is_symbolic


def has_loops(graph: Graph) -> bool:
    return any(n.op.name == "loop" for n in graph.calls)


def _map(value: Any, env: dict) -> Any:
    if isinstance(value, Node):
        return env[value]
    if isinstance(value, tuple):
        return tuple(_map(v, env) for v in value)
    if isinstance(value, list):
        return [_map(v, env) for v in value]
    return value


def inline(new: Graph, graph: Graph, inputs: list[Node]) -> list[Node]:
    """Copy ``graph``'s calls into ``new`` with its placeholders bound to ``inputs``
    (nodes of ``new``), loops unrolled; returns the nodes of its outputs."""
    env: dict[Node, Any] = dict(zip(graph.placeholders, inputs))
    for node in graph.calls:
        if node.op.name == "loop":
            loop = loop_parts(node)
            n, nc = loop.n, len(loop.carried)
            if is_symbolic(n):  # pinning it now would escape the guards already made
                raise SymbolicUnsupported(f"{node.name} runs a symbolic number of times ({n}): "
                                          "it cannot be written out")
            values = [env[c] for c in loop.carried]
            fixed = [env[c] for c in loop.invariant]
            rows: dict[int, list[Node]] = {}  # iteration k -> its stacked outputs
            for k in iteration_order(n, loop.reverse):
                index = new.call("full", (), np.int64(loop.start + k * loop.step), dtype=np.int64)
                row = [new.call("getitem", env[s], k) for s in loop.sliced]
                results = inline(new, loop.body, values + fixed + row + [index])
                values, rows[k] = results[:nc], results[nc:]
            stacked = []
            for j, meta in enumerate(node.meta[nc:]):  # no iteration: an empty array of n = 0 rows
                stacked.append(new.call("stack", tuple(rows[k][j] for k in range(n))) if n
                               else new.call("zeros", meta.shape, meta.dtype))
            env[node] = tuple(values) + tuple(stacked)
        elif node.op.name == "loop_result":
            value = env[node.args[0]][node.args[1]]
            # No iteration ran: the result is still an input, and an op's result is a new array.
            env[node] = new.call("copy", value) if value in inputs else value
        else:
            env[node] = new.call(node.op.name, *_map(node.args, env))
            env[node].user_stack = node.user_stack
    return [env[o] for o in graph.outputs]


def unroll_loops(graph: Graph) -> Graph:
    """``graph`` with every loop node written out iteration by iteration."""
    if not has_loops(graph):
        return graph
    new = Graph()
    inputs = [new.placeholder(p.name, p.meta) for p in graph.placeholders]
    new.output(inline(new, graph, inputs))
    return new
