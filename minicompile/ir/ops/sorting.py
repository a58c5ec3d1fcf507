"""Sorting and searching: ``sort``, ``argsort``, ``searchsorted``, ``interp``.

In:  arrays and an axis (``None`` flattens for ``sort``/``argsort``).
Out: registered :class:`OpDef` entries of kind ``extern``: a sort is a
     library call, never a generated loop.  Output shapes follow from input
     shapes; the values they compute are what NumPy computes (``kind`` and
     ``stable`` are kept, since they change ``argsort``'s answer on ties).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .registry import normalize_axis, simple_op


def _sort_canon(args: dict[str, Any]) -> dict[str, Any]:
    axis = args["axis"]
    if axis is not None:
        axis = normalize_axis(axis, args["a"].ndim) if args["a"].ndim else axis
    return {**args, "axis": axis}


def _sort(a, axis=-1, kind=None, stable=None):
    return np.sort(a, axis=axis, kind=kind, stable=stable)


def _argsort(a, axis=-1, kind=None, stable=None):
    return np.argsort(a, axis=axis, kind=kind, stable=stable)


simple_op("sort", _sort, "extern", canonicalize=_sort_canon)
simple_op("argsort", _argsort, "extern", canonicalize=_sort_canon)


def _searchsorted(a, v, side="left", sorter=None):
    return np.searchsorted(a, v, side=side, sorter=sorter)


def _interp(x, xp, fp, left=None, right=None, period=None):
    return np.interp(x, xp, fp, left=left, right=right, period=period)


def _python_sequences(*names: str):
    """Lists and tuples of numbers mean the same; keep tuples (they print as Python)."""

    def canonicalize(args: dict[str, Any]) -> dict[str, Any]:
        return {**args, **{n: tuple(args[n]) for n in names if isinstance(args[n], list)}}

    return canonicalize


simple_op("searchsorted", _searchsorted, "extern", scalar_result=True,
          canonicalize=_python_sequences("a", "v"))
simple_op("interp", _interp, "extern", scalar_result=True,
          canonicalize=_python_sequences("x", "xp", "fp"))
