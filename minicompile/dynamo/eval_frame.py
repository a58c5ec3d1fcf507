"""The compiled function users call: cache lookup, guard checks, recompiles.

``mc.compile(fn)`` returns an :class:`OptimizedFunction`; ``fn`` may be any
callable — a model object is traced as ``type(model).__call__`` with ``self``
bound (callables.py).  Each call binds the arguments to the function's
parameters (``L``), tries the cache entries' guard functions in order, and
runs the first entry whose guards hold.  On a
miss it captures and compiles a new entry — logging which guard of the newest
entry failed — until ``config.recompile_limit`` entries exist; after that the
function runs eagerly, with one warning.

Threads: guard checks of existing entries take no lock (the hot path), but
misses go through one process-wide lock, which re-checks the cache before
capturing, so two threads that miss together compile once and never grow the
cache past the limit.  The entry runs after the lock is released.

Generator, coroutine (``async def``) and async generator functions are never
traced: calling one returns a suspended frame that runs later, one ``next``
or ``await`` at a time, which a graph cannot stand for.  They run as Python —
the real function, so the caller gets a real generator or coroutine — with
one warning per function saying so (``fullgraph=True`` raises instead).

An exception leaving a compiled call has minicompile's own frames cut from its
traceback, so it reads as eager's (user_code.py).
"""
from __future__ import annotations

import inspect
import threading
import time
import types
import weakref
from typing import Any

import numpy as np

from .. import config, logs
from ..graph_id import GraphCounter, compiling
from ..profiler import hooks as profiler_hooks
from ..warn import warn
from . import callables, user_code
from .binder import make_binder
from .convert_frame import Backend, CacheEntry, compile_entry, frame_builtins
from .dynamic_shapes import DynamicPolicy, changed_dims
from .exc import BreakReason, GraphBreakError

# Held while a miss captures and compiles (re-entrant: capturing never runs user
# code, but a custom backend may call a compiled function).
COMPILE_LOCK = threading.RLock()

# Code flags of functions whose call returns a suspended frame, and what they are called.
PYTHON_ONLY_KINDS = (
    (inspect.CO_ASYNC_GENERATOR, "an async generator function"),
    (inspect.CO_COROUTINE, "an async function (its call returns a coroutine)"),
    (inspect.CO_GENERATOR, "a generator function"),
)


def python_only_kind(fn: types.FunctionType) -> str | None:
    """What kind of function ``fn`` is, if its calls must run as Python; else None."""
    flags = fn.__code__.co_flags
    return next((kind for flag, kind in PYTHON_ONLY_KINDS if flags & flag), None)


def python_only_reason(fn: types.FunctionType, kind: str) -> BreakReason:
    """``kind``: what ``fn`` is or when it was called ("is a generator function")."""
    return BreakReason(f"{fn.__qualname__} {kind}; it runs as Python, uncompiled",
                       fn.__code__.co_filename, fn.__code__.co_firstlineno)


_ALL: "weakref.WeakSet[OptimizedFunction]" = weakref.WeakSet()  # for mc.reset()

# NumPy's floating-point error state (np.seterr, np.errstate) lives in a context
# variable, one immutable object per state: the verdict of the last one seen is kept.
_ERRSTATE = getattr(np._core.umath, "_extobj_contextvar", None)
_last_errstate: tuple[Any, bool] = (object(), False)


def numpy_errors_raise() -> bool:
    """Does NumPy's error state raise or call back on a floating-point error
    (``np.seterr(all="raise")``)?  Compiled kernels neither raise nor call, so a
    call made in that state runs as Python, as ``with np.errstate(all="raise")``
    inside the function breaks the graph.  About 0.2 us: one context-variable read."""
    global _last_errstate
    state = _ERRSTATE.get() if _ERRSTATE is not None else None
    seen, verdict = _last_errstate
    if state is seen and state is not None:
        return verdict
    verdict = any(mode in ("raise", "call") for mode in np.geterr().values())
    _last_errstate = (state, verdict)
    return verdict


