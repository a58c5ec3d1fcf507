"""User objects, user classes and modules: reading, setting and deleting their attributes.

In:  the object's variable and the attribute's name (LOAD_ATTR, LOAD_METHOD,
     STORE_ATTR, DELETE_ATTR, ``getattr``), through builtins.py's dispatch.
Out: the attribute's variable, resolved the way Python would resolve it: a
     module's member, a user class's function or constant, a user object's
     instance attribute (read from the frame and guarded), method or property
     (inlined, functions.py).  A store or a deletion on a caller's object is
     recorded as a side effect (side_effects.py), replayed after the graph.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exc import Unsupported
from ..source import Source, attr_source, item_source
from .base import PythonObjectVariable, VariableTracker
from .containers import wrap_value
from .functions import UserFunctionVariable, inline_call

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

# Modules whose attributes are read once and trusted not to change (not guarded).
FIXED_MODULES = frozenset({"numpy", "math", "builtins", "operator", "functools", "itertools",
                           "collections", "typing", "minicompile"})


@dataclass(eq=False)
class UserObjectVariable(VariableTracker):
    """An instance of a user class: its attributes are read (and guarded) at trace time."""

    value: Any
    source: Source | None = None

    def describe(self) -> str:
        return f"{type(self.value).__name__} object"

    def unpack(self, tx: "InstructionTranslator") -> list[VariableTracker] | None:
        if isinstance(self.value, tuple) and self.source is not None:  # a named tuple
            return [tx.output.wrap(v, item_source(self.source, i), tx.lineno) for i, v in enumerate(self.value)]
        return None


def is_user_class(var: VariableTracker) -> bool:
    """A class of the user's (not a builtin or NumPy type), whose attributes class_attr reads."""
    return isinstance(var, PythonObjectVariable) and isinstance(var.value, type) \
        and var.value.__module__ not in ("builtins",) and not var.value.__module__.startswith("numpy")


def module_attr(tx: "InstructionTranslator", module: PythonObjectVariable, name: str) -> VariableTracker:
    """``module.name``: a library module's member as it is, a user module's guarded."""
    try:
        value = getattr(module.value, name)
    except AttributeError as e:
        raise Unsupported(f"AttributeError: {e}") from None
    top = module.value.__name__.split(".")[0]
    if top in FIXED_MODULES or module.source is None:
        # Library modules (np.exp, math.pi) are taken as fixed: not guarded.
        var = wrap_value(value)
        var.source = attr_source(module.source, name) if module.source else None
        return var
    # A setting in the user's own module may change between calls: guard it.
    return tx.output.wrap(value, attr_source(module.source, name), tx.lineno)


def class_attr(tx: "InstructionTranslator", cls: PythonObjectVariable, name: str) -> VariableTracker:
    """``Cls.name`` on a user class: functions, static/class methods, plain values."""
    try:
        static = inspect.getattr_static(cls.value, name)
    except AttributeError:
        raise Unsupported(f"AttributeError: type object {cls.value.__name__!r} has no attribute {name!r}",
                          numpy_error=True) from None
    if isinstance(static, staticmethod) or isinstance(static, types.FunctionType):
        return UserFunctionVariable(getattr(static, "__func__", static))
    if isinstance(static, classmethod):
        return UserFunctionVariable(static.__func__, bound_self=cls)
    if hasattr(static, "__get__") or cls.source is None:
        raise Unsupported(f"class attribute {cls.value.__name__}.{name} is a descriptor")
    return tx.output.wrap(static, attr_source(cls.source, name), tx.lineno)


