"""Pointwise ops: NumPy's ufuncs, plus the elementwise functions that are not ufuncs.

In:  ufuncs (``np.add``, ``np.exp``...) and ``where``, ``astype``, ``clip``,
     ``round``, ``nan_to_num``; ``copyto`` and ``<ufunc>_at``, the functional
     forms of NumPy's in-place writes.
Out: registered :class:`OpDef` entries.  A ufunc's dtype rule is NumPy's own
     loop resolution (``ufunc.resolve_dtypes``), with Python scalars described
     as NEP 50 sees them: weak.

``out=`` and ``where=`` are mutations of the ``out`` array, so no op has them.
``np.exp(x, out=y, where=m)`` is, functionally, ``y' = copyto(y, exp(x),
where=m)``: NumPy computes the ufunc in its ordinary loop and casts into
``out`` with ``casting="same_kind"``, which is exactly what ``copyto`` does.
Capture then rebinds ``y`` to ``y'`` and writes it back into the caller's array.
"""
from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from .. import dtypes as dt
from .registry import (
    OpDef,
    TensorMeta,
    array_module,
    as_array,
    broadcast_shapes,
    key_in,
    register,
    simple_op,
    with_signature,
)


def ufunc_loop_dtypes(ufunc: np.ufunc, operands: tuple) -> tuple[np.dtype, ...]:
    """The dtypes of the ufunc inner loop NumPy picks: inputs..., output.

    Weak Python scalars are passed to NumPy as their type, exactly as NEP 50
    describes them; a Python int that does not fit the loop raises as in NumPy.
    """
    described = tuple(dt.operand_dtype(o) for o in operands)
    loop = ufunc.resolve_dtypes(described + (None,) * ufunc.nout)
    for value, loop_dtype in zip(operands, loop):
        dt.check_weak_int_fits(value, loop_dtype)
    return tuple(np.dtype(d) for d in loop)


COMPARISONS = frozenset({"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"})


def _exact_comparison_operands(args: dict[str, Any]) -> dict[str, Any]:
    """NumPy 2 compares an array with a Python int outside its dtype exactly
    (``int8_array < 300`` is all True).  A strong int64 operand gives the same
    exact answer through an int64 loop, so the weak int becomes np.int64."""
    x1, x2 = args["x1"], args["x2"]

    def widen(value: Any, other: Any) -> Any:
        other_dtype = getattr(other, "dtype", None)
        if (dt.is_weak_scalar(value) and isinstance(value, int) and other_dtype is not None
                and other_dtype.kind in "iu" and other_dtype != np.uint64):
            info = np.iinfo(other_dtype)
            if not info.min <= value <= info.max and -2**63 <= value < 2**63:
                return np.int64(value)
        return value

    return {"x1": widen(x1, x2), "x2": widen(x2, x1)}


def negative_integer_powers(loop: tuple[np.dtype, ...]) -> bool:
    """Does NumPy's ``power`` loop refuse negative exponents (a signed integer one)?"""
    return loop[-1].kind in "iu" and loop[1].kind == "i"


def _check_values(ufunc: np.ufunc, operands: tuple, loop: tuple[np.dtype, ...]) -> None:
    """NumPy's errors that depend on the values of operands known at capture (an
    exponent that is a constant); arrays the graph computes are checked when it
    runs (the capture adds a ``check`` op)."""
    exponent = operands[-1]
    if ufunc is np.power and negative_integer_powers(loop) and not isinstance(exponent, TensorMeta) \
            and np.any(np.asarray(exponent) < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")


def _pointwise(ufunc: np.ufunc) -> OpDef:
    def meta(**args: Any) -> TensorMeta:
        operands = tuple(args.values())
        loop = ufunc_loop_dtypes(ufunc, operands)
        _check_values(ufunc, operands, loop)
        return TensorMeta(broadcast_shapes(*operands), dt.check_supported(loop[-1]))

    # The reference takes exactly nin positional operands, named like NumPy's.
    names = ("x",) if ufunc.nin == 1 else ("x1", "x2")
    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]

    def impl(*operands: Any) -> Any:
        return ufunc(*operands)

    impl.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    impl.__name__ = ufunc.__name__
    canonicalize = _exact_comparison_operands if ufunc.__name__ in COMPARISONS else None
    return OpDef(ufunc.__name__, "pointwise", impl, meta, canonicalize=canonicalize, ufunc=ufunc,
                 scalar_result=True)


# NumPy 2 spells several of these twice (np.abs is np.absolute, np.acos is
# np.arccos, np.pow is np.power): one object, one op, named by ufunc.__name__.
POINTWISE_UFUNCS = (
    # arithmetic
    np.add, np.subtract, np.multiply, np.divide, np.floor_divide, np.remainder,
    np.power, np.square, np.negative, np.positive, np.absolute, np.maximum, np.minimum,
    np.conjugate,
    # comparisons and logic
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
    np.logical_not, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    # transcendental
    np.exp, np.log, np.tanh, np.sqrt, np.sin, np.cos,
    # -- beyond what the inductor lowers today: these run as Externs --
    np.reciprocal, np.fmod, np.float_power, np.fabs, np.sign, np.heaviside, np.copysign,
    np.fmax, np.fmin, np.floor, np.ceil, np.trunc, np.rint, np.cbrt,
    np.exp2, np.expm1, np.log2, np.log10, np.log1p, np.logaddexp, np.logaddexp2,
    np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.hypot,
    np.sinh, np.cosh, np.arcsinh, np.arccosh, np.arctanh, np.deg2rad, np.rad2deg,
    np.logical_and, np.logical_or, np.logical_xor, np.left_shift, np.right_shift,
    np.isnan, np.isinf, np.isfinite, np.signbit, np.gcd, np.lcm,
)
for _uf in POINTWISE_UFUNCS:
    register(_pointwise(_uf))

