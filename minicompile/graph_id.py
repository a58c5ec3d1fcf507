"""Which graph is being compiled: the number its artifacts and kernel names carry.

In:  a function compiled with ``mc.compile``, which may produce several graphs:
     one per cache entry, one per resume function after a graph break, the
     backward graph of a training graph, one per input shape for a backend
     that specializes sizes.
Out: a :class:`GraphId` for each, numbered in the order they compile, per
     function (the user's function and the functions its graph breaks hand work
     to count together), like torch.compile's compile ids ``[0/1]``.

While a graph compiles, :func:`current` returns its id (a thread's own):
:mod:`minicompile.logs` labels each artifact with it, and the inductor starts
its kernels' names with :func:`kernel_prefix`, so that ``g1_kernel_0_sum_divide``
names one kernel across every graph of the function — in the generated code,
the logs, the report and the profile alike.  A graph compiled outside
``mc.compile`` (a backend called directly) has no id and no prefix.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Iterator


class GraphCounter:
    """The next graph index of one function (shared with its resume functions)."""

    def __init__(self) -> None:
        self._next = 0
        self._lock = threading.Lock()  # two threads compiling get distinct indices

    def next(self, function: str, detail: str = "") -> "GraphId":
        with self._lock:
            index, self._next = self._next, self._next + 1
        return GraphId(index, function, detail, self)


@dataclass(frozen=True)
class GraphId:
    """Graph ``index`` of a function: captured from ``function`` (a qualified name);
    ``detail`` says what else it is (``backward of graph 0``)."""

    index: int
    function: str
    detail: str = ""
    counter: GraphCounter | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"graph {self.index} of {self.function}" + (f", {self.detail}" if self.detail else "")

    @property
    def prefix(self) -> str:
        return f"g{self.index}_"

    def derived(self, detail: str) -> "GraphId":
        """A further graph made from this one (its backward, a specialization): the next index."""
        if self.counter is None:
            return GraphId(self.index, self.function, detail)
        return self.counter.next(self.function, detail)


_local = threading.local()


def current() -> GraphId | None:
    """The id of the graph this thread is compiling, if any."""
    return getattr(_local, "graph", None)


def kernel_prefix() -> str:
    """What the names of the kernels compiled now start with: ``g1_``, or nothing."""
    graph = current()
    return graph.prefix if graph is not None else ""


@contextlib.contextmanager
def compiling(graph: GraphId | None) -> Iterator[GraphId | None]:
    """Within the block, :func:`current` is ``graph`` (None: no graph)."""
    previous = current()
    _local.graph = graph
    try:
        yield graph
    finally:
        _local.graph = previous
