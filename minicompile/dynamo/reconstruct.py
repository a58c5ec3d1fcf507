"""Rebuilding traced values as Python expressions, for code that runs after a graph.

The code minicompile generates around a graph (the transformed function of a
graph break, the epilogue that replays side effects) needs the real values
that variable trackers stand for: an array computed by the graph is one of
its outputs, an input array is read from the frame by its source, a constant
is a literal, a list built during the trace is built again.  A
:class:`Reconstructor` writes those expressions and collects the graph
outputs and objects they refer to.
"""
from __future__ import annotations

import math
import types
from typing import Any, Callable

from .. import ir
from .exc import NotResumable
from .output_graph import OutputGraph
from .variables import (
    ArrayVariable,
    ConstantVariable,
    DictVariable,
    ListVariable,
    MethodVariable,
    PythonObjectVariable,
    TupleVariable,
    UserFunctionVariable,
    UserObjectVariable,
    VariableTracker,
)


class Reconstructor:
    """Turns variables into Python expressions of the transformed function."""

    def __init__(self, output: OutputGraph, callee_wrapper: Callable[[Any], Any]):
        self.output = output
        self.outputs: list[ir.Node] = []
        self.namespace: dict[str, Any] = {}
        self.lines: list[str] = []
        self.memo: dict[int, str] = {}
        self.callee_wrapper = callee_wrapper

    def named(self, name: str, value: Any) -> str:
        self.namespace[name] = value
        return name

    def const(self, value: Any) -> str:
        if value is None or isinstance(value, (bool, str)) or (type(value) is int):
            return repr(value)
        if type(value) is float and math.isfinite(value):
            return repr(value)
        name = f"___const{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def expr(self, var: VariableTracker) -> str:
        key = id(var)
        if key in self.memo:
            return self.memo[key]
        text = self._expr(var)
        if not (text.isidentifier() or _is_literal(text)):
            # Read once, into a temporary, before any side effect is replayed:
            # a value means what it meant at that point of the trace, and a
            # list built here stays one list however often it is referenced.
            name = f"___v{len(self.memo)}"
            self.lines.append(f"{name} = {text}")
            text = name
        self.memo[key] = text
        return text

    def graph_value(self, var: ArrayVariable) -> str:
        """The graph output holding ``var``'s values (even for an array of the caller's)."""
        if var.node.kind == "placeholder":
            return var.source.expr
        if var.node not in self.outputs:
            self.outputs.append(var.node)
        index = self.outputs.index(var.node)
        return f"___out[{index}][()]" if var.scalar else f"___out[{index}]"

    def callee(self, var: UserFunctionVariable) -> str:
        """A function whose call broke the graph: run it compiled on its own."""
        if not isinstance(var.fn, types.FunctionType):
            raise NotResumable(f"cannot rebuild {var.describe()} after a graph break")
        fn = self.const(self.callee_wrapper(var.fn))
        if var.bound_self is not None:
            return f"{self.const(types.MethodType)}({fn}, {self.expr(var.bound_self)})"
        return fn

    def _expr(self, var: VariableTracker) -> str:
        if isinstance(var, ArrayVariable):
            if var.source is not None:
                return var.source.expr  # the caller's own array object (updated in place, if at all)
            return self.graph_value(var)
        if var.source is not None and not isinstance(var, UserFunctionVariable):
            return var.source.expr  # the caller's own object: identity kept, effects replayed on it
        if isinstance(var, ConstantVariable):
            return self.const(var.value)
        if isinstance(var, PythonObjectVariable):
            return self.const(var.value)
        if isinstance(var, TupleVariable):
            inner = "".join(f"{self.expr(v)}, " for v in var.items)
            return f"({inner})"
        if isinstance(var, ListVariable):
            return "[" + ", ".join(self.expr(v) for v in var.items) + "]"
        if isinstance(var, DictVariable):
            return "{" + ", ".join(f"{self.const(k)}: {self.expr(v)}" for k, v in var.items.items()) + "}"
        if isinstance(var, MethodVariable):
            return f"{self.expr(var.obj)}.{var.name}"
        if isinstance(var, UserObjectVariable):
            return self.const(var.value)
        if isinstance(var, UserFunctionVariable) and var.source is not None and var.bound_self is None:
            return var.source.expr
        if isinstance(var, UserFunctionVariable) and isinstance(var.fn, types.FunctionType):
            return self.callee(var)
        raise NotResumable(f"cannot rebuild {var.describe()} after a graph break")


def _is_literal(text: str) -> bool:
    try:
        import ast

        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True
