"""The op-info table: every NumPy function minicompile captures, run eagerly and compiled.

Each :class:`OpInfo` names a registry op and the user code that reaches it —
function form (``np.sum(a, axis=-1)``), method form (``a.sum(-1)``), operator
form (``a + b``) — with sample inputs: shapes with 0-d, size-0 and size-1
dimensions, broadcasting, negative axes; contiguous, transposed and
negatively-strided layouts; every dtype the op accepts (and the ones it
refuses).  Each sample becomes the source of a small function::

    def f(a):
        return np.sum(a, axis=-1, keepdims=True)

which runs through NumPy and through ``mc.compile(f, backend=B)`` for B in
("eager", "cpp").  Results must agree on value (exact for bools and integers;
rtol/atol per float dtype in :data:`TOLERANCE`), dtype, shape and Python type
(a 0-d result is a NumPy scalar exactly where NumPy gives one).  When NumPy
raises, the compiled function raises the same exception type.

The cpp backend lowers what it can to C++ and runs every other op as an Extern
call of the op's NumPy reference, so each op below is checked on both paths.

Ops that capture cannot reach yet (indexing, creation from constants, several
results, writes into arguments) are checked one level down, on graphs built
directly, in the second half of this module.
"""
from __future__ import annotations

import inspect
import itertools
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import minicompile as mc
from minicompile import ir
from minicompile.inductor.codegen.cpp.compile import compile_graph
from minicompile.ir import Graph, TensorMeta, indexing

pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:minicompile:UserWarning"),
]

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
                          "np.full_like(a, 7)", "np.zeros_like(a, shape=(2, 5))"], [((3, 4),), ((),)], ALL),
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


def test_every_op_reaches_the_cpp_backend():
    # Code forms that NumPy refuses in every dtype (a bad axis) have no batch.
    assert {b.info.op for b in CPP_BATCHES} == {i.op for i in INFOS}
    assert len(CPP_BATCHES) > 0.8 * sum(len(i.code) for i in INFOS)


def assert_same(actual: Any, expected: Any, where: str) -> None:
    assert type(actual) is type(expected), (
        f"{where}: compiled returned {type(actual).__name__}, NumPy {type(expected).__name__}")
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{i}]")
        return
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype in TOLERANCE:
        rtol, atol = TOLERANCE[expected.dtype]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


# Forms that must graph-break: they still match NumPy (the call runs eagerly),
# but the length of x[mask] depends on the data.
GRAPH_BREAKS = {
    "a[a > 0]": "a boolean mask from the graph: data-dependent shape",
}

# NumPy leaves np.empty's contents undefined (minicompile fills zeros): compare
# dtype, shape and type only.
UNDEFINED_VALUES = {"np.empty_like(a)", "np.empty((4,)) + a"}


def check_sample(sample: Sample, backend: str) -> bool:
    """Compare; True when NumPy ran the sample, False when it raised."""
    fn = sample.function()
    args = sample.args()
    try:
        expected = run(fn, args)
    except Exception as eager_error:
        compiled = mc.compile(fn, backend=backend)
        with pytest.raises(Exception) as info:
            run(compiled, args)
        assert type(info.value) is type(eager_error), (
            f"NumPy raised {type(eager_error).__name__}: {eager_error}; "
            f"compiled raised {type(info.value).__name__}: {info.value}")
        return False
    compiled = mc.compile(fn, backend=backend)
    actual = run(compiled, args)
    if sample.code in UNDEFINED_VALUES:
        actual, expected = (np.zeros_like(v) for v in (actual, expected))
    assert_same(actual, expected, sample.source())
    return True


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_eager_backend_matches_numpy(sample):
    if not check_sample(sample, "eager") or sample.code in GRAPH_BREAKS:
        return
    # What NumPy runs, capture takes whole: one graph, no break.
    explanation = mc.explain(sample.function())(*sample.args())
    assert explanation.break_reasons == [], explanation.break_reasons


def test_squeeze_of_a_numpy_scalar():
    def f(a):
        return np.squeeze(a.sum())

    x = np.ones(3)
    assert type(mc.compile(f, backend="eager")(x)) is type(f(x))


