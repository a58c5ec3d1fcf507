"""Lists and dicts in traced code: methods, subscripts, ``in``, ``del``, truth.

In: the interpreter's list or dict variable and the call's arguments.  Out:
the result variable; the container's variable is changed the way Python
would change the object, and — when the object is the caller's (it has a
source) — the change is recorded as an :class:`~.side_effects.Effect`, to be
replayed on the real object after the graph, as the same operation.

Every handler reads through the container's item-by-item methods
(``length``, ``item``, ``lookup``, ...; see variables.py and
frame_containers.py), so on a list or dict of the caller's it reads, and
guards, only what the operation needs: ``append`` nothing, ``insert`` nothing
until the list is read, ``pop`` the length and the popped item, ``remove``
every item.  A handler that fails (Python would raise) fails before it
changes anything, so a graph break there can resume.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Unsupported
from .frame_containers import FrameContainer, FrameDictVariable, FrameListVariable
from ..output_graph import specialize_sizes
from ..side_effects import Effect
from .base import (
    ArrayVariable,
    ConstantVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    TupleVariable,
    VariableTracker,
)

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

NONE = ConstantVariable(None)


def _changed(tx: "InstructionTranslator", container: VariableTracker, kind: str, name: str = "",
             args: tuple = (), keywords: tuple = ()) -> None:
    """``container`` has just changed: counted (a graph break inside this instruction
    can no longer resume) and, for the caller's object, recorded for replay."""
    tx.output.mutations += 1
    if container.source is not None:
        tx.output.side_effects.record(Effect(kind, container, name, tuple(args), keywords))
        if isinstance(container, FrameContainer):
            container.changed()


def _arguments(what: str, args: list, kwargs: dict, low: int, high: int) -> list:
    """The positional arguments of a method that takes ``low``..``high`` of them."""
    if kwargs:
        raise Unsupported(f"TypeError: {what}() takes no keyword arguments", numpy_error=True)
    if not low <= len(args) <= high:
        raise Unsupported(f"TypeError: {what}() takes {low}..{high} arguments ({len(args)} given)",
                          numpy_error=True)
    return list(args)


def _index(tx: "InstructionTranslator", var: VariableTracker) -> int | slice:
    """A list index or slice, as Python reads it (sizes specialized)."""
    value = specialize_sizes(tx.python_value(var))
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
    values = tx.sequence_items(other)  # read before the change: lst.extend(lst) doubles it
    lst.append_items(values)
    _changed(tx, lst, "call", "extend", (ListVariable(list(values)),))
    return NONE


def _list_insert(tx, lst: ListVariable, args, kwargs):
    index, value = _arguments("list.insert", args, kwargs, 2, 2)
    position = _index(tx, index)
    if isinstance(position, slice):
        raise Unsupported("TypeError: 'slice' object cannot be interpreted as an integer", numpy_error=True)
    lst.insert_item(position, value)
    _changed(tx, lst, "call", "insert", (ConstantVariable(position), value))
    return NONE


def _list_pop(tx, lst: ListVariable, args, kwargs):
    given = _arguments("list.pop", args, kwargs, 0, 1)
    index = _index(tx, given[0]) if given else -1
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
        index = tx.python_value(lst).index(tx.python_value(value))
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
    reverse = bool(tx.python_value(kwargs["reverse"])) if "reverse" in kwargs else False
    values = tx.python_value(lst)
    try:
        order = sorted(range(len(values)), key=values.__getitem__, reverse=reverse)
    except TypeError as e:
        raise Unsupported(f"TypeError: {e}", numpy_error=True) from None
    cells = lst.cells()
    cells[:] = [cells[i] for i in order]
    given = tuple(k for k in ("key", "reverse") if k in kwargs)
    _changed(tx, lst, "call", "sort", tuple(kwargs[k] for k in given), given)
    return NONE


def _list_index(tx, lst: ListVariable, args, kwargs):
    values = [tx.python_value(a) for a in _arguments("list.index", args, kwargs, 1, 3)]
    try:
        return ConstantVariable(tx.python_value(lst).index(*values))
    except ValueError as e:
        raise Unsupported(f"ValueError: {e}", numpy_error=True) from None


def _list_count(tx, lst: ListVariable, args, kwargs):
    (value,) = _arguments("list.count", args, kwargs, 1, 1)
    return ConstantVariable(tx.python_value(lst).count(tx.python_value(value)))


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
    return IteratorVariable([TupleVariable([tx.wrap_value(k), v]) for k, v in d.items.items()])


