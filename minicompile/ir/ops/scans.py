"""Scans and differences: ``cumsum``, ``cumprod`` (and their nan forms), ``diff``.

In:  an array and one axis (``None`` flattens first, as NumPy does), ``dtype``
     for the cumulative ops, ``n`` for ``diff``.
Out: registered :class:`OpDef` entries of kind ``scan``; they return arrays,
     never NumPy scalars (``np.cumsum`` of a 0-d array is 1-d).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .registry import dtype_arg, normalize_axis, simple_op


def _axis_or_none(args: dict[str, Any]) -> dict[str, Any]:
    axis = args["axis"]
    if axis is not None:
        # NumPy treats a 0-d input like its flattened 1-d self.
        axis = normalize_axis(axis, max(args["a"].ndim, 1))
    out = {**args, "axis": axis}
    if "dtype" in args:
        out["dtype"] = dtype_arg(args["dtype"])
    return out


def _cumulative(name: str, fn: Callable) -> None:
    def impl(a, axis=None, dtype=None):
        return fn(a, axis=axis, dtype=dtype)

    impl.__name__ = name
    simple_op(name, impl, "scan", canonicalize=_axis_or_none)


for _name, _fn in {"cumsum": np.cumsum, "cumprod": np.cumprod,
                   "nancumsum": np.nancumsum, "nancumprod": np.nancumprod}.items():
    _cumulative(_name, _fn)


def _diff(a, n=1, axis=-1):
    return np.diff(a, n=n, axis=axis)


def _diff_canon(args: dict[str, Any]) -> dict[str, Any]:
    a = args["a"]
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    n = args["n"]
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    return {**args, "n": int(n), "axis": normalize_axis(args["axis"], a.ndim)}


simple_op("diff", _diff, "scan", canonicalize=_diff_canon)
