"""Derivative rules of the statistics: the nan-reductions, ``ptp``, order statistics, ``interp``.

In:  the emitter ``E``, the gradient ``g`` of the op's output, the output
     ``out`` and the op's canonical arguments ``a`` (see derivatives.py).
Out: the rules of ``nansum``, ``nanmean``, ``nanprod``, ``nanmax``,
     ``nanmin``, ``nanvar``, ``nanstd``, ``nancumsum``, ``nancumprod``,
     ``ptp``, ``median``, ``percentile``, ``quantile`` (and their nan forms)
     and ``interp``, registered in :data:`~.derivatives.DERIVATIVES` on import.

A nan-reduction is its plain reduction over the elements that are not NaN:
its rule is the plain rule with NaNs replaced by the reduction's identity,
and zero gradient where a NaN was.  An order statistic (median, percentile,
quantile) is a weighted sum of two neighbouring elements of the sorted
slice, with weights that depend on the slice's length and ``q`` only: its
gradient is those weights, put back through the sort's permutation.
"""
from __future__ import annotations

import numpy as np

from .derivatives import DERIVATIVES, NonDifferentiable, _keepdims_shape, derivative_rule, is_array


def _not_nan(E, x):
    return E.call("logical_not", E.call("isnan", x))


def _filled(E, x, value: float):
    return E.call("where", E.call("isnan", x), value, x)


def _count(E, x, axis):
    """How many elements of each slice are not NaN (kept dims)."""
    return E.call("sum", E.call("astype", _not_nan(E, x), x.dtype), axis=axis, keepdims=True)


@derivative_rule("nansum")
def _nansum(E, g, out, a):
    grad = DERIVATIVES["sum"](E, g, out, a)["a"]
    return {"a": E.call("where", _not_nan(E, a["a"]), grad, 0.0)}


@derivative_rule("nanmean")
def _nanmean(E, g, out, a):  # each element that is not NaN contributes 1 / (their count)
    x = a["a"]
    grad = E.call("divide", E.call("reshape", g, _keepdims_shape(x.shape, a["axis"])), _count(E, x, a["axis"]))
    return {"a": E.call("where", _not_nan(E, x), grad, 0.0)}


@derivative_rule("nanprod")
def _nanprod(E, g, out, a):  # NaNs count as 1
    x = a["a"]
    grad = DERIVATIVES["prod"](E, g, out, {**a, "a": _filled(E, x, 1.0)})["a"]
    return {"a": E.call("where", _not_nan(E, x), grad, 0.0)}


@derivative_rule("nanmax", "nanmin")
def _nanextremum(E, g, out, a):  # NaN is never the extremum; an all-NaN slice gives nothing
    x = a["a"]
    keep = _keepdims_shape(x.shape, a["axis"])
    hits = E.call("astype", E.call("equal", x, E.call("reshape", out, keep)), x.dtype)
    count = E.call("maximum", E.call("sum", hits, axis=a["axis"], keepdims=True), 1.0)
    return {"a": E.call("multiply", hits, E.call("divide", E.call("reshape", g, keep), count))}


def _nanvar_parts(E, x, axis, ddof):
    """(x minus the mean of the slice's numbers, with 0 at NaNs; 1 / (count - ddof))."""
    present = _not_nan(E, x)
    count = _count(E, x, axis)
    mean = E.call("divide", E.call("sum", _filled(E, x, 0.0), axis=axis, keepdims=True), count)
    centered = E.call("where", present, E.call("subtract", x, mean), 0.0)
    return centered, E.call("divide", 1.0, E.call("maximum", E.call("subtract", count, float(ddof)), 1.0))


@derivative_rule("nanvar")
def _nanvar(E, g, out, a):  # 2 (x - mean) / (count - ddof) over the numbers
    x, axis = a["a"], a["axis"]
    centered, inv = _nanvar_parts(E, x, axis, a["ddof"])
    gk = E.call("reshape", g, _keepdims_shape(x.shape, axis))
    return {"a": E.call("multiply", E.call("multiply", gk, centered), E.call("multiply", inv, 2.0))}


