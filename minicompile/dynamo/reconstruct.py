"""Rebuilding traced values as Python expressions, for code that runs after a graph.

The code minicompile generates around a graph (the transformed function of a
graph break, the epilogue that replays side effects) needs the real values
that variable trackers stand for: an array computed by the graph is one of
its outputs, an input array is read from the frame by its source, a constant
is a literal, a list built during the trace is built again.  A
:class:`Reconstructor` writes those expressions and collects the graph
outputs and objects they refer to.  An array is rebuilt as NumPy would hold
it: the caller's own array (after the graph's new values were written back
into it) or the graph output of its storage, with its views re-made as real
views of that (see functionalization.py).
"""
from __future__ import annotations

import math
import types
from typing import Any, Callable

import numpy as np

from .. import ir
from ..ir.symbolic import Sym, is_symbolic
from .exc import NotResumable
from .functionalization import numpy_strides, storage_array
from .output_graph import OutputGraph
from .polyfills.base import python_result
from .variables.arrays import ArrayVariable
from .variables.base import ConstantVariable, MethodVariable, PythonObjectVariable, VariableTracker
from .variables.containers import DictVariable, ListVariable, NamedTupleVariable, TupleVariable
from .variables.functions import UserFunctionVariable
from .variables.user_objects import NewObjectVariable, UserObjectVariable


