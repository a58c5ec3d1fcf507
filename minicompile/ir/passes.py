"""Graph -> Graph passes over the IR.  Each pass returns a new graph.

Only dead-code elimination so far; constant folding, CSE and algebraic
simplification join it as a table of rewrite rules.
"""
from __future__ import annotations

from .graph import Graph, Node


def rebuild(graph: Graph, keep) -> Graph:
    """A new graph with the nodes for which ``keep(node)`` is true, same names."""
    new = Graph()
    for node in graph.nodes:
        if keep(node):
            new.nodes.append(node)
            new._names.add(node.name)
    return new


def dead_code_elimination(graph: Graph) -> Graph:
    """Drop call nodes whose value no output depends on.

    Every registered op is pure (no in-place op reaches the IR), so anything an
    output does not need can go.  Placeholders stay: they are the signature.
    """
    live: set[Node] = set()
    for node in reversed(graph.nodes):
        if node.kind in ("output", "placeholder") or node in live:
            live.add(node)
            live.update(node.inputs)
    return rebuild(graph, lambda n: n in live)
