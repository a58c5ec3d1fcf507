"""User classes in traced code: making objects, ``super()``, named tuples, dataclasses, ``with``.

In:  a class and its call's arguments (``Linear(w)``, ``State(h, c)``), a
     callable object and its arguments (``self.l1(x)``), ``super()`` and the
     attribute read through it, a named tuple's or dataclass's ``_replace`` /
     ``dataclasses.replace``, the context manager of a ``with`` (BEFORE_WITH).
Out: the result's variable:

* a class whose ``__new__`` is ``object``'s gives a :class:`NewObjectVariable`
  with its ``__init__`` inlined (a dataclass's generated ``__init__`` too); the
  object itself is built after the graph, from its attributes, only where it
  outlives the trace (reconstruct.py);
* a named tuple class gives a :class:`NamedTupleVariable` (its fields bound as
  its ``__new__`` binds them); ``_replace``, ``_asdict`` and ``_make`` are
  answered here rather than by tracing ``collections``' code;
* calling an object runs its class's ``__call__`` (inlined, ``self`` bound), a
  ``functools.partial`` its function with its arguments first, a compiled
  function (``mc.compile``) the function it compiles;
* ``super()`` is a :class:`SuperVariable`, whose attributes are looked up past
  the method's class in the object's MRO, bound as Python binds them;
* ``with`` on an object whose ``__enter__``/``__exit__`` are Python runs them
  inlined; ``np.errstate`` with "ignore", "warn" or "print" changes no value
  the graph computes (compiled code does not warn), so it is entered as a
  no-op, and "raise"/"call" (errors the compiled code would not raise) break.

What cannot be followed — a metaclass with its own ``__call__``, a class
deriving from a builtin type or defining ``__new__``, a context manager
written in C — raises :class:`Unsupported` with the reason.
"""
from __future__ import annotations

import builtins
import collections
import dataclasses
import functools
import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..binder import make_binder
from ..callables import TARGET_ATTRIBUTE
from ..exc import Unsupported
from ..source import Source, attr_source, item_source
from .base import ConstantVariable, MethodVariable, PythonObjectVariable, VariableTracker
from .containers import (
    DictVariable,
    NamedTupleVariable,
    TupleVariable,
    is_constant,
    is_namedtuple_class,
    python_value,
    sequence_items,
    wrap_value,
)
from .functions import UserFunctionVariable, inline_call, load_deref
from .user_objects import NewObjectVariable, UserObjectVariable, get_attr, type_source

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

NONE = ConstantVariable(None)


# -- making objects --------------------------------------------------------------------------------

