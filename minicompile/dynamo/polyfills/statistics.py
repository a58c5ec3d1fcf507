"""Statistics, differences and sequences: averages, covariance, the trapezoid rule, ranges.

In:  the arguments of the user's call, as NumPy takes them.
Out: registered polyfills for ``np.average``, ``np.cov``, ``np.corrcoef``,
     ``np.trapezoid``, ``np.ediff1d``, ``np.vander``, ``np.logspace`` and
     ``np.geomspace``.

Each is NumPy's own algorithm: the same reductions in the same order (``cov``
multiplies by ``1 / fact`` where a division would round differently), the
same in-place casts (``c *= ...``), Python's left-to-right ``sum`` where NumPy
calls it.  NumPy's checks on array values (weights that sum to zero, negative
weights, a geometric sequence through zero) become ``check`` ops, which raise
when the graph runs; NumPy's "degrees of freedom <= 0" warning is not given
(compiled code gives no floating-point warnings either).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from .base import at_trace_time, checked, polyfill, require


@at_trace_time("the axis of np.average")
def _axes(axis, ndim: int) -> tuple[int, ...]:
    return tuple(normalize_axis_tuple(axis, ndim, argname="axis"))


@at_trace_time("the axis of np.average")
def _argsort(values: tuple[int, ...]) -> list[int]:
    return sorted(range(len(values)), key=values.__getitem__)


def _ndmin(a, ndim: int):
    """``np.array(a, ndmin=ndim)``: leading axes of size 1 up to ``ndim``."""
    return a.reshape((1,) * (ndim - a.ndim) + a.shape) if a.ndim < ndim else a


@polyfill(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    a = np.asarray(a)
    if axis is not None:
        axis = _axes(axis, a.ndim)
    keepdims = False if keepdims is np._NoValue else keepdims
    if weights is None:
        avg = a.mean(axis, keepdims=keepdims)
        avg_as_array = np.asarray(avg)
        scl = avg_as_array.dtype.type(a.size / avg_as_array.size)
    else:
        wgt = np.asarray(weights)
        if a.shape != wgt.shape:
            require(axis is not None, TypeError, "Axis must be specified when shapes of a and weights differ.")
            require(wgt.shape == tuple(a.shape[ax] for ax in axis), ValueError,
                    "Shape of weights must be consistent with shape of a along specified axis.")
            # the weights' axes, in a's order, with size-1 axes between: they broadcast
            wgt = wgt.transpose(_argsort(axis))
            wgt = wgt.reshape(tuple(s if ax in axis else 1 for ax, s in enumerate(a.shape)))
        if a.dtype.kind in "biu":
            result_dtype = np.result_type(a.dtype, wgt.dtype, "f8")
        else:
            result_dtype = np.result_type(a.dtype, wgt.dtype)
        scl = wgt.sum(axis=axis, dtype=result_dtype, keepdims=keepdims)
        scl = checked(scl, scl == 0.0, ZeroDivisionError, "Weights sum to zero, can't be normalized")
        # np.multiply(a, wgt, dtype=result_dtype): both cast to it, then multiplied
        product = np.multiply(a.astype(result_dtype), wgt.astype(result_dtype))
        avg = avg_as_array = product.sum(axis, keepdims=keepdims) / scl
    if returned:
        if scl.shape != avg_as_array.shape:
            scl = np.full(avg_as_array.shape, scl)  # NumPy's broadcast_to(scl, ...).copy()
        return avg, scl
    return avg


@polyfill(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    require(ddof is None or ddof == int(ddof), ValueError, "ddof must be integer")
    m = np.asarray(m)
    require(m.ndim <= 2, ValueError, "m has more than 2 dimensions")
    if y is not None:
        y = np.asarray(y)
        require(y.ndim <= 2, ValueError, "y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m, np.float64) if y is None else np.result_type(m, y, np.float64)
    X = _ndmin(m.astype(dtype), 2)  # NumPy's np.array(m, dtype=...): a copy, written below
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return np.asarray([], like=m).reshape(0, 0)
    if y is not None:
        y = _ndmin(np.asarray(y, dtype=dtype), 2)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        X = np.concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        fweights = np.asarray(fweights, dtype=float)  # the caller's array itself, if float64
        w = checked(fweights, fweights != np.around(fweights), TypeError, "fweights must be integer")
        require(w.ndim <= 1, RuntimeError, "cannot handle multidimensional fweights")
        require(w.shape[0] == X.shape[1], RuntimeError, "incompatible numbers of samples and fweights")
        w = checked(w, w < 0, ValueError, "fweights cannot be negative")
    if aweights is not None:
        aweights = np.asarray(aweights, dtype=float)
        require(aweights.ndim <= 1, RuntimeError, "cannot handle multidimensional aweights")
        require(aweights.shape[0] == X.shape[1], RuntimeError, "incompatible numbers of samples and aweights")
        aweights = checked(aweights, aweights < 0, ValueError, "aweights cannot be negative")
        if w is None:
            w = aweights
        else:
            w = w * aweights
            # NumPy's w *= aweights: in place, into the caller's fweights if it is a float64 array
            fweights *= aweights
    avg, w_sum = np.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * sum(w * aweights) / w_sum  # Python's sum, left to right, as NumPy's
    # NumPy warns and uses 0.0
    fact = (0.0 if fact <= 0 else fact) if w is None else np.where(fact <= 0, 0.0, fact)
    X -= avg[:, None]
    X_T = X.T if w is None else (X * w).T
    c = np.dot(X, X_T)
    c *= np.true_divide(1, fact)
    return c.squeeze()


@polyfill(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = np.cov(x, y, rowvar, dtype=dtype)
    if c.ndim not in (1, 2):  # NumPy's np.diag refuses a scalar covariance
        return c / c  # nan if c is nan, inf or 0; else 1
    stddev = np.sqrt(np.diag(c))
    c /= stddev[:, None]
    c /= stddev[None, :]
    return np.clip(c, -1, 1)


@at_trace_time("the axis of np.trapezoid")
def _along(ndim: int, axis: int, value) -> tuple:
    """``[fill] * ndim`` with ``value`` at ``axis``, as NumPy builds it (an IndexError
    for an axis out of range)."""
    fill = 1 if isinstance(value, int) else slice(None)
    items = [fill] * ndim
    items[axis] = value
    return tuple(items)


@polyfill(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = np.asarray(y)
    if x is None:
        d = dx
    else:
        x = np.asarray(x)
        if x.ndim == 1:
            d = np.diff(x)
            d = d.reshape(_along(y.ndim, axis, d.shape[0]))
        else:
            d = np.diff(x, axis=axis)
    upper = y[_along(y.ndim, axis, slice(1, None))]
    lower = y[_along(y.ndim, axis, slice(None, -1))]
    return (d * (upper + lower) / 2.0).sum(axis)


def _edge(values, dtype, name: str, like):
    values = np.asarray(values, like=like)
    require(np.can_cast(values, dtype, casting="same_kind"), TypeError,
            f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
    # NumPy writes them into its result: a cast to ary's dtype
    return values.ravel().astype(dtype)


@polyfill(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    ary = np.asarray(ary).ravel()
    if to_begin is None and to_end is None:
        return ary[1:] - ary[:-1]
    parts = [] if to_begin is None else [_edge(to_begin, ary.dtype, "to_begin", ary)]
    parts.append(np.subtract(ary[1:], ary[:-1]))
    if to_end is not None:
        parts.append(_edge(to_end, ary.dtype, "to_end", ary))
    # NumPy fills an empty array with the pieces; joining them is the same array
    return np.concatenate(parts)


@polyfill(np.vander)
def vander(x, N=None, increasing=False):
    x = np.asarray(x)
    require(x.ndim == 1, ValueError, "x must be a one-dimensional array or sequence.")
    if N is None:
        N = x.shape[0]
    dtype = np.promote_types(x.dtype, int)
    # Columns x**0, then NumPy's multiply.accumulate of x in the result's dtype:
    # x, x*x, x*x*x.  Joined, not written into an empty array, so the arrays are
    # made where x is (on the device for CuPy's) and an mc.Tensor keeps its tape.
    columns = [np.ones_like(x, dtype, shape=(x.shape[0], min(N, 1)))]
    if N > 1:
        powers = np.cumprod(np.broadcast_to(x.astype(dtype)[:, None], (x.shape[0], N - 1)), axis=1)
        columns.append(powers if increasing else powers[:, ::-1])
    return np.concatenate(columns if increasing else columns[::-1], axis=1)


@polyfill(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not isinstance(base, (float, int)) and np.ndim(base):
        ndmax = len(np.broadcast_shapes(np.shape(start), np.shape(stop), np.shape(base)))
        start, stop, base = (_ndmin(np.asarray(a, like=base), ndmax) for a in (start, stop, base))
        base = np.expand_dims(base, axis=axis)
    elif not isinstance(base, (float, int)):  # a 0-d array: np.logspace dispatches on it
        start = np.asarray(start, like=base)
    y = np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if dtype is None:
        return np.power(base, y)
    return np.power(base, y).astype(dtype)  # NumPy's copy=False: the same values


_THROUGH_ZERO = "Geometric sequence cannot include zero"


def _nonzero(value):
    """NumPy's ``any(value == 0)`` check: at trace time on a Python number, else when the graph runs."""
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        require(value != 0, ValueError, _THROUGH_ZERO)
        return np.asarray(value)
    value = np.asarray(value)
    return checked(value, value == 0, ValueError, _THROUGH_ZERO)


@polyfill(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    start = _nonzero(start)
    stop = _nonzero(stop)
    # NumPy's result_type(start, stop, float(num), zeros((), dtype)): the dtype is strong
    dt = np.result_type(start, stop, float(num), np.float64 if dtype is None else dtype)
    dtype = dt if dtype is None else np.dtype(dtype)
    start = start.astype(dt)
    stop = stop.astype(dt)
    out_sign = np.sign(start)
    start /= out_sign
    stop = stop / out_sign
    result = np.logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    # the ends are start and stop themselves (10 ** log10(x) need not be x): NumPy
    # writes them into result[0] and result[-1]; joining the pieces is the same array
    if num > 0:
        row = result.shape[1:]
        first = np.broadcast_to(start, row)[None]
        if num > 1 and endpoint:
            result = np.concatenate((first, result[1:-1], np.broadcast_to(stop, row)[None]))
        else:
            result = np.concatenate((first, result[1:]))
    result *= out_sign
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return result.astype(dtype)  # NumPy's copy=False: the same values
