"""Creation: ops that make a new array from Python values (``zeros``, ``arange``, ``eye``...).

In:  shapes, fill values, ranges and dtypes — Python values, known at trace
     time; the ``_like`` forms also take an array, but read only its meta.
Out: registered :class:`OpDef` entries of kind ``creation``.  A creation node
     has no array inputs unless it is a ``_like`` op, ``full``'s fill value
     is an array or it is given ``like=`` (NumPy's NEP 35, for ``zeros``,
     ``ones``, ``empty``, ``full``, ``arange`` and ``asarray``: the result is
     made in that array's module, so a polyfill's constants are CuPy arrays
     where the NumPy function it stands for would have dispatched to CuPy);
     it runs once per call of the compiled graph.

``empty`` and ``empty_like`` are defined as ``zeros``/``zeros_like``: NumPy
leaves the contents undefined, and a compiler needs every op deterministic (a
compiled graph must give the eager graph's exact answer), so the reference
fills with zeros.  A program that reads ``np.empty``'s contents before writing
them had no defined answer to begin with.

The shape of a creation must not depend on array values (``np.arange(n)``
with ``n`` a traced array is :class:`DataDependent`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from ..symbolic import Sym
from .registry import TensorMeta, array_module, dtype_arg, node_free, simple_op


def _size(n: Any) -> Any:
    """One size of a shape argument: an int, or a symbolic size (dynamic shapes) as it is."""
    return n if isinstance(n, Sym) else int(n)


def _shape_canon(args: dict[str, Any]) -> dict[str, Any]:
    shape = node_free(args["shape"], "the shape")
    shape = (_size(shape),) if isinstance(shape, (int, np.integer, Sym)) else tuple(_size(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    return {**args, "shape": shape, "dtype": dtype_arg(args["dtype"])}


def _like_canon(args: dict[str, Any]) -> dict[str, Any]:
    shape = node_free(args["shape"], "the shape")
    if shape is not None:
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    return {**args, "shape": shape, "dtype": dtype_arg(args["dtype"])}


def _module(like: Any) -> Any:
    """Where a creation makes its array: NumPy, or ``like``'s module (NEP 35's ``like=``)."""
    return np if like is None else array_module(like)


def _zeros(shape, dtype=None, like=None):
    return _module(like).zeros(shape, dtype)


def _ones(shape, dtype=None, like=None):
    return _module(like).ones(shape, dtype)


def _empty(shape, dtype=None, like=None):
    return _module(like).zeros(shape, dtype)  # deterministic: see the module docstring


def _full(shape, fill_value, dtype=None, like=None):
    # np.full reads an array fill value with np.asarray; one on the device stays there
    return _module(fill_value if like is None else like).full(shape, fill_value, dtype)


def _zeros_like(a, dtype=None, shape=None):
    return np.zeros_like(a, dtype=dtype, shape=shape)


def _ones_like(a, dtype=None, shape=None):
    return np.ones_like(a, dtype=dtype, shape=shape)


def _empty_like(prototype, dtype=None, shape=None):
    return np.zeros_like(prototype, dtype=dtype, shape=shape)


def _full_like(a, fill_value, dtype=None, shape=None):
    return np.full_like(a, fill_value, dtype=dtype, shape=shape)


def _prototype_canon(args: dict[str, Any]) -> dict[str, Any]:
    # empty_like names its array ``prototype``; the rule is the same.
    renamed = {("a" if k == "prototype" else k): v for k, v in args.items()}
    out = _like_canon(renamed)
    return {("prototype" if k == "a" and "prototype" in args else k): v for k, v in out.items()}


# Explicit rules: asking NumPy would allocate the whole array while tracing.

def _filled_meta(shape: tuple[int, ...], dtype: np.dtype | None, fill_value: Any = 0.0, like: Any = None) -> TensorMeta:
    if dtype is None:  # np.full(shape, 7) is int64: the fill value's own dtype
        dtype = fill_value.dtype if isinstance(fill_value, TensorMeta) else np.asarray(fill_value).dtype
    if isinstance(fill_value, TensorMeta):
        np.broadcast_shapes(fill_value.shape, shape)  # ValueError, as np.full raises
    dt.check_weak_int_fits(fill_value, np.dtype(dtype))  # np.full(3, 300, np.int8): OverflowError
    return TensorMeta(shape, dt.check_supported(dtype))


def _like_meta(a: TensorMeta, dtype: np.dtype | None, shape: tuple[int, ...] | None,
               fill_value: Any = 0) -> TensorMeta:
    out_shape = a.shape if shape is None else shape
    if isinstance(fill_value, TensorMeta):
        np.broadcast_shapes(fill_value.shape, out_shape)
    out_dtype = a.dtype if dtype is None else np.dtype(dtype)
    dt.check_weak_int_fits(fill_value, out_dtype)  # np.full_like(uint8_array, -1): OverflowError
    return TensorMeta(out_shape, dt.check_supported(out_dtype))


for _name, _impl, _canon, _meta in (
    ("zeros", _zeros, _shape_canon, lambda shape, dtype, like: _filled_meta(shape, dtype)),
    ("ones", _ones, _shape_canon, lambda shape, dtype, like: _filled_meta(shape, dtype)),
    ("empty", _empty, _shape_canon, lambda shape, dtype, like: _filled_meta(shape, dtype)),
    ("full", _full, _shape_canon, _filled_meta),
    ("zeros_like", _zeros_like, _like_canon, _like_meta),
    ("ones_like", _ones_like, _like_canon, _like_meta),
    ("empty_like", _empty_like, _prototype_canon,
     lambda prototype, dtype, shape: _like_meta(prototype, dtype, shape)),
    ("full_like", _full_like, _like_canon, _like_meta),
):
    simple_op(_name, _impl, "creation", canonicalize=_canon, meta=_meta)


def _arange(start_or_stop, stop=None, step=1, dtype=None, like=None):
    return _module(like).arange(start_or_stop, stop, step, dtype=dtype)


def _arange_canon(args: dict[str, Any]) -> dict[str, Any]:
    for name in ("start_or_stop", "stop", "step"):
        node_free(args[name], f"arange's {name}")
    return {**args, "dtype": dtype_arg(args["dtype"])}


simple_op("arange", _arange, "creation", canonicalize=_arange_canon)


def _linspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    return np.linspace(start, stop, num, endpoint, dtype=dtype, axis=axis)


def _linspace_canon(args: dict[str, Any]) -> dict[str, Any]:
    node_free(args["num"], "linspace's num")
    return {**args, "dtype": dtype_arg(args["dtype"])}


simple_op("linspace", _linspace, "creation", canonicalize=_linspace_canon)


def _eye(N, M=None, k=0, dtype=float):
    return np.eye(N, M, k, dtype)


def _tri(N, M=None, k=0, dtype=float):
    return np.tri(N, M, k, dtype)


def _square_canon(args: dict[str, Any]) -> dict[str, Any]:
    for name in ("N", "M", "k"):
        node_free(args[name], f"{name}")
    return {**args, "dtype": dtype_arg(args["dtype"])}


simple_op("eye", _eye, "creation", canonicalize=_square_canon)
simple_op("tri", _tri, "creation", canonicalize=_square_canon)


def _asarray(a, dtype=None, like=None):
    # An array stays in its own module (capture returns it as it is: np.asarray(x) is x).
    return array_module(a).asarray(a, dtype=dtype) if hasattr(a, "dtype") else _module(like).asarray(a, dtype)


def _asarray_canon(args: dict[str, Any]) -> dict[str, Any]:
    a = args["a"]
    # Nested lists and tuples mean the same to np.asarray; tuples print as Python.
    return {**args, "a": _as_tuples(a), "dtype": dtype_arg(args["dtype"])}


def _as_tuples(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and not isinstance(value, TensorMeta):
        return tuple(_as_tuples(v) for v in value)
    return value


simple_op("asarray", _asarray, "creation", canonicalize=_asarray_canon)
