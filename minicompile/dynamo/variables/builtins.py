"""Python's builtins on traced values: operators, subscripts, ``getattr``, truth, calls.

This is where an opcode handler hands a value over to the code of its kind.
In:  the operands of an operator (BINARY_OP, COMPARE_OP, IS_OP, ...), a
     container and a key, an object and an attribute name, a callable and its
     arguments, a builtin function (``len``, ``zip``, ``sum``) and its arguments.
Out: the result's variable, from the module of the value's kind — arrays.py
     (a graph node), containers.py, user_objects.py, functions.py (an inlined
     call), numpy_calls.py (a NumPy call) — or, where every operand is known
     at trace time, from running the operation itself (:func:`evaluate`): a
     pure function on constants gives exactly the value eager execution would.

The builtins in :data:`BUILTINS` are the ones that must see variables: ``len``
of an array, ``zip``/``enumerate`` over lists of arrays, ``sum`` of arrays,
``abs``, ``isinstance``, ``getattr``.  A few (:data:`SHALLOW_BUILTINS`) are
answered for a list or dict before its items are read at all: ``len(lst)``
needs only the length, ``isinstance(d, dict)`` nothing, so neither guards the
items.
"""
from __future__ import annotations

import builtins
import math
import operator
import types
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ...ir.symbolic import is_symbolic
from ..exc import Unsupported
from ..source import Source
from . import arrays, containers, functions, numpy_calls, user_classes, user_objects
from .arrays import ArrayVariable, row_iterator
from .base import ConstantVariable, MethodVariable, PythonObjectVariable, VariableTracker, specialize_sizes
from .containers import (
    DictVariable,
    IteratorVariable,
    ListVariable,
    NamedTupleVariable,
    TupleVariable,
    container_methods,
    is_constant,
    python_value,
    sequence_items,
    symbolic_range,
    wrap_value,
)
from .functions import UserFunctionVariable, inline_call
from .user_classes import SuperVariable
from .user_objects import NewObjectVariable, UserObjectVariable

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

Handler = Callable[["InstructionTranslator", list, dict], VariableTracker]

# Callables that are safe to run at trace time on constant arguments: they are
# pure, so running them early gives exactly the value eager execution would.
PURE_BUILTINS = {abs, bool, float, int, str, len, min, max, round, pow, divmod, tuple, range, slice,
                 isinstance, issubclass, type, getattr, hasattr, repr, format, sum, any, all, sorted,
                 np.ndindex}  # np.ndindex over sizes known now: its tuples, the loop unrolls
PURE_MODULES = ("math",)

# Trace-time functions under which a symbolic size stays symbolic (see evaluate).
SIZE_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
                             operator.neg, operator.pos, operator.eq, operator.ne, operator.lt,
                             operator.le, operator.gt, operator.ge})


def evaluate(fn: Callable, *args: Any, **kwargs: Any) -> VariableTracker:
    """Run ``fn`` at trace time on Python values; its error becomes eager's error.

    Symbolic sizes (dynamic shapes) stay symbolic through size arithmetic and
    comparisons only; any other function (``str``, ``float``, ``math.prod``)
    gets their example values, each guarded: it would not know a ``Sym``."""
    if fn not in SIZE_ARITHMETIC and is_symbolic((args, tuple(kwargs.values()))):
        args, kwargs = specialize_sizes(args), {k: specialize_sizes(v) for k, v in kwargs.items()}
    try:
        return wrap_value(fn(*args, **kwargs))
    except TypeError as e:
        if not is_symbolic((args, tuple(kwargs.values()))):  # the program's own error ([1.0] + 1)
            raise Unsupported(f"TypeError: {e}", numpy_error=True) from None
        # An operator the size type does not implement (s0 ** 2, s0 / 2).
        return evaluate(lambda: fn(*specialize_sizes(args), **specialize_sizes(kwargs)))
    except Unsupported:
        raise
    except Exception as e:
        name = getattr(fn, "__name__", repr(fn))
        raise Unsupported(f"{name}(...) raised {type(e).__name__}: {e}", numpy_error=True) from None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _pure(fn: Any) -> bool:
    """May ``fn`` run at trace time?  Pure NumPy functions, math, a few builtins, scalar types."""
    if _hashable(fn) and (fn in PURE_BUILTINS or fn in numpy_calls.FUNCTIONS):
        return True
    if isinstance(fn, type) and (issubclass(fn, np.generic) or fn is np.dtype):
        return True
    module = getattr(fn, "__module__", None) or ""
    if module in PURE_MODULES:
        return True
    # Bound methods of immutable values ("{}".format, (3).bit_length)
    owner = getattr(fn, "__self__", None)
    return isinstance(owner, (str, int, float, tuple, np.generic, np.dtype)) and not isinstance(owner, type)


