"""Derivative rules of reads and writes through an index, scans, conversions and checks.

In:  the emitter ``E``, the gradient ``g`` of the op's output, the output
     ``out`` and the op's canonical arguments ``a`` (see derivatives.py).
Out: the rules of ``take``, ``setitem``, ``copyto``, ``diag``, ``diff``,
     ``cumprod``, ``partition``, ``asarray``, ``linspace`` and ``check``,
     registered in :data:`~.derivatives.DERIVATIVES` on import.

A read through an index sends each output's gradient back to the element it
read (repeated indices add up, as ``np.add.at``); a write sends the written
value the gradient of where it landed and the overwritten elements nothing.
"""
from __future__ import annotations

import numpy as np

from ..ir import indexing
from .derivatives import NonDifferentiable, derivative_rule, is_array


def _ndim(value) -> int:
    return len(value.shape) if is_array(value) else np.ndim(value)


@derivative_rule("take")
def _take(E, g, out, a):  # each output element came from one input element: add them back there
    x, indices, axis = a["a"], a["indices"], a["axis"]
    if a["mode"] != "raise":
        raise NonDifferentiable(f"np.take(mode={a['mode']!r}) has no derivative rule yet")
    if axis is None:  # taken from the flattened array
        flat = E.call("add_at", E.call("zeros", (int(np.prod(x.shape)),), x.dtype), (indices,), g)
        return {"a": E.call("reshape", flat, tuple(x.shape))}
    k = _ndim(indices)
    rest = tuple(x.shape[:axis]) + tuple(x.shape[axis + 1:])
    # np.add.at indexes the first axis: bring the taken axis (and g's index axes) to the front
    front = E.call("moveaxis", g, tuple(range(axis, axis + k)), tuple(range(k))) if k else g
    # (indices,): one index array for the first axis (a bare tuple would index several)
    summed = E.call("add_at", E.call("zeros", (x.shape[axis],) + rest, x.dtype), (indices,), front)
    return {"a": E.call("moveaxis", summed, 0, axis)}


def _writes_each_once(key: tuple, shape: tuple) -> bool:
    """Does the canonical ``key`` name every element it writes once?  (With an index
    array naming one twice, NumPy keeps the last write: the other value is lost.)"""
    if not indexing.is_advanced(key):
        return True
    if any(is_array(k) for k in key) or not all(isinstance(n, int) for n in shape):
        return False  # indices known only when the graph runs
    positions = np.arange(int(np.prod(shape))).reshape(shape)[key]
    return np.unique(positions).size == np.size(positions)


@derivative_rule("setitem")
def _setitem(E, g, out, a):  # x[key] = v: the written places get nothing from x, v gets them
    x, key, value = a["a"], a["key"], a["value"]
    grads = {"a": E.call("setitem", g, key, 0)}
    if is_array(value):
        if not _writes_each_once(key, tuple(x.shape)):
            raise NonDifferentiable("x[index] = v where the index may name an element twice has no "
                                    "derivative rule yet")
        landed = E.sum_to(E.call("getitem", g, key), tuple(value.shape))
        grads["value"] = E.call("astype", landed, value.dtype)
    return grads


@derivative_rule("copyto")
def _copyto(E, g, out, a):  # dst keeps g where nothing was copied; src gets g where it was
    dst, src, where = a["dst"], a["src"], a["where"]
    if where is True:
        grads, copied = {}, g  # all of dst overwritten: zero gradient for it
    else:
        grads = {"dst": E.call("where", where, 0, g)}
        copied = E.call("where", where, g, 0)
    if is_array(src):
        grads["src"] = E.call("astype", E.sum_to(copied, tuple(src.shape)), src.dtype)
    return grads


@derivative_rule("diag")
def _diag(E, g, out, a):  # 1-d v: the diagonal of g; 2-d v: g back on v's diagonal k
    v, k = a["v"], a["k"]
    if len(v.shape) == 1:
        return {"v": E.call("diagonal", g, k)}
    n = int(g.shape[0])
    rows = tuple(range(-k, n - k)) if k < 0 else tuple(range(n))
    cols = tuple(range(n)) if k < 0 else tuple(range(k, n + k))
    return {"v": E.call("setitem", E.call("zeros_like", v), (rows, cols), g)}


@derivative_rule("diff")
def _diff(E, g, out, a):  # out[i] = x[i+1] - x[i], n times: x[j] gets g[j-1] - g[j]
    axis, ndim = a["axis"], len(a["a"].shape)
    before = tuple((1, 0) if i == axis else (0, 0) for i in range(ndim))
    after = tuple((0, 1) if i == axis else (0, 0) for i in range(ndim))
    for _ in range(a["n"]):
        g = E.call("subtract", E.call("pad", g, before), E.call("pad", g, after))
    return {"a": g}


