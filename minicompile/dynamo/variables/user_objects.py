"""User objects, user classes and modules: reading, setting and deleting their attributes.

Two kinds of user object: :class:`UserObjectVariable`, an object of the
caller's (read from the frame, its type guarded), and :class:`NewObjectVariable`,
one the traced code made (user_classes.py), whose attributes are variables.

In:  the object's variable and the attribute's name (LOAD_ATTR, LOAD_METHOD,
     STORE_ATTR, DELETE_ATTR, ``getattr``), through builtins.py's dispatch.
Out: the attribute's variable, resolved the way Python would resolve it: a
     module's member, a user class's function or constant, a property (its
     getter inlined, functions.py), an instance attribute (read from the frame
     and guarded, or the variable the trace stored), a method bound to the
     object, ``__getattr__`` inlined when nothing else has the name.  A store
     or a deletion on a caller's object is recorded as a side effect
     (side_effects.py), replayed after the graph; on a new object it changes
     the object's variables.  A function found on a class gets a source
     through the class (``type(L['m']).forward``), so its globals and closure
     cells can be read and guarded.
"""
from __future__ import annotations

import collections
import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exc import Unsupported
from ..source import Source, attr_source, item_source
from .base import ConstantVariable, PythonObjectVariable, VariableTracker
from .containers import NamedTupleVariable, wrap_value
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

    def python_type(self) -> type:
        return type(self.value)  # guarded where it was read

    def unpack(self, tx: "InstructionTranslator") -> list[VariableTracker] | None:
        if isinstance(self.value, tuple) and self.source is not None:  # a named tuple of the caller's
            return [tx.output.wrap(v, item_source(self.source, i), tx.lineno) for i, v in enumerate(self.value)]
        return None


@dataclass(eq=False)
class NewObjectVariable(VariableTracker):
    """An instance of a user class made by the traced code (``Linear(w)``, a dataclass):
    its attributes are the variables the trace stored (``__init__`` was inlined).
    No object exists while tracing; where one outlives the trace (returned, stored
    in an object of the caller's, live at a graph break) the code after the graph
    builds it from the class and these attributes (reconstruct.py).

    ``born`` is the instruction of the root frame that made it: a store into it
    during that same instruction (its ``__init__``) changes nothing anyone else
    holds, so a graph break there can still resume; a later store counts as a
    mutation (see OutputGraph.mutations)."""

    cls: type
    attrs: dict[str, VariableTracker]
    cls_source: Source | None = None
    born: int = -1
    source: Source | None = None  # never the frame's

    def describe(self) -> str:
        return f"{self.cls.__name__} object (made in the traced code)"

    def python_type(self) -> type:
        return self.cls

    def store(self, tx: "InstructionTranslator", name: str, value: VariableTracker | None) -> None:
        """Set (``value``) or delete (None) the attribute ``name``."""
        if self.born != tx.output.step:
            tx.output.mutations += 1
        if value is None:
            del self.attrs[name]
        else:
            self.attrs[name] = value


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
    source = attr_source(cls.source, name) if cls.source is not None else None
    if isinstance(static, staticmethod) or isinstance(static, types.FunctionType):
        return UserFunctionVariable(getattr(static, "__func__", static), source=source)
    if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
        return UserFunctionVariable(static.__func__, bound_self=cls, source=source)
    if hasattr(static, "__get__") or cls.source is None:
        raise Unsupported(f"class attribute {cls.value.__name__}.{name} is a descriptor")
    return tx.output.wrap(static, source, tx.lineno)


# -- instances: of the caller's (UserObjectVariable) or made by the trace (NewObjectVariable) ---------

_MISSING = object()


def type_source(obj: VariableTracker) -> Source | None:
    """Where the class of ``obj`` can be read in the frame (``type(L['m'])``, ``G['MLP']``),
    for the functions found on it (their closures and globals are read through it)."""
    if isinstance(obj, NewObjectVariable) or getattr(obj, "cls_source", None) is not None:
        return obj.cls_source
    return Source(f"type({obj.source.expr})") if obj.source is not None else None


def get_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str) -> VariableTracker:
    """``obj.name`` on a user object (or a named tuple), resolved the way Python would
    — a property or other data descriptor of its class, then the instance's own
    attribute, then the class's method, static or class method or value, then
    ``__getattr__`` — without running code other than the functions it inlines."""
    cls = obj.python_type()
    if inspect.getattr_static(cls, "__getattribute__") not in (object.__getattribute__, tuple.__getattribute__):
        raise Unsupported(f"{cls.__name__} defines __getattribute__")
    if isinstance(obj, UserObjectVariable):
        known = _attribute_set_in_trace(tx, obj, name)
        if known is not None:
            return known
    if name == "__class__":
        return PythonObjectVariable(cls, type_source(obj))
    static = inspect.getattr_static(cls, name, _MISSING)
    if isinstance(static, property):  # a data descriptor: wins over the instance's __dict__
        if not isinstance(static.fget, types.FunctionType):
            raise Unsupported(f"property {cls.__name__}.{name} has no Python getter")
        return inline_call(tx, UserFunctionVariable(static.fget, source=_member_source(obj, name, ".fget")),
                           [obj], {})
    own = _instance_attr(tx, obj, name, static)
    if own is not None:
        return own
    if static is not _MISSING:
        member = _class_member(obj, cls, name, static)
        if member is not None:
            return member
        source = _member_source(obj, name)
        if source is None or hasattr(static, "__get__"):
            raise Unsupported(f"attribute .{name} of {obj.describe()}: a descriptor of its class")
        return tx.output.wrap(static, source, tx.lineno)  # a class constant, guarded
    fallback = inspect.getattr_static(cls, "__getattr__", None)
    if isinstance(fallback, types.FunctionType):
        return inline_call(tx, UserFunctionVariable(fallback, source=_member_source(obj, "__getattr__")),
                           [obj, ConstantVariable(name)], {})
    raise Unsupported(f"AttributeError: {cls.__name__!r} object has no attribute {name!r}", numpy_error=True)