# -- operators ----------------------------------------------------------------------------------

# Python operators -> (operator function for Python values, ufunc op for arrays)
BINARY_OPS: dict[str, tuple[Callable, str | None]] = {
    "+": (operator.add, "add"),
    "-": (operator.sub, "subtract"),
    "*": (operator.mul, "multiply"),
    "/": (operator.truediv, "divide"),
    "//": (operator.floordiv, "floor_divide"),
    "%": (operator.mod, "remainder"),
    "**": (operator.pow, "power"),
    "@": (operator.matmul, "matmul"),
    "&": (operator.and_, "bitwise_and"),
    "|": (operator.or_, "bitwise_or"),
    "^": (operator.xor, "bitwise_xor"),
    "<<": (operator.lshift, "left_shift"),
    ">>": (operator.rshift, "right_shift"),
}
COMPARE_OPS: dict[str, tuple[Callable, str]] = {
    "<": (operator.lt, "less"),
    "<=": (operator.le, "less_equal"),
    ">": (operator.gt, "greater"),
    ">=": (operator.ge, "greater_equal"),
    "==": (operator.eq, "equal"),
    "!=": (operator.ne, "not_equal"),
}
UNARY_OPS: dict[str, tuple[Callable, str]] = {
    "negative": (operator.neg, "negative"),
    "positive": (operator.pos, "positive"),
    "invert": (operator.invert, "invert"),
}


def binary(tx: "InstructionTranslator", symbol: str, a: VariableTracker, b: VariableTracker,
           inplace: bool) -> VariableTracker:
    """``a symbol b``, or ``a symbol= b`` when ``inplace``."""
    py_fn, op = BINARY_OPS[symbol]
    if is_constant(a) and is_constant(b):
        return evaluate(py_fn, python_value(a), python_value(b))
    if inplace and isinstance(a, ListVariable):
        containers.LIST_METHODS["extend"](tx, a, [b], {})  # lst += items extends lst itself
        return a
    return arrays.binary(tx, symbol, op, a, b, inplace)


