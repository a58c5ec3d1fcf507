"""How often did minicompile compile, and where did it break?  Counts a test can assert.

In:  a block of code that calls compiled functions.
Out: :class:`CompileCounter`, a backend that counts the graphs it is given and
     their ops and returns each graph itself (so the function runs eagerly,
     through the graph's NumPy reference implementations), as
     ``torch._dynamo.testing.CompileCounter`` does; and two context managers
     that raise ``AssertionError`` at the end of the block:
     :func:`no_recompiles` when a compiled function recompiled in it (a guard
     failed on a function that already had a cache entry; the message names the
     function and the guard), :func:`max_graph_breaks` when capture met more
     than ``n`` graph breaks in it (each listed with its reason and source line).

Both context managers read the captures the block makes
(``minicompile.dynamo.recording``, the record ``mc.explain`` is built from):
a call served by an existing cache entry captures nothing, so only compiles
made inside the block count.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from minicompile import ir
from minicompile.dynamo import Capture, recording


class CompileCounter:
    """A backend that counts: ``mc.compile(f, backend=counter)``.

    ``frame_count``: graphs compiled (one per cache entry with a graph; with
    ``mc.Tensor`` inputs the forward and the backward graph count one each);
    ``op_count``: their ops together; ``graphs``: the graphs themselves.
    """

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs: list[ir.Graph] = []

    def __call__(self, graph: ir.Graph, example_inputs: list) -> ir.Graph:
        self.frame_count += 1
        self.op_count += graph.op_count()
        self.graphs.append(graph)
        return graph

    def __repr__(self) -> str:
        return f"CompileCounter(frame_count={self.frame_count}, op_count={self.op_count})"


class Recorded:
    """What the block of :func:`no_recompiles` or :func:`max_graph_breaks` compiled."""

    def __init__(self, captures: list[Capture]):
        self.captures = captures

    @property
    def recompiles(self) -> list[Capture]:
        return [c for c in self.captures if c.recompile_reason is not None]

    @property
    def graph_breaks(self) -> list[Capture]:
        return [c for c in self.captures if c.break_reason is not None]


@contextlib.contextmanager
def no_recompiles() -> Iterator[Recorded]:
    """Fail if any compiled function recompiles inside the block.

    ``with no_recompiles(): f(x); f(x + 1)`` passes; ``f(x[:3])`` after
    ``f(x)`` fails (a new shape) unless ``f`` was already compiled for it.
    """
    with recording() as captures:
        record = Recorded(captures)
        yield record
    if record.recompiles:
        lines = [f"  {c.name}: {c.recompile_reason}" for c in record.recompiles]
        raise AssertionError(f"{len(lines)} recompile(s) inside no_recompiles():\n" + "\n".join(lines))


@contextlib.contextmanager
def max_graph_breaks(n: int) -> Iterator[Recorded]:
    """Fail if capture meets more than ``n`` graph breaks inside the block
    (``max_graph_breaks(0)``: every function compiled in it is one whole graph)."""
    with recording() as captures:
        record = Recorded(captures)
        yield record
    breaks = record.graph_breaks
    if len(breaks) > n:
        lines = [f"  {c.name}: {c.break_reason.reason}\n     at {c.break_reason.filename}:{c.break_reason.lineno}"
                 for c in breaks]
        raise AssertionError(f"{len(breaks)} graph break(s), at most {n} allowed:\n" + "\n".join(lines))
