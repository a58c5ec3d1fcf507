"""Reductions: ops that fold axes away (``sum``, ``var``, ``argmax``, ``any``, ``nanmax``...).

In:  an array, ``axis`` (int, tuple, negative, or None), ``keepdims``, and
     per op ``dtype`` or ``ddof``.
Out: registered :class:`OpDef` entries, all of kind ``reduction`` and all
     returning a NumPy scalar for a 0-d result, as NumPy does (but for a
     median or percentile with ``keepdims=True``: a 0-d ndarray).

Canonical form: ``axis`` becomes the sorted tuple of reduced axes (``None`` ->
all of them; ``()`` for a 0-d array, whichever axis NumPy accepted there),
``keepdims`` a bool, ``dtype`` a ``np.dtype`` or None.  The shape rule follows
from the axes; the dtype rule is NumPy's own answer on a one-element sample of
the same rank (``sum(int32) -> int64``, ``mean(int) -> float64``, ``any ->
bool``).  Reductions without an identity (max, argmax, ptp, nanmax...) refuse
an empty reduced axis with NumPy's ValueError.

``argmax``/``argmin`` are different: their ``axis`` is one axis or None, and
None means "index into the flattened array", so it stays None (as does the
axis of a 0-d array, whose flattened index is the only answer).
"""
from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import numpy as np

from .. import dtypes as dt
from .registry import (OpDef, TensorMeta, array_module, normalize_axes, normalize_axis, register, simple_op,
                       without_defaults)

P = inspect.Parameter


def _reduction(name: str, fn: Callable, extra: dict[str, Any], identity: bool) -> OpDef:
    """``fn(a, axis=None, <extra params>, keepdims=False)`` as a registered reduction.

    ``extra`` maps the op's own parameters (``dtype``, ``ddof``) to their
    defaults, in NumPy's order.
    """
    names = ("a", "axis", *extra, "keepdims")
    defaults = {"axis": None, **extra, "keepdims": False}
    params = [P("a", P.POSITIONAL_OR_KEYWORD)] + [
        P(n, P.POSITIONAL_OR_KEYWORD, default=defaults[n]) for n in names[1:]
    ]

    signature = inspect.Signature(params)

    def impl(*args: Any, **kwargs: Any) -> Any:
        # By keyword: NumPy's positional order has ``out`` where ours has ``keepdims``.
        return fn(**without_defaults(signature.bind(*args, **kwargs).arguments, defaults))

    impl.__signature__ = signature  # type: ignore[attr-defined]
    impl.__name__ = name

    def canonicalize(args: dict[str, Any]) -> dict[str, Any]:
        a = args["a"]
        if a.ndim == 0 and args["axis"] is not None:
            axis = _zero_d_axes(fn, args["axis"], a.dtype)
        else:
            axis = normalize_axes(args["axis"], a.ndim)
        args = {**args, "axis": axis, "keepdims": bool(args["keepdims"])}
        if args.get("dtype") is not None:
            args["dtype"] = np.dtype(args["dtype"])
        return args

    def meta(a: TensorMeta, axis: tuple[int, ...], keepdims: bool, **rest: Any) -> TensorMeta:
        if not identity and any(a.shape[i] == 0 for i in axis):
            raise ValueError(
                f"zero-size array to reduction operation {name} which has no identity"
            )
        shape = tuple(
            (1 if keepdims else None) if i in axis else n for i, n in enumerate(a.shape)
        )
        sample = np.ones((1,) * a.ndim, dtype=a.dtype)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # var of one element with ddof=1: nan, by design
            out_dtype = np.asarray(fn(sample, axis=axis, keepdims=keepdims, **rest)).dtype
        return TensorMeta(tuple(n for n in shape if n is not None), dt.check_supported(out_dtype))

    return register(OpDef(name, "reduction", impl, meta, canonicalize=canonicalize, scalar_result=True))


