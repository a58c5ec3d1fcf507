"""The op-info table: every NumPy function minicompile captures, with sample inputs.

In:  nothing (the table is data).
Out: :data:`INFOS` — one :class:`OpInfo` per registry op, naming the user code
     that reaches it (function form ``np.sum(a, axis=-1)``, method form
     ``a.sum(-1)``, operator form ``a + b``) and its sample inputs: shapes with
     0-d, size-0 and size-1 dimensions, broadcasting, negative axes;
     contiguous, transposed and negatively-strided layouts; every dtype the op
     accepts (and the ones it refuses).  :data:`SAMPLES` — each a
     :class:`Sample`, the source of one small function and its arguments::

         def f(a):
             return np.sum(a, axis=-1, keepdims=True)

     :data:`CPP_BATCHES` — each a :class:`Batch`, one code form applied to one
     input set per dtype in a single function (one graph, one compile), for
     backends whose compiles are costly.

The suite runs every sample eagerly and compiled (tests/ir/test_opinfo.py);
:func:`minicompile.testing.check_backend` runs the batches through any backend.
Results must agree on value (exact for bools and integers; rtol/atol per float
dtype in :data:`TOLERANCE`), dtype, shape and Python type; where NumPy raises,
the compiled function raises the same exception type.  Building the batches
runs every sample once through NumPy (to leave out what NumPy refuses), so this
module is imported only when the table is wanted.
"""
from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from minicompile import ir

BOOL = [np.bool_]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8]
FLOATS = [np.float16, np.float32, np.float64]
ALL = BOOL + INTS + FLOATS
NUMS = INTS + FLOATS

TOLERANCE = {  # dtype -> (rtol, atol)
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-12),
}

LAYOUTS = ("contiguous", "transposed", "reversed")


