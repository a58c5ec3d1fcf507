"""Functions that rearrange, grow or shrink an array, as views, concatenations, takes and item writes.

In:  the arguments of the user's call, as NumPy takes them.
Out: registered polyfills for ``np.append``, ``np.delete``, ``np.insert``,
     ``np.fliplr``, ``np.flipud``, ``np.diagflat``, ``np.hsplit``,
     ``np.vsplit``, ``np.dsplit``, ``np.indices``, ``np.tril_indices``,
     ``np.triu_indices``, ``np.tril_indices_from`` and ``np.triu_indices_from``.

Where the result's shape follows from Python arguments (the indices
``np.delete`` removes, the size of a triangle), a trace-time helper works it
out with NumPy's own code on index arrays, so NumPy's rules and errors
(negative and out-of-bounds indices, slices, boolean masks) hold exactly;
the graph then only moves data.  Given an array of the graph for such an
argument, the call breaks the graph: its result's shape would depend on
values.
"""
from __future__ import annotations

import numpy as np
from numpy import delete as _numpy_delete  # NumPy's own, whatever np.delete is later
from numpy.lib.array_utils import normalize_axis_index

from .base import at_trace_time, polyfill, require


@at_trace_time("the axis of the call")
def _axis(axis: int, ndim: int) -> int:
    return int(normalize_axis_index(axis, ndim))


@polyfill(np.append)
def append(arr, values, axis=None):
    arr = np.asarray(arr)
    if axis is None:
        if arr.ndim != 1:
            arr = arr.ravel()
        values = np.ravel(np.asarray(values, like=arr))
        axis = arr.ndim - 1
    return np.concatenate((arr, np.asarray(values, like=arr)), axis=axis)


# Up to this many slices are joined by one concatenate; more become one take
# (a gather) with their index list, a constant as long as the axis.
_MAX_PIECES = 16


def _runs(items: list) -> list[list]:
    """``items`` (each ``(source, index)``) cut into runs ``[source, start, stop]`` of
    consecutive indices from one source."""
    runs: list[list] = []
    for source, index in items:
        if runs and runs[-1][0] == source and runs[-1][2] == index:
            runs[-1][2] = index + 1
        else:
            runs.append([source, index, index + 1])
    return runs


def _join(pieces, axis, like):
    """The pieces joined along ``axis`` into a new array (``like``'s empty slice if none)."""
    if not pieces:
        return like[(slice(None),) * axis + (slice(0, 0),)].copy()
    return pieces[0].copy() if len(pieces) == 1 else np.concatenate(pieces, axis=axis)


@at_trace_time("np.delete with the indices in an array: the result's shape depends on their values")
def _kept(n: int, obj):
    """The indices along the axis that ``np.delete`` keeps (NumPy's answer on
    ``arange(n)``): as runs ``(start, stop)`` of slices, or as a list where they are many."""
    kept = _numpy_delete(np.arange(n), obj).tolist()
    runs = _runs([(0, i) for i in kept])
    return ([(a, b) for _, a, b in runs], None) if len(runs) <= _MAX_PIECES else (None, kept)


@polyfill(np.delete)
def delete(arr, obj, axis=None):
    arr = np.asarray(arr)
    if axis is None:
        if arr.ndim != 1:
            arr = arr.ravel()
        axis = arr.ndim - 1
    else:
        axis = _axis(axis, arr.ndim)
    runs, kept = _kept(arr.shape[axis], obj)
    if kept is not None:
        return np.take(arr, kept, axis=axis)
    before = (slice(None),) * axis
    return _join([arr[before + (slice(a, b),)] for a, b in runs], axis, arr)


@at_trace_time("np.insert with the indices in an array: the result's shape depends on their values")
def _insertion(n: int, axis: int, obj):
    """Where ``np.insert`` puts the new values, by NumPy's rules.  ``(index, True/False)``
    for one place (True: ``obj`` was a scalar); else ``(None, (count, runs))``, the
    result as runs ``[0, start, stop]`` of the old elements and ``[1, start, stop]``
    of the new values, or, where the runs are many, ``(None, (new, old))``: the
    positions of the new values and of the old ones."""
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            if obj.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(obj)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    if indices.size == 1:
        index = indices.item()
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        return (index + n if index < 0 else index), indices.ndim == 0
    if indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    indices[indices < 0] += n
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(len(indices))  # each one after the values inserted before it
    old = np.ones(n + len(indices), dtype=bool)
    old[indices] = False  # NumPy's IndexError for an index out of bounds
    new_places, old_places = indices.tolist(), np.flatnonzero(old).tolist()
    if len(old_places) != n or min(new_places, default=0) < 0 or len(set(new_places)) != len(new_places):
        # a place named twice (a negative index of an empty axis): NumPy's own writes decide
        return None, (new_places, old_places)
    source = [(0, i) for i in range(n)] + [(1, j) for j in range(len(new_places))]
    in_result = sorted(zip(old_places + new_places, source))
    runs = _runs([item for _, item in in_result])
    if len(runs) > _MAX_PIECES:
        return None, (new_places, old_places)
    return None, (len(new_places), runs)