@pytest.mark.parametrize("batch", CPP_BATCHES, ids=[b.id for b in CPP_BATCHES])
def test_cpp_backend_matches_numpy(batch):
    fn, args = batch.function(), batch.args()
    expected = run(fn, args)
    compiled = mc.compile(fn, backend="cpp")
    actual = run(compiled, args)
    # Ops without a loop lowering run as Externs inside the compiled graph; the
    # graph as a whole never falls back to NumPy.
    assert getattr(compiled.cache[0].compiled, "fallback_reason", None) is None
    if batch.code in UNDEFINED_VALUES:
        actual, expected = (tuple(np.zeros_like(v) for v in r) for r in (actual, expected))
    assert_same(actual, expected, batch.source())


# ---------------------------------------------------------------------------
# One level down: graphs built directly, for ops capture does not reach yet
# ---------------------------------------------------------------------------


def graph_results(build: Callable, inputs: list[np.ndarray]) -> tuple[tuple, tuple]:
    """Build a graph over ``inputs`` with ``build(g, *placeholders) -> nodes``,
    then run it through the graph interpreter and through the cpp backend."""
    from minicompile.inductor import compile_graph

    g = Graph()
    ph = [g.placeholder(f"in{i}", TensorMeta(x.shape, x.dtype)) for i, x in enumerate(inputs)]
    outs = build(g, *ph)
    g.output(list(outs) if isinstance(outs, (list, tuple)) else [outs])
    with np.errstate(all="ignore"):
        return g(*inputs), compile_graph(g, list(inputs))(*inputs)


def check_graph(build: Callable, inputs: list[np.ndarray], expected: Any) -> None:
    expected = tuple(expected) if isinstance(expected, (list, tuple)) else (expected,)
    for backend, results in zip(("eager", "cpp"), graph_results(build, inputs)):
        assert len(results) == len(expected)
        for got, want in zip(results, expected):
            # The backend may hand back a NumPy scalar or a 0-d array; capture
            # decides the Python type from the op (see test_scalar_results).
            assert_same(np.asarray(got), np.asarray(want), backend)


X = np.arange(60.0).reshape(3, 4, 5)[:, ::-1]  # negatively strided
IDX = np.array([2, 0, -1])
MASK = np.array([True, False, True])

# (key builder over the index-array placeholders, NumPy key, arrays in the key)
GETITEM_KEYS = [
    (1,), (-1,), (slice(1, None),), (slice(None, None, -1),), (slice(None, None, 2), 1),
    (None,), (Ellipsis, None), (Ellipsis, 0), (1, Ellipsis, slice(None, None, -2)),
    (slice(-2, -10, -1),), (slice(5, 1),), ((0, 2),), ((0, 2), slice(1, None)),
    (slice(None), (0, 1), (1, 0)), (0, slice(None), (0, 1)), ((True, False, True),),
    (True,), (np.int64(2), None, -3), (),
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=map(repr, GETITEM_KEYS))
def test_getitem_basic_and_constant_advanced(key):
    # A tuple inside the key is an index array, for NumPy and for the op alike.
    check_graph(lambda g, x: g.call("getitem", x, key), [X], X[key])
    canonical = indexing.canonical_key(key, X.shape)
    assert indexing.result_shape(canonical, X.shape) == X[key].shape
    assert indexing.canonical_key(canonical, X.shape) == canonical  # canonical is a fixed point


def test_getitem_with_index_arrays_from_the_graph():
    check_graph(lambda g, x, i: g.call("getitem", x, (i,)), [X, IDX], X[IDX])
    check_graph(lambda g, x, i: g.call("getitem", x, (slice(None), i, i)), [X, IDX], X[:, IDX, IDX])
    check_graph(lambda g, x, i: g.call("getitem", x, (i, Ellipsis, i)), [X, IDX], X[IDX, ..., IDX])
    check_graph(lambda g, x, i: g.call("getitem", x, (1, None, i)), [X, IDX], X[1, None, IDX])
    g = Graph()
    x, m = g.placeholder("x", TensorMeta(X.shape, X.dtype)), g.placeholder("m", TensorMeta((3,), np.dtype(bool)))
    with pytest.raises(ir.ops.DataDependent):
        g.call("getitem", x, m)  # x[mask]: its length is the number of True values


@pytest.mark.parametrize("key, error", [
    ((3,), IndexError), ((0, 0, 0, 0), IndexError), ((1.0,), IndexError), ((Ellipsis, Ellipsis), IndexError),
    (((True, False),), IndexError), (((0, 5),), IndexError), (((0, 1), (0, 1, 1)), IndexError),
    ((slice(None, None, 0),), ValueError), (("a",), IndexError),
])
def test_getitem_errors_match_numpy(key, error):
    with pytest.raises(error):
        X[key]
    g = Graph()
    with pytest.raises(error):
        g.call("getitem", g.placeholder("x", TensorMeta(X.shape, X.dtype)), key)