class OptimizedFunction:
    """A compiled callable.  ``fn`` may be any callable (callables.py says what
    is traced for each kind); ``self.fn`` is the Python function traced, and
    ``self.target`` binds the arguments put before the caller's (``self`` of a
    bound method or of an object with ``__call__``, a partial's arguments).
    The result looks like the original: its name and docstring, bound when read
    from an instance (``__get__``), and any other attribute read through to it."""

    def __init__(self, fn: Any, backend: Backend, fullgraph: bool, backend_name: str,
                 dynamic: bool | None = None, warn_python_only: bool = True, is_resume: bool = False,
                 graph_counter: GraphCounter | None = None):
        original = fn.original if isinstance(fn, OptimizedFunction) else fn
        self.original = original
        self.target = callables.resolve(original)
        setattr(self, callables.TARGET_ATTRIBUTE, self.target)
        fn = self.target.fn
        self.fn = fn
        self._bound = bool(self.target.args or self.target.kwargs)
        self.is_resume = is_resume  # a resume function of a graph break (resume_execution.py)
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
        # A generator or async function: every call misses (the cache stays empty) and runs fn.
        self.python_only = python_only_kind(fn)
        self._warn_python_only = warn_python_only  # False for the functions a graph break calls
        self._told_python_only = False
        self.__dict__.update(callables.wrapper_attributes(original))
        # Functions this one hands work to at graph breaks, by code (a resume
        # function) or by identity (a callee): one compiled function each, whose
        # cache (dynamic shapes included) outlives a recompile of this one.
        self._handed: dict[Any, OptimizedFunction] = {}
        # Numbers the graphs compiled for this function and those it hands work to (graph_id.py).
        self.graph_counter = graph_counter or GraphCounter()
        self._own_counter = graph_counter is None
        if fn.__code__.co_flags & inspect.CO_COROUTINE and hasattr(inspect, "markcoroutinefunction"):
            inspect.markcoroutinefunction(self)  # inspect.iscoroutinefunction(compiled) as for fn
        _ALL.add(self)

    def __getattr__(self, name: str) -> Any:
        # Only for names the wrapper lacks: the compiled object's attributes, as
        # torch.compile's OptimizedModule reads its module's.
        original = self.__dict__.get("original")
        if original is None:
            raise AttributeError(name)
        return getattr(original, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._bound:  # a method, an object, a partial: its own arguments first
            args, kwargs = self.target.bind(args, kwargs)
        try:
            if numpy_errors_raise():  # profiled or not: compiled code would not raise
                return self._run_as_python(args, kwargs, "called while NumPy's error state raises "
                                           "(np.seterr): compiled code would not raise")
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
        except BaseException as error:
            user_code.cut_traceback(error)  # the user's frames only (MINICOMPILE_LOGS=+internals: all)
            raise

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
        if self.python_only is not None:
            return self._run_as_python(args, kwargs)
        with COMPILE_LOCK:
            # Another thread may have compiled an entry for this frame while this one waited.
            entry = self.lookup(L, G) or self._compile(L, G)
        if entry is None:  # past the recompile limit
            return self.fn(*args, **kwargs)
        return entry.run(L, G, args, kwargs)

    def _run_as_python(self, args: tuple, kwargs: dict, why: str | None = None) -> Any:
        kind = why or f"is {self.python_only}"
        if self.fullgraph:
            raise GraphBreakError(python_only_reason(self.fn, kind))
        if not self._told_python_only:
            self._told_python_only = True
            message = f"minicompile: {self.fn.__qualname__} {kind}; it runs as Python, uncompiled"
            if self._warn_python_only:
                warn(message)
            else:
                logs.log("graph_breaks", lambda: message)
        return self.fn(*args, **kwargs)

    def _compile(self, L: dict, G: dict) -> CacheEntry | None:
        """A new cache entry for this frame (under COMPILE_LOCK); None past the limit."""
        name = self.fn.__qualname__
        if len(self.cache) >= config.recompile_limit:
            if not self._warned_limit:
                self._warned_limit = True
                warn(f"minicompile: {name} hit the recompile limit "
                     f"({config.recompile_limit} cache entries); running it eagerly from now on. "
                     f"Last guard failure: {self.why_miss(L, G)}")
            return None
        reason = None
        with compiling(self.graph_counter.next(name)) as graph:  # its logs name it (graph_id.py)
            if self.cache:
                reason = self.why_miss(L, G)
                logs.log("recompiles", lambda: f"Recompiling {name}: {reason}")
                self._mark_dynamic(L, G)
            start = time.perf_counter()
            entry = compile_entry(self.fn, L, self.backend, self.fullgraph, self._wrap_function,
                                  is_resume=self.is_resume, dynamic=self.dynamic, recompile_reason=reason,
                                  graph=graph)
            self.compile_seconds += time.perf_counter() - start
        self.cache.append(entry)  # one append: a lock-free reader sees the entry or not, never half
        return entry

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

    def _wrap_function(self, fn: types.FunctionType, is_resume: bool = False) -> "OptimizedFunction":
        """Resume functions and callees that broke are compiled like this one, once
        each: a recompile of this function that breaks at the same place hands
        work to the same compiled function, so what it learnt (its cache entries,
        its dynamic sizes) is kept.  A resume function is known by its code, a
        callee by identity (two closures of one code are two functions)."""
        key = fn.__code__ if is_resume else id(fn)
        handed = self._handed.get(key)
        if handed is None or (not is_resume and handed.fn is not fn):
            handed = OptimizedFunction(fn, self.backend, False, self.backend_name, self.dynamic.mode,
                                       warn_python_only=False, is_resume=is_resume,
                                       graph_counter=self.graph_counter)
            self._handed[key] = handed
        return handed

    def why_miss(self, L: dict, G: dict) -> str:
        """Which guard of the newest cache entry fails for this frame."""
        if not self.cache:
            return "no cache entry yet"
        entry = self.cache[-1]
        failure = entry.capture.guards.first_failure(L, G, frame_builtins(self.fn), self.fn.__closure__)
        return failure or "all guards pass"

    def reset(self) -> None:
        self.cache.clear()
        self._handed.clear()
        if self._own_counter:  # a function handed work at a break shares its caller's numbering
            self.graph_counter = GraphCounter()
        self.compile_seconds = 0.0
        self._warned_limit = False
        self._told_python_only = False
        self.dynamic = DynamicPolicy(self.dynamic.mode)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # Decorating a method: bind like a function would.
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<minicompile {self.backend_name} {self.fn.__qualname__}, {len(self.cache)} cache entries>"


def reset_all() -> None:
    for f in list(_ALL):
        f.reset()
