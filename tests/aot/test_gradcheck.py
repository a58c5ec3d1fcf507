"""The systematic gradient check: every differentiable op, on the tape and compiled, first and second order.

One list of cases, each a NumPy function of float64 arrays and the arrays to
call it at, covers every op of the registry that has a derivative rule (a
test below checks that no rule is left out) over shapes 0-d, 1-D, 2-D, size-1
axes and broadcasting pairs, axes and keepdims.  The loss of a case is its
result projected on fixed random weights, so every output element matters;
its gradient with respect to all arguments together (every argnum) must match
central differences along random directions — on the tape (``mc.grad``),
compiled (``mc.grad(mc.compile(f))`` with ``aot_eager`` and ``cpp``), and to
second order (a Hessian-vector product, ``mc.grad`` of ``mc.grad``, against
differences of gradients), as HIPS/autograd's ``check_grads`` does.

Points keep a margin from kinks (ties for sorts and extrema, zeros for
``abs``, the domain ends of ``arcsin``).  By default every case runs on the
tape to second order and compiled with ``aot_eager``; compiled second order
on every seventh case, ``cpp`` on every fourteenth.  ``MINICOMPILE_GRADCHECK=full`` runs
every case every way.
"""
from __future__ import annotations

import os
from typing import Callable

import numpy as np
import pytest

from minicompile.aot import DERIVATIVES
from minicompile.ir import OPS
from minicompile.testing import check_gradients

FULL = os.environ.get("MINICOMPILE_GRADCHECK") == "full"
swv = np.lib.stride_tricks.sliding_window_view
as_strided = np.lib.stride_tricks.as_strided