def _member_source(obj: VariableTracker, name: str, suffix: str = "") -> Source | None:
    cls_source = type_source(obj)
    return Source(f"{cls_source.expr}.{name}{suffix}") if cls_source is not None else None


def _attribute_set_in_trace(tx: "InstructionTranslator", obj: UserObjectVariable,
                            name: str) -> VariableTracker | None:
    """What the trace stored in ``obj.name`` earlier (None: nothing)."""
    effects = tx.output.side_effects
    if obj.source is None:
        return None
    if (obj.source.expr, name) in effects.attributes:
        return effects.read_attr(obj.source.expr, name)  # set (or deleted) earlier
    # Set earlier on another object: a later call passing one object under both
    # names would read the stale value here, so they must stay two objects.
    for other, attr in effects.attributes:
        if attr == name and other != obj.source.expr:
            tx.output.guards.add(obj.source, f"{obj.source.expr} is not {other}",
                                 f"id({obj.source.expr})", tx.lineno)
    return None


# Descriptors whose value is the object's own data (a slot, a named tuple's field,
# ``__class__``): read from the object itself, like an attribute in its ``__dict__``.
DATA_DESCRIPTORS = (types.MemberDescriptorType, types.GetSetDescriptorType,
                    type(collections.namedtuple("_Field", "a").a))


def _instance_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str,
                   static: Any) -> VariableTracker | None:
    """The instance's own attribute ``name`` (for an object of the caller's, also a
    class constant, read through the object: an attribute of its own would shadow
    it on a later call); None when the class's member is what Python finds."""
    if isinstance(obj, NewObjectVariable):
        return obj.attrs.get(name)
    if isinstance(obj, NamedTupleVariable):
        return obj.items[obj.cls._fields.index(name)] if name in obj.cls._fields else None
    if not isinstance(obj, UserObjectVariable):
        return None
    value = obj.value
    if name not in getattr(value, "__dict__", {}):
        if static is _MISSING or isinstance(static, (staticmethod, classmethod, types.FunctionType)):
            return None
        if hasattr(static, "__get__") and not isinstance(static, DATA_DESCRIPTORS):
            return None  # a method written in C, or a descriptor: the class's member
    if obj.source is None:
        raise Unsupported(f"attribute .{name} of an object made during the trace")
    # A plain value: read it now and guard it like any other input.
    return tx.output.wrap(getattr(value, name), attr_source(obj.source, name), tx.lineno)


def _class_member(obj: VariableTracker, cls: type, name: str, static: Any) -> VariableTracker | None:
    """A function found on the class, bound as Python binds it; None for a plain value."""
    source = _member_source(obj, name)
    if isinstance(static, staticmethod) and isinstance(static.__func__, types.FunctionType):
        return UserFunctionVariable(static.__func__, source=source)
    if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
        return UserFunctionVariable(static.__func__, bound_self=PythonObjectVariable(cls, type_source(obj)),
                                    source=source)
    if isinstance(static, types.FunctionType):
        return UserFunctionVariable(static, bound_self=obj, source=source)
    return None


def store_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str, value: VariableTracker) -> None:
    """``obj.name = value``: on an object of the caller's a side effect, seen by later
    reads and replayed after the graph; on an object the trace made, its new state.
    An array's ``.real``/``.imag`` is a write through that part (arrays.set_complex_part)."""
    from .arrays import ArrayVariable, set_complex_part

    if isinstance(obj, ArrayVariable) and name in ("real", "imag"):
        set_complex_part(tx, obj, name, value)
        return
    if not isinstance(obj, (UserObjectVariable, NewObjectVariable)) or obj.source is None \
            and not isinstance(obj, NewObjectVariable):
        raise Unsupported(f"setting attribute .{name} of {obj.describe()}")
    cls = obj.python_type()
    if inspect.getattr_static(cls, "__setattr__") is not object.__setattr__:
        raise Unsupported(f"setting .{name} on {cls.__name__}, which defines __setattr__")
    static = inspect.getattr_static(cls, name, None)
    if isinstance(static, property) and isinstance(static.fset, types.FunctionType):
        inline_call(tx, UserFunctionVariable(static.fset, source=_member_source(obj, name, ".fset")),
                    [obj, value], {})
        return
    if hasattr(static, "__set__") and not isinstance(static, types.MemberDescriptorType):
        raise Unsupported(f"setting .{name}, which runs a descriptor's setter")
    if isinstance(obj, NewObjectVariable):
        obj.store(tx, name, value)
        return
    tx.output.mutations += 1
    tx.output.side_effects.store_attr(obj, name, value)


def delete_attr(tx: "InstructionTranslator", obj: VariableTracker, name: str) -> None:
    """``del obj.name`` on an object of the caller's: the attribute must be in its
    ``__dict__`` (guarded, unless the trace set it), then it is gone for the trace."""
    if isinstance(obj, NewObjectVariable) and name in obj.attrs \
            and not hasattr(inspect.getattr_static(obj.cls, name, None), "__delete__"):
        obj.store(tx, name, None)
        return
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
