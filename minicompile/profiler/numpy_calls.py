"""Recording eager NumPy calls while a profile runs.

Two hooks together see the NumPy calls a Python program makes:

* the public callables of ``numpy``, ``numpy.linalg`` and ``numpy.fft``
  (functions, ufuncs, array-function dispatchers) are replaced, for the
  profile's duration, by recording stand-ins — a ufunc by a proxy that keeps
  its attributes (``np.add.reduce``, ``np.add.at``, ``.nin``);
* ``sys.setprofile`` reports calls of C methods, from which the ones bound
  to an array (``x.sum()``, ``x.reshape(...)``) are kept.

Operators (``x + y``) run NumPy without a call Python can see; their time is
part of the "Python (between calls)" events.  Only the thread that started
the profile is recorded, and a NumPy call made inside another recorded one
(NumPy's own implementation) is not recorded again.  Capture (``dynamo``)
must read the real NumPy, so :meth:`NumpyRecorder.suspended` puts it back
while a compiled function compiles.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import threading
import types
from time import perf_counter_ns
from typing import Any, Callable, Iterator

import numpy as np

from .device import DeviceTimer

MODULES = {"numpy": "np", "numpy.linalg": "np.linalg", "numpy.fft": "np.fft"}


def _recordable(value: Any) -> bool:
    return isinstance(value, (np.ufunc, types.FunctionType, types.BuiltinFunctionType)) \
        or type(value).__name__ == "_ArrayFunctionDispatcher"


class _UfuncProxy:
    """A ufunc that records its calls; every other attribute is the ufunc's own."""

    def __init__(self, ufunc: np.ufunc, name: str, recorder: "NumpyRecorder"):
        self._ufunc, self._name, self._recorder = ufunc, name, recorder

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._recorder.timed(self._name, self._ufunc, args, kwargs)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._ufunc, attr)
        if attr in ("reduce", "accumulate", "reduceat", "outer", "at"):
            name = f"{self._name}.{attr}"
            return lambda *args, **kwargs: self._recorder.timed(name, value, args, kwargs)
        return value

    def __repr__(self) -> str:
        return repr(self._ufunc)


class NumpyRecorder:
    """Calls ``record(name, start_ns, end_ns)`` for each top-level NumPy call."""

    def __init__(self, record: Callable[[str, int, int], None], device: DeviceTimer | None = None):
        self.record = record
        self.device = device  # times the calls given CuPy arrays on the GPU too
        self.owner = threading.get_ident()
        self.depth = 0
        # (module, attribute, the real value, its stand-in)
        self._patched: list[tuple[types.ModuleType, str, Any, Any]] = []
        self._hook_off = 0  # nesting of quiet()/suspended() blocks
        self._suspended = 0  # nesting of suspended() blocks
        self._running = False
        self._methods: list[tuple[Any, str, int]] = []  # open C method calls: (frame, name, start)
        self._previous_profile: Any = None

    # -- the stand-ins -------------------------------------------------------------

    def timed(self, name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
        # A stand-in someone kept (``from numpy import exp`` run during the profile)
        # stays a plain pass-through once the profile is over.
        if not self._running or self.depth or threading.get_ident() != self.owner:
            return fn(*args, **kwargs)
        self.depth += 1
        on_device = self.device.begin(args, kwargs) if self.device is not None else None
        start = perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            end = perf_counter_ns()
            self.depth -= 1
            self.record(name, start, end)
            if on_device is not None:
                self.device.end(name, "device", on_device, end)

    def _stand_in(self, name: str, value: Any) -> Any:
        if isinstance(value, np.ufunc):
            return _UfuncProxy(value, name, self)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.timed(name, value, args, kwargs)

        call.__name__ = call.__qualname__ = getattr(value, "__name__", name)
        call.__doc__ = getattr(value, "__doc__", None)
        call.__wrapped__ = value
        return call

    def _on_profile(self, frame: Any, event: str, arg: Any) -> None:
        # A C call returns before its frame makes another, so the calling frame pairs
        # c_call with its c_return (the bound method object itself may differ: 3.12+).
        if event == "c_call":
            owner = getattr(arg, "__self__", None)
            if self.depth == 0 and isinstance(owner, (np.ndarray, np.generic)):
                self.depth += 1
                self._methods.append((frame, arg.__name__, perf_counter_ns()))
        elif event in ("c_return", "c_exception") and self._methods and self._methods[-1][0] is frame:
            _, name, start = self._methods.pop()
            self.depth -= 1
            self.record(f"ndarray.{name}", start, perf_counter_ns())

    # -- switching on and off ------------------------------------------------------------

    def _patch(self) -> None:
        for module_name, prefix in MODULES.items():
            module = importlib.import_module(module_name)
            for attr, value in list(vars(module).items()):
                if attr.startswith("_") or not _recordable(value):
                    continue
                self._patched.append((module, attr, value, self._stand_in(f"{prefix}.{attr}", value)))
        self._set(stand_ins=True)

    def _set(self, stand_ins: bool) -> None:
        for module, attr, real, stand_in in self._patched:
            setattr(module, attr, stand_in if stand_ins else real)

    def start(self) -> None:
        self._patch()
        self._previous_profile = sys.getprofile()
        self._running = True
        sys.setprofile(self._on_profile)

    def stop(self) -> None:
        self._running = False
        sys.setprofile(self._previous_profile)
        self._set(stand_ins=False)
        self._patched.clear()
        self._methods.clear()

    @contextlib.contextmanager
    def _hook_paused(self) -> Iterator[None]:
        self._hook_off += 1
        if self._running:
            sys.setprofile(None)
        try:
            yield
        finally:
            self._hook_off -= 1
            if not self._hook_off and self._running:
                sys.setprofile(self._on_profile)

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """No C-method hook (compiled code runs at full speed); stand-ins stay."""
        with self._hook_paused():
            yield

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """The real NumPy back in place (capture reads it), no hook at all."""
        with self._hook_paused():
            self._suspended += 1
            self._set(stand_ins=False)
            try:
                yield
            finally:
                self._suspended -= 1
                if not self._suspended:
                    self._set(stand_ins=True)