def _dict_keys(tx, d: DictVariable, args, kwargs):
    _arguments("dict.keys", args, kwargs, 0, 0)
    return IteratorVariable([tx.wrap_value(k) for k in d.keys()])


def _dict_values(tx, d: DictVariable, args, kwargs):
    _arguments("dict.values", args, kwargs, 0, 0)
    return IteratorVariable(list(d.items.values()))


def _dict_get(tx, d: DictVariable, args, kwargs):
    given = _arguments("dict.get", args, kwargs, 1, 2)
    value = d.lookup(tx.dict_key(given[0]))
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
            for pair in tx.sequence_items(other):
                items = tx.sequence_items(pair)
                if len(items) != 2:
                    raise Unsupported("ValueError: dictionary update sequence element has the wrong length",
                                      numpy_error=True)
                pairs.append((tx.dict_key(items[0]), items[1]))
    pairs += list(kwargs.items())
    for key, value in pairs:
        d.set_item(key, value)
    _changed(tx, d, "call", "update", (DictVariable(dict(pairs)),))
    return NONE


def _dict_setdefault(tx, d: DictVariable, args, kwargs):
    given = _arguments("dict.setdefault", args, kwargs, 1, 2)
    key, default = tx.dict_key(given[0]), (given[1] if len(given) > 1 else NONE)
    value = d.lookup(key)
    if value is not None:
        return value  # there already: no change
    d.set_item(key, default)
    _changed(tx, d, "call", "setdefault", (_key(key), default))
    return default


def _dict_pop(tx, d: DictVariable, args, kwargs):
    given = _arguments("dict.pop", args, kwargs, 1, 2)
    key = tx.dict_key(given[0])
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
    return TupleVariable([tx.wrap_value(key), value])


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

# Looked up by the variable's exact type (the interpreter's get_attr and call_function).
CONTAINER_METHODS: dict[type, dict[str, Callable]] = {
    ListVariable: LIST_METHODS, FrameListVariable: LIST_METHODS,
    DictVariable: DICT_METHODS, FrameDictVariable: DICT_METHODS,
}


# -- subscripts, ``in``, ``del``, truth ---------------------------------------------------------

def read_item(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker) -> VariableTracker:
    """``container[index]`` for a list or dict."""
    if isinstance(container, DictVariable):
        key = tx.dict_key(index)
        value = container.lookup(key)
        if value is None:
            raise Unsupported(f"KeyError: {key!r}", numpy_error=True)
        return value
    position = _index(tx, index)
    if isinstance(position, slice):  # a new list of the items in the slice
        return ListVariable([container.item(i) for i in range(*position.indices(container.length()))])
    try:
        return container.item(position)
    except IndexError as e:
        raise Unsupported(f"IndexError: {e}") from None


def store_item(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker,
               value: VariableTracker) -> None:
    """``container[index] = value`` for a list or dict."""
    if isinstance(container, DictVariable):
        key = tx.dict_key(index)
        container.set_item(key, value)
        _changed(tx, container, "setitem", args=(_key(key), value))
        return
    if not isinstance(container, ListVariable):
        raise Unsupported(f"item assignment to {container.describe()} is not supported yet")
    position = _index(tx, index)
    if isinstance(position, slice):
        values = tx.sequence_items(value)
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


def delete_item(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker) -> None:
    """``del container[index]`` for a list or dict."""
    if isinstance(container, DictVariable):
        key = tx.dict_key(index)
        if not container.contains(key):
            raise Unsupported(f"KeyError: {key!r}", numpy_error=True)
        container.delete_item(key)
    elif isinstance(container, ListVariable):
        key = _index(tx, index)
        try:
            container.delete_item(key)
        except IndexError:
            raise Unsupported("IndexError: list assignment index out of range", numpy_error=True) from None
    elif isinstance(container, ArrayVariable):
        raise Unsupported("ValueError: cannot delete array elements", numpy_error=True)
    else:
        raise Unsupported(f"item deletion from {container.describe()} is not supported yet")
    _changed(tx, container, "delitem", args=(_key(key),))


def dict_contains(tx: "InstructionTranslator", d: DictVariable, key: VariableTracker) -> bool:
    """``key in d``: reads whether that one key is there."""
    return d.contains(tx.dict_key(key))


def container_truth(container: VariableTracker) -> bool | None:
    """``bool(container)`` for a list or dict (reads whether it is empty); None for others."""
    if isinstance(container, (ListVariable, DictVariable)):
        return container.nonempty()
    return None
