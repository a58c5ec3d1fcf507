"""What every variable tracker is, and the kinds of values that need no module of their own.

The symbolic interpreter keeps a variable tracker on its stack and in its
locals for each Python value the traced code touches.  This module holds:

* :class:`VariableTracker`, the base class: a ``source`` (where in the frame
  the value came from, when it came from the frame) and a ``describe()`` for
  graph-break reasons;
* :class:`ConstantVariable` — a Python or NumPy scalar, a string, ``None``, a
  dtype, a slice: known at trace time, baked into the graph, guarded if it
  came from the frame (:data:`CONSTANT_TYPES` are the types it may hold);
* :class:`PythonObjectVariable` — a module or a callable known by identity
  (``np``, ``np.exp``, ``len``), compared by identity in guards;
* :class:`MethodVariable` — ``x.sum`` or ``lst.append`` before it is called;
* :data:`NULL` — the marker CPython pushes below or above a callable.

In: nothing of the interpreter (this is the bottom of the package).  Out: the
classes, and :func:`specialize_sizes`, how a symbolic size becomes a plain
int where it is used as a Python value.  The other kinds live beside this
module: arrays.py, containers.py (and frame_containers.py), functions.py,
user_objects.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import ir
from ...ir.symbolic import Sym
from ..source import Source

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

# Python values that are baked into the graph as constants (and guarded on value).
CONSTANT_TYPES = (bool, int, float, complex, str, type(None), np.generic, np.dtype, slice, type(Ellipsis))


def specialize_sizes(value: Any) -> Any:
    """``value`` with each symbolic size replaced by its (guarded) example value."""
    if isinstance(value, Sym):
        return int(value)
    if isinstance(value, (tuple, list)) and not isinstance(value, ir.TensorMeta):
        return type(value)(specialize_sizes(v) for v in value)
    if isinstance(value, slice):
        return slice(*(specialize_sizes(v) for v in (value.start, value.stop, value.step)))
    return value


class VariableTracker:
    source: Source | None = None

    def python_type(self) -> type:
        """The type of the value it stands for (``isinstance``, ``type(x)``); each kind
        whose type is known at trace time says it."""
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    def unpack(self, tx: "InstructionTranslator") -> list[VariableTracker] | None:
        """The items a ``for`` loop over this value sees, where its kind knows them
        without its Python value; None: iterate over its Python value (containers.py)."""
        return None


@dataclass(eq=False)
class ConstantVariable(VariableTracker):
    value: Any
    source: Source | None = None

    def describe(self) -> str:
        return f"{type(self.value).__name__} {self.value!r}"

    def python_type(self) -> type:
        return int if isinstance(self.value, Sym) else type(self.value)


class LazyConstantVariable(ConstantVariable):
    """A Python number handed to a resume function (the result of the instruction a
    graph break ran, or a local computed before it), guarded on its value only
    once the trace reads the value: a value only passed on (``print(loss.item())``)
    would otherwise recompile the resume function for every value it sees.  Its
    type is guarded from the start; reading ``.value`` installs ``guard()``."""

    def __init__(self, value: Any, source: Source, guard: Any):
        self._value = value
        self.source = source
        self._guard = guard

    @property
    def value(self) -> Any:  # type: ignore[override]
        if self._guard is not None:
            guard, self._guard = self._guard, None
            guard()
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self._value = value

    def python_type(self) -> type:
        return type(self._value)  # guarded from the start

    def describe(self) -> str:
        return f"{type(self._value).__name__} {self.source}"

    def __repr__(self) -> str:
        return f"LazyConstantVariable({self.source})"


@dataclass(eq=False)
class PythonObjectVariable(VariableTracker):
    """A module or callable the interpreter knows by identity (``np``, ``np.exp``)."""

    value: Any
    source: Source | None = None

    def describe(self) -> str:
        return getattr(self.value, "__name__", type(self.value).__name__)

    def python_type(self) -> type:
        return type(self.value)


@dataclass(eq=False)
class MethodVariable(VariableTracker):
    """``obj.name`` where ``obj`` is an array, a list or a dict: a method to be called next."""

    obj: VariableTracker
    name: str
    source: Source | None = field(default=None)

    def describe(self) -> str:
        return f"method .{self.name}"


class _Null(VariableTracker):
    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()