@derivative_rule("nanstd")
def _nanstd(E, g, out, a):  # d std = d var / (2 std)
    x, axis = a["a"], a["axis"]
    centered, inv = _nanvar_parts(E, x, axis, a["ddof"])
    keep = _keepdims_shape(x.shape, axis)
    scale = E.call("reshape", out, keep)
    zero = E.call("equal", scale, 0)  # a constant slice: 0, as std's rule gives (not 0/0)
    share = E.call("where", zero, 0.0, E.call("divide", E.call("reshape", g, keep), E.call("where", zero, 1.0, scale)))
    return {"a": E.call("multiply", E.call("multiply", share, centered), inv)}


@derivative_rule("nancumsum")
def _nancumsum(E, g, out, a):
    grad = DERIVATIVES["cumsum"](E, g, out, a)["a"]
    return {"a": E.call("where", _not_nan(E, a["a"]), grad, 0.0)}


@derivative_rule("nancumprod")
def _nancumprod(E, g, out, a):  # NaNs count as 1
    x = a["a"]
    grad = DERIVATIVES["cumprod"](E, g, out, {**a, "a": _filled(E, x, 1.0)})["a"]
    return {"a": E.call("where", _not_nan(E, x), grad, 0.0)}


@derivative_rule("ptp")
def _ptp(E, g, out, a):  # max - min
    x, axis = a["a"], a["axis"]
    top = E.call("max", x, axis=axis, keepdims=a["keepdims"])
    bottom = E.call("min", x, axis=axis, keepdims=a["keepdims"])
    args = {"a": x, "axis": axis, "keepdims": a["keepdims"]}
    up = DERIVATIVES["max"](E, g, top, args)["a"]
    down = DERIVATIVES["min"](E, g, bottom, args)["a"]
    return {"a": E.call("subtract", up, down)}


# -- order statistics ---------------------------------------------------------------------------

def _as_slices(E, x, axis):
    """x with the reduced axes moved last and merged into one: (kept..., n), and the axes."""
    nd = len(x.shape)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(sorted(int(i) % nd for i in ((axis,) if isinstance(axis, (int, np.integer)) else axis)))
    kept = tuple(i for i in range(nd) if i not in axes)
    moved = E.call("transpose", x, kept + axes) if nd else x
    n = int(np.prod([x.shape[i] for i in axes]))
    return E.call("reshape", moved, tuple(x.shape[i] for i in kept) + (n,)), axes, kept


def _order_statistic(E, g, a, q, nan: bool):
    x = a["a"]
    slices, axes, kept = _as_slices(E, x, a["axis"])
    n = slices.shape[-1]
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64)).reshape(-1)
    # g as (kept..., len(qs)): the q axes lead, keepdims leaves ones where the axes were
    rest = tuple(x.shape[i] for i in kept)
    gq = E.call("reshape", g, (len(qs),) + rest)
    gq = E.call("moveaxis", gq, 0, -1)
    positions = E.call("astype", E.call("arange", n), x.dtype)
    if nan:  # each slice's own count of numbers decides where q falls
        if a.get("method", "linear") != "linear":
            raise NonDifferentiable(f"np.nan{{percentile,quantile}}(method={a['method']!r}) has no derivative rule yet")
        count = E.call("sum", E.call("astype", _not_nan(E, slices), x.dtype), axis=-1, keepdims=True)
        last = E.call("subtract", count, 1.0)
    weights = None
    for j, qj in enumerate(qs):
        if nan:
            v = E.call("multiply", last, float(qj))
            lo = E.call("floor", v)
            hi = E.call("minimum", E.call("add", lo, 1.0), last)
        else:  # where this method puts q among n sorted values (any interpolating method)
            method = a.get("method", "linear")
            v = float(np.quantile(np.arange(n, dtype=np.float64), qj, method=method))
            lo, hi = float(np.floor(v)), float(min(np.floor(v) + 1, n - 1))
        frac = E.call("subtract", v, lo)
        w = E.call("add", E.call("where", E.call("equal", positions, lo), E.call("subtract", 1.0, frac), 0.0),
                   E.call("where", E.call("logical_and", E.call("equal", positions, hi),
                                          E.call("not_equal", positions, lo)), frac, 0.0))
        term = E.call("multiply", E.call("getitem", gq, (Ellipsis, slice(j, j + 1))), w)
        weights = term if weights is None else E.call("add", weights, term)
    order = E.call("argsort", slices, axis=-1, kind="stable")  # NaNs last, as NumPy sorts them
    grad = E.call("put_along_axis", E.call("zeros_like", slices), order, weights, -1)
    moved_shape = rest + tuple(x.shape[i] for i in axes)
    grad = E.call("reshape", grad, moved_shape)
    inverse = tuple(np.argsort(kept + axes).tolist())
    return {"a": E.call("transpose", grad, inverse) if len(x.shape) else E.call("reshape", grad, ())}


