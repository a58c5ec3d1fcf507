"""NumPy functions that are no single op of the registry, on ``mc.Tensor``.

In:  a NumPy function and its arguments, some of them tensors (from
     ``Tensor.__array_function__``).
Out: :data:`NUMPY_SOURCE`, the functions that run as NumPy's own Python
     source, and :data:`TAPE_FUNCTIONS`, those written here.  Either way the
     function is made of NumPy calls that dispatch back to the tensor, op by op,
     so its gradient comes from the ops' rules.

Only functions known to keep the tape are listed: NumPy's source often
converts its argument with ``np.asarray`` and writes into a fresh float array,
which would turn tensors into plain numbers — a silently cut gradient.  The
sources listed read only shapes and call NumPy functions on the argument as
it is; the functions written here replace those that convert (``gradient``,
``select``, ``append``, ``flipud``, ``fliplr``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

# Their NumPy source works on any array-like: shapes, ``.ndim``, slicing, swapaxes, transpose.
NUMPY_SOURCE = {np.split, np.array_split, np.vsplit, np.hsplit, np.dsplit, np.rollaxis, np.real, np.imag,
                np.ndim, np.shape, np.size}


def _along(axis: int, ndim: int, index: Any) -> tuple:
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """``np.gradient`` with uniform spacings (one number per axis, or one for all)."""
    nd = f.ndim
    axes = tuple(range(nd)) if axis is None else tuple(
        int(a) % nd for a in ((axis,) if isinstance(axis, (int, np.integer)) else axis))
    if any(np.ndim(v) for v in varargs):
        raise TypeError("np.gradient with coordinate arrays is not supported on mc.Tensor (spacings only)")
    if len(varargs) not in (0, 1, len(axes)):
        raise TypeError("invalid number of arguments")
    spacings = [float(v) for v in varargs] if len(varargs) == len(axes) else [float(varargs[0]) if varargs
                                                                               else 1.0] * len(axes)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    out = []
    for d, h in zip(axes, spacings):
        n = f.shape[d]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        at = lambda k: f[_along(d, nd, slice(k, k + 1 if k != -1 else None))]  # noqa: E731
        inner = (f[_along(d, nd, slice(2, None))] - f[_along(d, nd, slice(None, -2))]) / (2.0 * h)
        if edge_order == 1:
            first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
        else:
            first = (-1.5 * at(0) + 2.0 * at(1) - 0.5 * at(2)) / h
            last = (0.5 * at(-3) - 2.0 * at(-2) + 1.5 * at(-1)) / h
        out.append(np.concatenate([first, inner, last], axis=d))
    return tuple(out) if len(out) > 1 else out[0]


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """``np.select``: the first true condition's choice, else ``default`` (a chain of where)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    result = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        result = np.where(cond, choice, result)
    return result


def append(arr: Any, values: Any, axis: Any = None) -> Any:
    if axis is None:
        return np.concatenate((np.ravel(arr), np.ravel(values)), axis=0)
    return np.concatenate((arr, values), axis=axis)


def flipud(m: Any) -> Any:
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return np.flip(m, 0)


def fliplr(m: Any) -> Any:
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return np.flip(m, 1)


TAPE_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.gradient: gradient, np.select: select, np.append: append, np.flipud: flipud, np.fliplr: fliplr,
}