@polyfill(np.insert)
def insert(arr, obj, values, axis=None):
    arr = np.asarray(arr)
    if axis is None:
        if arr.ndim != 1:
            arr = arr.ravel()
        axis = arr.ndim - 1
    else:
        axis = _axis(axis, arr.ndim)
    n = arr.shape[axis]
    index, places = _insertion(n, axis, obj)
    before = (slice(None),) * axis
    if index is not None:
        # One place: the values, cast to arr's dtype as np.array(values, dtype=...)
        # casts and given arr's rank, fill the slices after index.
        values = np.asarray(values, dtype=arr.dtype)
        values = values.reshape((1,) * (arr.ndim - values.ndim) + values.shape)
        if places:  # a scalar index: the values' first axis runs along axis
            values = np.moveaxis(values, 0, axis)
        count = values.shape[axis]
        new = np.empty(arr.shape[:axis] + (n + count,) + arr.shape[axis + 1:], arr.dtype)
        new[before + (slice(None, index),)] = arr[before + (slice(None, index),)]
        new[before + (slice(index, index + count),)] = values
        new[before + (slice(index + count, None),)] = arr[before + (slice(index, None),)]
        return new
    first, second = places
    if isinstance(first, int):
        # NumPy's new[..., places, ...] = values, one value per place: written into a
        # block of their own (the same broadcast and cast), joined with arr's runs
        block = np.empty(arr.shape[:axis] + (first,) + arr.shape[axis + 1:], arr.dtype)
        block[...] = values
        sources = (arr, block)
        return _join([sources[source][before + (slice(a, b),)] for source, a, b in second], axis, arr)
    new = np.empty(arr.shape[:axis] + (n + len(first),) + arr.shape[axis + 1:], arr.dtype)
    new[before + (first,)] = values
    new[before + (second,)] = arr
    return new


@polyfill(np.fliplr)
def fliplr(m):
    m = np.asarray(m)
    require(m.ndim >= 2, ValueError, "Input must be >= 2-d.")
    return m[:, ::-1]


@polyfill(np.flipud)
def flipud(m):
    m = np.asarray(m)
    require(m.ndim >= 1, ValueError, "Input must be >= 1-d.")
    return m[::-1, ...]


@polyfill(np.diagflat)
def diagflat(v, k=0):
    # NumPy writes the flattened v on diagonal k of a square of zeros: np.diag of a 1-d array
    return np.diag(np.asarray(v).ravel(), k)


@polyfill(np.hsplit)
def hsplit(ary, indices_or_sections):
    ary = np.asarray(ary)
    require(ary.ndim != 0, ValueError, "hsplit only works on arrays of 1 or more dimensions")
    return np.split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


@polyfill(np.vsplit)
def vsplit(ary, indices_or_sections):
    ary = np.asarray(ary)
    require(ary.ndim >= 2, ValueError, "vsplit only works on arrays of 2 or more dimensions")
    return np.split(ary, indices_or_sections, 0)


@polyfill(np.dsplit)
def dsplit(ary, indices_or_sections):
    ary = np.asarray(ary)
    require(ary.ndim >= 3, ValueError, "dsplit only works on arrays of 3 or more dimensions")
    return np.split(ary, indices_or_sections, 2)


@polyfill(np.indices)
def indices(dimensions, dtype=int, sparse=False):
    dimensions = tuple(dimensions)
    ones = (1,) * len(dimensions)
    grids = [np.arange(dim, dtype=dtype).reshape(ones[:i] + (dim,) + ones[i + 1:])
             for i, dim in enumerate(dimensions)]
    if sparse:
        return tuple(grids)
    if not grids:
        return np.empty((0,), dtype=dtype)
    return np.stack([np.broadcast_to(grid, dimensions) for grid in grids])


@at_trace_time("the size of the triangle")
def _triangle(n, k, m, upper: bool) -> tuple[list[int], list[int]]:
    """Per row of ``np.tri(n, m, k)`` (its complement for the upper triangle, as
    NumPy's triu_indices takes it): how many columns it selects, and the first
    one's distance to the element's position in the flat list of selected ones.
    NumPy's own rows and shifted columns, so float and negative sizes agree."""
    m = n if m is None else m
    rows = np.arange(n)
    cols = np.arange(-(k - 1 if upper else k), m - (k - 1 if upper else k))
    below = np.searchsorted(cols, rows, side="right").tolist()  # tri is row >= col: a prefix
    counts = [len(cols) - b for b in below] if upper else below
    firsts = below if upper else [0] * len(below)
    starts = np.cumsum([0] + counts[:-1]).tolist() if counts else []
    return counts, [first - start for first, start in zip(firsts, starts)]


def _triangle_indices(counts, shifts, like=None):
    """Row and column indices of the selected elements, row by row, as np.nonzero gives them
    (made in ``like``'s array module: np.tril_indices_from of a CuPy array gives CuPy's)."""
    rows = np.repeat(np.arange(len(counts), like=like), counts)
    cols = np.arange(sum(counts), like=like) + np.repeat(np.asarray(shifts, np.intp, like=like), counts)
    return rows, cols


@polyfill(np.tril_indices)
def tril_indices(n, k=0, m=None):
    return _triangle_indices(*_triangle(n, k, m, False))


@polyfill(np.triu_indices)
def triu_indices(n, k=0, m=None):
    return _triangle_indices(*_triangle(n, k, m, True))


@polyfill(np.tril_indices_from)
def tril_indices_from(arr, k=0):
    require(arr.ndim == 2, ValueError, "input array must be 2-d")
    return _triangle_indices(*_triangle(arr.shape[-2], k, arr.shape[-1], False), like=arr)


@polyfill(np.triu_indices_from)
def triu_indices_from(arr, k=0):
    require(arr.ndim == 2, ValueError, "input array must be 2-d")
    return _triangle_indices(*_triangle(arr.shape[-2], k, arr.shape[-1], True), like=arr)