def _arrays(seed: int, *specs: tuple) -> list[np.ndarray]:
    """One float64 array per (shape, kind): 'any' normal, 'pos' in [0.5, 2], 'unit' in
    [-0.8, 0.8], 'apart' with elements at least 0.1 apart (no ties), 'nan' with NaNs."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, kind in specs:
        n = int(np.prod(shape))
        if kind == "pos":
            x = rng.uniform(0.5, 2.0, shape)
        elif kind == "unit":
            x = rng.uniform(-0.8, 0.8, shape)
        elif kind == "apart":
            x = (rng.permutation(n) * 0.37 - n * 0.15 + rng.uniform(0, 0.05, n)).reshape(shape)
        elif kind == "away":  # |x| >= 0.3: away from abs's and sign's kink
            x = rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        elif kind == "nan":
            x = rng.standard_normal(shape)
            x.reshape(-1)[:: 3] = np.nan
        elif kind == "zeros":
            x = _with_zeros_and_ties(rng.standard_normal(shape))
        else:
            x = rng.standard_normal(shape)
        out.append(np.asarray(x, dtype=np.float64))
    return out


def _with_zeros_and_ties(x: np.ndarray) -> np.ndarray:
    """``x`` with exact zeros and a tie, where a rule that divides by its input (``prod / x``)
    or compares it (``x == out``) goes wrong.  Along the last axis: row 0 holds one zero, row 1
    two, row 2 only zeros; along the others, slices with none, one and all zeros; the last
    element of row 0 is repeated (in row 1, or in row 0 itself if it is the only row)."""
    if x.ndim == 0 or x.size == 0:
        return np.zeros_like(x)
    rows = x.reshape(-1, x.shape[-1])  # a view: writes land in x
    n = rows.shape[1]
    for i, row in enumerate(rows):
        if i == 1:
            row[: min(2, n)] = 0.0
        elif i == 2:
            row[:] = 0.0
        else:
            row[min(i + 1, n - 1) if i == 0 else i % n] = 0.0
    if len(rows) > 1:
        rows[1, -1] = rows[0, -1]
    elif n >= 4:
        rows[0, -2] = rows[0, -1]
    return x


CASES: dict[str, tuple[Callable, list[np.ndarray], str]] = {}  # name -> (fn, args, op)
SPECS: dict[str, tuple[tuple, ...]] = {}  # name -> the (shape, kind) of each argument


def case(op: str, name: str, fn: Callable, *specs: tuple) -> None:
    SPECS[f"{op}:{name}"] = specs
    CASES[f"{op}:{name}"] = (fn, _arrays(len(CASES), *specs), op)


S0, S1, S2, S13 = (), (4,), (2, 3), (1, 3)
SHAPES = {"0d": S0, "1d": S1, "2d": S2, "size1": S13}
PAIRS = {"same": (S2, S2), "row": (S2, (3,)), "outer": ((2, 1), S13), "scalar": (S0, S2), "vec_scalar": (S1, S0)}

# -- pointwise ---------------------------------------------------------------------------------
UNARY = {"exp": "any", "log": "pos", "sqrt": "pos", "tanh": "any", "sin": "any", "cos": "any", "tan": "unit",
         "sinh": "any", "cosh": "any", "arcsin": "unit", "arccos": "unit", "arctan": "any", "arcsinh": "any",
         "arccosh": "pos1", "arctanh": "unit", "exp2": "any", "expm1": "any", "log2": "pos", "log10": "pos",
         "log1p": "pos", "cbrt": "pos", "reciprocal": "pos", "deg2rad": "any", "rad2deg": "any",
         "negative": "any", "positive": "any", "square": "any", "absolute": "away", "fabs": "away"}
for _op, _kind in UNARY.items():
    for _s, _shape in SHAPES.items():
        if _kind == "pos1":
            case(_op, _s, lambda a, f=getattr(np, _op): f(a + 1.5), (_shape, "pos"))
        else:
            case(_op, _s, lambda a, f=getattr(np, _op): f(a), (_shape, _kind))
for _op in ("floor", "ceil", "trunc", "rint", "sign"):  # zero almost everywhere (next to a smooth term)
    case(_op, "2d", lambda a, f=getattr(np, _op): f(a * 3.0) * 0.5 + a, (S2, "away"))
case("round", "2d", lambda a: np.round(a * 3.0, 1) + a, (S2, "away"))
# of a real array: itself, itself and zeros (no gradient flows through complex values)
case("conjugate", "2d", lambda a: np.conjugate(a) * a, (S2, "any"))
case("real", "2d", lambda a: a.real * a, (S2, "any"))
case("imag", "2d", lambda a: np.imag(a) + a * a, (S2, "any"))

BINARY = {"add": ("any", "any"), "subtract": ("any", "any"), "multiply": ("any", "any"), "divide": ("any", "pos"),
          "power": ("pos", "any"), "float_power": ("pos", "any"), "maximum": ("apart", "apart"),
          "minimum": ("apart", "apart"), "fmax": ("apart", "apart"), "fmin": ("apart", "apart"),
          "hypot": ("any", "any"), "arctan2": ("any", "pos"), "logaddexp": ("any", "any"),
          "logaddexp2": ("any", "any"), "copysign": ("away", "away"), "remainder": ("pos", "pos"),
          "fmod": ("pos", "pos")}
for _op, (_k1, _k2) in BINARY.items():
    for _p, (_s1, _s2) in PAIRS.items():
        if _op in ("maximum", "minimum", "fmax", "fmin") and _p != "same":
            case(_op, _p, lambda a, b, f=getattr(np, _op): f(a, b + 0.05), (_s1, "any"), (_s2, "any"))
            continue
        if _op in ("remainder", "fmod"):  # away from the jumps: x1 / x2 between integers
            case(_op, _p, lambda a, b, f=getattr(np, _op): f(a + 3.2, b * 0.05 + 1.0), (_s1, "unit"), (_s2, "unit"))
            continue
        case(_op, _p, lambda a, b, f=getattr(np, _op): f(a, b), (_s1, _k1), (_s2, _k2))
# at a zero base: x^0 is 1 (d/dx 0, not 0 * inf), 0^y is 0 for y > 0 (d/dy 0, not 0 * log 0)
ZERO_BASE = np.array([[0.0, 2.0, 0.0], [1.5, 0.0, 0.5]])
for _op in ("power", "float_power"):
    case(_op, "zero_exponent", lambda a, f=getattr(np, _op): f(a, 0.0) * a + f(a, 2.0), (S2, "zeros"))
    case(_op, "zero_base", lambda b, f=getattr(np, _op): f(ZERO_BASE, b + 2.0), (S2, "unit"))
case("floor_divide", "2d", lambda a, b: np.floor_divide(a * 3, b) + a * b, (S2, "away"), (S2, "pos"))
case("heaviside", "2d", lambda a, b: np.heaviside(np.where(a > 0, a, 0.0), b) * a, (S2, "away"), (S2, "any"))
case("where", "bcast", lambda a, b: np.where(a > 0, a * 2, b), (S2, "away"), ((3,), "any"))
case("clip", "bounds", lambda a, lo, hi: np.clip(a, lo - 1.0, hi + 1.0), (S2, "any"), ((3,), "unit"), (S13, "unit"))
case("clip", "scalar", lambda a: np.clip(a, -0.5, 0.5), (S2, "away"))
case("nan_to_num", "2d", lambda a: np.nan_to_num(a), (S2, "nan"))
case("astype", "f32", lambda a: np.asarray(a).astype(np.float32).astype(np.float64) * 0 + a * 2, (S2, "any"))

# -- reductions ----------------------------------------------------------------------------------
AXES = {"all": None, "0": 0, "1": 1, "neg": -1, "both": (0, 1)}
for _op in ("sum", "mean", "prod", "max", "min", "var", "std", "ptp", "nansum", "nanmean", "nanprod", "nanmax",
            "nanmin", "nanvar", "nanstd", "median", "nanmedian"):
    _f = getattr(np, _op)
    _kind = "apart" if _op in ("max", "min", "ptp", "nanmax", "nanmin", "median", "nanmedian") else "any"
    for _a, _axis in AXES.items():
        for _keep in (False, True):
            if _op == "ptp" and _axis == (0, 1):
                continue
            case(_op, f"axis_{_a}_keep{int(_keep)}", lambda x, f=_f, ax=_axis, k=_keep: f(x, axis=ax, keepdims=k),
                 (S2, _kind))
    case(_op, "0d", lambda x, f=_f: f(x), (S0, "any"))
    case(_op, "size1", lambda x, f=_f: f(x, axis=0), (S13, _kind))
    if _op.startswith("nan"):
        case(_op, "with_nan", lambda x, f=_f: f(x, axis=1), ((3, 4), "nan"))
case("var", "ddof", lambda x: np.var(x, axis=1, ddof=1), (S2, "any"))
case("nanstd", "ddof", lambda x: np.nanstd(x, axis=0, ddof=1), ((4, 3), "any"))
case("mean", "method", lambda x: x.mean(axis=1).sum() + x.var() + x.std(axis=0), (S2, "any"))
for _op in ("quantile", "percentile", "nanquantile", "nanpercentile"):
    _q = (0.3, 0.8) if "quantile" in _op else (30.0, 80.0)
    case(_op, "axis", lambda x, f=getattr(np, _op), q=_q: f(x, q, axis=1), ((3, 5), "apart"))
    case(_op, "scalar_q", lambda x, f=getattr(np, _op), q=_q: f(x, q[0]), ((3, 5), "apart"))
    case(_op, "keep", lambda x, f=getattr(np, _op), q=_q: f(x, q, axis=0, keepdims=True), ((4, 2), "apart"))
case("quantile", "nearest", lambda x: np.quantile(x, 0.4, axis=1, method="nearest"), ((3, 5), "apart"))
case("nanquantile", "with_nan", lambda x: np.nanquantile(x, 0.4, axis=1), ((3, 5), "nan"))
for _ord in (None, 1, 2, 3, np.inf, -np.inf, 0.5):
    case("norm", f"vector_{_ord}", lambda x, o=_ord: np.linalg.norm(x, o, axis=1), ((3, 4), "apart"))
for _ord in (None, "fro", 1, -1, np.inf, -np.inf):
    case("norm", f"matrix_{_ord}", lambda x, o=_ord: np.linalg.norm(x, o), ((3, 4), "apart"))
case("norm", "keepdims", lambda x: np.linalg.norm(x, axis=0, keepdims=True), ((3, 4), "any"))

# -- scans -------------------------------------------------------------------------------------------
for _op in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
    for _a, _axis in (("none", None), ("0", 0), ("1", 1)):
        case(_op, _a, lambda x, f=getattr(np, _op), ax=_axis: f(x, axis=ax), (S2, "any"))
    case(_op, "0d", lambda x, f=getattr(np, _op): f(x), (S0, "any"))
case("nancumprod", "with_nan", lambda x: np.nancumprod(x, axis=1), ((3, 4), "nan"))
case("diff", "n2", lambda x: np.diff(x, n=2, axis=1), ((3, 5), "any"))
case("diff", "axis0", lambda x: np.diff(x, axis=0), ((3, 5), "any"))

# -- layout and views ----------------------------------------------------------------------------
T3 = (2, 3, 4)
LAYOUT = {
    "transpose": lambda x: np.transpose(x, (2, 0, 1)), "reshape": lambda x: np.reshape(x, (4, -1)),
    "swapaxes": lambda x: np.swapaxes(x, 0, 2), "moveaxis": lambda x: np.moveaxis(x, 0, -1),
    "expand_dims": lambda x: np.expand_dims(x, (0, 2)), "squeeze": lambda x: np.squeeze(x[:1]),
    "ravel": lambda x: np.ravel(x), "broadcast_to": lambda x: np.broadcast_to(x[:, :1], (2, 3, 4)),
    "flip": lambda x: np.flip(x, (0, 2)), "rot90": lambda x: np.rot90(x, 3, axes=(1, 2)),
    "copy": lambda x: np.copy(x) * x, "atleast_1d": lambda x: np.atleast_1d(x[0, 0, 0]),
    "atleast_2d": lambda x: np.atleast_2d(x[0, 0]), "atleast_3d": lambda x: np.atleast_3d(x[0]),
    "getitem": lambda x: x[1, ::2, [0, 3, 3]], "take": lambda x: np.take(x, [2, 0, 2], axis=2),
    "diagonal": lambda x: np.diagonal(x, 1, 1, 2), "trace": lambda x: np.trace(x, -1, 1, 2),
    "tril": lambda x: np.tril(x, -1), "triu": lambda x: np.triu(x, 1),
    "sort": lambda x: np.sort(x, axis=1), "partition": lambda x: np.partition(x, 1, axis=2),
    "take_along_axis": lambda x: np.take_along_axis(x, np.array([[[0, 3, 3]]]), axis=2),
    "sliding_window_view": lambda x: swv(x, (2, 2), axis=(1, 2)),
    "as_strided": lambda x: as_strided(np.ravel(x), (5, 3), (8, 8)),
}
for _op, _f in LAYOUT.items():
    case(_op, "3d", _f, (T3, "apart"))
case("roll", "axis", lambda x: np.roll(x, (1, -2), axis=(0, 1)), (S2, "any"))
case("roll", "flat", lambda x: np.roll(x, 4), (S2, "any"))
case("tile", "2d", lambda x: np.tile(x, (2, 1, 3)), (S2, "any"))
case("tile", "0d", lambda x: np.tile(x, 3), (S0, "any"))
case("repeat", "axis", lambda x: np.repeat(x, 2, axis=1), (S2, "any"))
case("repeat", "counts", lambda x: np.repeat(x, [2, 0], axis=0), (S2, "any"))
case("repeat", "flat", lambda x: np.repeat(x, 3), (S13, "any"))
for _mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    case("pad", _mode, lambda x, m=_mode: np.pad(x, ((1, 2), (3, 1)), mode=m), ((3, 4), "any"))
case("pad", "1d", lambda x: np.pad(x, 2, constant_values=1.5), (S1, "any"))
case("diag", "1d", lambda x: np.diag(x, -1), (S1, "any"))
case("diag", "2d", lambda x: np.diag(x, 1), ((3, 4), "any"))
case("tril", "1d", lambda x: np.tril(x), (S1, "any"))
case("sort", "flat", lambda x: np.sort(x, axis=None), (S2, "apart"))
case("sliding_window_view", "1d", lambda x: swv(x, 3), ((5,), "any"))

# -- joins and splits -------------------------------------------------------------------------------
case("concatenate", "axis1", lambda a, b: np.concatenate([a, b, a], axis=1), (S2, "any"), ((2, 1), "any"))
case("concatenate", "none", lambda a, b: np.concatenate([a, b], axis=None), (S2, "any"), (S1, "any"))
case("stack", "axis1", lambda a, b: np.stack([a, b], axis=1), (S2, "any"), (S2, "any"))
case("vstack", "1d_2d", lambda a, b: np.vstack([a, b]), (S2, "any"), ((3,), "any"))
case("hstack", "1d", lambda a, b: np.hstack([a, b]), (S1, "any"), (S0, "any"))
case("hstack", "2d", lambda a, b: np.hstack([a, b]), (S2, "any"), ((2, 1), "any"))
case("dstack", "2d", lambda a, b: np.dstack([a, b]), (S2, "any"), (S2, "any"))
case("column_stack", "1d_2d", lambda a, b: np.column_stack([a, b]), ((2,), "any"), (S2, "any"))
case("asarray", "list", lambda a, b: np.asarray([a, b * 2.0, a]), (S1, "any"), (S1, "any"))
case("linspace", "arrays", lambda a, b: np.linspace(a, b + 3.0, 5, axis=1), ((2,), "any"), ((2,), "any"))
case("full", "0d_fill", lambda a, f: np.full((2, 3), f) * a, (S2, "any"), (S0, "any"))
case("copyto", "where", lambda a, b: _copyto(a, b), (S2, "any"), ((3,), "any"))
case("setitem", "box", lambda a, b: _setitem(a, b), ((3, 4), "any"), ((2,), "any"))


def _copyto(a, b):
    out = a * 1.0
    np.copyto(out, b * 2.0, where=np.array([True, False, True]))
    return out


def _setitem(a, b):
    out = a * 1.0
    out[1, 1:3] = b * 3.0
    return out


# -- linear algebra -----------------------------------------------------------------------------------
case("matmul", "2d", lambda a, b: a @ b, ((2, 3), "any"), ((3, 4), "any"))
case("matmul", "batched_bcast", lambda a, b: a @ b, ((2, 1, 2, 3), "any"), ((3, 3, 2), "any"))
case("matmul", "vec", lambda a, b: a @ b, ((3,), "any"), ((2, 3, 4), "any"))
for _name, (_s1, _s2) in {"2d": ((2, 3), (3, 4)), "3d_2d": ((2, 2, 3), (3, 4)), "1d_3d": ((3,), (2, 3, 4)),
                          "3d_1d": ((2, 2, 3), (3,)), "scalar": (S2, S0), "1d_1d": ((3,), (3,))}.items():
    case("dot", _name, lambda a, b: np.dot(a, b), (_s1, "any"), (_s2, "any"))
case("inner", "2d", lambda a, b: np.inner(a, b), ((2, 3), "any"), ((4, 3), "any"))
case("outer", "1d_2d", lambda a, b: np.outer(a, b), ((3,), "any"), ((2, 2), "any"))
case("vdot", "2d", lambda a, b: np.vdot(a, b), ((2, 3), "any"), ((3, 2), "any"))
case("tensordot", "pairs", lambda a, b: np.tensordot(a, b, axes=([1, 2], [0, 1])), (T3, "any"), ((3, 4, 2), "any"))
case("tensordot", "int", lambda a, b: np.tensordot(a, b, 1), ((2, 3), "any"), ((3, 4), "any"))
case("tensordot", "outer", lambda a, b: np.tensordot(a, b, 0), ((2,), "any"), ((3,), "any"))
EINSUMS = {"matmul": ("ij,jk->ik", (2, 3), (3, 4)), "implicit": ("ij,j", (2, 3), (3,)),
           "batch": ("bij,bjk->bik", (2, 2, 3), (2, 3, 2)), "ellipsis": ("...j,jk", T3, (4, 2)),
           "outer": ("i,j->ij", (2,), (3,)), "bcast": ("ij,ij->ij", (2, 3), (1, 3)),
           "repeated_out": ("ij,jk->ikj", (2, 3), (3, 2))}
for _name, (_spec, _s1, _s2) in EINSUMS.items():
    case("einsum", _name, lambda a, b, s=_spec: np.einsum(s, a, b), (_s1, "any"), (_s2, "any"))
case("einsum", "trace", lambda a: np.einsum("ii", a), ((3, 3), "any"))
case("einsum", "diagonal", lambda a: np.einsum("ii->i", a), ((3, 3), "any"))
case("einsum", "sum_one", lambda a: np.einsum("ij->j", a), ((2, 3), "any"))
case("einsum", "three", lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c), ((2, 3), "any"), ((3, 4), "any"),
     ((4,), "any"))
case("einsum", "sublist", lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), ((2, 3), "any"), ((3, 4), "any"))
case("kron", "2d", lambda a, b: np.kron(a, b), ((2, 3), "any"), ((2, 2), "any"))
case("kron", "1d_2d", lambda a, b: np.kron(a, b), ((3,), "any"), ((2, 2), "any"))
case("cross", "bcast", lambda a, b: np.cross(a, b), ((4, 3), "any"), ((3,), "any"))
case("cross", "axis", lambda a, b: np.cross(a, b, axis=0), ((3, 2), "any"), ((3, 2), "any"))
for _mode in ("full", "same", "valid"):
    case("convolve", _mode, lambda a, v, m=_mode: np.convolve(a, v, m), ((5,), "any"), ((3,), "any"))
    case("correlate", _mode, lambda a, v, m=_mode: np.correlate(a, v, m), ((5,), "any"), ((3,), "any"))
case("convolve", "long_v", lambda a, v: np.convolve(a, v, "same"), ((3,), "any"), ((6,), "any"))
case("interp", "x_and_fp", lambda x, fp: np.interp(x * 1.3, [-1.0, 0.0, 0.5, 2.0], fp), ((7,), "any"),
     ((4,), "any"))

# -- ufunc.at and writes along an axis (through the ops they are captured as) -------------------------
case("add_at", "rows", lambda a, b: _at(np.add, a, b), ((4, 3), "any"), ((3, 3), "any"))
case("subtract_at", "rows", lambda a, b: _at(np.subtract, a, b), ((4, 3), "any"), ((3, 3), "any"))
case("multiply_at", "rows", lambda a, b: _at(np.multiply, a, b), ((4, 3), "pos"), ((3, 3), "pos"))
case("maximum_at", "rows", lambda a, b: _at(np.maximum, a, b), ((4, 3), "apart"), ((3, 3), "apart"))
case("minimum_at", "rows", lambda a, b: _at(np.minimum, a, b), ((4, 3), "apart"), ((3, 3), "apart"))
case("negative_at", "rows", lambda a: _at(np.negative, a), ((4, 3), "any"))
case("put_along_axis", "rows", lambda a, b: _put_along(a, b), ((3, 4), "any"), ((3, 2), "any"))


def _at(ufunc, a, b=None):
    out = a * 1.0
    index = np.array([0, 2, 0])
    if b is None:
        ufunc.at(out, index)
    else:
        ufunc.at(out, index, b)
    return out


def _put_along(a, b):
    out = a * 1.0
    np.put_along_axis(out, np.array([[0, 2], [3, 1], [1, 0]]), b, axis=1)
    return out


# -- at exact zeros and ties -----------------------------------------------------------------------------
# One case of each op with an argument drawn "any" (its first with a 2-d one), again with those
# arguments drawn "zeros" (_with_zeros_and_ties): a rule that divides by its input (prod / x) or
# compares it with its output gives NaN or a wrong share there, where the function is smooth.
# Left out where the function itself has a kink at those points, so that no gradient is right:
AT_ZEROS_KINKED = {
    "hypot": "sqrt(x1^2 + x2^2) at the origin (both arguments have zeros in the same places)",
    "std": "the square root of a zero spread (an all-zero slice)",
    "nanstd": "the square root of a zero spread (an all-zero slice)",
    "norm": "the 2-norm of an all-zero slice",
    "interp": "x * 1.3 = 0 is a knot of xp",
}
# Once known wrong: the second derivative of cumprod through a zero (its rule picked a row's
# first zero with masks on the values, constants when differentiated again).  The rule is now
# a scan without masks or divisions; every op here is checked to second order.
AT_ZEROS_SECOND_ORDER_WRONG: set[str] = set()


def _zeros_cases() -> dict[str, tuple[Callable, list[np.ndarray], str]]:
    chosen: dict[str, str] = {}
    for name, specs in SPECS.items():
        op = CASES[name][2]
        anys = [len(shape) for shape, kind in specs if kind == "any"]
        if not anys or op in AT_ZEROS_KINKED:
            continue
        if op not in chosen or (max(anys) >= 2 and max(len(s) for s, k in SPECS[chosen[op]] if k == "any") < 2):
            chosen[op] = name
    return {f"{name}/zeros": (CASES[name][0], _arrays(k, *[(shape, "zeros" if kind == "any" else kind)
                                                            for shape, kind in SPECS[name]]), CASES[name][2])
            for k, name in enumerate(chosen.values())}


ZEROS_CASES = _zeros_cases()


# Ops every gradient reaches only through another op's rule (its backward, a polyfill, a
# conversion): checked where they are used, listed so the coverage test knows.
REACHED_INDIRECTLY = {"check", "as_strided_scatter", "full_like", "zeros_like", "ones_like", "empty_like"}
# Ops only a backend's pre-grad pass makes (no case here can reach them), checked where that pass runs.
CHECKED_ELSEWHERE = {"attention": "tests/inductor/test_triton_attention_backward.py (central differences in float64)"}

# -- the check (minicompile.testing.check_gradients) ------------------------------------------------


def check_first_order(fn: Callable, args: list, backend: str | None) -> None:
    check_gradients(fn, *args, backend=backend)


def check_second_order(fn: Callable, args: list, backend: str | None) -> None:
    """A Hessian-vector product H v (mc.grad of <mc.grad(f), v>) against differences of gradients."""
    check_gradients(fn, *args, order=2, backend=backend, n_directions=0)


NAMES = sorted(CASES)
SLICE = NAMES if FULL else NAMES[::7]
CPP_SLICE = NAMES if FULL else NAMES[::14]  # each a C++ compile (about a second)


@pytest.mark.parametrize("name", NAMES)
def test_tape(name):
    fn, args, _ = CASES[name]
    check_first_order(fn, args, None)
    check_second_order(fn, args, None)


@pytest.mark.parametrize("name", NAMES)
def test_aot_eager(name):
    fn, args, _ = CASES[name]
    check_first_order(fn, args, "aot_eager")


@pytest.mark.parametrize("name", sorted(ZEROS_CASES))
def test_at_zeros_and_ties(name):
    """Tape (first and second order) and aot_eager at inputs with exact zeros and ties."""
    fn, args, op = ZEROS_CASES[name]
    check_first_order(fn, args, None)
    check_first_order(fn, args, "aot_eager")
    if op in AT_ZEROS_SECOND_ORDER_WRONG:
        with pytest.raises(AssertionError, match="second derivative"):
            check_second_order(fn, args, None)
        pytest.xfail(f"known: the second derivative of {op} through a zero (its rule's value masks)")
    check_second_order(fn, args, None)


@pytest.mark.parametrize("name", CPP_SLICE)
def test_cpp(name):
    fn, args, _ = CASES[name]
    check_first_order(fn, args, "cpp")


@pytest.mark.parametrize("name", SLICE)
def test_compiled_second_order(name):
    fn, args, _ = CASES[name]
    check_second_order(fn, args, "aot_eager")


def test_every_rule_is_checked():
    """Each op with a derivative rule is the op of some case (or reached through others')."""
    covered = {op for _, _, op in CASES.values()} | REACHED_INDIRECTLY | set(CHECKED_ELSEWHERE)
    missing = sorted(op for op in OPS if op in DERIVATIVES and op not in covered)
    assert not missing, f"ops with a rule and no case: {missing}"