def _zero_d_axes(fn: Callable, axis: Any, dtype: np.dtype) -> tuple[int, ...]:
    """The canonical axes of a reduction of a 0-d array: none (there is nothing to fold).

    NumPy is not uniform here: the ufunc reductions (sum, max, any, ptp, the
    nan forms) check ``axis`` against one dimension, so ``axis=0`` and
    ``axis=-1`` are accepted, while mean, var and std check it against none
    and raise AxisError.  NumPy itself tells which, on a 0-d sample.
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(np.ones((), dtype), axis=axis)
    return ()


# name -> (NumPy function, extra parameters with defaults, has an identity)
REDUCTIONS: dict[str, tuple[Callable, dict[str, Any], bool]] = {
    # the five the inductor lowers to loops
    "sum": (np.sum, {"dtype": None}, True),
    "prod": (np.prod, {"dtype": None}, True),
    "mean": (np.mean, {"dtype": None}, True),
    "max": (np.max, {}, False),
    "min": (np.min, {}, False),
    # the rest run as Externs
    "var": (np.var, {"dtype": None, "ddof": 0}, True),
    "std": (np.std, {"dtype": None, "ddof": 0}, True),
    "any": (np.any, {}, True),
    "all": (np.all, {}, True),
    "ptp": (np.ptp, {}, False),
    "nansum": (np.nansum, {"dtype": None}, True),
    "nanprod": (np.nanprod, {"dtype": None}, True),
    "nanmean": (np.nanmean, {"dtype": None}, True),
    "nanmax": (np.nanmax, {}, False),
    "nanmin": (np.nanmin, {}, False),
    "nanvar": (np.nanvar, {"dtype": None, "ddof": 0}, True),
    "nanstd": (np.nanstd, {"dtype": None, "ddof": 0}, True),
    "count_nonzero": (np.count_nonzero, {}, True),
}
for _name, (_fn, _extra, _identity) in REDUCTIONS.items():
    _reduction(_name, _fn, _extra, _identity)


def _arg_reduction(name: str, fn: Callable) -> OpDef:
    def impl(a, axis=None, keepdims=False):
        return fn(a, axis=axis, keepdims=keepdims)

    impl.__name__ = name

    def canonicalize(args: dict[str, Any]) -> dict[str, Any]:
        axis, ndim = args["axis"], args["a"].ndim
        if axis is not None:
            # NumPy reads a 0-d array as its flattened 1-d self (axis 0 or -1), whose
            # only index is 0 — the answer of axis=None.  None also keeps the canonical
            # axis one that exists, which is all the shape rule and lowering index.
            axis = normalize_axis(axis, max(ndim, 1))
            if ndim == 0:
                axis = None
        return {**args, "axis": axis, "keepdims": bool(args["keepdims"])}

    def meta(a: TensorMeta, axis: int | None, keepdims: bool) -> TensorMeta:
        reduced = range(a.ndim) if axis is None else (axis,)
        if a.size == 0 and (axis is None or a.shape[axis] == 0):
            raise ValueError(f"attempt to get {name} of an empty sequence")
        shape = tuple(1 if i in reduced else n for i, n in enumerate(a.shape)) if keepdims else \
            tuple(n for i, n in enumerate(a.shape) if i not in reduced)
        return TensorMeta(shape, np.dtype(np.intp))

    return simple_op(name, impl, "reduction", scalar_result=True, canonicalize=canonicalize, meta=meta)


_arg_reduction("argmax", np.argmax)
_arg_reduction("argmin", np.argmin)
_arg_reduction("nanargmax", np.nanargmax)
_arg_reduction("nanargmin", np.nanargmin)


def _order_statistic(name: str, fn: Callable, with_q: bool) -> OpDef:
    """median, percentile, quantile (and their nan forms): ``axis`` (int, tuple, None) keeps the
    user's spelling; ``q`` may be a sequence, which adds leading axes."""
    if with_q:
        def impl(a, q, axis=None, method="linear", keepdims=False):
            return fn(a, q, axis=axis, method=method, keepdims=keepdims)
    else:
        def impl(a, axis=None, keepdims=False):
            return fn(a, axis=axis, keepdims=keepdims)
    impl.__name__ = name

    def canonicalize(args: dict[str, Any]) -> dict[str, Any]:
        out = {**args, "keepdims": bool(args["keepdims"])}
        if isinstance(args["axis"], list):
            out["axis"] = tuple(args["axis"])
        if with_q and isinstance(args["q"], list):
            out["q"] = tuple(args["q"])
        return out

    # keepdims=True gives an ndarray even when it is 0-d (the median of a 0-d array).
    return simple_op(name, impl, "reduction", canonicalize=canonicalize,
                     scalar_rule=lambda args: not args["keepdims"])


def _in_array_module(name: str) -> Callable:
    """NumPy's function ``name`` from the module of the array it is given (CuPy's for a
    CuPy array), or NumPy's on a host copy where that module has none."""

    def fn(a, *args, **kwargs):
        xp = array_module(a)
        if hasattr(xp, name):
            return getattr(xp, name)(a, *args, **kwargs)
        return xp.asarray(getattr(np, name)(a.get(), *args, **kwargs))

    fn.__name__ = name
    return fn


_order_statistic("median", np.median, with_q=False)
_order_statistic("nanmedian", np.nanmedian, with_q=False)
_order_statistic("percentile", np.percentile, with_q=True)
_order_statistic("quantile", np.quantile, with_q=True)
_order_statistic("nanpercentile", _in_array_module("nanpercentile"), with_q=True)
_order_statistic("nanquantile", _in_array_module("nanquantile"), with_q=True)


def _norm(x, ord=None, axis=None, keepdims=False):
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def _norm_canon(args: dict[str, Any]) -> dict[str, Any]:
    axis = args["axis"]
    if isinstance(axis, list):
        axis = tuple(axis)
    return {**args, "axis": axis, "keepdims": bool(args["keepdims"])}


# Vector norms (any ord) and the Frobenius / nuclear-free matrix norms: NumPy
# reads ``ord`` and ``axis`` together, so they keep the user's spelling.
simple_op("norm", _norm, "reduction", scalar_result=True, canonicalize=_norm_canon)