@derivative_rule("cumprod")
def _cumprod(E, g, out, a):
    # d out_i / d x_k = prod_{j < k} x_j * prod_{k < j <= i} x_j (i >= k), so the gradient is
    # grad_k = L_k * S_k: L_k the exclusive cumulative product (out shifted by one, led by
    # a 1) and S_k = sum_{i >= k} g_i prod_{k < j <= i} x_j, which satisfies
    # S_k = g_k + x_{k+1} S_{k+1}.  That recurrence is a suffix scan of the affine maps
    # s -> g_k + x_{k+1} s, composed in log2(n) doubling steps of shifts, products and sums
    # (Hillis and Steele).  No division and no mask on x's values: right at zeros, and
    # differentiated again (a Hessian) by the same ops' rules.
    x, axis = a["a"], a["axis"]
    if axis is None:  # the flattened array's cumulative product
        x, g, out = (E.call("reshape", v, (-1,)) for v in (a["a"], g, out))
        axis = 0
    axis %= len(x.shape)
    n = x.shape[axis]
    if n == 0:
        return {"a": E.call("multiply", a["a"], 0)}
    g = E.call("astype", g, out.dtype)

    def shift(v, d: int, fill: float):  # v[k + d] along the axis (d < 0: v[k - |d|]), fill past the end
        ends = (slice(d, None) if d > 0 else slice(0, n + d),)
        key = (slice(None),) * axis + ends
        widths = ((0, 0),) * axis + (((0, d) if d > 0 else (-d, 0)),) + ((0, 0),) * (len(x.shape) - axis - 1)
        return E.call("pad", E.call("getitem", v, key), widths, constant_values=fill)

    weights, total = shift(E.call("astype", x, out.dtype), 1, 0.0), g  # the maps s -> total + weights * s
    d = 1
    while d < n:
        total = E.call("add", total, E.call("multiply", weights, shift(total, d, 0.0)))
        weights = E.call("multiply", weights, shift(weights, d, 1.0))
        d *= 2
    grad = E.call("multiply", shift(out, -1, 1.0), total)
    return {"a": E.call("astype", E.call("reshape", grad, tuple(a["a"].shape)), a["a"].dtype)}


@derivative_rule("partition")
def _partition(E, g, out, a):
    # out is x with its elements permuted along the axis: each element's gradient goes
    # back to where it came from.  Sorting both (stably) pairs them up: the i-th
    # smallest of out is the i-th smallest of x (ties: equal values, any pairing).
    x, axis = a["a"], a["axis"]
    flat = axis is None
    if flat:
        x, axis = E.call("reshape", x, (-1,)), 0
    from_x = E.call("argsort", x, axis=axis, kind="stable")
    from_out = E.call("argsort", out, axis=axis, kind="stable")
    in_order = E.call("take_along_axis", g, from_out, axis=axis)
    grad = E.call("put_along_axis", E.call("zeros_like", x), from_x, in_order, axis)
    return {"a": E.call("reshape", grad, tuple(a["a"].shape)) if flat else grad}


@derivative_rule("asarray")
def _asarray(E, g, out, a):  # a conversion: the gradient converts back
    x = a["a"]
    if is_array(x):
        return {"a": E.call("astype", g, x.dtype)}
    if isinstance(x, (tuple, list)) and any(is_array(v) for v in x) and not any(
            isinstance(v, (tuple, list)) for v in x):  # a list of arrays, stacked: each its row of g
        return {"a": tuple(E.call("astype", E.call("getitem", g, (i,)), v.dtype) if is_array(v) else None
                           for i, v in enumerate(x))}
    if isinstance(x, (tuple, list)) and any(is_array(v) for v in np.ravel(np.array(x, dtype=object))):
        raise NonDifferentiable("np.asarray of a nested list of arrays has no derivative rule yet")
    return {}


@derivative_rule("linspace")
def _linspace(E, g, out, a):  # out = start + t (stop - start), t = i / (num - 1) fixed fractions
    start, stop = a["start"], a["stop"]
    if not (is_array(start) or is_array(stop)):
        return {}
    axis = a["axis"] % len(g.shape)
    t = E.call("linspace", 0.0, 1.0, a["num"], a["endpoint"])  # NumPy's fractions: 0 for num == 1
    t = E.call("reshape", t, tuple(int(a["num"]) if i == axis else 1 for i in range(len(g.shape))))
    to_stop = E.call("sum", E.call("multiply", g, t), axis=axis)
    to_start = E.call("subtract", E.call("sum", g, axis=axis), to_stop)
    return {"start": E.call("astype", E.sum_to(to_start, tuple(start.shape)), start.dtype) if is_array(start) else None,
            "stop": E.call("astype", E.sum_to(to_stop, tuple(stop.shape)), stop.dtype) if is_array(stop) else None}


@derivative_rule("check")
def _check(E, g, out, a):  # the value passes through unchanged
    return {"a": g}
