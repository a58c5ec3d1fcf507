"""Indexing: reading and writing through an index, as pure functions.

In:  ``getitem(a, key)`` is ``a[key]``; ``setitem(a, key, value)`` is a *copy*
     of ``a`` with ``a[key] = value`` applied — the functional form capture
     turns ``x[...] = v`` into, rebinding ``x`` to the result.  Keys are parsed
     by :mod:`minicompile.ir.indexing` (basic slices, None, Ellipsis, integer
     arrays, constant boolean masks; an array mask only where the result shape
     does not escape: ``x[mask] = v`` with one value ``v``).
     Also ``take``, ``take_along_axis`` and ``put_along_axis`` (functional),
     and ``as_strided`` / ``as_strided_scatter``: the elements of an array,
     taken in C order, at ``offset + sum(i_k * strides[k])`` — how capture
     writes two arguments that are views of one base as views of that base
     (see :mod:`minicompile.dynamo.functionalization`).  Every output shape
     here is known from shapes alone.
Out: registered :class:`OpDef` entries of kind ``index``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from .. import indexing as ix
from .registry import TensorMeta, array_module, key_in, normalize_axis, simple_op, without_defaults


def _getitem(a, key):
    return a[key_in(array_module(a), key)]


def _key_canon(args: dict[str, Any]) -> dict[str, Any]:
    return {**args, "key": ix.canonical_key(args["key"], args["a"].shape)}


def _getitem_meta(a: TensorMeta, key: tuple) -> TensorMeta:
    return TensorMeta(ix.result_shape(key, a.shape), a.dtype)


# x[0, 1] is a NumPy scalar, x[0, 1, ...] a 0-d view: ``scalar_result`` holds
# the common answer for readers of the flag, ``scalar_rule`` the exact one.
simple_op("getitem", _getitem, "index", canonicalize=_key_canon, meta=_getitem_meta, scalar_result=True,
          scalar_rule=lambda args: ix.gives_scalar(args["key"], args["a"].shape), array_api=True)


def _setitem(a, key, value):
    xp = array_module(a)
    out = xp.array(a, copy=True)
    out[key_in(xp, key)] = value
    return out


def _setitem_meta(a: TensorMeta, key: tuple, value: Any) -> TensorMeta:
    ix.setitem_value_check(key, a.shape, value)
    if isinstance(value, TensorMeta) or isinstance(value, np.ndarray):
        dt.check_supported(value.dtype)
    else:
        # NumPy's own conversion of a Python value into the element type
        # (300 into int8 -> OverflowError, nan into int -> ValueError).
        np.zeros(np.shape(value), a.dtype)[...] = value
    return TensorMeta(a.shape, a.dtype)


simple_op("setitem", _setitem, "index", canonicalize=_key_canon, meta=_setitem_meta, array_api=True)


def _take(a, indices, axis=None, mode="raise"):
    return np.take(a, indices, axis=axis, **without_defaults({"mode": mode}, {"mode": "raise"}))


def _take_canon(args: dict[str, Any]) -> dict[str, Any]:
    indices = args["indices"]
    if isinstance(indices, list):
        indices = ix.nested_tuple(indices)  # prints as Python, means the same to np.take
    axis, ndim = args["axis"], args["a"].ndim
    if axis is not None:
        # A 0-d array is taken from as its flattened 1-d self, as with axis=None.
        axis = normalize_axis(axis, max(ndim, 1))
        if ndim == 0:
            axis = None
    return {**args, "indices": indices, "axis": axis}


# np.take returns a NumPy scalar for a 0-d result, whatever the index.
simple_op("take", _take, "index", canonicalize=_take_canon, scalar_result=True)


def _take_along_axis(arr, indices, axis=-1):
    return np.take_along_axis(arr, indices, axis=axis)


def _put_along_axis(arr, indices, values, axis):
    out = np.array(arr, copy=True)
    np.put_along_axis(out, indices, values, axis)
    return out


simple_op("take_along_axis", _take_along_axis, "index")
simple_op("put_along_axis", _put_along_axis, "index")


def _strided_positions(shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    """For each element of the strided view, its position in the base's C-order flattening."""
    positions = np.full(shape, offset, dtype=np.intp)
    for axis, (n, step) in enumerate(zip(shape, strides)):
        along = np.arange(n, dtype=np.intp).reshape((-1,) + (1,) * (len(shape) - axis - 1))
        positions += along * step
    return positions


def _as_strided(a, shape, strides, offset):
    xp = array_module(a)
    return xp.ascontiguousarray(a).reshape(-1)[xp.asarray(_strided_positions(shape, strides, offset))]


def _as_strided_scatter(a, src, shape, strides, offset):
    xp = array_module(a)
    out = xp.array(a, copy=True, order="C")
    out.reshape(-1)[xp.asarray(_strided_positions(shape, strides, offset))] = src
    return out


def _strided_check(a: TensorMeta, shape: tuple, strides: tuple, offset: int) -> None:
    if len(shape) != len(strides):
        raise ValueError("as_strided: one stride per axis")
    if 0 in shape:
        return
    low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    if low < 0 or high >= a.size:
        raise ValueError(f"as_strided: elements {low}..{high} outside an array of {a.size}")


def _as_strided_meta(a: TensorMeta, shape: tuple, strides: tuple, offset: int) -> TensorMeta:
    _strided_check(a, shape, strides, offset)
    return TensorMeta(tuple(shape), a.dtype)


def _as_strided_scatter_meta(a: TensorMeta, src: TensorMeta, shape: tuple, strides: tuple,
                             offset: int) -> TensorMeta:
    _strided_check(a, shape, strides, offset)
    if tuple(src.shape) != tuple(shape) or src.dtype != a.dtype:
        raise ValueError(f"as_strided_scatter: src {src} does not fill a view {shape} of {a}")
    return TensorMeta(a.shape, a.dtype)


simple_op("as_strided", _as_strided, "view", meta=_as_strided_meta, array_api=True)
simple_op("as_strided_scatter", _as_strided_scatter, "index", meta=_as_strided_scatter_meta, array_api=True)
