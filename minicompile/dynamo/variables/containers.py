"""Tuples, lists, dicts and iterators: what they are, and what Python does with them.

In:  a container variable and what the opcode or the call does with it —
     a method call with its arguments, a subscript, ``in``, ``del``, a loop,
     unpacking — from the opcode handlers (through builtins.py's dispatch).
Out: the result variable; a list or dict variable is changed the way Python
     would change the object, and — when the object is the caller's (it has a
     source) — the change is recorded as an :class:`~minicompile.dynamo.side_effects.Effect`, to be
     replayed on the real object after the graph, as the same operation.

Every handler reads through the container's item-by-item methods
(``length``, ``item``, ``lookup``, ...), so on a list or dict of the caller's
(frame_containers.py) it reads, and guards, only what the operation needs:
``append`` nothing, ``insert`` nothing until the list is read, ``pop`` the
length and the popped item, ``remove`` every item.  A handler that fails
(Python would raise) fails before it changes anything, so a graph break there
can resume.

Also here: the way between Python values and variables — :func:`python_value`
of a variable known at trace time, :func:`wrap_value` of a value computed at
trace time — since a tuple or list of values is a container of variables.
"""
from __future__ import annotations

import operator
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ...ir.symbolic import Sym
from ..exc import Unsupported
from ..side_effects import Effect
from ..source import Source
from .base import CONSTANT_TYPES, ConstantVariable, PythonObjectVariable, VariableTracker, specialize_sizes

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator


