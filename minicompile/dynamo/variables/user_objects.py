"""Attribute reads and writes in the symbolic interpreter: ``obj.name``, ``obj.name = v``.

In:  the variable on the stack and the attribute's name (LOAD_ATTR, LOAD_METHOD,
     STORE_ATTR, DELETE_ATTR).
Out: the attribute's variable, resolved the way Python would resolve it: a
     module's member, a user class's function or constant, a user object's
     instance attribute (read from the frame and guarded), method or property
     (inlined), an array's shape facts or method; a store on a caller's object
     is recorded as a side effect (side_effects.py).

A mixin of :class:`~.symbolic_convert.InstructionTranslator`, which it relies on
for the stack, the output graph and ``inline_call``.
"""
from __future__ import annotations

import inspect
import types

import numpy as np

from .builtins import CONTAINER_METHODS
from ..bytecode import CURRENT as VERSION
from ..exc import Unsupported
from .numpy_calls import METHODS
from ..side_effects import delete_attribute
from ..source import Source, attr_source
from .base import (
    NULL,
    ArrayVariable,
    ConstantVariable,
    MethodVariable,
    PythonObjectVariable,
    UserFunctionVariable,
    UserObjectVariable,
    VariableTracker,
)

# Modules whose attributes are read once and trusted not to change (not guarded).
FIXED_MODULES = frozenset({"numpy", "math", "builtins", "operator", "functools", "itertools",
                           "collections", "typing", "minicompile"})


class AttributesMixin:
    def get_attr(self, obj: VariableTracker, name: str) -> VariableTracker:
        if isinstance(obj, ArrayVariable):
            return self.array_attr(obj, name)
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, types.ModuleType):
            try:
                value = getattr(obj.value, name)
            except AttributeError as e:
                raise Unsupported(f"AttributeError: {e}") from None
            module = obj.value.__name__.split(".")[0]
            if module in FIXED_MODULES or obj.source is None:
                # Library modules (np.exp, math.pi) are taken as fixed: not guarded.
                var = self.wrap_value(value)
                var.source = attr_source(obj.source, name) if obj.source else None
                return var
            # A setting in the user's own module may change between calls: guard it.
            return self.output.wrap(value, attr_source(obj.source, name), self.lineno)
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, type) \
                and obj.value.__module__ not in ("builtins",) and not obj.value.__module__.startswith("numpy"):
            return self.class_attr(obj, name)
        if isinstance(obj, UserObjectVariable):
            return self.user_object_attr(obj, name)
        if type(obj) in CONTAINER_METHODS and name in CONTAINER_METHODS[type(obj)]:
            return MethodVariable(obj, name)
        if isinstance(obj, UserFunctionVariable) and name in ("__name__", "__qualname__"):
            return ConstantVariable(getattr(obj.code, "co_" + name.strip("_")))
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, np.ufunc):
            return self.evaluate(getattr, obj.value, name)  # np.add.at, np.add.nin
        if self.is_constant(obj):
            value = self.python_value(obj)
            if isinstance(value, (str, int, float, np.generic, np.dtype, tuple)):
                return self.evaluate(getattr, value, name)
        raise Unsupported(f"attribute .{name} of {obj.describe()} is not supported yet")

    def class_attr(self, cls: PythonObjectVariable, name: str) -> VariableTracker:
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
        return self.output.wrap(static, attr_source(cls.source, name), self.lineno)

    def user_object_attr(self, obj: UserObjectVariable, name: str) -> VariableTracker:
        """``obj.name`` on a user object, resolved the way Python would, without running code
        other than the functions it inlines (methods, properties)."""
        value = obj.value
        if obj.source is not None and (obj.source.expr, name) in self.output.side_effects.attributes:
            return self.output.side_effects.read_attr(obj.source.expr, name)  # set (or deleted) earlier
        if obj.source is not None:
            # Set earlier on another object: a later call passing one object under both
            # names would read the stale value here, so they must stay two objects.
            for other, attr in self.output.side_effects.attributes:
                if attr == name and other != obj.source.expr:
                    self.output.guards.add(obj.source, f"{obj.source.expr} is not {other}",
                                           f"id({obj.source.expr})", self.lineno)
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
                return self.inline_call(UserFunctionVariable(static.fget), [obj], {})
        if obj.source is None:
            raise Unsupported(f"attribute .{name} of an object made during the trace")
        # A plain value (instance attribute, class constant, slot, namedtuple field):
        # read it now and guard it like any other input.
        return self.output.wrap(getattr(value, name), attr_source(obj.source, name), self.lineno)

    def array_attr(self, arr: ArrayVariable, name: str) -> VariableTracker:
        meta = arr.node.meta
        # shape, dtype and strides are guarded on every array input, so these
        # are constants of this cache entry.
        facts = {
            "shape": meta.shape, "ndim": meta.ndim, "size": meta.size, "dtype": meta.dtype,
            "itemsize": meta.dtype.itemsize, "nbytes": meta.size * meta.dtype.itemsize,
        }
        if name in facts:
            return self.wrap_value(facts[name])
        if name == "T":
            return self.output.call("transpose", {"a": arr, "axes": ConstantVariable(None)})
        if name in METHODS or callable(getattr(np.ndarray, name, None)):
            # An unsupported method breaks the graph where it is called, not here.
            return MethodVariable(arr, name)
        raise Unsupported(f"ndarray attribute .{name} is not supported yet")

    def push_method(self, method: VariableTracker) -> None:
        """Push a loaded method as [NULL, method] in the order CALL expects."""
        if VERSION.null_before_callable:
            self.push(NULL)
            self.push(method)
        else:
            self.push(method)
            self.push(NULL)

    def LOAD_ATTR(self, inst) -> None:
        obj = self.pop()
        attr = self.get_attr(obj, inst.argval)
        if VERSION.load_attr_method_flag and inst.arg & 1:
            self.push_method(attr)
        else:
            self.push(attr)

    def STORE_ATTR(self, inst) -> None:
        obj, value = self.pop(), self.pop()
        if not isinstance(obj, UserObjectVariable) or obj.source is None:
            raise Unsupported(f"setting attribute .{inst.argval} of {obj.describe()}")
        static = inspect.getattr_static(type(obj.value), inst.argval, None)
        if hasattr(static, "__set__"):  # a property or slot with its own setter code
            raise Unsupported(f"setting .{inst.argval}, which runs a descriptor's setter")
        self.output.mutations += 1
        self.output.side_effects.store_attr(obj, inst.argval, value)

    def DELETE_ATTR(self, inst) -> None:
        delete_attribute(self, self.pop(), inst.argval)

    def LOAD_METHOD(self, inst) -> None:  # 3.11
        self.push_method(self.get_attr(self.pop(), inst.argval))