def make_array(shape: tuple[int, ...], dtype: Any, layout: str, seed: int) -> np.ndarray:
    """Small values (so integer products stay in range), laid out as asked."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = rng.random(shape) > 0.5
    elif dtype.kind == "u":
        values = rng.integers(0, 8, shape)
    elif dtype.kind == "i":
        values = rng.integers(-5, 6, shape)
    else:
        values = rng.standard_normal(shape) * 2
    values = np.asarray(values).astype(dtype)
    if layout == "transposed" and values.ndim >= 2:
        return np.ascontiguousarray(values.T).T  # same values, Fortran order
    if layout == "reversed" and values.ndim >= 1:
        return np.flip(np.flip(values, 0).copy(), 0)  # same values, negative stride
    return values


@dataclass
class OpInfo:
    op: str                        # the registry op this code reaches
    code: list[str]                # user code; inputs are a, b, c
    shapes: list[tuple]            # one tuple of input shapes per sample
    dtypes: list[Any] = field(default_factory=lambda: list(FLOATS))
    # dtype of the second and later inputs; None: the same as the first
    other_dtype: Any = None


def ufunc_info(uf: np.ufunc, dtypes=ALL, code: list[str] | None = None) -> OpInfo:
    name = uf.__name__
    if uf.nin == 1:
        shapes = [((3, 4),), ((),), ((0, 3),), ((5,),)]
        code = code or [f"np.{name}(a)"]
    else:
        shapes = [((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (3,)), ((0, 3), (1, 3))]
        code = code or [f"np.{name}(a, b)", f"np.{name}(a, 2)", f"np.{name}(1.5, a)"]
    return OpInfo(name, code, shapes, dtypes)


OPERATOR_FORMS = {
    "add": ["a + b"], "subtract": ["a - b"], "multiply": ["a * b", "3 * a"], "divide": ["a / b"],
    "floor_divide": ["a // b"], "remainder": ["a % b"], "power": ["a ** b", "a ** 3"],
    "bitwise_and": ["a & b"], "bitwise_or": ["a | b"], "bitwise_xor": ["a ^ b"],
    "less": ["a < b"], "less_equal": ["a <= b"], "greater": ["a > b"], "greater_equal": ["a >= b"],
    "equal": ["a == b"], "not_equal": ["a != b"], "negative": ["-a"], "positive": ["+a"],
    "invert": ["~a"], "absolute": ["abs(a)", "np.abs(a)"], "matmul": ["a @ b"],
    "left_shift": ["a << b"], "right_shift": ["a >> b"],
}

UFUNC_INFOS = []
for _uf in ir.ops.POINTWISE_UFUNCS:
    _forms = [f"np.{_uf.__name__}(a" + (")" if _uf.nin == 1 else ", b)")] + OPERATOR_FORMS.get(_uf.__name__, [])
    if _uf.nin == 2:
        _forms += [f"np.{_uf.__name__}(a, 2)"]
    UFUNC_INFOS.append(ufunc_info(_uf, code=_forms))

R2 = [((3, 4),), ((2, 0),), ((1, 5),)]
R3 = [((2, 3, 4),)]
INFOS: list[OpInfo] = UFUNC_INFOS + [
    # elementwise functions that are not ufuncs
    OpInfo("where", ["np.where(a > 0, a, b)", "np.where(a > 0, 1.0, a)"], [((3, 4), (4,)), ((), ())], NUMS),
    OpInfo("clip", ["np.clip(a, -1, 1)", "a.clip(0, None)", "np.clip(a, b, 2)", "np.clip(a, min=0, max=3)"],
           [((3, 4), (4,)), ((), ())], NUMS),
    OpInfo("round", ["np.round(a, 1)", "np.around(a)", "a.round(2)", "np.round(a, -1)"], [((3, 4),), ((),)], NUMS),
    OpInfo("nan_to_num", ["np.nan_to_num(a / b)", "np.nan_to_num(np.log(a), neginf=-7.0)"],
           [((3, 4), (4,))], FLOATS),
    OpInfo("astype", ["a.astype(np.int32)", "a.astype(np.float32)", "a.astype(bool)", "np.astype(a, np.uint8)"],
           [((3, 4),), ((),)], ALL),
    # reductions
    *[OpInfo(r, [f"np.{r}(a)", f"np.{r}(a, axis=-1)", f"np.{r}(a, axis=(0, 1), keepdims=True)",
                 f"a.{r}(0)" if r in ("sum", "prod", "mean", "max", "min", "var", "std", "any", "all")
                 else f"np.{r}(a, axis=0, keepdims=True)", f"np.{r}(a, axis=2)"],
             R2, ALL if r in ("sum", "prod", "max", "min", "any", "all", "count_nonzero") else NUMS)
      for r in ("sum", "prod", "mean", "max", "min", "var", "std", "any", "all", "ptp", "nansum", "nanprod",
                "nanmean", "nanmax", "nanmin", "count_nonzero")],
    OpInfo("sum", ["np.sum(a, dtype=np.float32)", "a.sum(axis=1, dtype=np.int64)", "np.sum(a, axis=None)"],
           R2, [np.int8, np.float16, np.bool_]),
    OpInfo("var", ["np.var(a, ddof=1)", "a.std(axis=-1, ddof=1)", "np.std(a, axis=0, ddof=0, keepdims=True)"],
           R3, FLOATS + [np.int32]),
    OpInfo("argmax", ["np.argmax(a)", "np.argmax(a, axis=-1)", "a.argmax(0)", "np.argmax(a, axis=1, keepdims=True)",
                      "np.argmax(a, axis=(0, 1))"], R2, ALL),
    OpInfo("argmin", ["np.argmin(a)", "a.argmin(axis=-1)", "np.argmin(a, axis=3)"], R3, ALL),
    OpInfo("median", ["np.median(a)", "np.median(a, axis=-1, keepdims=True)", "np.nanmedian(a, axis=0)",
                      "np.percentile(a, 30)", "np.quantile(a, [0.1, 0.9], axis=1)",
                      "np.percentile(a, 50, axis=(0, 1), method='nearest')"], R2, NUMS),
    OpInfo("norm", ["np.linalg.norm(a)", "np.linalg.norm(a, axis=-1)", "np.linalg.norm(a, ord=1, axis=0)",
                    "np.linalg.norm(a, 'fro')", "np.linalg.norm(a, ord=np.inf, axis=1, keepdims=True)"],
           [((3, 4),), ((1, 5),)], FLOATS + [np.int32]),
    # scans
    OpInfo("cumsum", ["np.cumsum(a)", "np.cumsum(a, axis=-1)", "a.cumsum(0)", "np.cumsum(a, axis=0, dtype=np.float64)",
                      "np.cumsum(a, axis=2)"], R2 + [((),)], ALL),
    OpInfo("cumprod", ["np.cumprod(a, axis=1)", "a.cumprod()"], R2, NUMS),
    OpInfo("diff", ["np.diff(a)", "np.diff(a, n=2, axis=0)", "np.diff(a, axis=-2)"], [((4, 5),), ((1, 3),), ((),)], NUMS),
    # shape and layout
    OpInfo("reshape", ["a.reshape(-1)", "np.reshape(a, (2, -1))", "a.reshape(3, 2, 2)", "a.reshape((5, -1))"],
           [((3, 4),), ((2, 6),)], ALL),
    OpInfo("ravel", ["np.ravel(a)", "a.ravel()", "a.flatten()", "np.ravel(a, order='F')"], [((3, 4),), ((),)], ALL),
    OpInfo("transpose", ["np.transpose(a, (1, 0, 2))", "a.transpose(2, 0, 1)", "a.T", "np.transpose(a, (0, 1))"],
           R3, ALL),
    OpInfo("swapaxes", ["np.swapaxes(a, 0, -1)", "a.swapaxes(1, 2)", "np.swapaxes(a, 0, 3)"], R3, ALL),
    OpInfo("moveaxis", ["np.moveaxis(a, 0, -1)", "np.moveaxis(a, [0, 1], [-1, -2])", "np.moveaxis(a, 5, 0)"], R3, ALL),
    OpInfo("expand_dims", ["np.expand_dims(a, 0)", "np.expand_dims(a, -1)", "np.expand_dims(a, (0, 2))",
                           "np.expand_dims(a, 4)"], [((3, 4),), ((),)], ALL),
    OpInfo("squeeze", ["np.squeeze(a)", "a.squeeze(0)", "np.squeeze(a, axis=-1)"], [((1, 3, 1),), ((2, 3),), ((),)], ALL),
    OpInfo("broadcast_to", ["np.broadcast_to(a, (2, 3, 4))", "np.broadcast_to(a, (5, 4))"], [((3, 4),), ((4,),), ((),)], ALL),
    OpInfo("concatenate", ["np.concatenate([a, b])", "np.concatenate((a, b), axis=-1)", "np.concatenate([a, b], axis=None)",
                           "np.concatenate([a, b], axis=2)"], [((2, 3), (2, 3)), ((2, 3), (4, 3)), ((0, 3), (1, 3))], ALL,
           other_dtype=np.float32),
    OpInfo("stack", ["np.stack([a, b])", "np.stack((a, b), axis=-1)", "np.stack([a, b], axis=3)"],
           [((2, 3), (2, 3)), ((2, 3), (3, 2)), ((), ())], ALL),
    OpInfo("hstack", ["np.hstack([a, b])", "np.vstack((a, b))", "np.dstack([a, b])", "np.column_stack([a, b])"],
           [((2, 3), (2, 3)), ((3,), (3,)), ((2, 3), (2, 4))], NUMS),
    OpInfo("tile", ["np.tile(a, 2)", "np.tile(a, (2, 1, 3))"], [((2, 3),), ((),)], ALL),
    OpInfo("repeat", ["np.repeat(a, 2)", "a.repeat(3, axis=-1)", "np.repeat(a, [1, 0, 2], axis=1)"],
           [((2, 3),), ((2, 2),)], ALL),
    OpInfo("pad", ["np.pad(a, 1)", "np.pad(a, ((1, 0), (0, 2)), constant_values=7)", "np.pad(a, 2, mode='edge')",
                   "np.pad(a, 1, mode='reflect')", "np.pad(a, 1, mode='wrap')"], [((2, 3),), ((3, 3),)], NUMS),
    OpInfo("flip", ["np.flip(a)", "np.flip(a, 0)", "np.flip(a, axis=(0, -1))", "np.flip(a, 3)"], R3, ALL),
    OpInfo("roll", ["np.roll(a, 1)", "np.roll(a, -2, axis=1)", "np.roll(a, (1, 2), axis=(0, 1))"], [((3, 4),), ((),)], ALL),
    OpInfo("sliding_window_view", ["np.lib.stride_tricks.sliding_window_view(a, 3)",
                                   "np.lib.stride_tricks.sliding_window_view(a, (2, 2))",
                                   "np.lib.stride_tricks.sliding_window_view(a, 2, axis=0)",
                                   "np.lib.stride_tricks.sliding_window_view(a, 9)"], [((4, 5),), ((3, 3),)], ALL),
    OpInfo("triu", ["np.triu(a)", "np.tril(a, -1)", "np.triu(a, 2)"], [((3, 4),), ((2, 3, 3),), ((5,),)], ALL),
    OpInfo("atleast_2d", ["np.atleast_1d(a)", "np.atleast_2d(a)", "np.atleast_3d(a)"], [((),), ((3,),), ((2, 3),)], ALL),
    OpInfo("copy", ["np.copy(a)", "a.copy()"], [((3, 4),), ((),)], ALL),
    OpInfo("diagonal", ["np.diagonal(a)", "np.diagonal(a, 1, -1, -2)", "np.rot90(a)", "np.rot90(a, 3, axes=(1, 0))",
                        "np.diag(a)", "np.diag(a, k=-1)"], [((3, 4),), ((2, 3, 3),), ((4,),)], ALL),
    # creation from an array's meta, or from Python values next to an array
    OpInfo("zeros_like", ["np.zeros_like(a)", "np.ones_like(a, dtype=np.float32)", "np.empty_like(a)",
                          "np.full_like(a, 7)", "np.zeros_like(a, shape=(2, 5))", "np.full_like(a, -1)",
                          "np.full(a.shape, 300, dtype=a.dtype)"], [((3, 4),), ((),)], ALL),
    OpInfo("full", ["np.full(a.shape, 2.5) + a", "np.zeros((2, 3), dtype=np.int8) + a", "np.ones(4) * a",
                    "np.arange(4) + a", "np.arange(1, 9, 3, dtype=np.float32) + a", "np.linspace(0, 1, 4) + a",
                    "np.eye(4) + a", "np.eye(4, 5, k=1, dtype=np.int32) + a", "np.tri(4, 4, -1) * a",
                    "np.empty((4,)) + a"], [((4,),), ((4, 4),)], [np.float32, np.int16]),
    # linear algebra
    OpInfo("matmul", ["a @ b", "np.matmul(a, b)"],
           [((3, 4), (4, 2)), ((2, 3, 4), (4,)), ((4,), (4,)), ((5, 1, 2, 3), (4, 3, 2)), ((2, 3), (2, 3)),
            ((0, 3), (3, 2))], NUMS + BOOL),
    OpInfo("dot", ["np.dot(a, b)", "a.dot(b)"], [((3, 4), (4, 2)), ((2, 3, 4), (5, 4, 2)), ((4,), (4,)), ((), (3,)),
                                                  ((3,), (4,))], NUMS + BOOL),
    OpInfo("vdot", ["np.vdot(a, b)"], [((3, 4), (12,)), ((2,), (2,)), ((3,), (2,))], NUMS),
    OpInfo("inner", ["np.inner(a, b)"], [((3, 4), (2, 4)), ((4,), (4,)), ((), (3,)), ((3,), (2,))], NUMS),
    OpInfo("outer", ["np.outer(a, b)"], [((3,), (4,)), ((2, 2), (3,)), ((), ())], NUMS),
    OpInfo("tensordot", ["np.tensordot(a, b)", "np.tensordot(a, b, axes=1)", "np.tensordot(a, b, axes=([0], [1]))",
                         "np.tensordot(a, b, axes=0)"], [((2, 3, 4), (3, 4, 2)), ((3, 3), (3, 3))], NUMS),
    OpInfo("einsum", ["np.einsum('ij,jk->ik', a, b)", "np.einsum('ij->j', a)", "np.einsum('ii->i', b)",
                      "np.einsum('ij,ij->', a, a)", "np.einsum('...j,jk', a, b)"], [((3, 3), (3, 3)), ((2, 3), (3, 4))], NUMS),
    OpInfo("convolve", ["np.convolve(a, b)", "np.convolve(a, b, mode='same')", "np.convolve(a, b, 'valid')",
                        "np.correlate(a, b)"], [((5,), (3,)), ((2,), (4,))], NUMS),
    OpInfo("trace", ["np.trace(a)", "a.trace(1)", "np.kron(a, a)"], [((3, 4),), ((2, 2, 2),)], NUMS),
    OpInfo("cross", ["np.cross(a, b)", "np.cross(a, b, axis=0)"], [((4, 3), (3,)), ((3, 2), (3, 2)), ((3,), (3,))],
           NUMS),
    OpInfo("isclose", ["np.isclose(a, b)", "np.isclose(a, b, rtol=0.5, equal_nan=True)", "np.isclose(a, 0.5)"],
           [((3, 4), (4,)), ((), ())], NUMS),
    # indexing: x[key] and x[key] = v (functional: a new array, the name rebound)
    OpInfo("getitem", ["a[1]", "a[::-1, 1:]", "a[..., None]", "a[None, -1]", "a[1, ::2]", "a[b]",
                       "a[:, b]", "a[[0, -1]]", "a[a > 0]", "a[5]", "a[0, 0, 0]"],
           [((3, 4), (2,)), ((2, 5), (2, 2)), ((4, 3), ())], ALL, other_dtype=np.intp),
    OpInfo("setitem", ["c = a.copy(); c[0] = 7; c", "c = a.copy(); c[::-1, 1] = b[0]; c",
                       "c = a.copy(); c[..., None] = 1; c", "c = a.copy(); c[a > 0] = 0; c",
                       "c = a.copy(); c[b] = 1; c", "c = a.copy(); c[:, b] = 2; c"],
           [((3, 4), (2,)), ((2, 5), (2, 2))], ALL, other_dtype=np.intp),
    # sorting, searching
    OpInfo("take", ["np.take(a, b)", "np.take(a, b, axis=-1)", "a.take(b, axis=0)", "np.take(a, 1)",
                    "np.take(a, [0, -1], axis=1)"], [((3, 4), (2,)), ((3, 4), (2, 2)), ((4,), ())], NUMS,
           other_dtype=np.intp),
    OpInfo("take_along_axis", ["np.take_along_axis(a, b, axis=-1)", "np.take_along_axis(a, b, axis=0)",
                               "np.take_along_axis(a, b, None)"], [((3, 4), (3, 2)), ((3, 4), (1, 4))], ALL,
           other_dtype=np.intp),
    OpInfo("sort", ["np.sort(a)", "np.sort(a, axis=0)", "np.sort(a, axis=None)", "np.argsort(a, kind='stable')",
                    "a.argsort(axis=0, stable=True)", "np.sort(a, axis=2)"], R2 + [((),)], ALL),
    OpInfo("searchsorted", ["np.searchsorted(np.sort(a), b)", "np.searchsorted(np.sort(a), b, side='right')",
                            "np.sort(a).searchsorted(b)"], [((5,), (3,)), ((5,), ()), ((0,), (2, 2))], NUMS,
           other_dtype=np.float64),
    OpInfo("interp", ["np.interp(b, np.sort(a), a)", "np.interp(b, [0, 1, 2], [1.0, 0.0, 4.0])",
                      "np.interp(b, np.sort(a), a, left=-1, right=9)"], [((5,), (3,)), ((5,), ())], [np.float64, np.float32],
           other_dtype=np.float64),
    OpInfo("partition", ["np.partition(a, 1)", "np.partition(a, (0, -1), axis=0)", "np.argpartition(a, 0, axis=None)",
                         "np.argpartition(a, -1)", "np.partition(a, 1, axis=None)", "c = a.copy(); c.partition(0); c",
                         "a.argpartition(1)"], [((3, 4),), ((2, 5),), ((1, 3),), ((0, 3),), ((),)], ALL),
    OpInfo("digitize", ["np.digitize(a, [-1, 0, 1])", "np.digitize(a, [2, 0], right=True)", "np.digitize(a, np.sort(b))",
                        "np.digitize(a, b)", "np.digitize(0.5, np.sort(b))"], [((3, 4), (3,)), ((), (2,)), ((0, 3), (1,))],
           NUMS, other_dtype=np.float64),
    OpInfo("nanpercentile", ["np.nanpercentile(a, 30)", "np.nanquantile(a, [0.1, 0.9], axis=1)",
                             "np.nanpercentile(np.log(a), 50, axis=0, keepdims=True)",
                             "np.nanquantile(a, 0.5, axis=-1, method='nearest')"], R2 + [((),)], NUMS),
    # NumPy functions captured as the ops they are made of (dynamo/polyfills)
    OpInfo("sinc", ["np.sinc(a)", "np.angle(a)", "np.angle(a, deg=True)"], [((3, 4),), ((),), ((0, 3),), ((1, 5),)], ALL),
    OpInfo("isneginf", ["np.isneginf(a / b)", "np.isposinf(np.log(a) * b)", "np.isneginf(a)", "np.isposinf(a, out=b > 0)"],
           [((3, 4), (4,)), ((), ()), ((0, 3), (1, 3))], ALL),
    OpInfo("isreal", ["np.isreal(a)", "np.iscomplex(a)", "np.isreal(a.sum())", "np.iscomplex(a.sum())", "np.isscalar(a)",
                      "np.isscalar(a.sum())", "np.isscalar(np.allclose(a, a))"], [((3, 4),), ((),), ((0, 3),)], ALL),
    OpInfo("iinfo", ["a + np.iinfo(a.dtype).max", "a * np.finfo(a.dtype).eps", "np.iinfo(np.int8).min + a",
                     "np.finfo(np.float16).max * a", "np.iinfo(a.sum()).bits + a"], [((3, 4),), ((),)], ALL),
    OpInfo("select", ["np.select([a > 0, a < -1], [a, b])", "np.select([a > 0], [a], default=b)",
                      "np.select([a > 1, b > 1], [1, a], default=-1)", "np.select([a > 0], [a, b])"],
           [((3, 4), (4,)), ((), ()), ((0, 3), (1, 3)), ((1, 4), (2, 1, 4))], ALL),
    OpInfo("array_equal", ["np.array_equal(a, b)", "np.array_equal(a, a)", "np.array_equal(np.log(a), np.log(a), equal_nan=True)",
                           "np.array_equiv(a, b)", "np.allclose(a, b)", "np.allclose(np.log(a), np.log(a), equal_nan=True)",
                           "np.allclose(a, 0.5, rtol=0.1)", "(np.array_equal(a, b), np.allclose(a, a))"],
           [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((0, 3), (0, 3))], ALL),
    OpInfo("append", ["np.append(a, b)", "np.append(a, b, axis=0)", "np.append(a, [1, 2])", "np.append(a, b, axis=-1)"],
           [((2, 3), (2, 3)), ((2, 3), (4, 3)), ((), ()), ((0, 3), (1, 3))], ALL, other_dtype=np.float32),
    OpInfo("delete", ["np.delete(a, 1)", "np.delete(a, -1, axis=0)", "np.delete(a, [0, 2], axis=-1)",
                      "np.delete(a, slice(None, None, 2), 1)", "np.delete(a, 5)", "np.delete(a, [True, False, True], axis=1)"],
           [((3, 4),), ((3, 3),), ((1, 3),), ((),), ((0, 3),)], ALL),
    OpInfo("insert", ["np.insert(a, 1, 7)", "np.insert(a, [0, 2, 2], [7, 8, 9])", "np.insert(a, 1, [[7], [8]], axis=1)",
                      "np.insert(a, slice(0, 2), 5, axis=-1)", "np.insert(a, 9, 1)", "np.insert(a, -1, b, axis=0)",
                      "np.insert(a, [1], 2.5, axis=1)"], [((3, 4), (4,)), ((2, 3), (3,)), ((1, 3), (1,)), ((0, 3), (3,)),
                                                         ((), ())], ALL),
    OpInfo("fliplr", ["np.fliplr(a)", "np.flipud(a)", "np.flipud(a)[0]"], [((3, 4),), ((2, 3, 4),), ((5,),), ((),), ((0, 2),)],
           ALL),
    OpInfo("diagflat", ["np.diagflat(a)", "np.diagflat(a, 1)", "np.diagflat(a, k=-2)"], [((3,),), ((2, 2),), ((),), ((0,),)],
           ALL),
    OpInfo("hsplit", ["np.hsplit(a, 2)", "np.vsplit(a, [1])", "np.dsplit(a, 2)", "np.hsplit(a, [1, -1])"],
           [((2, 4, 2),), ((4,),), ((),), ((0, 2, 2),)], ALL),
    OpInfo("indices", ["np.indices(a.shape) * a.sum()", "np.indices(a.shape, dtype=np.int8, sparse=True)",
                       "c = np.indices(a.shape); c[0][...] = 7; c", "c, _ = np.indices(a.shape); c * a",
                       "np.tril_indices(a.shape[0])", "np.triu_indices(a.shape[0], 1, a.shape[-1])",
                       "np.tril_indices_from(a, -1)", "np.triu_indices_from(a)", "np.tril_indices(3, k=a.shape[0] - 2)"],
           [((3, 4),), ((0, 2),), ((1, 1),), ((),), ((2, 3, 4),)], [np.int8, np.float64]),
    OpInfo("vander", ["np.vander(a)", "np.vander(a, 3, increasing=True)", "np.vander(a, 0)", "np.vander(a, 1)"],
           [((4,),), ((0,),), ((1,),), ((2, 3),), ((),)], ALL),
    OpInfo("ediff1d", ["np.ediff1d(a)", "np.ediff1d(a, to_begin=b)", "np.ediff1d(a, to_end=[1, 2], to_begin=0)"],
           [((3, 4), (2,)), ((), ()), ((0,), (1,)), ((1,), (3,))], ALL),
    OpInfo("trapezoid", ["np.trapezoid(a)", "np.trapezoid(a, dx=0.5, axis=0)", "np.trapezoid(a, b)", "np.trapezoid(a, axis=-2)"],
           [((3, 4), (4,)), ((5,), (5,)), ((0, 3), (3,)), ((), ()), ((1, 4), (4,))], ALL),
    OpInfo("average", ["np.average(a)", "np.average(a, axis=-1)", "np.average(a, axis=0, weights=b)",
                       "np.average(a, weights=np.ones_like(a), returned=True)", "np.average(a, axis=(0, 1), keepdims=True)",
                       "np.average(a, axis=0, weights=b, returned=True, keepdims=True)"],
           [((3, 4), (3,)), ((0, 2), (0,)), ((1, 5), (1,)), ((), ())], ALL),
    OpInfo("cov", ["np.cov(a)", "np.cov(a, rowvar=False)", "np.cov(a, b)", "np.cov(a, bias=True, ddof=0)", "np.corrcoef(a)",
                   "np.corrcoef(a, b, rowvar=False)", "np.cov(a, aweights=np.arange(1.0, 1 + a.shape[-1]))",
                   "np.cov(a, fweights=np.arange(a.shape[-1]), ddof=0)"],
           [((3, 4), (3, 4)), ((4,), (4,)), ((1, 5), (1, 5)), ((0, 3), (0, 3)), ((), ()), ((2, 3, 4), (2, 3, 4))], ALL),
    OpInfo("logspace", ["np.logspace(0, 2, 5).sum() + a", "np.logspace(a, 2, 3)", "np.logspace(0, 1, 4, base=a, axis=-1)",
                        "np.logspace(1, 2, 4, dtype=np.float32, endpoint=False).sum() * a", "np.geomspace(1, 1000, 4).sum() + a",
                        "np.geomspace(-1, -100, 3, endpoint=False).sum() * a", "np.geomspace(a + 10, 100, 3)",
                        "np.geomspace(1, a + 10, 2, axis=-1)", "np.geomspace(a, 10)"], [((4,),), ((),), ((2, 3),)],
           FLOATS + [np.int16]),
    # their results' shapes depend on values: captured by breaking the graph
    OpInfo("extract", ["np.extract(a > 0, a)", "np.unique(a)", "np.trim_zeros(np.ravel(a))", "np.flatnonzero(a)"],
           [((3, 4),), ((),), ((0, 3),)], ALL),
]


@dataclass
class Sample:
    info: OpInfo
    code: str
    shapes: tuple
    dtype: Any
    layout: str

    @property
    def id(self) -> str:
        shapes = ",".join("x".join(map(str, s)) or "0d" for s in self.shapes)
        return f"{self.info.op}|{self.code}|{shapes}|{np.dtype(self.dtype).name}|{self.layout}"

    def source(self) -> str:
        """``code`` may hold statements before its result: ``c = a.copy(); c[0] = 1; c``."""
        params = ", ".join("abc"[: len(self.shapes)])
        *statements, result = self.code.split("; ")
        body = "".join(f"    {line}\n" for line in statements)
        return f"def f({params}):\n{body}    return {result}\n"

    def function(self) -> Callable:
        namespace = {"np": np}
        exec(compile(self.source(), f"<opinfo {self.info.op}>", "exec"), namespace)
        return namespace["f"]

    def args(self) -> list[np.ndarray]:
        dtypes = [self.dtype] + [self.info.other_dtype or self.dtype] * (len(self.shapes) - 1)
        out = []
        for i, (shape, dtype) in enumerate(zip(self.shapes, dtypes)):
            arr = make_array(shape, dtype, self.layout, seed=i)
            if np.dtype(dtype) == np.intp and self.info.other_dtype is np.intp:
                arr = np.abs(arr) % 2  # in-range indices for take/take_along_axis
            out.append(arr)
        return out


def run(fn: Callable, args: list) -> Any:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def samples() -> list[Sample]:
    """Each dtype at least once (code forms, shapes and layouts rotating with
    it), and each code form with each shape in the last dtype listed."""
    out = []
    for info in INFOS:
        for i, dtype in enumerate(info.dtypes):
            code = info.code[i % len(info.code)]
            shapes = info.shapes[i % len(info.shapes)]
            out.append(Sample(info, code, shapes, dtype, LAYOUTS[i % len(LAYOUTS)]))
        for j, (code, shapes) in enumerate(itertools.product(info.code, info.shapes)):
            out.append(Sample(info, code, shapes, info.dtypes[-1], LAYOUTS[j % len(LAYOUTS)]))
    unique = {s.id: s for s in out}
    return list(unique.values())


# Every sample runs through the eager backend (the graph interpreter: cheap).
# The cpp backend compiles C++ for each new graph, so its samples come in
# batches: one function per code form, returning that form applied to one
# input set per dtype (and shape and layout, rotating) — one graph, one compile.
SAMPLES = samples()


@dataclass
class Batch:
    info: OpInfo
    code: str
    members: list[Sample]

    @property
    def id(self) -> str:
        return f"{self.info.op}|{self.code}"

    def source(self) -> str:
        """Member i renames the one-letter names (inputs a, b; a local c) to a<i>, b<i>, c<i>."""
        params, lines, results = [], [], []
        for i, member in enumerate(self.members):
            params += [f"{p}{i}" for p in "abc"[: len(member.shapes)]]
            *statements, result = (re.sub(r"\b([abc])\b", rf"\g<1>{i}", part)
                                   for part in self.code.split("; "))
            lines += statements
            results.append(result)
        body = "".join(f"    {line}\n" for line in lines)
        return f"def f({', '.join(params)}):\n{body}    return ({', '.join(results)},)\n"

    def function(self) -> Callable:
        namespace = {"np": np}
        exec(compile(self.source(), f"<opinfo batch {self.info.op}>", "exec"), namespace)
        return namespace["f"]

    def args(self) -> list[np.ndarray]:
        return [a for m in self.members for a in m.args()]


def cpp_batches() -> list[Batch]:
    """Per code form: every dtype, with the shapes and layouts rotating, less
    the inputs NumPy refuses (errors are checked on the eager backend)."""
    out = []
    for info in INFOS:
        for code in info.code:
            members = []
            for i, dtype in enumerate(info.dtypes):
                sample = Sample(info, code, info.shapes[i % len(info.shapes)], dtype, LAYOUTS[i % len(LAYOUTS)])
                try:
                    run(sample.function(), sample.args())
                except Exception:
                    continue
                members.append(sample)
            if members:
                out.append(Batch(info, code, members))
    return out


CPP_BATCHES = cpp_batches()


# Forms that must graph-break: they still match NumPy (the call runs eagerly),
# but the length of x[mask] depends on the data.
GRAPH_BREAKS = {
    "a[a > 0]": "the result's length is the number of True values",
    "np.extract(a > 0, a)": "np.extract: the result holds one element per true value of the condition",
    "np.unique(a)": "np.unique: the result holds one element per distinct value",
    "np.trim_zeros(np.ravel(a))": "np.trim_zeros: the result holds the elements between",
    "np.flatnonzero(a)": "np.flatnonzero: the result holds one index per nonzero element",
}

# NumPy leaves np.empty's contents undefined (minicompile fills zeros): compare
# dtype, shape and type only.
UNDEFINED_VALUES = {"np.empty_like(a)", "np.empty((4,)) + a"}
