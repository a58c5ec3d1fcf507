"""What is traced when ``mc.compile`` is given a callable that is not a plain function.

torch.compile compiles an ``nn.Module`` by tracing ``type(module).__call__``
with the module as ``self``.  minicompile does the same for any callable:

* a Python function: the function itself;
* a bound method (a classmethod reached through its class is one too): its
  function, with ``__self__`` (the object, or the class) as first argument;
* a ``staticmethod`` object: its function;
* a ``functools.partial``: its function (itself resolved the same way), its
  arguments before the caller's and its keywords under the caller's;
* an object whose class defines ``__call__`` in Python:
  ``type(obj).__call__`` with the object as first argument;
* anything else callable (a builtin, a ufunc, a class, a callable written in
  C): a trivial Python function that calls it, which traces like any other.

In:  the callable given to ``mc.compile``.
Out: a :class:`Target`: the Python function whose bytecode is traced, and the
     arguments bound in front of the caller's.  The bound arguments are
     ordinary arguments of the traced frame (``L['self']``): an array read
     from ``self.w`` is a graph input guarded on its type, shape, dtype and
     strides — not on its identity or values — as torch treats a module's
     parameters, and a Python value read from it is guarded on its value.
"""
from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from . import user_code

# The attribute by which a compiled callable names what it traces, so that a
# compiled callable given to ``mc.compile`` again, or called inside traced
# code, is traced through to its target instead of through minicompile's own code.
TARGET_ATTRIBUTE = "__minicompile_target__"


@dataclass(frozen=True)
class Target:
    fn: types.FunctionType
    args: tuple = ()  # put before the caller's positional arguments
    kwargs: dict = field(default_factory=dict)  # the caller's keywords win over these

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments ``fn`` is called with when the callable gets ``args, kwargs``."""
        if not self.args and not self.kwargs:
            return args, kwargs
        return self.args + args, {**self.kwargs, **kwargs}


def resolve(obj: Any) -> Target:
    """The function to trace for the callable ``obj`` (see the module docstring)."""
    target = getattr(obj, TARGET_ATTRIBUTE, None)
    if isinstance(target, Target):
        return target
    if isinstance(obj, types.FunctionType):
        return Target(obj)
    if isinstance(obj, types.MethodType):
        inner = resolve(obj.__func__)
        return Target(inner.fn, inner.args + (obj.__self__,), inner.kwargs)
    if isinstance(obj, staticmethod):
        return resolve(obj.__func__)
    if isinstance(obj, functools.partial):
        inner = resolve(obj.func)
        return Target(inner.fn, inner.args + obj.args, {**inner.kwargs, **obj.keywords})
    if isinstance(obj, classmethod):
        raise TypeError("minicompile.compile got a classmethod object; compile it as reached "
                        "through its class (Model.make), which binds the class")
    if not isinstance(obj, type):
        call = inspect.getattr_static(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType):  # a Python __call__, as a module's
            return Target(call, (obj,))
    if callable(obj):
        return Target(calls(obj))
    raise TypeError(f"minicompile.compile expects a callable, got {type(obj).__name__}")


def calls(target: Callable) -> types.FunctionType:
    """A Python function that calls ``target`` (a builtin, a ufunc, a class, ...), named as it."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    name = getattr(target, "__name__", type(target).__name__)
    call.__name__ = name
    call.__qualname__ = getattr(target, "__qualname__", name)
    call.__doc__ = getattr(target, "__doc__", None)
    return call


# In a traceback the trivial caller is the call itself: its frame is dropped, and an
# error raised by what it calls is the user's (user_code.cut_traceback).
user_code.transparent(calls(len).__code__)


def wrapper_attributes(obj: Any) -> dict[str, Any]:
    """What a compiled callable shows of the callable it compiles: its name,
    qualified name, module and docstring where it has them (``functools.wraps``'s
    list), and ``__wrapped__``.  A function's own ``__dict__`` is copied too, as
    ``functools.wraps`` does; an object's attributes are not copied but read
    through (``OptimizedFunction.__getattr__``), so they never go stale."""
    out: dict[str, Any] = {"__wrapped__": obj}
    for name in functools.WRAPPER_ASSIGNMENTS:
        try:
            out[name] = getattr(obj, name)
        except AttributeError:
            pass
    if isinstance(obj, types.FunctionType):
        out.update(obj.__dict__)
    return out