def construct(tx: "InstructionTranslator", cls_var: PythonObjectVariable, args: list,
              kwargs: dict) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user class (or a named tuple class)."""
    cls = cls_var.value
    if is_namedtuple_class(cls):
        return _make_namedtuple(cls, cls_var.source, args, kwargs)
    if cls.__module__.split(".")[0] == "minicompile":
        raise Unsupported(f"making a {cls.__name__} in traced code")
    if type(cls).__call__ is not type.__call__:
        raise Unsupported(f"{cls.__name__} has a metaclass ({type(cls).__name__}) with its own __call__")
    if cls.__new__ is not object.__new__:
        raise Unsupported(f"{cls.__name__} defines __new__ or derives from a builtin type")
    if getattr(cls, "__abstractmethods__", None):
        raise Unsupported(f"TypeError: Can't instantiate abstract class {cls.__name__}", numpy_error=True)
    obj = NewObjectVariable(cls, {}, cls_var.source, born=tx.output.step)
    init = inspect.getattr_static(cls, "__init__")
    if init is object.__init__:
        if args or kwargs:
            raise Unsupported(f"TypeError: {cls.__name__}() takes no arguments", numpy_error=True)
        return obj
    if not isinstance(init, types.FunctionType):
        raise Unsupported(f"{cls.__name__}.__init__ is not Python code")
    source = attr_source(cls_var.source, "__init__") if cls_var.source is not None else None
    result = inline_call(tx, UserFunctionVariable(init, source=source), [obj] + list(args), kwargs)
    if not (isinstance(result, ConstantVariable) and result.value is None):
        raise Unsupported("TypeError: __init__() should return None", numpy_error=True)
    return obj


def object_setattr(tx: "InstructionTranslator", args: list, kwargs: dict) -> VariableTracker:
    """``object.__setattr__(obj, name, value)``, as a frozen dataclass's ``__init__``
    writes its fields: on an object the trace made, past its own ``__setattr__``."""
    if kwargs or len(args) != 3 or not isinstance(args[0], NewObjectVariable):
        raise Unsupported("object.__setattr__ on an object the trace did not make")
    args[0].store(tx, python_value(args[1]), args[2])
    return NONE


def object_init(tx: "InstructionTranslator", args: list, kwargs: dict) -> VariableTracker:
    """``object.__init__(self)`` (``super().__init__()`` reaching ``object``)."""
    if kwargs or len(args) > 1:
        raise Unsupported("TypeError: object.__init__() takes exactly one argument (the instance to "
                          "initialize)", numpy_error=True)
    return NONE


def call_object(tx: "InstructionTranslator", fn: VariableTracker, args: list, kwargs: dict,
                call_function: Callable) -> VariableTracker | None:
    """Calling an object: its class's Python ``__call__`` (inlined with ``self``), a
    partial (its function, its arguments first), a compiled callable (what it
    compiles); None where ``fn`` is none of these.  ``call_function`` is the
    call dispatch (builtins.py) that a partial's function goes back through."""
    cls = fn.python_type()
    value = getattr(fn, "value", None)
    source = fn.source
    if isinstance(fn, UserObjectVariable) and source is not None:
        if TARGET_ATTRIBUTE in getattr(value, "__dict__", {}):
            # A compiled callable called in traced code: trace what it compiles.
            original = tx.output.wrap(value.original, attr_source(source, "original"), tx.lineno)
            return call_function(tx, original, args, kwargs)
        if type(value) is functools.partial:
            s = source.expr
            tx.output.guards.add(source, f"len({s}.args) == {len(value.args)}", f"len({s}.args)", tx.lineno)
            tx.output.guards.add(source, f"tuple({s}.keywords) == {tuple(value.keywords)!r}",
                                 f"tuple({s}.keywords)", tx.lineno)
            func = tx.output.wrap(value.func, attr_source(source, "func"), tx.lineno)
            before = [tx.output.wrap(a, item_source(attr_source(source, "args"), i), tx.lineno)
                      for i, a in enumerate(value.args)]
            keywords = {k: tx.output.wrap(v, item_source(attr_source(source, "keywords"), k), tx.lineno)
                        for k, v in value.keywords.items()}
            return call_function(tx, func, before + list(args), {**keywords, **kwargs})
    call = inspect.getattr_static(cls, "__call__", None)
    if isinstance(call, types.FunctionType):
        cls_source = type_source(fn)
        method = UserFunctionVariable(call, bound_self=fn,
                                      source=attr_source(cls_source, "__call__") if cls_source else None)
        return inline_call(tx, method, args, kwargs)
    return None


# -- named tuples ------------------------------------------------------------------------------------

_REFERENCE = collections.namedtuple("_Reference", "a")
# The code of the methods every named tuple class gets (one code object shared by all):
# where a class still has these, they are answered here, not traced through collections.
_NAMEDTUPLE_CODE = {"_replace": _REFERENCE._replace.__code__, "_asdict": _REFERENCE._asdict.__code__,
                    "_make": _REFERENCE._make.__func__.__code__}


def _make_namedtuple(cls: type, cls_source: Source | None, args: list, kwargs: dict) -> NamedTupleVariable:
    try:
        bound = make_binder(cls.__new__)(cls, *args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"TypeError: {e}", numpy_error=True) from None
    items = [bound[f] if isinstance(bound[f], VariableTracker) else wrap_value(bound[f]) for f in cls._fields]
    return NamedTupleVariable(items, cls=cls, cls_source=cls_source)


def namedtuple_method(obj: VariableTracker, name: str) -> MethodVariable | None:
    """``nt._replace`` / ``nt._asdict`` (``Cls._make``) of a named tuple whose class
    did not redefine them, as a method answered here; None otherwise."""
    if name not in _NAMEDTUPLE_CODE:
        return None
    cls = obj.value if isinstance(obj, PythonObjectVariable) else obj.python_type()
    if not is_namedtuple_class(cls):
        return None
    static = inspect.getattr_static(cls, name, None)
    code = getattr(getattr(static, "__func__", static), "__code__", None)
    if code is not _NAMEDTUPLE_CODE[name] or (name == "_make") != isinstance(obj, PythonObjectVariable):
        return None
    return MethodVariable(obj, name)


def namedtuple_items(tx: "InstructionTranslator", obj: VariableTracker) -> list[VariableTracker]:
    """The fields of a named tuple, made by the trace or the caller's (read and guarded)."""
    if isinstance(obj, TupleVariable):
        return list(obj.items)
    items = obj.unpack(tx)
    if items is None:
        raise Unsupported(f"fields of {obj.describe()}")
    return items


