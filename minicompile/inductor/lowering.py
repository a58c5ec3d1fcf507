"""Lowering: one ``ir.Graph`` call node -> one loop-IR node.

In:  a call node of an ``ir.Graph`` (its op, canonical args and meta).
Out: a :class:`~.loop_ir.Pointwise`, :class:`~.loop_ir.Reduction` or
     :class:`~.loop_ir.Extern` named after the node.  Inputs are read with
     ``Load(input_node_name, index)``; nothing is inlined yet (the scheduler
     decides that).

:data:`LOWERINGS` is the one table, keyed by the op registry's names.  A
lowering that cannot reproduce NumPy exactly for the dtypes at hand raises
:class:`Unsupported`, and the node becomes an ``Extern`` call of the op's own
NumPy reference implementation — slower, but correct by construction.  So is
any op the table does not know.

Dtypes follow NumPy's ufunc loop resolution: each operand is cast to the loop's
input dtype, the op computes in it, and the result has the node's dtype.  That
is why ``float32_array * 0.1`` multiplies by ``0.1`` rounded to float32.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import ir
from ..ir.ops import ufunc_loop_dtypes
from . import loop_ir as L


class Unsupported(Exception):
    """This op/dtype combination has no exact loop lowering (the message says why)."""


# For each ufunc: the dtype kinds of its loop inputs ("b"ool, "i"nt, "u"int,
# "f"loat) for which a scalar C expression matches NumPy bit for bit (floats:
# up to the libm's last-place rounding of transcendentals).  Every code
# generator implements exactly these; anything else lowers to an Extern.
POINTWISE_KINDS: dict[str, str] = {
    "add": "biuf", "subtract": "iuf", "multiply": "biuf", "divide": "f",
    "floor_divide": "iuf", "remainder": "iuf", "power": "iuf", "square": "iuf",
    "negative": "iuf", "positive": "biuf", "absolute": "biuf",
    "maximum": "biuf", "minimum": "biuf",
    "less": "biuf", "less_equal": "biuf", "greater": "biuf", "greater_equal": "biuf",
    "equal": "biuf", "not_equal": "biuf", "logical_not": "biuf",
    "bitwise_and": "biu", "bitwise_or": "biu", "bitwise_xor": "biu", "invert": "biu",
    "exp": "f", "log": "f", "tanh": "f", "sqrt": "f", "sin": "f", "cos": "f",
}

TRANSCENDENTAL = frozenset({"exp", "log", "tanh", "sqrt", "sin", "cos", "power"})


def _operand(arg: Any, out_shape: tuple[int, ...], index: tuple[L.Expr, ...], dtype: np.dtype) -> L.Value:
    """One operand of a pointwise op, broadcast to ``out_shape`` and cast to ``dtype``."""
    if not isinstance(arg, ir.Node):
        return L.constant(arg, dtype)
    return L.cast(L.Load(arg.name, broadcast_index(arg.shape, out_shape, index), arg.dtype), dtype)


def broadcast_index(shape: tuple[int, ...], out_shape: tuple[int, ...], index: tuple[L.Expr, ...]) -> tuple[L.Expr, ...]:
    """Index into an operand of ``shape`` broadcast to ``out_shape``: a size-1
    dimension reads element 0 (stride 0), leading missing dimensions are dropped."""
    lead = len(out_shape) - len(shape)
    return tuple(L.Expr() if n == 1 else index[lead + i] for i, n in enumerate(shape))


def lower_ufunc(node: ir.Node) -> L.Pointwise:
    name, ufunc = node.op.name, node.op.ufunc
    operands = node.args
    metas = tuple(a.meta if isinstance(a, ir.Node) else a for a in operands)
    loop = ufunc_loop_dtypes(ufunc, metas)
    ins = loop[: ufunc.nin]
    if len(set(ins)) != 1:
        raise Unsupported(f"{name} with mixed loop dtypes {[str(d) for d in ins]}")
    kind = ins[0].kind
    if kind not in POINTWISE_KINDS.get(name, ""):
        raise Unsupported(f"{name} has no exact loop for {ins[0]}")
    if name == "power" and kind in "iu":
        exponent = operands[1]
        # NumPy raises on a negative integer exponent; only a known one is safe.
        if isinstance(exponent, ir.Node) or isinstance(exponent, bool) or int(exponent) < 0:
            raise Unsupported("integer power needs a constant non-negative exponent")
    index = L.loop_index("x", node.shape)
    args = tuple(_operand(a, node.shape, index, ins[0]) for a in operands)
    body = L.cast(L.Op(name, args, loop[ufunc.nin]), node.dtype)
    return L.Pointwise(node.name, node.shape, body)


def lower_where(node: ir.Node) -> L.Pointwise:
    condition, x, y = node.args
    index = L.loop_index("x", node.shape)
    cond = _operand(condition, node.shape, index, np.dtype(bool))
    a = _operand(x, node.shape, index, node.dtype)
    b = _operand(y, node.shape, index, node.dtype)
    return L.Pointwise(node.name, node.shape, L.Op("where", (cond, a, b), node.dtype))


def lower_astype(node: ir.Node) -> L.Pointwise:
    index = L.loop_index("x", node.shape)
    return L.Pointwise(node.name, node.shape, _operand(node.arg("x"), node.shape, index, node.dtype))


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)

# Accumulator dtype per (reduction, element dtype); missing -> the element dtype.
# Sums of float16/float32 accumulate in double (more accurate than NumPy's
# pairwise sum, well within tolerance); products keep NumPy's own width so
# that overflow to inf happens where NumPy's does.
ACC_DTYPES: dict[tuple[str, np.dtype], np.dtype] = {
    ("sum", _F16): _F64, ("sum", _F32): _F64,
    ("mean", _F16): _F64, ("mean", _F32): _F64,
    ("prod", _F16): _F32,
    ("max", _F16): _F32, ("min", _F16): _F32,
    ("argmax", _F16): _F32, ("argmin", _F16): _F32,
}


def _element_dtype(node: ir.Node) -> np.dtype:
    """The dtype each element is cast to before it is accumulated (as NumPy does)."""
    rtype, src = node.op.name, node.arg("a").dtype
    if rtype in ("max", "min", *L.ARG_REDUCTION_TYPES):
        return src
    if rtype == "mean":
        requested = node.arg("dtype")
        if requested is not None and requested.kind != "f":
            raise Unsupported(f"mean with integer dtype={requested}")
        if requested is None and src.kind == "f":
            return _F32 if src == _F16 else src
        return requested if requested is not None else _F64
    return node.dtype  # sum/prod: the result dtype, e.g. int32 -> int64


def reduced_axes(node: ir.Node) -> tuple[int, ...]:
    """The axes a reduction folds, in order.  argmax/argmin keep NumPy's single
    ``axis`` (or None: every axis, the index counting through the flattened array)."""
    axis = node.arg("axis")
    if axis is None:
        return tuple(range(len(node.arg("a").shape)))
    return axis if isinstance(axis, tuple) else (axis,)


def lower_reduction(node: ir.Node) -> L.Reduction:
    """sum/prod/mean/max/min, and argmax/argmin: a Reduction over the reduced
    axes; for argmax/argmin the row is those axes in row-major order, so the
    position of an element in the row is NumPy's index (:meth:`L.Reduction.position`)."""
    a = node.arg("a")
    axes, keepdims = reduced_axes(node), node.arg("keepdims")
    out_index = L.loop_index("x", node.shape)
    red_ranges = tuple(a.shape[i] for i in axes)
    red_index = L.loop_index("r", red_ranges)
    index, kept = [], iter(out_index)
    for i in range(len(a.shape)):
        if i in axes:
            index.append(red_index[axes.index(i)])
            if keepdims:
                next(kept)
        else:
            index.append(next(kept))
    element = _element_dtype(node)
    body = L.cast(L.Load(a.name, tuple(index), a.dtype), element)
    acc = ACC_DTYPES.get((node.op.name, element), element)
    return L.Reduction(node.name, node.shape, red_ranges, node.op.name, body, node.dtype, acc)