def compare(tx: "InstructionTranslator", symbol: str, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """``a symbol b`` for a comparison (``<``, ``==``, ...)."""
    py_fn, op = COMPARE_OPS[symbol]
    if is_constant(a) and is_constant(b):
        return evaluate(py_fn, python_value(a), python_value(b))
    return arrays.compare(tx, op, a, b)


def unary(tx: "InstructionTranslator", kind: str, var: VariableTracker) -> VariableTracker:
    """``-var``, ``+var``, ``~var`` (``kind`` is a key of :data:`UNARY_OPS`)."""
    py_fn, op = UNARY_OPS[kind]
    if is_constant(var):
        return evaluate(py_fn, python_value(var))
    return arrays.unary(tx, op, var)


def is_(tx: "InstructionTranslator", a: VariableTracker, b: VariableTracker) -> bool:
    """``a is b``, decided at trace time, with the guard that keeps the answer right
    for later calls (one object reached through two names is one variable)."""
    for v in (a, b):
        if isinstance(v, ArrayVariable) and v.python is not None:  # `allclose(...) is True`
            raise Unsupported(f"'is' on a {v.describe()}: its value is known once the graph has run")
    if isinstance(a, ArrayVariable) or isinstance(b, ArrayVariable):
        if isinstance(a, ArrayVariable) and isinstance(b, ArrayVariable) and a is not b:
            raise Unsupported("'is' between two arrays (their identity is not traced)")
        array, other = (a, b) if isinstance(a, ArrayVariable) else (b, a)
        if array.scalar and array.node.meta.dtype == np.bool_ and isinstance(other, ConstantVariable) \
                and isinstance(other.value, np.bool_):
            # NumPy's bool scalars are two objects: (x.sum() > 0) is np.True_ asks for the value
            raise Unsupported(f"'is' between a {array.describe()} and {other.value!r}: "
                              "its value is known once the graph has run")
        return a is b  # an array is never None, a constant or a module
    made = (NewObjectVariable, ListVariable, DictVariable, TupleVariable)
    if any(isinstance(v, made) and v.source is None for v in (a, b)):
        return a is b  # an object the trace made is itself only
    known_a, known_b = _real_object(a), _real_object(b)
    if known_a is _UNKNOWN or known_b is _UNKNOWN:
        raise Unsupported(f"'is' between {a.describe()} and {b.describe()}")
    same = known_a is known_b
    for var, other, other_var in ((a, known_b, b), (b, known_a, a)):
        if var.source is None or not _identity_unguarded(var):
            continue
        s = var.source.expr
        other_expr = other_var.source.expr if other_var.source is not None \
            else "None" if other is None else tx.output.guards.constant(other)
        if not same or not _identity_unguarded(other_var):  # two names for one object: guarded already
            tx.output.guards.add(var.source, f"{s} {'is' if same else 'is not'} {other_expr}",
                                 f"id({s})", tx.lineno)
    return same


_UNKNOWN = object()


def _real_object(var: VariableTracker) -> Any:
    """The object ``var`` stands for, where the trace holds it (else _UNKNOWN)."""
    if isinstance(var, ConstantVariable):
        return specialize_sizes(var.value)
    if isinstance(var, (PythonObjectVariable, UserObjectVariable)):
        return var.value
    if isinstance(var, (ListVariable, DictVariable)) and var.source is not None:
        return var.value  # the caller's list or dict
    if isinstance(var, UserFunctionVariable) and var.bound_self is None and isinstance(var.fn, types.FunctionType):
        return var.fn
    return _UNKNOWN


def _identity_unguarded(var: VariableTracker) -> bool:
    """A value of the caller's guarded on its type only (an object, a list, a dict)."""
    return isinstance(var, (UserObjectVariable, ListVariable, DictVariable))


def truth(var: VariableTracker) -> bool:
    """``bool(var)``, for a branch: known at trace time, or data-dependent control flow."""
    if isinstance(var, ArrayVariable) and var.python is not None:
        raise Unsupported(f"branch on a {var.describe()} (np.allclose, np.array_equal): "
                          f"data-dependent control flow")
    if isinstance(var, ArrayVariable):
        raise Unsupported(
            "branch on an array value (bool(array)): data-dependent control flow"
        )
    known = containers.container_truth(var)  # a list or dict: its length only
    return known if known is not None else bool(python_value(var))


# -- subscripts -----------------------------------------------------------------------------------

def getitem(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker) -> VariableTracker:
    """``container[index]``."""
    if isinstance(container, ArrayVariable):
        return arrays.getitem(tx, container, index)
    if isinstance(container, (DictVariable, ListVariable, TupleVariable)):
        return containers.getitem(tx, container, index)
    key = python_value(index)
    return evaluate(operator.getitem, python_value(container), key)


def setitem(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker,
            value: VariableTracker) -> None:
    """``container[index] = value``."""
    if isinstance(container, ArrayVariable):
        arrays.setitem(tx, container, index, value)
    else:
        containers.setitem(tx, container, index, value)


def delitem(tx: "InstructionTranslator", container: VariableTracker, index: VariableTracker) -> None:
    """``del container[index]``."""
    if isinstance(container, ArrayVariable):
        arrays.delitem(tx, container, index)
    else:
        containers.delitem(tx, container, index)


# -- attributes -----------------------------------------------------------------------------------

def get_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str) -> VariableTracker:
    """``obj.name``, from the module of ``obj``'s kind."""
    if isinstance(obj, ArrayVariable):
        return arrays.get_attr(tx, obj, name)
    if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, types.ModuleType):
        return user_objects.module_attr(tx, obj, name)
    if user_objects.is_user_class(obj) or isinstance(obj, (UserObjectVariable, NewObjectVariable,
                                                             NamedTupleVariable)):
        method = user_classes.namedtuple_method(obj, name)  # _replace, _asdict, _make
        if method is not None:
            return method
        if isinstance(obj, PythonObjectVariable):
            return user_objects.class_attr(tx, obj, name)
        return user_objects.get_attr(tx, obj, name)
    if isinstance(obj, SuperVariable):
        return user_classes.super_attr(tx, obj, name)
    if isinstance(obj, PythonObjectVariable) and obj.value is object and name in ("__setattr__", "__init__"):
        return PythonObjectVariable(getattr(object, name))  # a frozen dataclass's __init__ sets fields so
    methods = container_methods(obj)
    if methods is not None and name in methods:
        return MethodVariable(obj, name)
    if isinstance(obj, UserFunctionVariable):
        return functions.get_attr(tx, obj, name)
    if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, np.ufunc):
        return evaluate(getattr, obj.value, name)  # np.add.at, np.add.nin
    if is_constant(obj):
        value = python_value(obj)
        # immutable values: np.iinfo(np.int8).max, np.finfo(x.dtype).eps too
        if isinstance(value, (str, int, float, np.generic, np.dtype, tuple, np.iinfo, np.finfo)):
            return evaluate(getattr, value, name)
    raise Unsupported(f"attribute .{name} of {obj.describe()} is not supported yet")