def call_namedtuple_method(tx: "InstructionTranslator", method: MethodVariable, args: list,
                           kwargs: dict) -> VariableTracker:
    obj, name = method.obj, method.name
    if name == "_make":
        if kwargs or len(args) != 1:
            raise Unsupported("TypeError: _make() takes one iterable", numpy_error=True)
        items = sequence_items(tx, args[0])
        if len(items) != len(obj.value._fields):
            raise Unsupported(f"TypeError: Expected {len(obj.value._fields)} arguments, got {len(items)}",
                              numpy_error=True)
        return NamedTupleVariable(items, cls=obj.value, cls_source=obj.source)
    cls = obj.python_type()
    items = namedtuple_items(tx, obj)
    if args:
        raise Unsupported(f"TypeError: {name}() takes keyword arguments only", numpy_error=True)
    if name == "_asdict":
        return DictVariable(dict(zip(cls._fields, items)))
    unknown = set(kwargs) - set(cls._fields)
    if unknown:
        raise Unsupported(f"ValueError: Got unexpected field names: {sorted(unknown)!r}", numpy_error=True)
    new = [kwargs.get(f, item) for f, item in zip(cls._fields, items)]
    return NamedTupleVariable(new, cls=cls, cls_source=type_source(obj))


# -- dataclasses.replace ------------------------------------------------------------------------

def dataclass_replace(tx: "InstructionTranslator", args: list, kwargs: dict) -> VariableTracker:
    """``dataclasses.replace(obj, **changes)``: a new object of ``obj``'s class, made by
    its ``__init__`` from ``changes`` and ``obj``'s other init fields (as the standard
    library does it, including its errors)."""
    if len(args) != 1:
        raise Unsupported(f"TypeError: replace() takes 1 positional argument but {len(args)} were given",
                          numpy_error=True)
    obj = args[0]
    try:
        cls = obj.python_type()
    except NotImplementedError:
        raise Unsupported(f"dataclasses.replace of {obj.describe()}") from None
    if not dataclasses.is_dataclass(cls) or isinstance(obj, PythonObjectVariable):
        raise Unsupported("TypeError: replace() should be called on dataclass instances", numpy_error=True)
    changes = dict(kwargs)
    for f in getattr(cls, dataclasses._FIELDS).values():
        if f._field_type is dataclasses._FIELD_CLASSVAR:
            continue
        if not f.init:
            if f.name in changes:
                raise Unsupported(f"ValueError: field {f.name} is declared with init=False, it cannot be "
                                  "specified with replace()", numpy_error=True)
            continue
        if f.name not in changes:
            if f._field_type is dataclasses._FIELD_INITVAR and f.default is dataclasses.MISSING:
                raise Unsupported(f"ValueError: InitVar {f.name!r} must be specified with replace()",
                                  numpy_error=True)
            changes[f.name] = get_attr(tx, obj, f.name)
    return construct(tx, PythonObjectVariable(cls, type_source(obj)), [], changes)


# -- super() -------------------------------------------------------------------------------------

@dataclass(eq=False)
class SuperVariable(VariableTracker):
    """``super()`` in a method of ``cls`` called on ``obj`` (or ``super(cls, obj)``)."""

    cls: type
    obj: VariableTracker
    source: Source | None = None

    def describe(self) -> str:
        return f"super() in {self.cls.__name__}"

    def python_type(self) -> type:
        return super


def make_super(tx: "InstructionTranslator", args: list, kwargs: dict) -> SuperVariable:
    """``super()`` (its class from the method's ``__class__`` cell, its object the
    method's first argument) or ``super(cls, obj)``."""
    if kwargs or len(args) not in (0, 2):
        raise Unsupported("super() with other than zero or two arguments")
    if args:
        return SuperVariable(python_value(args[0]), args[1])
    code = tx.code
    if "__class__" not in code.co_freevars or code.co_argcount == 0:
        raise Unsupported("RuntimeError: super(): no arguments", numpy_error=True)
    return SuperVariable(python_value(load_deref(tx, "__class__")), tx.load_local(code.co_varnames[0]))