def get_attr(tx: "InstructionTranslator", obj: UserObjectVariable, name: str) -> VariableTracker:
    """``obj.name`` on a user object, resolved the way Python would, without running code
    other than the functions it inlines (methods, properties)."""
    value = obj.value
    effects = tx.output.side_effects
    if obj.source is not None and (obj.source.expr, name) in effects.attributes:
        return effects.read_attr(obj.source.expr, name)  # set (or deleted) earlier
    if obj.source is not None:
        # Set earlier on another object: a later call passing one object under both
        # names would read the stale value here, so they must stay two objects.
        for other, attr in effects.attributes:
            if attr == name and other != obj.source.expr:
                tx.output.guards.add(obj.source, f"{obj.source.expr} is not {other}",
                                     f"id({obj.source.expr})", tx.lineno)
    try:
        static = inspect.getattr_static(value, name)
    except AttributeError:
        raise Unsupported(f"AttributeError: {type(value).__name__!r} has no attribute {name!r}",
                          numpy_error=True) from None
    in_instance = name in getattr(value, "__dict__", {})
    if not in_instance:
        if isinstance(static, staticmethod):
            return UserFunctionVariable(static.__func__)
        if isinstance(static, classmethod):
            cls = PythonObjectVariable(type(value), Source(f"type({obj.source.expr})") if obj.source else None)
            return UserFunctionVariable(static.__func__, bound_self=cls)
        if isinstance(static, types.FunctionType):
            return UserFunctionVariable(static, bound_self=obj)
        if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
            return inline_call(tx, UserFunctionVariable(static.fget), [obj], {})
    if obj.source is None:
        raise Unsupported(f"attribute .{name} of an object made during the trace")
    # A plain value (instance attribute, class constant, slot, namedtuple field):
    # read it now and guard it like any other input.
    return tx.output.wrap(getattr(value, name), attr_source(obj.source, name), tx.lineno)


def store_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str, value: VariableTracker) -> None:
    """``obj.name = value`` on an object of the caller's: a side effect, seen by later reads."""
    if not isinstance(obj, UserObjectVariable) or obj.source is None:
        raise Unsupported(f"setting attribute .{name} of {obj.describe()}")
    static = inspect.getattr_static(type(obj.value), name, None)
    if hasattr(static, "__set__"):  # a property or slot with its own setter code
        raise Unsupported(f"setting .{name}, which runs a descriptor's setter")
    tx.output.mutations += 1
    tx.output.side_effects.store_attr(obj, name, value)


def delete_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str) -> None:
    """``del obj.name`` on an object of the caller's: the attribute must be in its
    ``__dict__`` (guarded, unless the trace set it), then it is gone for the trace."""
    if not isinstance(obj, UserObjectVariable) or obj.source is None:
        raise Unsupported(f"deleting attribute .{name} of {obj.describe()}")
    if hasattr(inspect.getattr_static(type(obj.value), name, None), "__delete__"):
        raise Unsupported(f"deleting .{name}, which runs a descriptor's deleter")
    effects, s = tx.output.side_effects, obj.source.expr
    if (s, name) in effects.attributes:
        effects.read_attr(s, name)  # AttributeError if the trace deleted it already
    else:
        present = name in getattr(obj.value, "__dict__", {})
        tx.output.guards.add(obj.source, f"{name!r} {'in' if present else 'not in'} {s}.__dict__",
                             f"{s}.__dict__", tx.lineno)
        if not present:
            raise Unsupported(f"AttributeError: {type(obj.value).__name__!r} object has no attribute {name!r}",
                              numpy_error=True)
    tx.output.mutations += 1
    effects.delete_attr(obj, name)


def call_bound_method(tx: "InstructionTranslator", obj: UserObjectVariable, args: list,
                      kwargs: dict) -> VariableTracker | None:
    """Calling a bound method of the caller's (``cb = obj.step; cb(x)``): the function
    inlined with its ``self``; None where ``obj`` is no such method."""
    method = obj.value
    if not (isinstance(method, types.MethodType) and isinstance(method.__func__, types.FunctionType)):
        return None
    return inline_call(tx, UserFunctionVariable(method.__func__), [wrap_value(method.__self__)] + args, kwargs)