SETITEM_CASES = [
    ((1,), 7.0), ((slice(None, None, -1), 0), np.arange(5.0)), ((Ellipsis, None), -1),
    (((0, 2),), np.ones((2, 4, 5))), ((slice(None), (0, 1), (1, 0)), np.ones((3, 1))),
    (((True, False, True),), 3), ((0, slice(1, 3)), np.ones((1, 1, 2, 5), np.float32)),
]


@pytest.mark.parametrize("key, value", SETITEM_CASES, ids=[repr(k) for k, _ in SETITEM_CASES])
def test_setitem_is_functional(key, value):
    expected = X.copy()
    expected[key] = value
    before = X.copy()
    if isinstance(value, np.ndarray):  # array values are graph inputs
        check_graph(lambda g, x, v: g.call("setitem", x, key, v), [X, value], expected)
    else:
        check_graph(lambda g, x: g.call("setitem", x, key, value), [X], expected)
    np.testing.assert_array_equal(X, before)  # the input is not written to


def test_setitem_with_a_mask_from_the_graph_is_where():
    x = np.linspace(-1, 1, 6)
    g_value = np.float32(5)
    expected = x.copy()
    expected[x > 0] = g_value
    check_graph(lambda g, a: g.call("setitem", a, (g.call("greater", a, 0),), g_value), [x], expected)
    check_graph(lambda g, a, v: g.call("setitem", a, g.call("greater", a, 0), v), [x, np.array([2.0])],
                np.where(x > 0, 2.0, x))
    g = Graph()
    a = g.placeholder("a", TensorMeta((6,), np.dtype(np.float64)))
    with pytest.raises(ir.ops.DataDependent):  # x[mask] = array: the count must match
        g.call("setitem", a, g.call("greater", a, 0), g.placeholder("v", TensorMeta((3,), a.dtype)))


@pytest.mark.parametrize("key, value, error", [
    ((slice(None),), np.ones(7), ValueError), ((0,), 300, OverflowError), ((0,), float("nan"), ValueError),
    ((9,), 1, IndexError),
])
def test_setitem_errors_match_numpy(key, value, error):
    x = np.zeros((3, 5), np.int8)
    with pytest.raises(error):
        x.copy()[key] = value
    g = Graph()
    with pytest.raises(error):
        g.call("setitem", g.placeholder("x", TensorMeta(x.shape, x.dtype)), key, value)


@pytest.mark.parametrize("fn, sections, axis", [
    (np.split, 2, 0), (np.split, [1, 3], -1), (np.array_split, 3, 1), (np.array_split, [-2, 10], 2),
    (np.split, 0, 0), (np.split, 5, 1), (np.split, 2, 3),
])
def test_split_is_one_getitem_per_piece(fn, sections, axis):
    from minicompile.dynamo.variables.numpy_calls import SPLITS

    x = np.arange(48.0).reshape(2, 4, 6)
    try:
        expected = fn(x, sections, axis=axis)
    except Exception as e:
        with pytest.raises(type(e)):
            ir.ops.split_keys(x.shape, sections, axis, equal=SPLITS[fn])
        return
    keys = ir.ops.split_keys(x.shape, sections, axis, equal=SPLITS[fn])
    check_graph(lambda g, a: [g.call("getitem", a, k) for k in keys], [x], expected)


CREATIONS = [
    ("zeros", ((2, 3),), {}), ("zeros", (4,), {"dtype": np.int8}), ("ones", ((0, 2),), {"dtype": bool}),
    ("empty", ((2, 2),), {}), ("full", ((2,), 7), {}), ("full", ((), 2.5), {"dtype": np.float32}),
    ("arange", (5,), {}), ("arange", (1, 2, 0.25), {}), ("arange", (3,), {"dtype": np.uint8}),
    ("linspace", (0, 1, 5), {}), ("linspace", (0, 1), {"num": 4, "endpoint": False, "dtype": np.float32}),
    ("eye", (3,), {}), ("eye", (2, 4), {"k": -1, "dtype": np.int16}), ("tri", (3, 2), {}),
    ("asarray", ([[1, 2], [3, 4]],), {}), ("asarray", ((1.5, 2),), {"dtype": np.float16}),
]


