"""Freezing: read-only weight arrays become compile-time constants (torch.compile's
``options={"freezing": True}``).

In:  a graph and its example inputs.
Out: a :class:`FrozenGraph` — the graph with batch norm folded into the
     weights (:mod:`minicompile.ir.fold_batchnorm`) and every value that only
     frozen inputs feed computed once, ahead of time; plus the callable that
     runs it through any backend.

An input is frozen when it is an ``np.ndarray`` that owns its memory and is
read-only (``a.setflags(write=False)``): NumPy then refuses every in-place
write to it, which is what makes treating its values as constants safe.  On
each call the compiled function checks that every frozen input is still the
same, still read-only array; if not, it recomputes the folded values from the
arrays it is given, so a new set of weights gives new results, never stale
ones.  (A writable view made *before* the array was frozen can still write
to it; freeze weights before handing them out.)

The folded values enter the runtime graph as extra placeholders appended
after the original ones, so a backend compiles an ordinary graph.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .fold_batchnorm import fold_batchnorm, fixed_nodes
from .graph import Graph, Node
from .ops import TensorMeta


# Op kinds whose result is always a new array (a view, an index or a library
# call may hand back memory of its input).
FRESH_RESULT_KINDS = frozenset({"pointwise", "reduction", "scan", "layout", "creation"})


def is_frozen(value: Any) -> bool:
    """A read-only ndarray owning its memory: its values cannot change in place."""
    return (type(value) is np.ndarray and not value.flags.writeable
            and value.flags.owndata and value.base is None)


class FrozenGraph:
    """``runtime`` computes ``graph`` from its inputs plus ``prologue(frozen inputs)``.

    ``frozen`` are the indices of the frozen inputs, ``prologue`` the graph that
    computes the folded values from them (its outputs, in the order of the
    runtime graph's extra placeholders).
    """

    def __init__(self, graph: Graph, runtime: Graph, prologue: Graph, frozen: list[int]):
        self.graph = graph
        self.runtime = runtime
        self.prologue = prologue
        self.frozen = frozen

    def constants(self, inputs: list) -> list[np.ndarray]:
        return [np.ascontiguousarray(v) for v in self.prologue(*[inputs[i] for i in self.frozen])]

    def __str__(self) -> str:
        return (f"# frozen inputs: {len(self.frozen)}, folded values: {len(self.prologue.outputs)}\n"
                f"# ---- computed once (prologue) ----\n{self.prologue.python_code('prologue')}\n"
                f"# ---- computed every call ----\n{self.runtime.python_code()}")


def freeze(graph: Graph, example_inputs: list) -> FrozenGraph:
    """Fold batch norm into frozen weights and split off what frozen inputs alone determine."""
    frozen = [i for i, x in enumerate(example_inputs) if is_frozen(x)]
    names = {graph.placeholders[i].name for i in frozen}
    graph = fold_batchnorm(graph, names)
    placeholders = graph.placeholders
    fixed = fixed_nodes(graph, names)
    # An output, or a value an output may be a view of, is computed every call:
    # the caller gets a fresh array, never a view into a kept constant.
    shared = set(graph.outputs)
    for node in reversed(graph.nodes):
        if node in shared and node.kind == "call" and node.op.kind not in FRESH_RESULT_KINDS:
            shared.update(node.inputs)
    # Worth computing ahead: a call fed by frozen inputs, not shared with an
    # output, and no larger than the frozen data it reads (a broadcast would
    # turn a small weight into a large constant).
    source_size: dict[Node, int] = {}
    folded: set[Node] = set()
    for node in graph.nodes:
        if node.kind == "placeholder":
            source_size[node] = node.meta.size if node.name in names else 0
            continue
        if node.kind != "call":
            continue
        ins = node.inputs
        source_size[node] = max([source_size[i] for i in ins], default=0)
        if (node.name in fixed and node not in shared and source_size[node] > 0
                and node.meta.size <= source_size[node] and all(i.kind == "placeholder" or i in folded for i in ins)):
            folded.add(node)
    users = graph.users()
    frontier = [n for n in graph.calls if n in folded and any(u not in folded for u in users[n])]

    prologue = Graph()
    prologue._names.update(n.name for n in graph.nodes)
    for i in frozen:
        prologue.nodes.append(placeholders[i])
    prologue.nodes += [n for n in graph.calls if n in folded]
    prologue.output(tuple(frontier))

    runtime = Graph()
    runtime._names.update(n.name for n in graph.nodes)
    env: dict[Node, Node] = {}
    for node in graph.placeholders:
        runtime.nodes.append(node)
    for node in frontier:
        env[node] = runtime.placeholder(f"frozen_{node.name}", TensorMeta(node.shape, node.dtype))
    for node in graph.nodes:
        if node.kind == "placeholder" or node in folded:
            continue
        args = _remap(node.args, env)
        if node.kind == "output":
            runtime.output(args)
        else:
            copy = Node(node.name, node.kind, node.op, args, node.meta)
            runtime.nodes.append(copy)
            env[node] = copy
    return FrozenGraph(graph, runtime, prologue, frozen)


def _remap(value: Any, env: dict[Node, Node]) -> Any:
    if isinstance(value, Node):
        return env.get(value, value)
    if isinstance(value, (tuple, list)):
        return type(value)(_remap(v, env) for v in value)
    return value


def freezing_backend(backend: Callable[[Graph, list], Callable[..., tuple]]) -> Callable[[Graph, list], Callable[..., tuple]]:
    """``backend`` compiling the frozen graph: the prologue runs at compile time, and again
    only when a frozen input is replaced or made writable."""

    def compile_frozen(graph: Graph, example_inputs: list) -> Callable[..., tuple]:
        frozen = freeze(graph, list(example_inputs))
        if not frozen.prologue.outputs:
            return backend(graph, example_inputs)
        constants = frozen.constants(list(example_inputs))
        compiled = backend(frozen.runtime, list(example_inputs) + constants)
        state = {"arrays": [example_inputs[i] for i in frozen.frozen], "constants": constants}

        def call(*inputs: Any) -> tuple:
            arrays = state["arrays"]
            if any(inputs[i] is not a or not is_frozen(a) for i, a in zip(frozen.frozen, arrays)):
                constants = frozen.constants(list(inputs))
                if all(is_frozen(inputs[i]) for i in frozen.frozen):  # safe to keep for later calls
                    state.update(arrays=[inputs[i] for i in frozen.frozen], constants=constants)
                return compiled(*inputs, *constants)
            return compiled(*inputs, *state["constants"])

        call.frozen = frozen  # type: ignore[attr-defined]
        call.compiled = compiled  # type: ignore[attr-defined]
        return call

    compile_frozen.__name__ = f"frozen_{getattr(backend, '__name__', 'backend')}"
    compile_frozen.pre_grad = getattr(backend, "pre_grad", None)  # type: ignore[attr-defined]
    return compile_frozen
