"""Timing compiled calls: guard check, compile, wrapper, each kernel and extern call.

While a profile runs, :class:`~minicompile.dynamo.eval_frame.OptimizedFunction`
hands each call to :func:`call_compiled` (its only test when no profile runs).
That path does what the plain call does — bind, check guards, run the entry or
compile a new one — with a timed event around each part.

Kernel-level events come from an *instrumented twin* of the generated wrapper:
the same code object, executed against a copy of its globals in which every
kernel (C++ through ctypes, or a Triton launcher) and every ``_op_*`` NumPy
call is wrapped by a timer.  The twin replaces the compiled graph's call for
the profile's duration and the original is put back when it ends, so code
compiled or run outside a profile never sees a timer.  The Spyre backend runs
in a simulator: its programs are shown on their own track, each as long as
its simulated cycle count at the card's clock.
"""
from __future__ import annotations

import types
from time import perf_counter_ns
from typing import Any, Callable

from . import hooks
from .events import COMPILE, SPYRE


def _timer(name: str, cat: str, fn: Callable) -> Callable:
    """``fn`` timed on the host, and on the device when its arguments are CuPy arrays."""
    def timed(*args: Any, **kwargs: Any) -> Any:
        prof = hooks.active
        if prof is None:
            return fn(*args, **kwargs)
        on_device = prof.device.begin(args, kwargs)
        start = perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            end = perf_counter_ns()
            prof.add(name, cat, start, end)
            if on_device is not None:
                prof.device.end(name, "device", on_device, end)

    return timed


def _instrumented_wrapper(call: types.FunctionType, kernels: list[str]) -> types.FunctionType:
    """The wrapper ``call`` run against globals whose kernels and NumPy calls are timed."""
    inner = getattr(call, "__wrapped__", None)
    if inner is not None and call.__closure__:
        # A decorator's closure around the generated wrapper (the caching
        # allocator's ``call_from_cache``): the same closure around a timed twin.
        timed = _instrumented_wrapper(inner, kernels)
        cells = tuple(types.CellType(timed) if c.cell_contents is inner else c for c in call.__closure__)
        return types.FunctionType(call.__code__, call.__globals__, call.__name__, call.__defaults__, cells)
    namespace = dict(call.__globals__)
    for name in kernels:
        if name in namespace:
            namespace[name] = _timer(name, "kernel", namespace[name])
    for key in list(namespace):
        if key.startswith("_op_"):
            namespace[key] = _timer(f"np.{key[len('_op_'):]}", "extern", namespace[key])
    return types.FunctionType(call.__code__, namespace, call.__name__, call.__defaults__, call.__closure__)


class Instrumenter:
    """Swaps instrumented wrappers into compiled objects and puts the originals back."""

    def __init__(self) -> None:
        self._swapped: list[tuple[Any, Any]] = []
        self._seen: set[int] = set()

    def instrument(self, compiled: Any) -> None:
        if compiled is None or id(compiled) in self._seen:
            return
        forward = getattr(compiled, "forward", None)
        if forward is not None and hasattr(compiled, "partition"):  # an aot.AotFunction
            self.instrument(forward)
            self.instrument(getattr(compiled, "_backward", None))  # exists after a first backward
            return
        if hasattr(compiled, "frozen"):  # ir.freezing's wrapper around the backend's result
            self.instrument(getattr(compiled, "compiled", None))
            return
        if hasattr(compiled, "recordings"):  # mode="reduce-overhead": each replay, one launch
            self._seen.add(id(compiled))
            self._swapped.append((compiled, None))
            compiled._replay = _timer("CUDA graph replay", "kernel", compiled._replay)
            self.instrument(compiled.compiled)  # the calls that run plainly
            return
        call = getattr(compiled, "_call", None)
        if isinstance(call, types.FunctionType) and isinstance(getattr(compiled, "kernels", None), list):
            self._seen.add(id(compiled))
            self._swapped.append((compiled, call))
            # Loop kernels and the matmuls generated as C++ (``extern_kernels``) alike.
            kernels = compiled.kernels + list(getattr(compiled, "extern_kernels", ()))
            compiled._call = _instrumented_wrapper(call, kernels)

    def restore(self) -> None:
        for compiled, call in reversed(self._swapped):
            if call is None:
                del compiled._replay  # the class's method again
            else:
                compiled._call = call
        self._swapped.clear()
        self._seen.clear()


def _spyre_programs(compiled: Any) -> list:
    """The Spyre compiled graphs inside ``compiled`` (itself, or an AotFunction's forward)."""
    found = []
    for obj in (compiled, getattr(compiled, "forward", None)):
        if obj is not None and hasattr(obj, "program") and hasattr(obj, "report"):
            found.append(obj)
    return found


def call_compiled(prof: Any, fn: Any, args: tuple, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)`` for an OptimizedFunction, timed part by part."""
    label = f"{fn.fn.__qualname__} [{fn.backend_name}]"
    start = perf_counter_ns()
    with prof.numpy_recorder.quiet():
        try:
            L = fn._bind(*args, **kwargs)
        except TypeError:
            return fn.fn(*args, **kwargs)
        G = fn.fn.__globals__
        entry = fn.lookup(L, G)
        checked = perf_counter_ns()
        prof.add(f"guards {fn.fn.__qualname__}", "guard", start, checked,
                 {"hit": entry is not None, "cache_entries": len(fn.cache)})
        try:
            if entry is None:
                entries = len(fn.cache)
                with prof.numpy_recorder.suspended():  # capture must see the real NumPy
                    result = fn._miss(L, G, args, kwargs)
                if len(fn.cache) == entries:  # past the recompile limit: ran eagerly
                    prof.add(f"eager run {fn.fn.__qualname__} (recompile limit)", "wrapper", checked,
                             perf_counter_ns())
                    return result
                new = fn.cache[-1]
                prof.add(f"compile + first run {fn.fn.__qualname__}", "compile", checked, perf_counter_ns(),
                         {"capture_ms": round(new.capture.seconds * 1e3, 3),
                          "backend_compile_ms": round(new.compile_seconds * 1e3, 3)}, track=COMPILE)
                return result
            prof.instrumenter.instrument(entry.compiled)
            # NumPy called by compiled code (externs, the wrapper's asarray) is part of
            # its events, not eager code; an entry that runs the function eagerly
            # (capture failed) shows its NumPy calls.
            recorder = prof.numpy_recorder
            quiet = entry.compiled is not None
            recorder.depth += quiet
            try:
                result = entry.run(L, G, args, kwargs)
            finally:
                recorder.depth -= quiet
            end = perf_counter_ns()
            prof.add(f"run {fn.fn.__qualname__}", "wrapper", checked, end)
            for spyre in _spyre_programs(entry.compiled):
                _add_spyre_programs(prof, spyre, checked)
            return result
        finally:
            prof.add(label, "compiled", start, perf_counter_ns())


def _add_spyre_programs(prof: Any, compiled: Any, start: int) -> None:
    report = compiled.report
    if report is None:
        return
    cursor = start
    for name, r in report.steps:
        dur = max(1, round(r.total_cycles / r.clock_hz * 1e9))
        prof.add(name, "spyre", cursor, cursor + dur,
                 {"cycles": r.total_cycles, "bottleneck": r.bottleneck,
                  "matrix_utilization": round(r.matrix_utilization, 4),
                  "dram_bytes": r.dram_bytes_read + r.dram_bytes_written}, track=SPYRE)
        cursor += dur