# ---------------------------------------------------------------------------
# Elementwise functions that are not ufuncs
# ---------------------------------------------------------------------------


def _where(condition: Any, x: Any, y: Any) -> Any:
    return np.where(condition, x, y)


def _where_meta(condition: Any, x: Any, y: Any) -> TensorMeta:
    dt.check_supported(dt.operand_dtype(condition) if hasattr(condition, "dtype") else np.bool_)
    return TensorMeta(broadcast_shapes(condition, x, y), dt.check_supported(dt.result_type(x, y)))


register(OpDef("where", "pointwise", _where, _where_meta))


def _astype(x: Any, dtype: Any) -> Any:
    return as_array(x).astype(dtype)  # a Python or NumPy scalar as a 0-d array; a CuPy array stays one


def _astype_meta(x: TensorMeta, dtype: np.dtype) -> TensorMeta:
    return TensorMeta(x.shape, dt.check_supported(dtype))


register(
    OpDef(
        "astype", "pointwise", _astype, _astype_meta,
        canonicalize=lambda a: {**a, "dtype": np.dtype(a["dtype"])},
    )
)


def _clip(a, a_min=None, a_max=None):
    return np.clip(a, a_min, a_max)


simple_op("clip", _clip, "pointwise", scalar_result=True)


def _round(a, decimals=0):
    return np.round(a, decimals)


simple_op("round", _round, "pointwise", scalar_result=True)


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


simple_op("nan_to_num", _nan_to_num, "pointwise", scalar_result=True)


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


simple_op("isclose", _isclose, "pointwise", scalar_result=True)


def _copyto(dst, src, casting="same_kind", where=True):
    # Functional: the new value of ``dst``; the caller's array is not touched.
    xp = array_module(dst)
    out = xp.array(dst, copy=True)
    xp.copyto(out, src, casting=casting, where=where)
    return out


simple_op("copyto", with_signature(_copyto, np.copyto), "pointwise", array_api=True)


def _rows_at(ufunc: np.ufunc, out: np.ndarray, indices: Any, b: Any) -> bool:
    """``ufunc.at(out, indices, b)`` for one integer array selecting rows of a
    C-contiguous ``out`` (an embedding's gradient: ``np.add.at(zeros, tokens,
    g)``), as the same updates on the flat array, element by element: NumPy's
    1-D index path is several times faster than its per-row one (0.5-0.7
    against 2.5 ms for 512 rows of 256 floats), and each element still takes
    its updates in index order, so the result is the same bit for bit.
    False (nothing done) when the call is not of that form or an index is out
    of bounds (``ufunc.at`` then raises NumPy's own error)."""
    key = indices[0] if isinstance(indices, tuple) and len(indices) == 1 else indices
    if not (isinstance(key, np.ndarray) and key.dtype.kind in "iu" and out.ndim >= 2 and out.flags.c_contiguous):
        return False
    n, row = out.shape[0], math.prod(out.shape[1:])
    if key.size == 0 or key.min() < -n or key.max() >= n:
        return False
    try:
        values = np.broadcast_to(b, key.shape + out.shape[1:])
    except ValueError:
        return False
    flat = ((key.reshape(-1, 1) % n) * row + np.arange(row)).reshape(-1)
    ufunc.at(out.reshape(-1), flat, values.reshape(-1))
    return True


def _updates(xp: Any, out: Any, indices: Any, b: Any) -> Any:
    """``b`` broadcast to the shape of ``out[indices]`` (a view, nothing copied).
    NumPy 2.4's ``ufunc.at`` reads past the end of a ``b`` with fewer dimensions
    than a multi-dimensional index array (``np.add.at(a, idx2d, b1d)`` adds
    whatever lies after ``b``); given every update, it adds the documented ones."""
    if xp is not np or np.ndim(b) == 0:
        return b
    target = np.broadcast_to(np.empty((), np.int8), out.shape)[indices].shape  # a ghost's, to read the shape
    try:
        return np.broadcast_to(b, target)
    except ValueError:
        return b  # NumPy's own error, from ufunc.at itself


def _ufunc_at(ufunc: np.ufunc) -> OpDef:
    """``np.add.at(a, indices, b)`` as a function: a copy of ``a`` with the update applied."""

    def impl(a, indices, b=None):
        # In a's array module: NumPy's, or CuPy's, whose ufuncs have .at too.  The
        # module's own ufunc is called, as NumPy's dispatch to CuPy refuses a
        # tuple of index arrays as an input.
        xp = array_module(a)
        out, indices, xp_ufunc = xp.array(a, copy=True), key_in(xp, indices), getattr(xp, ufunc.__name__)
        if ufunc.nin == 1:
            xp_ufunc.at(out, indices)
        elif not _rows_at(ufunc, out, indices, b):
            xp_ufunc.at(out, indices, _updates(xp, out, indices, b))
        return out

    impl.__name__ = f"{ufunc.__name__}_at"
    # Meta from ghosts: their indices are all zero, in bounds unless the axis is
    # empty, where NumPy raises IndexError for any index as well.
    return simple_op(impl.__name__, impl, "index", array_api=True)


AT_UFUNCS = (np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.negative,
             np.bitwise_and, np.bitwise_or, np.bitwise_xor)
for _uf in AT_UFUNCS:
    _ufunc_at(_uf)