class Reconstructor:
    """Turns variables into Python expressions of the transformed function."""

    def __init__(self, output: OutputGraph, callee_wrapper: Callable[[Any], Any]):
        self.output = output
        self.outputs: list[ir.Node] = []
        self.namespace: dict[str, Any] = {}
        self.lines: list[str] = []
        self.memo: dict[int, str] = {}
        self.storage_memo: dict[int, str] = {}  # one real array per storage the graph made
        self.tensor_memo: dict[ir.Node, str] = {}  # one mc.Tensor per node
        self.sizes: dict[str, str] = {}  # size symbol -> the line that reads it from the frame
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

    def literal(self, value: Any) -> str:
        """A constant argument as Python; a symbolic size in it (dynamic shapes) is
        computed from the frame (``___s0 = L['x'].shape[0]``), never baked in."""
        if isinstance(value, Sym):
            for name in sorted(value.symbols):
                self.sizes.setdefault(name, f"___{name} = {self.output.symbols.env.sources[name]}")
            return f"({value.render(lambda s: '___' + s)})"
        if isinstance(value, slice) and is_symbolic(value):
            return f"slice({', '.join(self.literal(v) for v in (value.start, value.stop, value.step))})"
        if type(value) is tuple and is_symbolic(value):
            return "(" + "".join(f"{self.literal(v)}, " for v in value) + ")"
        return self.const(value)

    def expr(self, var: VariableTracker) -> str:
        key = id(var)
        if key in self.memo:
            return self.memo[key]
        if isinstance(var, NewObjectVariable):
            return self.new_object(var)
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
        if var.eager_python is not None:  # eager had a Python value (np.allclose's bool, a float a loop carried)
            return (f"{self.named('___python_result', python_result)}({self.const(var.eager_python)}, "
                    f"{self.node_value(var.node)})")
        return self.node_value(var.node, var.scalar)

    def node_value(self, node: ir.Node, scalar: bool = False) -> str:
        """The graph output that holds ``node`` (added to the outputs once)."""
        if node not in self.outputs:
            self.outputs.append(node)
        index = self.outputs.index(node)
        return f"___out[{index}][()]" if scalar else f"___out[{index}]"

    def array(self, var: ArrayVariable) -> str:
        """The real array ``var`` stands for: the caller's own array (written back
        before anything reads it) or a graph output, then ``var``'s view chain
        replayed on it in Python, so views are views again after the graph."""
        storage = var.storage
        if storage is None and not var.scalar and var.source is None and var.eager_python is None:
            return self.tensor(var.node)  # an mc.Tensor
        if storage is None or var.scalar:  # a NumPy scalar or an mc.Tensor: a value
            return var.source.expr if var.source is not None else self.graph_value(var)
        if storage.source is not None:
            base = storage.source.expr
        elif storage.maybe_view is not None:  # a reshape NumPy may or may not copy: NumPy decides
            base = self.storage_memo.get(id(storage))
            if base is None:
                parent, step = storage.maybe_view
                base = self.temporary(step.python(self.named(f"___{step.op}", ir.OPS[step.op].impl),
                                                  self.array(parent), self.literal))
                self.storage_memo[id(storage)] = base
        else:
            base = self.storage_memo.get(id(storage))
            if base is None:
                strides = numpy_strides(storage.layout, storage.node.meta.shape, storage.node.meta.dtype)
                base = self.temporary(f"{self.named('___storage_array', storage_array)}"
                                      f"({self.node_value(storage.node)}, {strides!r})")
                self.storage_memo[id(storage)] = base
        for step in var.view:
            base = step.python(self.named(f"___{step.op}", ir.OPS[step.op].impl), base, self.literal)
        return base

    def tensor(self, node: ir.Node) -> str:
        """The mc.Tensor holding ``node`` after the graph.  A view NumPy makes of another
        tensor (a basic subscript, a transpose) is taken again from that tensor here, in
        Python, so that a write the tape records into the base later reaches the view, as in
        NumPy (an mc.Tensor keeps its views); any other value is the graph's output."""
        text = self.tensor_memo.get(node)
        if text is not None:
            return text
        sources = dict(zip(self.output.graph.placeholders, self.output.input_sources))
        if node.kind == "placeholder" and node in sources:
            text = sources[node].expr
        elif node.kind == "call" and _is_view(node):
            base = self.tensor(node.args[0])
            args = ", ".join([base] + [self.literal(a) for a in node.args[1:]])
            text = self.temporary(f"{self.named(f'___{node.op.name}', node.op.impl)}({args})")
        else:
            text = self.node_value(node)
        self.tensor_memo[node] = text
        return text

    def new_object(self, var: NewObjectVariable) -> str:
        """An object the trace made: made here from its class, then given its
        attributes (named first, so an attribute may refer back to the object)."""
        name = f"___v{len(self.memo)}"
        self.memo[id(var)] = name
        self.lines.append(f"{name} = {self.named('___new_object', new_object)}({self.const(var.cls)})")
        attrs = ", ".join(f"{k!r}: {self.expr(v)}" for k, v in var.attrs.items())
        self.lines.append(f"{self.named('___set_attributes', set_attributes)}({name}, {{{attrs}}})")
        return name

    def read_lines(self) -> list[str]:
        """The lines that read every value, sizes first."""
        return list(self.sizes.values()) + self.lines

    def temporary(self, text: str) -> str:
        name = f"___t{len(self.lines)}"
        self.lines.append(f"{name} = {text}")
        return name

    def callee(self, var: UserFunctionVariable, compiled: bool = True) -> str:
        """A function whose call broke the graph: run it compiled on its own (or, not
        ``compiled``, as it is: library code)."""
        if not isinstance(var.fn, types.FunctionType):
            raise NotResumable(f"cannot rebuild {var.describe()} after a graph break")
        fn = self.const(self.callee_wrapper(var.fn) if compiled else var.fn)
        if var.bound_self is not None:
            return f"{self.const(types.MethodType)}({fn}, {self.expr(var.bound_self)})"
        return fn

    def _expr(self, var: VariableTracker) -> str:
        if isinstance(var, ArrayVariable):
            return self.array(var)
        if var.source is not None and not isinstance(var, UserFunctionVariable):
            return var.source.expr  # the caller's own object: identity kept, effects replayed on it
        if isinstance(var, ConstantVariable):
            return self.literal(var.value)
        if isinstance(var, PythonObjectVariable):
            return self.literal(var.value)
        if isinstance(var, NamedTupleVariable):
            inner = "".join(f"{self.expr(v)}, " for v in var.items)
            return f"{self.named('___tuple_new', tuple.__new__)}({self.const(var.cls)}, ({inner}))"
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


def new_object(cls: type) -> Any:
    """An instance of ``cls`` with no attributes yet (``object.__new__``: its
    ``__init__`` ran in the trace, its attributes follow)."""
    return object.__new__(cls)


def set_attributes(obj: Any, attrs: dict[str, Any]) -> None:
    """Give ``obj`` the attributes the traced code gave it, past any ``__setattr__``
    of its class (a frozen dataclass's ``__init__`` writes its fields the same way)."""
    for name, value in attrs.items():
        object.__setattr__(obj, name, value)


def _is_literal(text: str) -> bool:
    try:
        import ast

        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True


def _is_view(node: ir.Node) -> bool:
    """Does NumPy make ``node`` as a view of its first argument (a basic subscript, a view op)?"""
    if not node.args or not isinstance(node.args[0], ir.Node):
        return False
    if node.op.name == "getitem":
        return not any(isinstance(k, (ir.Node, np.ndarray, list)) for k in _flatten_key(node.args[1]))
    return node.op.kind == "view" and not any(isinstance(a, ir.Node) for a in node.args[1:])


def _flatten_key(key: Any) -> list:
    return list(key) if isinstance(key, tuple) else [key]