@derivative_rule("median")
def _median(E, g, out, a):
    return _order_statistic(E, g, a, 0.5, nan=False)


@derivative_rule("nanmedian")
def _nanmedian(E, g, out, a):
    return _order_statistic(E, g, {**a, "method": "linear"}, 0.5, nan=True)


@derivative_rule("quantile")
def _quantile(E, g, out, a):
    return _order_statistic(E, g, a, a["q"], nan=False)


@derivative_rule("nanquantile")
def _nanquantile(E, g, out, a):
    return _order_statistic(E, g, a, a["q"], nan=True)


@derivative_rule("percentile")
def _percentile(E, g, out, a):
    return _order_statistic(E, g, a, np.asarray(a["q"], dtype=np.float64) / 100.0, nan=False)


@derivative_rule("nanpercentile")
def _nanpercentile(E, g, out, a):
    return _order_statistic(E, g, a, np.asarray(a["q"], dtype=np.float64) / 100.0, nan=True)


# -- piecewise-linear interpolation ------------------------------------------------------------

@derivative_rule("interp")
def _interp(E, g, out, a):  # between xp[i] and xp[i+1]: out = fp[i] (1 - t) + fp[i+1] t
    x, xp, fp = a["x"], a["xp"], a["fp"]
    if is_array(xp) or a["period"] is not None or is_array(a["left"]) or is_array(a["right"]):
        raise NonDifferentiable("np.interp by its sample points xp, left or right (or periodic) "
                                "has no derivative rule yet")
    xs = tuple(np.asarray(xp, dtype=np.float64).reshape(-1).tolist())
    m = len(xs)
    fps = fp if is_array(fp) else E.call("asarray", tuple(np.asarray(fp, np.float64).reshape(-1).tolist()))
    points = E.call("asarray", xs)
    # the segment each x falls in: xp[i] <= x < xp[i+1], clamped to the first and last
    seg = E.call("clip", E.call("subtract", E.call("searchsorted", xs, x, side="right"), 1), 0, max(m - 2, 0))
    nxt = E.call("minimum", E.call("add", seg, 1), m - 1)
    lo, hi = E.call("take", points, seg), E.call("take", points, nxt)
    below, above = E.call("less", x, xs[0]), E.call("greater", x, xs[-1])
    inside = E.call("logical_not", E.call("logical_or", below, above))
    width = E.call("subtract", hi, lo)
    width = E.call("where", E.call("equal", width, 0.0), 1.0, width)
    grads = {}
    if is_array(x):  # the segment's slope inside, flat outside
        slope = E.call("divide", E.call("subtract", E.call("take", fps, nxt), E.call("take", fps, seg)), width)
        grads["x"] = E.call("where", inside, E.call("multiply", g, slope), 0.0)
    if is_array(fp):
        t = E.call("clip", E.call("divide", E.call("subtract", x, lo), width), 0.0, 1.0)
        t = E.call("where", above, 1.0, E.call("where", below, 0.0, t))
        # beyond the ends the end value is the answer, unless left/right replace it
        reach = inside
        if a["left"] is None:
            reach = E.call("logical_or", reach, below)
        if a["right"] is None:
            reach = E.call("logical_or", reach, above)
        gr = E.call("where", reach, g, 0.0)
        total = E.call("zeros", (m,), g.dtype)
        total = E.call("add_at", total, (seg,), E.call("multiply", gr, E.call("subtract", 1.0, t)))
        total = E.call("add_at", total, (nxt,), E.call("multiply", gr, t))
        grads["fp"] = E.call("reshape", total, tuple(fp.shape))
    return grads
