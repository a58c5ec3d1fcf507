"""Calls to Python builtins and to methods of containers, on traced variables.

Builtins whose arguments are all known at trace time simply run (they are
pure); this table covers the ones that must see variables: ``len`` of an
array, ``zip``/``enumerate`` over lists of arrays, ``sum`` of arrays, ``abs``,
``isinstance``, ``getattr``.  Container methods (``d.items()``,
``lst.append(x)``) act on the trace's own lists and dicts; mutating a list
or dict that came from the caller's frame is a side effect the trace does
not replay yet, so it is unsupported.
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .exc import Unsupported
from .variables import (
    ArrayVariable,
    ConstantVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    TupleVariable,
    UserObjectVariable,
    VariableTracker,
)

if TYPE_CHECKING:
    from .symbolic_convert import InstructionTranslator

Handler = Callable[["InstructionTranslator", list, dict], VariableTracker]


def _len(tx: "InstructionTranslator", args: list, kwargs: dict) -> VariableTracker:
    (var,) = args
    if isinstance(var, ArrayVariable):
        if var.node.meta.ndim == 0:
            raise Unsupported("TypeError: len() of unsized object", numpy_error=True)
        return ConstantVariable(var.node.meta.shape[0])
    if isinstance(var, (TupleVariable, ListVariable, DictVariable)):
        return ConstantVariable(len(var.items))
    raise Unsupported(f"len() of {var.describe()}")


def _abs(tx, args, kwargs):
    return tx.output.call("absolute", {"x": args[0]})


def _isinstance(tx, args, kwargs):
    obj, classes = args[0], tx.python_value(args[1])
    kind = {ArrayVariable: np.ndarray, TupleVariable: tuple, ListVariable: list,
            DictVariable: dict}.get(type(obj))
    if kind is None and isinstance(obj, UserObjectVariable):
        kind = type(obj.value)  # the object's type is guarded
    if kind is None:
        raise Unsupported(f"isinstance() of {obj.describe()}")
    if isinstance(obj, ArrayVariable) and obj.scalar:
        kind = obj.node.meta.dtype.type  # eager holds a NumPy scalar here
    return ConstantVariable(issubclass(kind, classes))


def _zip(tx, args, kwargs):
    if kwargs:
        raise Unsupported("zip(strict=...) is not supported yet")
    columns = [tx.sequence_items(a) for a in args]
    return IteratorVariable([TupleVariable(list(row)) for row in zip(*columns)])


def _enumerate(tx, args, kwargs):
    start = tx.python_value(kwargs.get("start", args[1] if len(args) > 1 else ConstantVariable(0)))
    items = tx.sequence_items(args[0])
    return IteratorVariable([TupleVariable([ConstantVariable(start + i), v]) for i, v in enumerate(items)])


def _reversed(tx, args, kwargs):
    return IteratorVariable(list(reversed(tx.sequence_items(args[0]))))


def _list(tx, args, kwargs):
    return ListVariable(tx.sequence_items(args[0]) if args else [])


def _tuple(tx, args, kwargs):
    return TupleVariable(tx.sequence_items(args[0]) if args else [])


def _sum(tx, args, kwargs):
    items = tx.sequence_items(args[0])
    total = kwargs.get("start", args[1] if len(args) > 1 else ConstantVariable(0))
    for item in items:  # Python's sum is a left fold of +
        total = tx.binary("+", total, item, inplace=False)
    return total


def _min_max(symbol: str) -> Handler:
    def handler(tx, args, kwargs):
        if kwargs:
            raise Unsupported(f"{'min' if symbol == '<' else 'max'}(key=/default=) on variables")
        items = tx.sequence_items(args[0]) if len(args) == 1 else list(args)
        if any(isinstance(v, ArrayVariable) for v in items):
            raise Unsupported("builtin min()/max() over arrays compares them (bool of an array)")
        values = [tx.python_value(v) for v in items]
        return tx.wrap_value((min if symbol == "<" else max)(values))
    return handler


def _truth_fold(fold: Callable) -> Handler:
    """any() / all() over an iterable whose items are known at trace time."""
    def handler(tx, args, kwargs):
        items = tx.sequence_items(args[0])
        return ConstantVariable(fold(tx.truth(v) for v in items))
    return handler


def _sorted(tx, args, kwargs):
    """sorted() of items known at trace time (a dict's keys, a list of constants)."""
    items = tx.sequence_items(args[0])
    values = [tx.python_value(v) for v in items]
    options = {k: tx.python_value(v) for k, v in kwargs.items()}
    return ListVariable([tx.wrap_value(v) for v in sorted(values, **options)])


def _getattr(tx, args, kwargs):
    name = tx.python_value(args[1])
    if len(args) == 3:
        try:
            return tx.get_attr(args[0], name)
        except Unsupported:
            return args[2]
    return tx.get_attr(args[0], name)


BUILTINS: dict[Any, Handler] = {
    builtins.len: _len,
    builtins.abs: _abs,
    builtins.isinstance: _isinstance,
    builtins.zip: _zip,
    builtins.enumerate: _enumerate,
    builtins.reversed: _reversed,
    builtins.list: _list,
    builtins.tuple: _tuple,
    builtins.sum: _sum,
    builtins.min: _min_max("<"),
    builtins.max: _min_max(">"),
    builtins.getattr: _getattr,
    builtins.sorted: _sorted,
    builtins.any: _truth_fold(any),
    builtins.all: _truth_fold(all),
}


# -- methods of the trace's own containers ---------------------------------------------------

def _owned(tx, container: VariableTracker) -> None:
    """About to change ``container``: a list or dict of the caller's is replayed later."""
    tx.output.mutations += 1
    if container.source is not None:
        tx.output.side_effects.mutated(container)


def _dict_method(name: str):
    def handler(tx, d: DictVariable, args, kwargs):
        if name == "items":
            return IteratorVariable([TupleVariable([tx.wrap_value(k), v]) for k, v in d.items.items()])
        if name == "keys":
            return IteratorVariable([tx.wrap_value(k) for k in d.items])
        if name == "values":
            return IteratorVariable(list(d.items.values()))
        if name == "get":
            key = tx.dict_key(args[0])
            return d.items.get(key, args[1] if len(args) > 1 else ConstantVariable(None))
        _owned(tx, d)
        if name == "update":
            d.items.update(args[0].items)
            return ConstantVariable(None)
        raise Unsupported(f"dict.{name}() is not supported yet")
    return handler


def _list_method(name: str):
    def handler(tx, lst: ListVariable, args, kwargs):
        if name == "index":
            return ConstantVariable(tx.python_value(lst).index(tx.python_value(args[0])))
        if name == "count":
            return ConstantVariable(tx.python_value(lst).count(tx.python_value(args[0])))
        _owned(tx, lst)
        if name == "append":
            lst.items.append(args[0])
        elif name == "extend":
            lst.items.extend(tx.sequence_items(args[0]))
        elif name == "insert":
            lst.items.insert(tx.python_value(args[0]), args[1])
        elif name == "pop":
            index = tx.python_value(args[0]) if args else -1
            if not lst.items or not -len(lst.items) <= index < len(lst.items):
                raise Unsupported("IndexError: pop index out of range", numpy_error=True)
            return lst.items.pop(index)
        elif name == "reverse":
            lst.items.reverse()
        else:
            raise Unsupported(f"list.{name}() is not supported yet")
        return ConstantVariable(None)
    return handler


CONTAINER_METHODS: dict[type, dict[str, Callable]] = {
    DictVariable: {n: _dict_method(n) for n in ("items", "keys", "values", "get", "update")},
    ListVariable: {n: _list_method(n) for n in ("append", "extend", "insert", "pop", "reverse",
                                                 "index", "count")},
}

