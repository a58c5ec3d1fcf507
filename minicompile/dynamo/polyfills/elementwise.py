"""Elementwise functions and comparisons of whole arrays, written as the ufuncs they are made of.

In:  the arguments of the user's call, as NumPy takes them.
Out: registered polyfills for ``np.sinc``, ``np.angle``, ``np.real``,
     ``np.imag``, ``np.isneginf``, ``np.isposinf``, ``np.isreal``,
     ``np.iscomplex`` and ``np.select`` (an array, or a NumPy scalar where
     NumPy gives one), and for ``np.array_equal``, ``np.array_equiv`` and
     ``np.allclose`` (a Python bool).

Each follows NumPy's own source step by step (the same ufuncs in the same
order, the same Python-scalar arguments), so dtypes (NEP 50), rounding and
errors agree by construction, complex arrays included (``np.real(z)`` is
``z.real``, a view).  ``np.isreal``/``np.iscomplex`` of a real array are
answered at trace time (see numpy_calls.BY_TYPE); of a complex one they
compare its imaginary part here.
"""
from __future__ import annotations

import numpy as np

from .base import at_trace_time, polyfill, python_bool, require


@polyfill(np.sinc)
def sinc(x):
    x = np.asarray(x)
    x = np.pi * x
    # sin(y) / y at y = eps instead of 0: 1 to the last bit, with no 0/0
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = np.where(x, x, eps)
    return np.sin(y) / y


@polyfill(np.angle)
def angle(z, deg=False):
    z = np.asarray(z)
    if z.dtype.kind == "c":
        zimag, zreal = z.imag, z.real
    else:
        zimag, zreal = 0, z  # a real z has no imaginary part: 0 or pi
    a = np.arctan2(zimag, zreal)
    if deg:
        a *= 180 / np.pi
    return a


@polyfill(np.real)
def real(val):
    if isinstance(val, (list, tuple)):
        val = np.asarray(val)
    return val.real


@polyfill(np.imag)
def imag(val):
    if isinstance(val, (list, tuple)):
        val = np.asarray(val)
    return val.imag


@polyfill(np.isneginf)
def isneginf(x, out=None):
    return np.logical_and(np.isinf(x), np.signbit(x), out=out)


@polyfill(np.isposinf)
def isposinf(x, out=None):
    return np.logical_and(np.isinf(x), ~np.signbit(x), out=out)


@polyfill(np.isreal)
def isreal(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.imag == 0
    return np.zeros_like(x) == 0  # NumPy's imag(x) == 0: the imaginary part of a real array is zeros


@polyfill(np.iscomplex)
def iscomplex(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.imag != 0
    return np.zeros_like(x, dtype=bool)[()]  # [()]: a NumPy scalar for a 0-d x


def _python_number(value) -> bool:
    """NumPy's ``type(value) in (int, float, complex)``: a weak Python scalar (not a
    bool, not a NumPy scalar, which are strong)."""
    return isinstance(value, (int, float, complex)) and not isinstance(value, (bool, np.generic))


@polyfill(np.select)
def select(condlist, choicelist, default=0):
    require(len(condlist) == len(choicelist), ValueError,
            "list of cases must be same length as list of conditions")
    require(len(condlist) != 0, ValueError, "select with an empty condition list is not possible")
    # Python numbers stay weak for the result dtype (NEP 50), then become arrays.
    conds = [np.asarray(c) for c in condlist]
    like = conds[0]  # arrays made here are made where the conditions are (CuPy's select: on the device)
    choices = [c if _python_number(c) else np.asarray(c, like=like) for c in choicelist]
    choices.append(default if _python_number(default) else np.asarray(default, like=like))
    dtype = np.result_type(*choices)
    cond_shape = np.broadcast_shapes(*[c.shape for c in conds])
    choice_shape = np.broadcast_shapes(*[np.shape(c) for c in choices])
    for i, cond in enumerate(conds):
        require(cond.dtype == np.bool_, TypeError, f"invalid entry {i} in condlist: should be boolean ndarray")
    result_shape = cond_shape if len(choice_shape) == 0 else np.broadcast_shapes(cond_shape, choice_shape)
    # NumPy fills with the default as an array (an int64 -1 casts to uint8 as 255,
    # unsafely), then writes each choice where its condition holds, last to first.
    result = np.full(result_shape, np.asarray(choices[-1], like=like), dtype)
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        np.copyto(result, np.asarray(choice, like=like), where=cond)
    return result


@polyfill(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    a1, a2 = np.asarray(a1), np.asarray(a2)
    if a1.shape != a2.shape:
        return False
    if not equal_nan or (a1.dtype.kind in "biu" and a2.dtype.kind in "biu"):
        return python_bool((a1 == a2).all())
    # NumPy: NaNs at the same places, and equal elsewhere
    return python_bool(((a1 == a2) | (np.isnan(a1) & np.isnan(a2))).all())


@at_trace_time("the shapes of np.array_equiv's arguments")
def _broadcastable(shape1: tuple, shape2: tuple) -> bool:
    try:
        np.broadcast_shapes(shape1, shape2)
    except ValueError:
        return False
    return True


@polyfill(np.array_equiv)
def array_equiv(a1, a2):
    a1, a2 = np.asarray(a1), np.asarray(a2)
    if not _broadcastable(a1.shape, a2.shape):
        return False
    return python_bool((a1 == a2).all())


@polyfill(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return python_bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))
