"""Compiling a dynamic-shape graph: one kernel set for every size, or one per size.

In:  an ``ir.Graph`` whose input shapes hold size symbols (``f32[s0, 16]``),
     and a backend's compile function (graph, example inputs) -> callable.
Out: :func:`compile_dynamic` — the backend's callable compiled once with the
     sizes as runtime arguments when it can (the C++ backend: kernels take
     ``int64_t s0``, the wrapper reads ``s0`` off the input shapes), otherwise a
     :class:`PerShapeCompiled` that specializes the graph to each new set of
     sizes it is called with and compiles that (stated in the log), so a
     size the generated code cannot express symbolically is still right;
     past ``config.recompile_limit`` shapes, new ones run through NumPy.

A symbolic compile gives up with :class:`~minicompile.ir.symbolic.SymbolicUnsupported`
when it meets a question about sizes it cannot answer for every size the
guards allow (``s0 < 256``?): guessing from the example would be wrong for
other sizes, so the graph is specialized instead.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from . import config, ir, logs
from .ir import passes, symbolic

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

    def __call__(self, *inputs: Any) -> tuple:
        bindings = symbolic.symbol_bindings(self._shapes, [getattr(x, "shape", ()) for x in inputs])
        key = tuple(bindings[s] for s in self.symbols)
        fn = self.compiled.get(key)
        if fn is None and len(self.compiled) >= config.recompile_limit:
            # Like the recompile limit of a function: new shapes run the graph through NumPy.
            if not self._warned:
                self._warned = True
                warnings.warn(f"minicompile: {self.backend} compiled {len(self.compiled)} shapes of one "
                              f"graph (config.recompile_limit); running new shapes through NumPy", stacklevel=2)
            return self.graph(*inputs)
        if fn is None:
            logs.log("recompiles", lambda: f"{self.backend}: compiling a specialization for "
                     + ", ".join(f"{s}={v}" for s, v in zip(self.symbols, key)) + f" ({self.reason})")
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