# -- calls ----------------------------------------------------------------------------------------

def call_function(tx: "InstructionTranslator", fn: VariableTracker, args: list, kwargs: dict) -> VariableTracker:
    """``fn(*args, **kwargs)``: a method, an inlined user function, a NumPy call, a
    builtin, or a pure function run at trace time."""
    if isinstance(fn, MethodVariable):
        methods = container_methods(fn.obj)
        if methods is not None:
            return methods[fn.name](tx, fn.obj, args, kwargs)
        if user_classes.namedtuple_method(fn.obj, fn.name) is not None:
            return user_classes.call_namedtuple_method(tx, fn, args, kwargs)
        return numpy_calls.call_method(tx, fn.obj, fn.name, args, kwargs)
    if isinstance(fn, UserFunctionVariable):
        if fn.bound_self is None and _hashable(fn.fn) and fn.fn in user_classes.BUILTIN_HANDLERS:
            return user_classes.BUILTIN_HANDLERS[fn.fn](tx, args, kwargs)  # dataclasses.replace
        return inline_call(tx, fn, args, kwargs)
    if isinstance(fn, (UserObjectVariable, NewObjectVariable)):
        result = user_classes.call_object(tx, fn, args, kwargs, call_function)
        if result is not None:
            return result
        raise Unsupported(f"calling {fn.describe()}: its class has no Python __call__")
    if not isinstance(fn, (PythonObjectVariable, ConstantVariable)):
        raise Unsupported(f"calling {fn.describe()} is not supported")
    target = fn.value
    name = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    if any(isinstance(a, ArrayVariable) and a.weak is not None for a in (*args, *kwargs.values())) and not (
            isinstance(target, np.ufunc) or str(getattr(target, "__module__", "")).startswith("numpy")):
        # Python would compute with the int itself (abs(i), float(i), range(i)).
        raise Unsupported(f"{name}() of the loop index (a Python number in eager code)")
    if isinstance(target, type) and issubclass(target, BaseException):
        return user_classes.make_exception(tx, target, args, kwargs)
    if user_objects.is_user_class(fn) and not issubclass(target, np.generic):
        return user_classes.construct(tx, fn, args, kwargs)
    if _hashable(target) and target in user_classes.BUILTIN_HANDLERS:
        return user_classes.BUILTIN_HANDLERS[target](tx, args, kwargs)
    shallow = shallow_builtin(tx, target, args, kwargs)  # len(lst): its length, not its items
    if shallow is not None:
        return shallow
    if target is range and (counted := symbolic_range(args, kwargs)) is not None:
        return counted  # range(s0): symbolic until something other than a loop node reads it
    all_constant = all(is_constant(a) for a in args) and all(is_constant(v) for v in kwargs.values())
    result = numpy_calls.call_function(tx, target, name, args, kwargs, all_constant)
    if result is not None:
        return result
    if all_constant and _pure(target):
        values = [python_value(a) for a in args]
        kw_values = {k: python_value(v) for k, v in kwargs.items()}
        return evaluate(target, *values, **kw_values)
    if _hashable(target) and target in BUILTINS:
        return BUILTINS[target](tx, args, kwargs)
    if isinstance(target, types.FunctionType):
        return inline_call(tx, UserFunctionVariable(target, source=fn.source), args, kwargs)
    raise Unsupported(f"call to {name} is not supported yet")


