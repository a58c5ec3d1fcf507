"""Compiling a dynamic-shape graph: one kernel set for every size, or one per size.

In:  a backend's compile function (graph, example inputs) -> callable, and
     whether it takes symbolic sizes; later, ``ir.Graph``s whose input shapes
     may hold size symbols (``f32[s0, 16]``).
Out: :class:`Backend` — the backend as dynamo calls it (``api.lookup_backend``
     makes one per backend; nothing else decides this).  A static graph goes
     straight to the compile function; a graph with symbolic sizes goes through
     :func:`compile_dynamic`: compiled once with the sizes as runtime arguments
     when the backend takes symbolic sizes and manages (the C++ backend:
     kernels take ``int64_t s0``, the wrapper reads ``s0`` off the input
     shapes), otherwise a :class:`PerShapeCompiled` that specializes the graph
     to each new set of sizes it is called with and compiles that (stated in
     the log), so a size the generated code cannot express symbolically is
     still right; past ``config.recompile_limit`` shapes, new ones run through
     NumPy.

A symbolic compile gives up with :class:`~minicompile.ir.symbolic.SymbolicUnsupported`
when it meets a question about sizes it cannot answer for every size the
guards allow (``s0 < 256``?): guessing from the example would be wrong for
other sizes, so the graph is specialized instead.

The sizes as symbols and their guards are :mod:`minicompile.ir.symbolic`;
which sizes a capture makes symbolic is :mod:`minicompile.dynamo.dynamic_shapes`.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import config, graph_id, ir, logs
from .ir import passes, symbolic
from .warn import warn

Compile = Callable[[ir.Graph, list], Callable[..., tuple]]


class PerShapeCompiled:
    """Calls the graph specialized to the sizes of each call, compiled once per size."""

    def __init__(self, graph: ir.Graph, compile_fn: Compile, backend: str, reason: str):
        self.graph = graph
        self.compile_fn = compile_fn
        self.backend = backend
        self.reason = reason
        self.compiled: dict[tuple, Callable[..., tuple]] = {}
        self._warned = False
        self._shapes = [p.meta.shape for p in graph.placeholders]
        self.symbols = symbolic.input_symbols(self._shapes)
        self.graph_id = graph_id.current()  # each specialization is a graph of its own, derived from it

    def __call__(self, *inputs: Any) -> tuple:
        bindings = symbolic.symbol_bindings(self._shapes, [getattr(x, "shape", ()) for x in inputs])
        key = tuple(bindings[s] for s in self.symbols)
        fn = self.compiled.get(key)
        if fn is None and len(self.compiled) >= config.recompile_limit:
            # Like the recompile limit of a function: new shapes run the graph through NumPy.
            if not self._warned:
                self._warned = True
                warn(f"minicompile: {self.backend} compiled {len(self.compiled)} shapes of one "
                     f"graph (config.recompile_limit); running new shapes through NumPy")
            return self.graph(*inputs)
        if fn is None:
            sizes = ", ".join(f"{s}={v}" for s, v in zip(self.symbols, key))
            logs.log("recompiles", lambda: f"{self.backend}: compiling a specialization for {sizes} ({self.reason})")
            derived = self.graph_id.derived(f"graph {self.graph_id.index} specialized to {sizes}") \
                if self.graph_id is not None else None
            with graph_id.compiling(derived):
                fn = self.compile_fn(passes.specialize(self.graph, bindings), list(inputs))
            self.compiled[key] = fn
        return fn(*inputs)

    def __str__(self) -> str:
        return f"# per-shape specializations ({self.reason}): {len(self.compiled)} compiled"


def compile_dynamic(graph: ir.Graph, example_inputs: list, symbolic_compile: Compile | None,
                    specialized_compile: Compile, backend: str) -> Callable[..., tuple]:
    """``symbolic_compile(graph)`` if it handles the sizes symbolically, else per shape."""
    if symbolic_compile is not None:
        try:
            return symbolic_compile(graph, example_inputs)
        except symbolic.SymbolicUnsupported as why:
            reason = f"sizes not expressible symbolically: {why}"
        except Exception as why:  # a symbolic size where the generator wants an int
            reason = f"symbolic compile failed: {type(why).__name__}: {why}"
    else:
        reason = f"the {backend} backend specializes sizes"
    logs.log("recompiles", lambda: f"{backend}: one compile per input shape ({reason})")
    return PerShapeCompiled(graph, specialized_compile, backend, reason)


class Backend:
    """A backend with its way of meeting symbolic sizes decided, called like any backend.

    ``symbolic_sizes``: ``True`` — a graph with symbolic sizes is compiled once,
    its kernels taking the sizes as arguments, and only a compile that raises
    (:class:`~minicompile.ir.symbolic.SymbolicUnsupported`, or a plain int
    wanted where a symbol was given) falls back to one compile per shape;
    ``False`` — one compile per shape from the start (a backend that plans for
    concrete sizes); ``None`` — ``compile_fn`` hands each graph on to a backend
    that is itself a :class:`Backend` (``"auto"``), which decides.

    ``precision``: the narrowest float dtype the backend stores or computes
    float values in (``np.float16`` for the Spyre card, whose DRAM holds fp16),
    or ``None`` when each value keeps its own dtype.  Its results are as exact
    as that dtype allows, no more: ``minicompile.testing`` compares them with
    that dtype's tolerance at least, and a value beyond its range matches the
    infinity it becomes there.

    ``pre_grad``: ``(graph, example_inputs) -> graph``, run on a training graph
    before its joint graph is built (Inductor's pre-grad passes), or ``None``:
    it makes ops the backend has a fused kernel for, and a derivative rule
    whose ops it also fuses (the Triton backend's attention).
    """

    def __init__(self, compile_fn: Compile, name: str, symbolic_sizes: bool | None, precision: Any = None,
                 pre_grad: Callable[[ir.Graph, list], ir.Graph] | None = None):
        self.compile_fn = compile_fn
        self.name = name
        self.symbolic_sizes = symbolic_sizes
        self.precision = None if precision is None else np.dtype(precision)
        self.pre_grad = pre_grad
        self.__name__ = getattr(compile_fn, "__name__", name)  # what a failure names

    def __call__(self, graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
        if not graph.is_dynamic or self.symbolic_sizes is None:
            return self.compile_fn(graph, example_inputs)
        symbolic_compile = self.compile_fn if self.symbolic_sizes else None
        return compile_dynamic(graph, example_inputs, symbolic_compile, self.compile_fn, self.name)

    def __repr__(self) -> str:
        how = {True: "symbolic sizes", False: "one compile per shape", None: "decided by the backend it picks"}
        precision = f", floats in {self.precision}" if self.precision is not None else ""
        return f"<backend {self.name}: {how[self.symbolic_sizes]}{precision}>"


def custom_backend(backend: Compile | Backend, name: str) -> Backend:
    """A callable given as the backend.  It is handed a graph with symbolic sizes
    once, and compiled per shape if that raises, unless it says otherwise with a
    ``symbolic_sizes`` attribute (``False``: per shape from the start); a
    ``precision`` attribute (``np.float16``) states its float precision."""
    if isinstance(backend, Backend):
        return backend
    return Backend(backend, name, getattr(backend, "symbolic_sizes", True), getattr(backend, "precision", None),
                   getattr(backend, "pre_grad", None))

