"""The registry of polyfills, and the markers a polyfill may call besides NumPy.

In:  nothing of the interpreter.
Out: :data:`POLYFILLS` (NumPy function -> its polyfill, filled by the
     :func:`polyfill` decorator), :data:`TRACE_TIME` (filled by
     :func:`at_trace_time`), :func:`require`, :func:`checked`,
     :func:`python_bool` and :func:`python_result`.  All are
     plain Python: a polyfill run eagerly (as the tests run them, against
     NumPy's own function) behaves exactly as the traced one.

* A function decorated with :func:`at_trace_time` computes with Python values
  only (sizes, axes, index lists, dtypes): the interpreter runs it for real
  while tracing, on the constants it is given, and its exception (NumPy's
  ``AxisError``, ``IndexError``...) is the error eager NumPy raises at that
  call.  Given an array of the graph instead, it breaks the graph.
* :func:`require` is NumPy's ``if not ok: raise Error(message)`` on a
  condition known at trace time (shapes, dtypes, Python arguments): traced, a
  failed check is NumPy's error at the user's call.
* :func:`checked` is the same check on array values: traced, it is a
  ``check`` op of the graph, which raises when the graph runs (and the call
  then runs as Python, where NumPy raises its own error).
* :func:`python_bool` turns a 0-d boolean array into the Python bool NumPy's
  function returns (``np.allclose``).  Traced, the value stays in the graph and
  becomes a bool where it leaves it: returned, or at a graph break.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

POLYFILLS: dict[Any, Callable[..., Any]] = {}
# trace-time function -> why it cannot take an array of the graph instead
TRACE_TIME: dict[Callable[..., Any], str] = {}


def polyfill(*numpy_functions: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as what the interpreter traces for each of
    ``numpy_functions`` (skipping any this NumPy does not have: None)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for numpy_function in numpy_functions:
            if numpy_function is not None:
                POLYFILLS[numpy_function] = fn
        return fn

    return register


def at_trace_time(needs: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark the decorated function as run by the interpreter itself, on Python
    values; ``needs`` says what it needs them for, the graph-break reason when an
    array of the graph comes instead ("the indices to delete decide the result's
    shape")."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        TRACE_TIME[fn] = needs
        return fn

    return mark


def python_bool(value: Any) -> bool:
    """``bool(value)`` of a 0-d array: the Python bool a NumPy function returns."""
    return bool(value)


def python_result(python_type: type, value: Any) -> Any:
    """What eager returns where NumPy's function returns a Python value computed
    from arrays (``np.allclose``'s bool): ``python_type(value)`` of a host array;
    a device array as it is, since CuPy's function returns a 0-d device array."""
    return python_type(value) if isinstance(value, (np.ndarray, np.generic)) else value


@at_trace_time("a check on array values: NumPy raises or not depending on the data")
def require(condition: bool, error: type, message: str) -> None:
    """NumPy's ``if not condition: raise error(message)``."""
    if not condition:
        raise error(message)


def checked(value: Any, bad: Any, error: type, message: str) -> Any:
    """``value``, once NumPy's ``if np.any(bad): raise error(message)`` has passed."""
    if np.any(bad):
        raise error(message)
    return value