# -- builtin functions that see variables ------------------------------------------------------

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


def _python_type(var: VariableTracker, what: str) -> type:
    """``type(var)``, known at trace time (guarded where ``var`` came from the frame)."""
    try:
        return var.python_type()
    except NotImplementedError:
        raise Unsupported(f"{what} of {var.describe()}") from None


def _isinstance(tx, args, kwargs):
    obj, classes = args[0], python_value(args[1])
    try:
        return ConstantVariable(issubclass(_python_type(obj, "isinstance()"), classes))
    except TypeError as e:
        raise Unsupported(f"TypeError: {e}", numpy_error=True) from None


def _type_of(tx, args, kwargs):
    """``type(x)`` of a traced value: its class (``type(L['x'])`` where it came from the frame)."""
    if len(args) != 1 or kwargs:
        raise Unsupported("type() with other than one argument")
    (var,) = args
    cls = _python_type(var, "type()")
    if isinstance(var, (UserObjectVariable, NewObjectVariable, NamedTupleVariable)):
        return PythonObjectVariable(cls, user_objects.type_source(var))
    source = var.source if isinstance(var, ArrayVariable) else None
    return PythonObjectVariable(cls, Source(f"type({source.expr})") if source is not None else None)


def _dict(tx, args, kwargs):
    """``dict(pairs, **kwargs)`` / ``dict(mapping)``: a new dict."""
    new = DictVariable({})
    if args or kwargs:
        containers.DICT_METHODS["update"](tx, new, args, kwargs)
    return new


def _zip(tx, args, kwargs):
    if kwargs:
        raise Unsupported("zip(strict=...) is not supported yet")
    rows = row_iterator(tx, list(args)) if len(args) > 1 else None
    if rows is not None:  # zip(x, y) over arrays: a long loop over it may be a loop node
        return rows
    columns = [sequence_items(tx, a) for a in args]
    return IteratorVariable([TupleVariable(list(row)) for row in zip(*columns)])


def _enumerate(tx, args, kwargs):
    start = python_value(kwargs.get("start", args[1] if len(args) > 1 else ConstantVariable(0)))
    rows = row_iterator(tx, [args[0]], start) if type(start) is int else None
    if rows is not None:  # enumerate(x) over an array: a long loop over it may be a loop node
        return rows
    items = sequence_items(tx, args[0])
    return IteratorVariable([TupleVariable([ConstantVariable(start + i), v]) for i, v in enumerate(items)])


def _reversed(tx, args, kwargs):
    return IteratorVariable(list(reversed(sequence_items(tx, args[0]))))