@pytest.mark.parametrize("name, args, kwargs", CREATIONS, ids=[f"{c[0]}{c[1]}" for c in CREATIONS])
def test_creation_nodes_have_no_inputs(name, args, kwargs):
    g = Graph()
    node = g.call(name, *args, **kwargs)
    assert node.inputs == []
    # np.empty's contents are undefined; minicompile's are zeros.
    numpy_name = {"empty": "zeros"}.get(name, name)
    check_graph(lambda g: g.call(name, *args, **kwargs), [], getattr(np, numpy_name)(*args, **kwargs))


@pytest.mark.parametrize("call, error", [
    (lambda g: g.call("zeros", (-1, 2)), ValueError),
    (lambda g: g.call("zeros", (2,), dtype=np.complex64), ir.UnsupportedDtype),
    (lambda g: g.call("ones", 3, dtype=object), ir.UnsupportedDtype),
    (lambda g: g.call("full", 3, "a"), ir.UnsupportedDtype),
    (lambda g: g.call("arange", np.datetime64("2020-01-01"), np.datetime64("2020-01-03")), ir.UnsupportedDtype),
    (lambda g: g.call("asarray", [1j, 2]), ir.UnsupportedDtype),
    (lambda g: g.call("arange", g.placeholder("n", TensorMeta((), np.dtype(int)))), ir.ops.DataDependent),
])
def test_creation_errors(call, error):
    with pytest.raises(error):
        call(Graph())


def test_writes_into_arguments_are_functional():
    a = np.zeros(5)
    idx = np.array([0, 1, 1, 4])
    expected = a.copy()
    np.add.at(expected, idx, 1.5)
    check_graph(lambda g, x, i: g.call("add_at", x, i, 1.5), [a, idx], expected)

    dst, src, mask = np.zeros((2, 3), np.float32), np.arange(3.0), np.array([True, False, True])
    expected = dst.copy()
    np.copyto(expected, src, where=mask)
    check_graph(lambda g, d, s, m: g.call("copyto", d, s, where=m), [dst, src, mask], expected)
    # ufunc(..., out=o, where=m) == copyto(o, ufunc(...), where=m): the loop, then a same_kind cast
    o, x = np.full(3, -1, np.int64), np.full(3, 100, np.int8)
    expected = o.copy()
    np.add(x, x, out=expected, where=mask)
    check_graph(lambda g, o_, x_, m: g.call("copyto", o_, g.call("add", x_, x_), where=m),
                [o, x, mask], expected)
    with pytest.raises(TypeError):  # float into int: not same_kind
        Graph().call("copyto", Graph().placeholder("d", TensorMeta((3,), np.dtype(np.int32))), 1.5)

    arr, ind = np.arange(12.0).reshape(3, 4), np.array([[1], [0], [3]])
    expected = arr.copy()
    np.put_along_axis(expected, ind, -1.0, axis=1)
    check_graph(lambda g, x, i: g.call("put_along_axis", x, i, -1.0, 1), [arr, ind], expected)


@pytest.mark.parametrize("code, scalar", [
    ("x[0, 1]", True), ("x[0, ...]", False), ("x[(0, 1)]", True), ("np.sum(x)", True),
    ("np.take(x, 3)", True), ("np.tensordot(x, x, 2)", False), ("np.squeeze(x[:1, :1])", False),
    ("np.linalg.norm(x)", True), ("np.cumsum(x)[0]", True), ("np.dot(x[0], x[0])", True),
])
def test_scalar_results(code, scalar):
    """``OpDef.result_is_scalar`` says what NumPy returns for a 0-d result."""
    x = np.arange(6.0).reshape(2, 3)
    assert isinstance(eval(code, {"np": np, "x": x}), np.generic) == scalar


def test_scalar_rule_of_getitem():
    getitem = ir.get_op("getitem")
    meta = TensorMeta((2, 3), np.dtype(np.float64))
    assert getitem.result_is_scalar({"a": meta, "key": indexing.canonical_key((0, 1), meta.shape)})
    assert not getitem.result_is_scalar({"a": meta, "key": indexing.canonical_key((0, 1, ...), meta.shape)})


# ---------------------------------------------------------------------------
# Index keys: the parser agrees with NumPy on random keys
# ---------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ints = st.integers(-5, 5)
_slices = st.builds(slice, st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
                    st.sampled_from([None, 1, 2, 3, -1, -2]))
_entries = st.one_of(
    _ints, _slices, st.none(), st.just(Ellipsis), st.booleans(),
    st.lists(_ints, max_size=3).map(tuple),
    st.lists(st.booleans(), min_size=0, max_size=4).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), key=st.lists(_entries, max_size=4).map(tuple))