@dataclass(eq=False)
class TupleVariable(VariableTracker):
    items: list[VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"tuple of {len(self.items)}"

    def python_type(self) -> type:
        return tuple


@dataclass(eq=False)
class NamedTupleVariable(TupleVariable):
    """A named tuple made by the traced code (``State(h, c)``, ``s._replace(c=...)``):
    a tuple whose items are its fields, in order.  ``cls_source`` is where its
    class was read (for class attributes and methods that read globals)."""

    cls: type = tuple
    cls_source: Source | None = None

    def describe(self) -> str:
        return f"{self.cls.__name__} (a named tuple)"

    def python_type(self) -> type:
        return self.cls


@dataclass(eq=False)
class ListVariable(VariableTracker):
    """A list made during the trace.  The methods below are how container code reads
    and changes a list item by item; a list of the caller's (frame_containers.py)
    implements them so that they read, and guard, only what they touch."""

    items: list[VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"list of {len(self.items)}"

    def python_type(self) -> type:
        return list

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

    def changed(self) -> None:
        """The trace has changed it (a list of the caller's takes note)."""


@dataclass(eq=False)
class DictVariable(VariableTracker):
    """A dict whose keys are Python constants; values are variables.  Like
    ListVariable's, its methods read and change it key by key."""

    items: dict[Any, VariableTracker]
    source: Source | None = None

    def describe(self) -> str:
        return f"dict of {len(self.items)}"

    def python_type(self) -> type:
        return dict

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

    def changed(self) -> None:
        """The trace has changed it (a dict of the caller's takes note)."""


@dataclass(eq=False)
class IteratorVariable(VariableTracker):
    """An iterator over a sequence known at trace time (``for`` loops unroll)."""

    items: list[VariableTracker]
    position: int = 0
    source: Source | None = None
    counted: "range | SymbolicRange | None" = None  # the range it walks, if one (a loop may become a node)
    # Iterating over arrays' rows (``for row in x``, ``enumerate(x)``, ``zip(x, y)``): the
    # arrays and whether the index comes first; a loop node makes each item from its index.
    rows: "RowIteration | None" = None

    def describe(self) -> str:
        return "iterator"


class RangeItems(Sequence):
    """The items of a ``range``, made as they are read: a loop that becomes one
    node never makes its million items.  ``values`` may be a
    :class:`SymbolicRangeVariable`, pinned to its value only when an item is read
    (a loop that unrolls)."""

    def __init__(self, values: "range | SymbolicRangeVariable"):
        self._values = values

    @property
    def values(self) -> range:
        return self._values.value if isinstance(self._values, SymbolicRangeVariable) else self._values

    @property
    def pinned(self) -> bool:
        return not isinstance(self._values, SymbolicRangeVariable) or self._values.pinned

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [ConstantVariable(v) for v in self.values[index]]
        return ConstantVariable(self.values[index])


@dataclass(frozen=True)
class SymbolicRange:
    """``range(start, stop)`` whose ``stop`` is a size symbol (an int argument that
    automatic dynamic made ``s0``): what a loop node counts with, for every value
    the guards allow.  It offers what :mod:`..loop_capture` reads of a ``range``."""

    start: int
    stop: Sym

    step = 1

    def __len__(self) -> int:
        raise TypeError("a symbolic range has no int length: read .length")

    @property
    def length(self) -> "Sym | int | None":
        """The count, known to be at least 1 for every value the guards allow (guarded
        where not static: a symbol is at least 2); None where the example's is 0."""
        n = self.stop - self.start
        return n if n >= 1 else None

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice) and index.stop is None and index.step is None:
            return SymbolicRange(self.start + (index.start or 0), self.stop)
        if index == -1:
            return self.stop - 1
        raise TypeError(f"a symbolic range cannot be indexed by {index!r}")


class SymbolicRangeVariable(ConstantVariable):
    """``range(n)`` of a size symbol.  A ``for`` loop over it may become a loop node
    whose trip count stays symbolic; every other use reads ``.value``, which pins
    the symbol to its value (a guard) and gives the plain ``range``."""

    def __init__(self, start: int, stop: Sym):
        self.symbolic = SymbolicRange(start, stop)
        self.source = None
        self._pinned: range | None = None

    @property
    def value(self) -> range:  # type: ignore[override]
        if self._pinned is None:
            self._pinned = range(self.symbolic.start, int(self.symbolic.stop))
        return self._pinned

    @value.setter
    def value(self, value: Any) -> None:
        self._pinned = value

    @property
    def pinned(self) -> bool:
        return self._pinned is not None

    def python_type(self) -> type:
        return range

    def describe(self) -> str:
        return f"range({self.symbolic.start}, {self.symbolic.stop})"

    def __repr__(self) -> str:
        return f"SymbolicRangeVariable({self.describe()})"


def symbolic_range(args: list, kwargs: dict) -> SymbolicRangeVariable | None:
    """``range(s0)`` or ``range(k, s0)`` with ``k`` an int: a range that stays symbolic
    (None for anything else, which Python's ``range`` then evaluates, pinning)."""
    if kwargs or not 1 <= len(args) <= 2 or not all(isinstance(a, ConstantVariable) for a in args):
        return None
    values = [a.value for a in args]
    start, stop = (0, values[0]) if len(values) == 1 else values
    if not isinstance(stop, Sym) or type(start) is not int:
        return None
    return SymbolicRangeVariable(start, stop)


# -- Python values and variables --------------------------------------------------------------

def python_value(var: VariableTracker) -> Any:
    """The real Python value of a variable known at trace time."""
    if isinstance(var, (ConstantVariable, PythonObjectVariable)):
        return var.value
    if isinstance(var, NamedTupleVariable):
        return tuple.__new__(var.cls, [python_value(v) for v in var.items])
    if isinstance(var, TupleVariable):
        return tuple(python_value(v) for v in var.items)
    if isinstance(var, ListVariable):
        return [python_value(v) for v in var.items]
    if isinstance(var, DictVariable):
        return {k: python_value(v) for k, v in var.items.items()}
    raise Unsupported(f"{var.describe()} is not known at trace time")


def is_constant(var: VariableTracker) -> bool:
    """Is ``var`` known at trace time (:func:`python_value` gives its value)?"""
    if isinstance(var, (ConstantVariable, PythonObjectVariable)):
        return True
    if isinstance(var, (TupleVariable, ListVariable)):
        return all(is_constant(v) for v in var.items)
    if isinstance(var, DictVariable):
        return all(is_constant(v) for v in var.items.values())
    return False


def wrap_value(value: Any) -> VariableTracker:
    """A variable for a value computed at trace time (no source, no guard)."""
    if type(value) is tuple:
        return TupleVariable([wrap_value(v) for v in value])
    if type(value) is list:
        return ListVariable([wrap_value(v) for v in value])
    if isinstance(value, tuple) and is_namedtuple_class(type(value)):
        return NamedTupleVariable([wrap_value(v) for v in value], cls=type(value))
    if isinstance(value, np.ndarray):
        raise Unsupported("creating arrays from constants is not supported yet")
    if isinstance(value, CONSTANT_TYPES) or isinstance(value, (slice, range, types.CodeType, Sym)):
        return ConstantVariable(value)  # a size computed at trace time (x.shape[0]) stays a size
    return PythonObjectVariable(value)


def is_namedtuple_class(cls: Any) -> bool:
    """A class made by ``collections.namedtuple`` or ``typing.NamedTuple`` (subclasses
    too), whose ``__new__`` is the one those made (its globals are named for it)."""
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return False
    new = getattr(cls, "__new__", None)
    return str(getattr(new, "__globals__", {}).get("__name__", "")).startswith("namedtuple_")


def dict_key(var: VariableTracker) -> Any:
    """A dict key: looked up by its value, guarded."""
    key = specialize_sizes(python_value(var))
    try:
        hash(key)
    except TypeError:
        raise Unsupported(f"unhashable dict key {var.describe()}") from None
    return key


# -- iteration and unpacking ------------------------------------------------------------------

def sequence_items(tx: "InstructionTranslator", var: VariableTracker) -> list[VariableTracker]:
    """The items of iterating over ``var``: ``for``, ``*args``, unpacking, ``list(...)``."""
    if isinstance(var, (TupleVariable, ListVariable)):
        return list(var.items)
    if isinstance(var, DictVariable):
        return [wrap_value(k) for k in var.keys()]  # the keys, not the values
    if isinstance(var, IteratorVariable):
        items, var.position = var.items[var.position:], len(var.items)
        return items
    items = var.unpack(tx)  # an array's error, a named tuple's fields
    if items is not None:
        return items
    value = python_value(var)
    try:
        return [wrap_value(v) for v in value]
    except TypeError as e:
        raise Unsupported(f"TypeError: {e}") from None


def iterate(tx: "InstructionTranslator", var: VariableTracker) -> IteratorVariable:
    """``iter(var)`` (GET_ITER): an iterator over items known now; the loop unrolls."""
    if isinstance(var, IteratorVariable):
        return var
    iterate_rows = getattr(var, "iterate_rows", None)  # an array: its rows (variables/arrays.py)
    rows = iterate_rows(tx) if iterate_rows is not None else None
    if rows is not None:
        return rows
    if isinstance(var, ListVariable):
        # A list iterator sees items appended during the loop: share the item list.
        return IteratorVariable(var.items)
    if isinstance(var, SymbolicRangeVariable) and not var.pinned:
        return IteratorVariable(RangeItems(var), counted=var.symbolic)
    if isinstance(var, ConstantVariable) and type(var.value) is range:
        return IteratorVariable(RangeItems(var.value), counted=var.value)
    return IteratorVariable(sequence_items(tx, var))


def next_item(it: VariableTracker) -> VariableTracker | None:
    """``next(it)`` in a ``for`` loop (FOR_ITER): the next item, or None when exhausted."""
    if not isinstance(it, IteratorVariable):
        raise Unsupported(f"for loop over {it.describe()}")
    if isinstance(it.counted, SymbolicRange) and it.position == 0 and isinstance(it.items, RangeItems) \
            and not it.items.pinned and it.counted.length is not None:
        # The first item of range(s0) (a loop whose first iteration is peeled): no pin.
        it.position = 1
        return ConstantVariable(it.counted.start)
    if it.position < len(it.items):
        it.position += 1
        return it.items[it.position - 1]
    return None


# -- changes --------------------------------------------------------------------------------

NONE = ConstantVariable(None)


def _changed(tx: "InstructionTranslator", container: VariableTracker, kind: str, name: str = "",
             args: tuple = (), keywords: tuple = ()) -> None:
    """``container`` has just changed: counted (a graph break inside this instruction
    can no longer resume) and, for the caller's object, recorded for replay."""
    tx.output.mutations += 1
    if container.source is not None:
        tx.output.side_effects.record(Effect(kind, container, name, tuple(args), keywords))
        container.changed()


def _arguments(what: str, args: list, kwargs: dict, low: int, high: int) -> list:
    """The positional arguments of a method that takes ``low``..``high`` of them."""
    if kwargs:
        raise Unsupported(f"TypeError: {what}() takes no keyword arguments", numpy_error=True)
    if not low <= len(args) <= high:
        raise Unsupported(f"TypeError: {what}() takes {low}..{high} arguments ({len(args)} given)",
                          numpy_error=True)
    return list(args)


def _index(var: VariableTracker) -> int | slice:
    """A list index or slice, as Python reads it (sizes specialized)."""
    value = specialize_sizes(python_value(var))
    if isinstance(value, slice):
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise Unsupported(f"TypeError: list indices must be integers or slices, not "
                          f"{type(value).__name__}", numpy_error=True) from None


def _key(key: Any) -> ConstantVariable:
    return ConstantVariable(key)


# -- list methods ---------------------------------------------------------------------------

def _list_append(tx, lst: ListVariable, args, kwargs):
    (value,) = _arguments("list.append", args, kwargs, 1, 1)
    lst.append_items([value])
    _changed(tx, lst, "call", "append", (value,))
    return NONE


def _list_extend(tx, lst: ListVariable, args, kwargs):
    (other,) = _arguments("list.extend", args, kwargs, 1, 1)
    values = sequence_items(tx, other)  # read before the change: lst.extend(lst) doubles it
    lst.append_items(values)
    _changed(tx, lst, "call", "extend", (ListVariable(list(values)),))
    return NONE


def _list_insert(tx, lst: ListVariable, args, kwargs):
    index, value = _arguments("list.insert", args, kwargs, 2, 2)
    position = _index(index)
    if isinstance(position, slice):
        raise Unsupported("TypeError: 'slice' object cannot be interpreted as an integer", numpy_error=True)
    lst.insert_item(position, value)
    _changed(tx, lst, "call", "insert", (ConstantVariable(position), value))
    return NONE


def _list_pop(tx, lst: ListVariable, args, kwargs):
    given = _arguments("list.pop", args, kwargs, 0, 1)
    index = _index(given[0]) if given else -1
    if isinstance(index, slice):
        raise Unsupported("TypeError: 'slice' object cannot be interpreted as an integer", numpy_error=True)
    try:
        value = lst.pop_item(index)
    except IndexError as e:
        raise Unsupported(f"IndexError: {e}", numpy_error=True) from None
    _changed(tx, lst, "call", "pop", (ConstantVariable(index),) if given else ())
    return value


def _list_remove(tx, lst: ListVariable, args, kwargs):
    (value,) = _arguments("list.remove", args, kwargs, 1, 1)
    try:
        index = python_value(lst).index(python_value(value))
    except ValueError:
        raise Unsupported("ValueError: list.remove(x): x not in list", numpy_error=True) from None
    lst.delete_item(index)
    _changed(tx, lst, "call", "remove", (value,))
    return NONE


def _list_clear(tx, lst: ListVariable, args, kwargs):
    _arguments("list.clear", args, kwargs, 0, 0)
    lst.clear_items()
    _changed(tx, lst, "call", "clear")
    return NONE


def _list_reverse(tx, lst: ListVariable, args, kwargs):
    _arguments("list.reverse", args, kwargs, 0, 0)
    lst.reverse_items()
    _changed(tx, lst, "call", "reverse")
    return NONE


def _list_sort(tx, lst: ListVariable, args, kwargs):
    if args or set(kwargs) - {"reverse", "key"}:
        raise Unsupported("TypeError: list.sort() takes only the keyword arguments key and reverse",
                          numpy_error=True)
    if "key" in kwargs and not (isinstance(kwargs["key"], ConstantVariable) and kwargs["key"].value is None):
        raise Unsupported("list.sort(key=...) is not supported yet")
    reverse = bool(python_value(kwargs["reverse"])) if "reverse" in kwargs else False
    values = python_value(lst)
    try:
        order = sorted(range(len(values)), key=values.__getitem__, reverse=reverse)
    except TypeError as e:
        raise Unsupported(f"TypeError: {e}", numpy_error=True) from None
    cells = lst.cells()
    cells[:] = [cells[i] for i in order]
    given = tuple(k for k in ("key", "reverse") if k in kwargs)
    _changed(tx, lst, "call", "sort", tuple(kwargs[k] for k in given), given)
    return NONE


def _list_index(lst: ListVariable, args, kwargs):
    values = [python_value(a) for a in _arguments("list.index", args, kwargs, 1, 3)]
    try:
        return ConstantVariable(python_value(lst).index(*values))
    except ValueError as e:
        raise Unsupported(f"ValueError: {e}", numpy_error=True) from None


def _list_count(tx, lst: ListVariable, args, kwargs):
    (value,) = _arguments("list.count", args, kwargs, 1, 1)
    return ConstantVariable(python_value(lst).count(python_value(value)))


def _list_copy(tx, lst: ListVariable, args, kwargs):
    _arguments("list.copy", args, kwargs, 0, 0)
    return ListVariable(list(lst.items))


LIST_METHODS: dict[str, Callable] = {
    "append": _list_append, "extend": _list_extend, "insert": _list_insert, "pop": _list_pop,
    "remove": _list_remove, "clear": _list_clear, "reverse": _list_reverse, "sort": _list_sort,
    "index": _list_index, "count": _list_count, "copy": _list_copy,
}


# -- dict methods ---------------------------------------------------------------------------

def _dict_items(tx, d: DictVariable, args, kwargs):
    _arguments("dict.items", args, kwargs, 0, 0)
    return IteratorVariable([TupleVariable([wrap_value(k), v]) for k, v in d.items.items()])


def _dict_keys(tx, d: DictVariable, args, kwargs):
    _arguments("dict.keys", args, kwargs, 0, 0)
    return IteratorVariable([wrap_value(k) for k in d.keys()])


def _dict_values(tx, d: DictVariable, args, kwargs):
    _arguments("dict.values", args, kwargs, 0, 0)
    return IteratorVariable(list(d.items.values()))


def _dict_get(tx, d: DictVariable, args, kwargs):
    given = _arguments("dict.get", args, kwargs, 1, 2)
    value = d.lookup(dict_key(given[0]))
    return value if value is not None else (given[1] if len(given) > 1 else NONE)


def _dict_update(tx, d: DictVariable, args, kwargs):
    if len(args) > 1:
        raise Unsupported(f"TypeError: update expected at most 1 argument, got {len(args)}", numpy_error=True)
    pairs: list[tuple[Any, VariableTracker]] = []
    if args:
        other = args[0]
        if isinstance(other, DictVariable):
            pairs = list(other.items.items())
        else:  # an iterable of (key, value) pairs
            for pair in sequence_items(tx, other):
                items = sequence_items(tx, pair)
                if len(items) != 2:
                    raise Unsupported("ValueError: dictionary update sequence element has the wrong length",
                                      numpy_error=True)
                pairs.append((dict_key(items[0]), items[1]))
    pairs += list(kwargs.items())
    for key, value in pairs:
        d.set_item(key, value)
    _changed(tx, d, "call", "update", (DictVariable(dict(pairs)),))
    return NONE


def _dict_setdefault(tx, d: DictVariable, args, kwargs):
    given = _arguments("dict.setdefault", args, kwargs, 1, 2)
    key, default = dict_key(given[0]), (given[1] if len(given) > 1 else NONE)
    value = d.lookup(key)
    if value is not None:
        return value  # there already: no change
    d.set_item(key, default)
    _changed(tx, d, "call", "setdefault", (_key(key), default))
    return default


def _dict_pop(tx, d: DictVariable, args, kwargs):
    given = _arguments("dict.pop", args, kwargs, 1, 2)
    key = dict_key(given[0])
    value = d.lookup(key)
    if value is None:
        if len(given) > 1:
            return given[1]  # not there: the default, and no change
        raise Unsupported(f"KeyError: {key!r}", numpy_error=True)
    d.delete_item(key)
    _changed(tx, d, "call", "pop", (_key(key),))
    return value


def _dict_popitem(tx, d: DictVariable, args, kwargs):
    _arguments("dict.popitem", args, kwargs, 0, 0)
    keys = d.keys()
    if not keys:
        raise Unsupported("KeyError: 'popitem(): dictionary is empty'", numpy_error=True)
    key = keys[-1]
    value = d.lookup(key)
    d.delete_item(key)
    _changed(tx, d, "call", "popitem")
    return TupleVariable([wrap_value(key), value])


def _dict_clear(tx, d: DictVariable, args, kwargs):
    _arguments("dict.clear", args, kwargs, 0, 0)
    d.clear_items()
    _changed(tx, d, "call", "clear")
    return NONE


def _dict_copy(tx, d: DictVariable, args, kwargs):
    _arguments("dict.copy", args, kwargs, 0, 0)
    return DictVariable(dict(d.items))


DICT_METHODS: dict[str, Callable] = {
    "items": _dict_items, "keys": _dict_keys, "values": _dict_values, "get": _dict_get,
    "update": _dict_update, "setdefault": _dict_setdefault, "pop": _dict_pop,
    "popitem": _dict_popitem, "clear": _dict_clear, "copy": _dict_copy,
}


def container_methods(var: VariableTracker) -> dict[str, Callable] | None:
    """The methods of a list or dict variable (trace-made or the caller's); None for others."""
    if isinstance(var, ListVariable):
        return LIST_METHODS
    if isinstance(var, DictVariable):
        return DICT_METHODS
    return None


# -- subscripts, ``in``, ``del``, truth ---------------------------------------------------------

def getitem(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker) -> VariableTracker:
    """``container[index]`` for a list, dict or tuple; a list or dict reads that item only."""
    if isinstance(container, DictVariable):
        key = dict_key(index)
        value = container.lookup(key)
        if value is None:
            raise Unsupported(f"KeyError: {key!r}", numpy_error=True)
        return value
    if isinstance(container, ListVariable):
        position = _index(index)
        if isinstance(position, slice):  # a new list of the items in the slice
            return ListVariable([container.item(i) for i in range(*position.indices(container.length()))])
        try:
            return container.item(position)
        except IndexError as e:
            raise Unsupported(f"IndexError: {e}") from None
    key = python_value(index)
    try:
        picked = container.items[key]
    except (IndexError, TypeError) as e:
        raise Unsupported(f"{type(e).__name__}: {e}") from None
    return TupleVariable(picked) if isinstance(key, slice) else picked


def setitem(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker,
            value: VariableTracker) -> None:
    """``container[index] = value`` for a list or dict."""
    if isinstance(container, DictVariable):
        key = dict_key(index)
        container.set_item(key, value)
        _changed(tx, container, "setitem", args=(_key(key), value))
        return
    if not isinstance(container, ListVariable):
        raise Unsupported(f"item assignment to {container.describe()} is not supported yet")
    position = _index(index)
    if isinstance(position, slice):
        values = sequence_items(tx, value)
        try:
            container.cells()[position] = values
        except ValueError as e:  # an extended slice of another length
            raise Unsupported(f"ValueError: {e}", numpy_error=True) from None
        value = ListVariable(list(values))
    else:
        try:
            container.set_item(position, value)
        except IndexError:
            raise Unsupported("IndexError: list assignment index out of range", numpy_error=True) from None
    _changed(tx, container, "setitem", args=(_key(position), value))


def delitem(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker) -> None:
    """``del container[index]`` for a list or dict."""
    if isinstance(container, DictVariable):
        key = dict_key(index)
        if not container.contains(key):
            raise Unsupported(f"KeyError: {key!r}", numpy_error=True)
        container.delete_item(key)
    elif isinstance(container, ListVariable):
        key = _index(index)
        try:
            container.delete_item(key)
        except IndexError:
            raise Unsupported("IndexError: list assignment index out of range", numpy_error=True) from None
    else:
        raise Unsupported(f"item deletion from {container.describe()} is not supported yet")
    _changed(tx, container, "delitem", args=(_key(key),))


def contains(container: VariableTracker, item: VariableTracker) -> bool:
    """``item in container``: a dict reads whether that one key is there; anything
    else must be known at trace time."""
    if isinstance(container, DictVariable):
        return container.contains(dict_key(item))
    return python_value(item) in python_value(container)


def container_truth(container: VariableTracker) -> bool | None:
    """``bool(container)`` for a list or dict (reads whether it is empty); None for others."""
    if isinstance(container, (ListVariable, DictVariable)):
        return container.nonempty()
    return None