# ---------------------------------------------------------------------------
# Views: index arithmetic only
# ---------------------------------------------------------------------------


def lower_transpose(node: ir.Node) -> L.Pointwise:
    a, axes = node.arg("a"), node.arg("axes")
    index = L.loop_index("x", node.shape)
    src = [L.Expr()] * len(a.shape)
    for out_dim, src_dim in enumerate(axes):
        src[src_dim] = index[out_dim]
    return L.Pointwise(node.name, node.shape, L.Load(a.name, tuple(src), a.dtype), is_view=True)


def lower_reshape(node: ir.Node) -> L.Pointwise:
    a = node.arg("a")
    index = L.loop_index("x", node.shape)
    if math.prod(a.shape) == 0:
        src = tuple(L.Expr() for _ in a.shape)  # nothing is ever read
    else:
        # Row-major flat position in the new shape, unravelled in the old one.
        flat = L.linearize(index, L.contiguous_strides(node.shape))
        # The outermost axis needs no modulo (flat // stride0 < n0 already), which
        # also keeps a symbolic batch size out of the index arithmetic.
        src = tuple(
            L.floordiv(flat, stride) if i == 0 else L.mod(L.floordiv(flat, stride), n)
            for i, (stride, n) in enumerate(zip(L.contiguous_strides(a.shape), a.shape))
        )
    return L.Pointwise(node.name, node.shape, L.Load(a.name, src, a.dtype), is_view=True)


def lower_broadcast_to(node: ir.Node) -> L.Pointwise:
    """``np.broadcast_to`` reads element 0 along every size-1 (stride-0) axis."""
    a = node.arg("array")
    index = L.loop_index("x", node.shape)
    return L.Pointwise(node.name, node.shape, L.Load(a.name, broadcast_index(a.shape, node.shape, index), a.dtype),
                       is_view=True)


# ---------------------------------------------------------------------------
# Externs
# ---------------------------------------------------------------------------


def _refs(value: Any) -> Any:
    if isinstance(value, ir.Node):
        return L.BufferRef(value.name)
    if isinstance(value, (tuple, list)):
        return type(value)(_refs(v) for v in value)
    return value


def lower_extern(node: ir.Node, reason: str = "library call") -> L.Extern:
    return L.Extern(node.name, node.op.name, node.op.impl, _refs(node.args), node.shape, node.dtype, reason)


LOWERINGS: dict[str, Callable[[ir.Node], L.Node]] = {
    **{uf.__name__: lower_ufunc for uf in ir.ops.POINTWISE_UFUNCS},
    "where": lower_where,
    "astype": lower_astype,
    **{name: lower_reduction for name in L.REDUCTION_TYPES},
    "transpose": lower_transpose,
    "reshape": lower_reshape,
    "broadcast_to": lower_broadcast_to,
    "matmul": lambda node: lower_extern(node, "BLAS through NumPy"),
}


def lower(node: ir.Node) -> L.Node:
    """The loop-IR node for one graph call node (an Extern when no exact lowering exists)."""
    rule = LOWERINGS.get(node.op.name)
    if rule is None:
        return lower_extern(node, f"no lowering for {node.op.name}")
    try:
        return rule(node)
    except Unsupported as why:
        return lower_extern(node, f"fallback: {why}")


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


# Padding, sliding windows and slicing live with the convolution patterns they
# serve (conv_lowering adds them to LOWERINGS when it is imported).
from . import conv_lowering  # noqa: E402,F401
