"""Sorting and searching: ``sort``, ``argsort``, ``partition``, ``argpartition``,
``searchsorted``, ``digitize``, ``interp``.

In:  arrays and an axis (``None`` flattens for the sorts and partitions).
Out: registered :class:`OpDef` entries of kind ``extern``: a sort is a
     library call, never a generated loop.  Output shapes follow from input
     shapes; the values they compute are what NumPy computes (``kind`` and
     ``stable`` are kept, since they change ``argsort``'s answer on ties).

A partition is NumPy's own introselect: which elements land on either side
of the ``kth`` ones, and in what order, is its answer, so the op calls it (no
sort gives the same arrangement).  ``digitize`` checks its bins for
monotonicity when it runs, and raises NumPy's ValueError there.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .registry import array_module, normalize_axis, simple_op, without_defaults


def _sort_canon(args: dict[str, Any]) -> dict[str, Any]:
    axis = args["axis"]
    if axis is not None:
        axis = normalize_axis(axis, args["a"].ndim) if args["a"].ndim else axis
    return {**args, "axis": axis}


def _sort(a, axis=-1, kind=None, stable=None):
    return np.sort(a, axis=axis, **without_defaults({"kind": kind, "stable": stable}, _NO_ORDER))


def _argsort(a, axis=-1, kind=None, stable=None):
    return np.argsort(a, axis=axis, **without_defaults({"kind": kind, "stable": stable}, _NO_ORDER))


_NO_ORDER = {"kind": None, "stable": None}


simple_op("sort", _sort, "extern", canonicalize=_sort_canon)
simple_op("argsort", _argsort, "extern", canonicalize=_sort_canon)


def _partition_canon(args: dict[str, Any]) -> dict[str, Any]:
    kth = args["kth"]
    return {**_sort_canon(args), "kth": tuple(kth) if isinstance(kth, list) else kth}


def _partition(a, kth, axis=-1, kind="introselect"):
    return array_module(a).partition(a, kth, axis=axis, **without_defaults({"kind": kind}, _INTROSELECT))


def _argpartition(a, kth, axis=-1, kind="introselect"):
    return array_module(a).argpartition(a, kth, axis=axis, **without_defaults({"kind": kind}, _INTROSELECT))


_INTROSELECT = {"kind": "introselect"}


simple_op("partition", _partition, "extern", canonicalize=_partition_canon)
simple_op("argpartition", _argpartition, "extern", canonicalize=_partition_canon)


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


def _digitize(x, bins, right=False):
    xp = array_module(x if hasattr(x, "shape") else bins)
    return xp.digitize(x, xp.asarray(bins), right=right)


simple_op("digitize", _digitize, "extern", scalar_result=True, canonicalize=_python_sequences("x", "bins"))
