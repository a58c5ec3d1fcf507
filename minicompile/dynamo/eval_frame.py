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
import time
import types
import warnings
import weakref
from typing import Any

from .. import config, logs
from ..profiler import hooks as profiler_hooks
from .binder import make_binder
from .convert_frame import Backend, CacheEntry, compile_entry, frame_builtins
from .dynamic_shapes import DynamicPolicy, changed_dims

_ALL: "weakref.WeakSet[OptimizedFunction]" = weakref.WeakSet()  # for mc.reset()


class OptimizedFunction:
    def __init__(self, fn: types.FunctionType, backend: Backend, fullgraph: bool, backend_name: str,
                 dynamic: bool | None = None):
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
        self.dynamic = DynamicPolicy(dynamic)
        # Seconds spent on misses before the compiled code runs: capture, guards
        # and the backend (like torch._dynamo.utils.compile_times).  The run
        # that follows a miss is not compile time, however long the workload.
        self.compile_seconds = 0.0
        functools.update_wrapper(self, fn)
        _ALL.add(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if profiler_hooks.active is not None:  # the only cost of the profiler when it is off
            return profiler_hooks.active.call_compiled(self, args, kwargs)
        try:
            L = self._bind(*args, **kwargs)
        except TypeError:
            return self.fn(*args, **kwargs)  # let Python report the bad call itself
        G = self.fn.__globals__
        for entry in self.cache:
            try:
                hit = entry.guard(L, G)
            except Exception:  # e.g. an attribute a guard reads is gone: not a hit
                hit = False
            if hit:
                return entry.run(L, G, args, kwargs)
        return self._miss(L, G, args, kwargs)

    def lookup(self, L: dict, G: dict) -> CacheEntry | None:
        """The first cache entry whose guards hold (``__call__`` inlines this loop: hot path)."""
        for entry in self.cache:
            try:
                if entry.guard(L, G):
                    return entry
            except Exception:
                pass
        return None

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
            self._mark_dynamic(L, G)
        start = time.perf_counter()
        entry = compile_entry(self.fn, L, self.backend, self.fullgraph, self._wrap_function,
                              is_resume=self.fn.__code__.co_name.startswith("__resume_at_"),
                              dynamic=self.dynamic)
        self.compile_seconds += time.perf_counter() - start
        self.cache.append(entry)
        return entry.run(L, G, args, kwargs)

    def _mark_dynamic(self, L: dict, G: dict) -> None:
        """Automatic dynamic shapes: a miss caused only by changed array sizes
        makes those axes symbolic in the next capture."""
        if self.dynamic.mode is not None:
            return
        change = changed_dims(self.cache[-1].capture.guards, L, G, frame_builtins(self.fn), self.fn.__closure__)
        if change is None:
            return
        dims, split = change
        self.dynamic.dims |= dims
        self.dynamic.distinct |= split
        logs.log("recompiles", lambda: f"{self.fn.__qualname__}: sizes changed, next capture makes "
                 "symbolic " + ", ".join(src if axis is None else f"{src}.shape[{axis}]"
                                         for src, axis in sorted(dims, key=lambda d: (d[0], d[1] is not None, d[1] or 0))))

    def _wrap_function(self, fn: types.FunctionType) -> "OptimizedFunction":
        """Resume functions and callees that broke are compiled like this one."""
        return OptimizedFunction(fn, self.backend, False, self.backend_name, self.dynamic.mode)

    def why_miss(self, L: dict, G: dict) -> str:
        """Which guard of the newest cache entry fails for this frame."""
        if not self.cache:
            return "no cache entry yet"
        entry = self.cache[-1]
        failure = entry.capture.guards.first_failure(L, G, frame_builtins(self.fn), self.fn.__closure__)
        return failure or "all guards pass"

    def reset(self) -> None:
        self.cache.clear()
        self.compile_seconds = 0.0
        self._warned_limit = False
        self.dynamic = DynamicPolicy(self.dynamic.mode)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # Decorating a method: bind like a function would.
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<minicompile {self.backend_name} {self.fn.__qualname__}, {len(self.cache)} cache entries>"


def reset_all() -> None:
    for f in list(_ALL):
        f.reset()
