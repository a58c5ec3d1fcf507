"""Variable trackers: what the symbolic interpreter keeps on its stack and in locals.

Each Python value the traced code touches is represented by one of these:

* :class:`ArrayVariable` — an array; it stands for an ``ir.Node`` in the graph
  being built, never for real data;
* :class:`ConstantVariable` — a Python or NumPy scalar, a string, ``None``, a
  dtype: known at trace time, baked into the graph, guarded if it came from
  the frame;
* :class:`TupleVariable` / :class:`ListVariable` / :class:`DictVariable` — containers of
  variables (the caller's lists and dicts are the lazy subclasses in frame_containers.py);
* :class:`PythonObjectVariable` — a module or a function we know how to call
  (NumPy functions, a few builtins), compared by identity in guards;
* :class:`MethodVariable` — ``x.sum`` before it is called;
* :data:`NULL` — the marker CPython pushes below or above a callable.

A variable's ``source`` (when it has one) says where in the frame it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...ir import Node
from ..source import Source


class VariableTracker:
    source: Source | None = None

    def python_type(self) -> type:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


class ArrayVariable(VariableTracker):
    """An array: it stands for the ``ir.Node`` of its current value.

    ``storage`` is the memory it lives in and ``view`` the chain of view ops
    from that storage's base (see :mod:`.functionalization`).  A write to the
    storage through any variable bumps its version; reading ``node`` then
    re-derives this variable's value from the base's new one.  ``storage`` is
    None for values without memory of their own to write to: NumPy scalars
    and ``mc.Tensor`` (whose in-place operators rebind, as a scalar's do).

    ``scalar`` is True where eager NumPy would hold a NumPy scalar
    (np.float32(...)) rather than an array: the 0-d result of a ufunc or a
    reduction, and methods of such a scalar.  ``layout`` is the memory layout
    NumPy would give it (byte strides, "C", or None: unknown); ``readonly``
    whether NumPy refuses writes through it.
    """

    def __init__(self, node: Node, source: Source | None = None, scalar: bool = False, *,
                 storage: Any = None, view: tuple = (), layout: Any = None, readonly: bool = False):
        self._node = node
        self.source = source
        self.scalar = scalar
        self.storage = storage
        self.view = view
        self.layout = layout
        self.readonly = readonly
        self._seen = (storage, storage.version) if storage is not None else None

    @property
    def node(self) -> Node:
        storage = self.storage
        if storage is not None:
            root = storage.forward[0] if storage.forward is not None else storage
            if self._seen[0] is not root or self._seen[1] != root.version:
                storage.owner.refresh(self)  # written since: replay the view on the new base
        return self._node

    def set_node(self, node: Node, root: Any) -> None:
        """``node`` is this variable's value as of ``root``'s current version."""
        self._node = node
        self._seen = (root, root.version)

    def describe(self) -> str:
        return f"{'NumPy scalar' if self.scalar else 'array'} {self.node.meta}"

    def __repr__(self) -> str:
        return f"ArrayVariable({self._node!r}, {self.source}, view={[s.op for s in self.view]})"


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
    """A list made during the trace.  The methods below are how container code reads
    and changes a list item by item; a list of the caller's (frame_containers.py)
    implements them so that they read, and guard, only what they touch."""

    items: list[VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"list of {len(self.items)}"

    def length(self) -> int:
        return len(self.items)

    def nonempty(self) -> bool:
        return bool(self.items)

    def item(self, index: int) -> VariableTracker:
        return self.items[index]

    def cells(self) -> list:
        """The item list itself, for changes that move items without reading them."""
        return self.items

    def append_items(self, values: list) -> None:
        self.items.extend(values)

    def insert_item(self, index: int, value: VariableTracker) -> None:
        self.items.insert(index, value)

    def set_item(self, index: int, value: VariableTracker) -> None:
        self.items[index] = value

    def pop_item(self, index: int) -> VariableTracker:
        return self.items.pop(index)

    def delete_item(self, index: int | slice) -> None:
        if not isinstance(index, slice):
            self.items[index]  # IndexError as Python's
        del self.items[index]

    def reverse_items(self) -> None:
        self.items.reverse()

    def clear_items(self) -> None:
        self.items.clear()


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
    """A dict whose keys are Python constants; values are variables.  Like
    ListVariable's, its methods read and change it key by key."""

    items: dict[Any, VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"dict of {len(self.items)}"

    def keys(self) -> list:
        return list(self.items)

    def length(self) -> int:
        return len(self.items)

    def nonempty(self) -> bool:
        return bool(self.items)

    def contains(self, key: Any) -> bool:
        return key in self.items

    def lookup(self, key: Any) -> VariableTracker | None:
        return self.items.get(key)

    def set_item(self, key: Any, value: VariableTracker) -> None:
        self.items[key] = value

    def delete_item(self, key: Any) -> None:
        del self.items[key]

    def clear_items(self) -> None:
        self.items.clear()


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