def _list(tx, args, kwargs):
    return ListVariable(sequence_items(tx, args[0]) if args else [])


def _tuple(tx, args, kwargs):
    return TupleVariable(sequence_items(tx, args[0]) if args else [])


def _sum(tx, args, kwargs):
    items = sequence_items(tx, args[0])
    total = kwargs.get("start", args[1] if len(args) > 1 else ConstantVariable(0))
    for item in items:  # Python's sum is a left fold of +
        total = binary(tx, "+", total, item, inplace=False)
    return total


def _min_max(symbol: str) -> Handler:
    def handler(tx, args, kwargs):
        if kwargs:
            raise Unsupported(f"{'min' if symbol == '<' else 'max'}(key=/default=) on variables")
        items = sequence_items(tx, args[0]) if len(args) == 1 else list(args)
        if items and all(isinstance(v, ArrayVariable) and v.scalar and v.python is None and v.weak is None
                         for v in items):
            # Over a 1-d array's elements (NumPy scalars): Python's fold, ``best = item
            # if item <op> best`` — the first NaN stays, a later one never wins.
            best = items[0]
            for item in items[1:]:
                better = tx.output.call("less" if symbol == "<" else "greater", {"x1": item, "x2": best})
                chosen = tx.output.call("where", {"condition": better, "x": item, "y": best})
                if chosen.node.meta.dtype != best.node.meta.dtype:
                    raise Unsupported("builtin min()/max() over NumPy scalars of different dtypes")
                best = ArrayVariable(chosen.node, scalar=True)
            return best
        if any(isinstance(v, ArrayVariable) for v in items):
            raise Unsupported("builtin min()/max() over arrays compares them (bool of an array)")
        values = [python_value(v) for v in items]
        return wrap_value((min if symbol == "<" else max)(values))
    return handler


def _ndenumerate(tx, args, kwargs):
    """``np.ndenumerate(x)``: ``(index, x[index])`` for every index, known now (the loop unrolls)."""
    if len(args) != 1 or kwargs or not isinstance(args[0], ArrayVariable):
        raise Unsupported("np.ndenumerate of other than one array")
    x = args[0]
    shape = specialize_sizes(x.node.meta.shape)
    if math.prod(shape) > arrays.MAX_UNROLLED_ROWS:
        raise Unsupported(f"np.ndenumerate over more than {arrays.MAX_UNROLLED_ROWS} elements")
    return IteratorVariable([TupleVariable([wrap_value(idx), arrays.getitem(tx, x, wrap_value(idx))])
                             for idx in np.ndindex(*shape)])


def _truth_fold(fold: Callable) -> Handler:
    """any() / all() over an iterable whose items are known at trace time."""
    def handler(tx, args, kwargs):
        items = sequence_items(tx, args[0])
        return ConstantVariable(fold(truth(v) for v in items))
    return handler


def _sorted(tx, args, kwargs):
    """sorted() of items known at trace time (a dict's keys, a list of constants)."""
    items = sequence_items(tx, args[0])
    values = [python_value(v) for v in items]
    options = {k: python_value(v) for k, v in kwargs.items()}
    return ListVariable([wrap_value(v) for v in sorted(values, **options)])


def _getattr(tx, args, kwargs):
    name = python_value(args[1])
    if len(args) == 3:
        try:
            return get_attr(tx, args[0], name)
        except Unsupported:
            return args[2]
    return get_attr(tx, args[0], name)


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
    np.ndenumerate: _ndenumerate,
    builtins.getattr: _getattr,
    builtins.sorted: _sorted,
    builtins.type: _type_of,
    builtins.dict: _dict,
    builtins.any: _truth_fold(any),
    builtins.all: _truth_fold(all),
}


def _bool(tx, args, kwargs):
    return ConstantVariable(args[0].nonempty())


def _type(tx, args, kwargs):
    return wrap_value(list if isinstance(args[0], ListVariable) else dict)


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
