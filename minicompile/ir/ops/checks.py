"""Run-time checks: NumPy's errors that depend on array values.

In:  an array ``a``, a boolean array ``bad``, the name of the exception NumPy
     raises and its message (``np.average``'s weights summing to zero is
     ``check(scale, scale == 0, "ZeroDivisionError", ...)``).
Out: the registered op ``check``: ``a`` again (a new array of the same shape
     and dtype) when no element of ``bad`` is true; otherwise it raises.

Such an error cannot be decided while tracing, so the graph carries the
check: it runs with the graph (an Extern on every backend), and no pass drops
it, whether or not anything reads its result (a check before a write that is
never read still raises, as NumPy's write does).  A graph that raises
runs its function again as Python, where NumPy raises its own error.
"""
from __future__ import annotations

import builtins

from .registry import TensorMeta, array_module, simple_op


def _check(a, bad, error="ValueError", message=""):
    xp = array_module(a)
    if bool(xp.any(bad)):
        raise getattr(builtins, error)(message)
    return xp.array(a, copy=True)  # a new buffer: a backend may reuse a's for something else


def _check_meta(a: TensorMeta, bad, error="ValueError", message="") -> TensorMeta:
    if not (isinstance(error, str) and isinstance(getattr(builtins, error, None), type)):
        raise TypeError(f"check: {error!r} is not the name of a built-in exception")
    return TensorMeta(a.shape, a.dtype)


# It raises by values: dead-code elimination keeps it even when nothing reads it.
simple_op("check", _check, "extern", meta=_check_meta, array_api=True).extra["effectful"] = True
