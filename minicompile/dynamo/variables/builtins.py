"""Calls to Python builtins on traced variables.

Builtins whose arguments are all known at trace time simply run (they are
pure); this table covers the ones that must see variables: ``len`` of an
array, ``zip``/``enumerate`` over lists of arrays, ``sum`` of arrays, ``abs``,
``isinstance``, ``getattr``.  A few (:data:`SHALLOW_BUILTINS`) are answered
for a list or dict before its items are read at all: ``len(lst)`` needs only
the length, ``isinstance(d, dict)`` nothing, so neither guards the items.
The methods of lists and dicts live in container_methods.py.
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .containers import CONTAINER_METHODS
from ..exc import Unsupported
from .base import (
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
    from ..symbolic_convert import InstructionTranslator

Handler = Callable[["InstructionTranslator", list, dict], VariableTracker]


def _len(tx: "InstructionTranslator", args: list, kwargs: dict) -> VariableTracker:
    (var,) = args
    if isinstance(var, ArrayVariable):
        if var.node.meta.ndim == 0:
            raise Unsupported("TypeError: len() of unsized object", numpy_error=True)
        return ConstantVariable(var.node.meta.shape[0])
    if isinstance(var, TupleVariable):
        return ConstantVariable(len(var.items))
    if isinstance(var, (ListVariable, DictVariable)):
        return ConstantVariable(var.length())
    raise Unsupported(f"len() of {var.describe()}")


def _abs(tx, args, kwargs):
    return tx.output.call("absolute", {"x": args[0]})


def _isinstance(tx, args, kwargs):
    obj, classes = args[0], tx.python_value(args[1])
    kind = next((k for cls, k in ((ArrayVariable, np.ndarray), (TupleVariable, tuple), (ListVariable, list),
                                  (DictVariable, dict)) if isinstance(obj, cls)), None)
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




def _bool(tx, args, kwargs):
    return ConstantVariable(args[0].nonempty())


def _type(tx, args, kwargs):
    return tx.wrap_value(list if isinstance(args[0], ListVariable) else dict)


# Answered from a list's or dict's length or type alone (their items stay unread).
SHALLOW_BUILTINS: dict[Any, Handler] = {
    builtins.len: _len,
    builtins.isinstance: _isinstance,
    builtins.bool: _bool,
    builtins.type: _type,
}


def shallow_builtin(tx: "InstructionTranslator", target: Any, args: list, kwargs: dict) -> VariableTracker | None:
    """``len(lst)``, ``isinstance(d, dict)``, ...: the result, or None where the call is
    not one of these on a list or dict (the generic path, which reads every item)."""
    if kwargs or len(args) != (2 if target is builtins.isinstance else 1) \
            or not isinstance(args[0], (ListVariable, DictVariable)):
        return None
    try:
        handler = SHALLOW_BUILTINS.get(target)
    except TypeError:  # an unhashable callable
        return None
    return handler(tx, args, kwargs) if handler is not None else None


__all__ = ["BUILTINS", "CONTAINER_METHODS", "SHALLOW_BUILTINS", "shallow_builtin"]
