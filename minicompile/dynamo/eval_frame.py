"""The compiled function users call: cache lookup, guard checks, recompiles.

``mc.compile(fn)`` returns an :class:`OptimizedFunction`.  Each call binds the
arguments to the function's parameters (``L``), tries the cache entries'
guard functions in order, and runs the first entry whose guards hold.  On a
miss it captures and compiles a new entry — logging which guard of the newest
entry failed — until ``config.recompile_limit`` entries exist; after that the
function runs eagerly, with one warning.
"""
from __future__ import annotations

import functools
import inspect
import types
import warnings
import weakref
from typing import Any, Callable

from .. import config, logs
from .convert_frame import Backend, CacheEntry, compile_entry, frame_builtins

_ALL: "weakref.WeakSet[OptimizedFunction]" = weakref.WeakSet()  # for mc.reset()


def make_binder(fn: types.FunctionType) -> Callable[..., dict[str, Any]]:
    """A function with ``fn``'s signature that returns its arguments as a dict.

    CPython binds the arguments itself (defaults, keywords, ``*args``), which is
    an order of magnitude faster than ``inspect.Signature.bind``.
    """
    code = fn.__code__
    n_pos, n_kwonly = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[: n_pos + n_kwonly])
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    extra = n_pos + n_kwonly
    varargs = code.co_varnames[extra] if has_varargs else None
    varkw = code.co_varnames[extra + has_varargs] if has_varkw else None

    params = names[: code.co_posonlyargcount] + (["/"] if code.co_posonlyargcount else [])
    params += names[code.co_posonlyargcount: n_pos]
    if varargs:
        params.append("*" + varargs)
    elif n_kwonly:
        params.append("*")
    params += names[n_pos:]
    if varkw:
        params.append("**" + varkw)
    all_names = names + [n for n in (varargs, varkw) if n]
    body = ", ".join(f"{n!r}: {n}" for n in all_names)
    src = f"def bind({', '.join(params)}):\n    return {{{body}}}"
    namespace: dict[str, Any] = {}
    exec(compile(src, "<minicompile binder>", "exec"), namespace)
    binder = namespace["bind"]
    binder.__defaults__ = fn.__defaults__
    binder.__kwdefaults__ = fn.__kwdefaults__
    return binder


class OptimizedFunction:
    def __init__(self, fn: types.FunctionType, backend: Backend, fullgraph: bool, backend_name: str):
        if not isinstance(fn, types.FunctionType):
            raise TypeError(
                f"minicompile.compile expects a Python function, got {type(fn).__name__}"
            )
        self.fn = fn
        self.backend = backend
        self.backend_name = backend_name
        self.fullgraph = fullgraph
        self.cache: list[CacheEntry] = []
        self._bind = make_binder(fn)
        self._warned_limit = False
        functools.update_wrapper(self, fn)
        _ALL.add(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            L = self._bind(*args, **kwargs)
        except TypeError:
            return self.fn(*args, **kwargs)  # let Python report the bad call itself
        G = self.fn.__globals__
        for entry in self.cache:
            if entry.guard(L, G):
                return entry.run(L, G, args, kwargs)
        return self._miss(L, G, args, kwargs)

    def _miss(self, L: dict, G: dict, args: tuple, kwargs: dict) -> Any:
        name = self.fn.__qualname__
        if len(self.cache) >= config.recompile_limit:
            if not self._warned_limit:
                self._warned_limit = True
                warnings.warn(
                    f"minicompile: {name} hit the recompile limit "
                    f"({config.recompile_limit} cache entries); running it eagerly from now on. "
                    f"Last guard failure: {self.why_miss(L, G)}",
                    stacklevel=3,
                )
            return self.fn(*args, **kwargs)
        if self.cache:
            logs.log("recompiles", lambda: f"Recompiling {name}: {self.why_miss(L, G)}")
        entry = compile_entry(self.fn, L, self.backend, self.fullgraph)
        self.cache.append(entry)
        return entry.run(L, G, args, kwargs)

    def why_miss(self, L: dict, G: dict) -> str:
        """Which guard of the newest cache entry fails for this frame."""
        if not self.cache:
            return "no cache entry yet"
        entry = self.cache[-1]
        failure = entry.capture.guards.first_failure(L, G, frame_builtins(self.fn), self.fn.__closure__)
        return failure or "all guards pass"

    def reset(self) -> None:
        self.cache.clear()
        self._warned_limit = False

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # Decorating a method: bind like a function would.
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<minicompile {self.backend_name} {self.fn.__qualname__}, {len(self.cache)} cache entries>"


def reset_all() -> None:
    for f in list(_ALL):
        f.reset()