def test_index_parser_agrees_with_numpy(shape, key):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    try:
        expected = x[key]
    except Exception as e:
        with pytest.raises(type(e)):
            canonical = indexing.canonical_key(key, shape)
            indexing.result_shape(canonical, shape)
        return
    canonical = indexing.canonical_key(key, shape)
    assert indexing.result_shape(canonical, shape) == np.shape(expected)
    np.testing.assert_array_equal(x[canonical], expected)  # same meaning
    assert indexing.gives_scalar(canonical, shape) == isinstance(expected, np.generic) or np.ndim(expected) > 0


# ---------------------------------------------------------------------------
# The tables themselves
# ---------------------------------------------------------------------------

KINDS = {"pointwise", "reduction", "scan", "view", "layout", "creation", "index", "extern"}


def test_every_op_has_a_documented_kind_and_a_printable_signature():
    for name, op in ir.OPS.items():
        assert op.kind in KINDS, name
        for param in op.signature.parameters.values():
            # Every argument is stored on the node and printed as Python.
            assert param.kind is param.POSITIONAL_OR_KEYWORD, (name, param)
            assert param.default is not np._NoValue, (name, param)


def test_call_rules_name_registered_ops_and_bind_like_numpy():
    from minicompile.dynamo.variables import numpy_calls as nc

    rules = list(nc.FUNCTIONS.values()) + list(nc.METHODS.values()) + \
        [m.rule for m in (*nc.MUTATIONS.values(), *nc.METHOD_MUTATIONS.values())]
    for rule in rules:
        op = ir.get_op(rule.op)
        stub = inspect.signature(rule.stub)
        names = {rule.rename.get(p, p) for p in stub.parameters}
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in stub.parameters.values())
        # The op's array argument comes first in NumPy's spelling too, and
        # every op parameter is one NumPy's signature can pass.
        missing = set(op.param_names) - names
        assert not missing or takes_kwargs, (rule.op, rule.stub, missing)
    assert len(ir.OPS) >= 170


@pytest.mark.parametrize("fn", [np.random.rand, np.random.default_rng, np.random.normal, np.load, np.save,
                                np.loadtxt, np.savetxt, np.fromfile, np.genfromtxt])
def test_random_numbers_and_io_are_not_captured(fn):
    from minicompile.dynamo.variables.numpy_calls import FUNCTIONS

    assert fn not in FUNCTIONS


def test_random_numbers_break_the_graph():
    def noisy(x):
        return x + np.random.rand(*x.shape)

    explanation = mc.explain(noisy)(np.zeros(3))
    assert explanation.graph_break_count >= 1


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), cols=st.sampled_from([(), (1,), (3,), (2, 3)]), n=st.integers(0, 12),
       ufunc=st.sampled_from([np.add, np.subtract, np.multiply, np.maximum, np.minimum]),
       dtype=st.sampled_from([np.float32, np.float64, np.int32]), value_shape=st.sampled_from(["full", "row", "scalar"]),
       as_tuple=st.booleans(), seed=st.integers(0, 2**16))
def test_ufunc_at_over_rows_equals_numpy_bit_for_bit(rows, cols, n, ufunc, dtype, value_shape, as_tuple, seed):
    """``np.<ufunc>.at(a, idx, b)`` selecting rows of ``a`` runs as updates of
    the flat array (pointwise._rows_at): same result, repeated and negative
    indices and broadcast values included."""
    from minicompile.ir.ops.registry import get_op

    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((rows,) + cols) * 10).astype(dtype)
    idx = rng.integers(-rows, rows, size=(n,) if seed % 2 else (n // 2 + 1, 2))
    full = idx.shape + cols
    b = {"full": rng.standard_normal(full), "row": rng.standard_normal(cols), "scalar": 2.5}[value_shape]
    b = np.asarray(b * 10).astype(dtype)
    expected = a.copy()
    ufunc.at(expected, (idx,) if as_tuple else idx, b)
    got = get_op(f"{ufunc.__name__}_at").impl(a, (idx,) if as_tuple else idx, b)
    assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True)
    assert not np.shares_memory(got, a)


def test_ufunc_at_over_rows_keeps_numpys_errors():
    from minicompile.ir.ops.registry import get_op

    with pytest.raises(IndexError):
        get_op("add_at").impl(np.zeros((3, 2)), np.array([0, 3]), 1.0)
    with pytest.raises(ValueError):
        get_op("add_at").impl(np.zeros((3, 2)), np.array([0, 1]), np.ones((3, 2)))
