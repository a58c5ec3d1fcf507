"""Variable trackers: what the symbolic interpreter keeps on its stack and in locals.

Each Python value the traced code touches is represented by one of these:

* :class:`ArrayVariable` — an array; it stands for an ``ir.Node`` in the graph
  being built, never for real data;
* :class:`ConstantVariable` — a Python or NumPy scalar, a string, ``None``, a
  dtype: known at trace time, baked into the graph, guarded if it came from
  the frame;
* :class:`TupleVariable` / :class:`ListVariable` — containers of variables;
* :class:`PythonObjectVariable` — a module or a function we know how to call
  (NumPy functions, a few builtins), compared by identity in guards;
* :class:`MethodVariable` — ``x.sum`` before it is called;
* :data:`NULL` — the marker CPython pushes below or above a callable.

A variable's ``source`` (when it has one) says where in the frame it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import Node
from .source import Source


class VariableTracker:
    source: Source | None = None

    def python_type(self) -> type:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


@dataclass(eq=False)
class ArrayVariable(VariableTracker):
    node: Node
    source: Source | None = None
    # True where eager NumPy would hold a NumPy scalar (np.float32(...)) rather
    # than an array: the 0-d result of a ufunc or a reduction, and methods of
    # such a scalar.  Only the type of a returned value depends on it.
    scalar: bool = False

    def describe(self) -> str:
        return f"{'NumPy scalar' if self.scalar else 'array'} {self.node.meta}"


@dataclass(eq=False)
class ConstantVariable(VariableTracker):
    value: Any
    source: Source | None = None

    def describe(self) -> str:
        return f"{type(self.value).__name__} {self.value!r}"


@dataclass(eq=False)
class TupleVariable(VariableTracker):
    items: list[VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"tuple of {len(self.items)}"


@dataclass(eq=False)
class ListVariable(VariableTracker):
    items: list[VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"list of {len(self.items)}"


@dataclass(eq=False)
class PythonObjectVariable(VariableTracker):
    """A module or callable the interpreter knows by identity (``np``, ``np.exp``)."""

    value: Any
    source: Source | None = None

    def describe(self) -> str:
        return getattr(self.value, "__name__", type(self.value).__name__)


@dataclass(eq=False)
class MethodVariable(VariableTracker):
    """``obj.name`` where ``obj`` is an array: a method to be called next."""

    obj: VariableTracker
    name: str
    source: Source | None = field(default=None)

    def describe(self) -> str:
        return f"method .{self.name}"


@dataclass(eq=False)
class DictVariable(VariableTracker):
    """A dict whose keys are Python constants; values are variables."""

    items: dict[Any, VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"dict of {len(self.items)}"


@dataclass(eq=False)
class IteratorVariable(VariableTracker):
    """An iterator over a sequence known at trace time (``for`` loops unroll)."""

    items: list[VariableTracker]
    position: int = 0
    source: Source | None = None

    def describe(self) -> str:
        return "iterator"


@dataclass(eq=False)
class UserFunctionVariable(VariableTracker):
    """A Python function the interpreter inlines when it is called.

    ``closure`` holds, per free variable, either a real cell (a function from
    the frame) or a :class:`CellVariable` of the frame being traced (a
    function created by MAKE_FUNCTION during the trace).
    """

    fn: Any  # types.FunctionType, or a code object for functions made during the trace
    source: Source | None = None
    defaults: tuple = ()
    kwdefaults: dict = field(default_factory=dict)
    closure: tuple = ()
    globals: dict | None = None
    bound_self: VariableTracker | None = None

    @property
    def code(self):
        return getattr(self.fn, "__code__", self.fn)

    def describe(self) -> str:
        return f"function {self.code.co_name}"


@dataclass(eq=False)
class CellVariable(VariableTracker):
    """A cell of a frame being traced: reads see the frame's current value."""

    frame: Any  # the InstructionTranslator that owns the variable
    name: str
    source: Source | None = None


@dataclass(eq=False)
class UserObjectVariable(VariableTracker):
    """An instance of a user class: its attributes are read (and guarded) at trace time."""

    value: Any
    source: Source | None = None

    def describe(self) -> str:
        return f"{type(self.value).__name__} object"


class _Null(VariableTracker):
    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()