def super_attr(tx: "InstructionTranslator", sup: SuperVariable, name: str) -> VariableTracker:
    """``super().name``: the first class after ``sup.cls`` in the MRO that has it."""
    obj = sup.obj
    on_class = isinstance(obj, PythonObjectVariable) and isinstance(obj.value, type)
    obj_type = obj.value if on_class else obj.python_type()
    mro = obj_type.__mro__
    if sup.cls not in mro:
        raise Unsupported("TypeError: super(type, obj): obj must be an instance or subtype of type",
                          numpy_error=True)
    owner_source = obj.source if on_class else type_source(obj)
    for k in range(mro.index(sup.cls) + 1, len(mro)):
        if name in mro[k].__dict__:
            static = mro[k].__dict__[name]
            break
    else:
        raise Unsupported(f"AttributeError: 'super' object has no attribute {name!r}", numpy_error=True)
    source = Source(f"{owner_source.expr}.__mro__[{k}].{name}") if owner_source is not None else None
    if static is object.__init__:
        return PythonObjectVariable(object.__init__)
    if isinstance(static, staticmethod) and isinstance(static.__func__, types.FunctionType):
        return UserFunctionVariable(static.__func__, source=source)
    if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
        cls_var = obj if on_class else PythonObjectVariable(obj_type, owner_source)
        return UserFunctionVariable(static.__func__, bound_self=cls_var, source=source)
    if isinstance(static, types.FunctionType):
        return UserFunctionVariable(static, bound_self=None if on_class else obj, source=source)
    if isinstance(static, property) and isinstance(static.fget, types.FunctionType) and not on_class:
        return inline_call(tx, UserFunctionVariable(static.fget), [obj], {})
    if hasattr(static, "__get__") or source is None:
        raise Unsupported(f"super().{name}: {type(static).__name__} of {mro[k].__name__}")
    return tx.output.wrap(static, source, tx.lineno)


# -- with -------------------------------------------------------------------------------------------

@dataclass(eq=False)
class ErrstateVariable(VariableTracker):
    """``np.errstate(**settings)`` before its ``with`` enters it."""

    settings: dict
    source: Source | None = None

    def describe(self) -> str:
        return f"np.errstate({', '.join(f'{k}={v!r}' for k, v in self.settings.items())})"

    def python_type(self) -> type:
        return np.errstate


def make_errstate(tx: "InstructionTranslator", args: list, kwargs: dict) -> ErrstateVariable:
    if args or not all(is_constant(v) for v in kwargs.values()):
        raise Unsupported("np.errstate with other than constant keyword arguments")
    settings = {k: python_value(v) for k, v in kwargs.items()}
    try:
        np.errstate(**settings)  # NumPy's own checks of the names and values
    except Exception as e:
        raise Unsupported(f"{type(e).__name__}: {e}", numpy_error=True) from None
    return ErrstateVariable(settings)


def _exit_nothing(tx: "InstructionTranslator", args: list, kwargs: dict) -> VariableTracker:
    return NONE


EXIT_NOTHING = PythonObjectVariable(_exit_nothing)  # the __exit__ of a context that changes nothing traced


def enter_context(tx: "InstructionTranslator", manager: VariableTracker) -> tuple[VariableTracker, VariableTracker]:
    """BEFORE_WITH: ``(the bound __exit__, what __enter__ returned)``."""
    if isinstance(manager, ErrstateVariable):
        raising = {k: v for k, v in manager.settings.items() if v in ("raise", "call")}
        if raising:
            raise Unsupported(f"{manager.describe()}: floating-point errors would raise or call back, "
                              "which compiled code does not do")
        return EXIT_NOTHING, NONE
    if isinstance(manager, (UserObjectVariable, NewObjectVariable)):
        cls = manager.python_type()
        enter = inspect.getattr_static(cls, "__enter__", None)
        exit_ = inspect.getattr_static(cls, "__exit__", None)
        if isinstance(enter, types.FunctionType) and isinstance(exit_, types.FunctionType):
            cls_source = type_source(manager)
            exit_fn = UserFunctionVariable(exit_, bound_self=manager,
                                           source=attr_source(cls_source, "__exit__") if cls_source else None)
            entered = inline_call(tx, UserFunctionVariable(
                enter, source=attr_source(cls_source, "__enter__") if cls_source else None), [manager], {})
            return exit_fn, entered
    raise Unsupported(f"with {manager.describe()}: its __enter__ and __exit__ are not Python code")


# -- exceptions -------------------------------------------------------------------------------------

def make_exception(tx: "InstructionTranslator", cls: type, args: list, kwargs: dict) -> VariableTracker:
    """``ValueError("...")`` of constants: the exception object, for a ``raise`` to name."""
    if not all(is_constant(a) for a in args) or not all(is_constant(v) for v in kwargs.values()):
        raise Unsupported(f"building a {cls.__name__} from traced values")
    return PythonObjectVariable(cls(*[python_value(a) for a in args],
                                    **{k: python_value(v) for k, v in kwargs.items()}))


def describe_raise(var: VariableTracker) -> str:
    value = getattr(var, "value", None)
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}" if str(value) else type(value).__name__
    if isinstance(value, type) and issubclass(value, BaseException):
        return value.__name__
    return var.describe()


BUILTIN_HANDLERS = {
    builtins.super: make_super,
    object.__setattr__: object_setattr,
    object.__init__: object_init,
    dataclasses.replace: dataclass_replace,
    np.errstate: make_errstate,
    _exit_nothing: _exit_nothing,
}
