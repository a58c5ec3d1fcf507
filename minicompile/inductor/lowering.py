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

Padding, sliding windows and basic slicing, the ops a NumPy convolution is
written with, lower to index arithmetic and masked reads (the window lowerings,
at the end of this module, with the helpers that keep a mask's check through
inlining: :func:`map_loads_guarded`, :func:`data_loads`).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import ir
from ..ir import indexing as ix
from ..ir.ops import ufunc_loop_dtypes
from ..ir.symbolic import Sym, SymbolicUnsupported, is_symbolic
from . import loop_ir as L


class Unsupported(Exception):
    """This op/dtype combination has no exact loop lowering (the message says why)."""


# For each ufunc: the dtype kinds of its loop inputs ("b"ool, "i"nt, "u"int,
# "f"loat, "c"omplex) for which a scalar C expression matches NumPy bit for bit
# (floats: up to the libm's last-place rounding of transcendentals; complex:
# NumPy's own formulas, see the C++ backend's mc_complex.h).  Every code
# generator implements exactly these or refuses the node (its
# ``cannot_generate``: Triton and Spyre compute no complex values); anything
# else lowers to an Extern.
POINTWISE_KINDS: dict[str, str] = {
    "add": "biufc", "subtract": "iufc", "multiply": "biufc", "divide": "fc",
    "floor_divide": "iuf", "remainder": "iuf", "power": "iuf", "square": "iufc",
    "negative": "iufc", "positive": "biufc", "absolute": "biufc", "conjugate": "iufc",
    "maximum": "biuf", "minimum": "biuf",
    "less": "biuf", "less_equal": "biuf", "greater": "biuf", "greater_equal": "biuf",
    "equal": "biufc", "not_equal": "biufc", "logical_not": "biuf",
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
    if node.arg("x").dtype.kind == "c" and node.dtype.kind != "c":
        raise Unsupported("a complex value cast to a real dtype (NumPy warns and drops the imaginary part)")
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
        return L.BufferRef(value.name, eager_scalar(value))
    if isinstance(value, (tuple, list)):
        return type(value)(_refs(v) for v in value)
    return value


def eager_scalar(node: ir.Node) -> bool:
    """Whether eager NumPy computes ``node`` as a NumPy scalar, not a 0-d array: a
    0-d result of a ufunc or of an op that returns scalars (reductions, ``take``)."""
    return node.kind == "call" and node.shape == () and (node.op.scalar_result or node.op.ufunc is not None)


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


def lower_part(node: ir.Node) -> L.Pointwise:
    """``z.real`` / ``z.imag`` of a complex array: each element's part."""
    val = node.arg("val")
    if not isinstance(val, ir.Node) or val.dtype.kind != "c":
        raise Unsupported(f"{node.op.name} of a real array")
    index = L.loop_index("x", node.shape)
    return L.Pointwise(node.name, node.shape, L.Op(node.op.name, (L.Load(val.name, index, val.dtype),), node.dtype))


LOWERINGS.update(real=lower_part, imag=lower_part)


# The lowerings that handle complex values: elementwise arithmetic (its kinds in
# POINTWISE_KINDS), the parts, and the views that only move elements.  Any other
# node that reads or makes a complex array calls NumPy.
COMPLEX_LOWERINGS = frozenset({*(uf.__name__ for uf in ir.ops.POINTWISE_UFUNCS), "where", "astype", "real",
                               "imag", "transpose", "reshape", "broadcast_to", "copy"})


def _complex_values(node: ir.Node) -> bool:
    """Does the node read or make a complex array?"""
    metas = [node.meta] + [a.meta for a in node.inputs]
    return any(isinstance(m, ir.TensorMeta) and m.dtype.kind == "c" for m in metas)


def lower(node: ir.Node) -> L.Node:
    """The loop-IR node for one graph call node (an Extern when no exact lowering exists)."""
    rule = LOWERINGS.get(node.op.name)
    if rule is None:
        return lower_extern(node, f"no lowering for {node.op.name}")
    if _complex_values(node) and node.op.name not in COMPLEX_LOWERINGS:
        return lower_extern(node, f"{node.op.name} of complex values: NumPy computes it")
    try:
        return rule(node)
    except Unsupported as why:
        return lower_extern(node, f"fallback: {why}")


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


# ---- Window lowerings: padding, sliding windows and basic slicing as index arithmetic ----
#
# In:  a call node of ``pad`` (constant mode), ``sliding_window_view`` or
#      ``getitem`` with a key of integers and slices.
# Out: a :class:`~.loop_ir.Pointwise` reading its input at a shifted index.
#
# These are the three ops a NumPy convolution is written with::
#
#     padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
#     windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::s, ::s]
#     out = (windows * w).sum(axis=(-2, -1))
#
# Lowered here, none of them moves data.  A window is ``x[h*s + i, w*s + j]``
# (``sliding_window_view`` adds the window offset, the strided slice scales the
# position), and padding is a *masked* read: ``pad(x)[h] = x[h - 1]`` where
# ``0 <= h - 1 < H``, else the fill value.  After the scheduler inlines them,
# the multiply and the sum over the window become one reduction kernel over
# ``(N, H, W, C) x (3, 3)`` that reads the unpadded input — the depthwise
# convolution — and a bias and clip after it are that kernel's epilogue.
#
# The mask is the loop-IR op ``pad_select(guard, value, fill, n0, n1, ...)``:
# ``guard`` is a ``Load`` of the pad's input whose index is only *checked*
# (``0 <= index_d < n_d``), never read; ``value`` is what is read where the
# check passes.  Both start as the same ``Load``.  When the scheduler inlines
# the pad's input (the bias and clip after a matmul), it expands ``value`` and
# keeps ``guard`` (:func:`map_loads_guarded`), so the check stays in the input's
# own coordinates however much is inlined around it.  Code generators compute
# ``value`` only where the check passes: a border never reads out of bounds.

# Loop-IR ops whose first operand is a guard: a Load checked, never read.
MASKED_OPS = frozenset({"pad_select"})
_I64 = np.dtype(np.int64)


def masked_parts(op: L.Op) -> tuple[L.Load, L.Value, L.Value, tuple[int, ...]]:
    """``pad_select``'s guard, guarded value, fill and the guard's bounds."""
    guard, value, fill, *bounds = op.args
    # A bound is the size of the pad's input axis: a symbolic size (a batch) stays a Sym.
    return guard, value, fill, tuple(b.value if isinstance(b.value, Sym) else int(b.value) for b in bounds)


def border_checks(guard: L.Load, bounds: tuple) -> list[tuple[L.Expr, str, Any]]:
    """The tests a ``pad_select`` needs, as ``(index, ">=" or "<", bound)``: only those
    its guard's index can fail (it may be negative, or reach its axis' size; a
    symbolic size is always tested).  Every code generator renders these."""
    checks = []
    for e, n in zip(guard.index, bounds):
        lo, hi = e.bounds()
        if lo < 0:
            checks.append((e, ">=", 0))
        if is_symbolic(n) or hi >= n:
            checks.append((e, "<", n))
    return checks


def map_loads_guarded(value: L.Value, fn, memo: dict | None = None) -> L.Value:
    """``loop_ir.map_loads``, except that a mask's guard is left alone: only
    the value it guards is rewritten (inlining must not erase the check)."""
    memo = {} if memo is None else memo
    if value in memo:
        return memo[value]
    if isinstance(value, L.Load):
        out = fn(L.map_index_loads(value, lambda v: map_loads_guarded(v, fn, memo)))
    elif isinstance(value, L.Op):
        keep = 1 if value.name in MASKED_OPS else 0
        args = value.args[:keep] + tuple(map_loads_guarded(a, fn, memo) for a in value.args[keep:])
        out = L.Op(value.name, args, value.dtype)
    elif isinstance(value, L.Cast):
        out = L.cast(map_loads_guarded(value.value, fn, memo), value.dtype)
    else:
        out = value
    memo[value] = out
    return out


def data_loads(value: L.Value) -> list[L.Load]:
    """The Loads that read memory: every Load except masks' guards."""
    seen: dict[L.Load, None] = {}

    def visit(v: L.Value) -> None:
        if isinstance(v, L.Load):
            for atom in L.indirect_atoms(v):  # a gather reads its index array first
                visit(atom.value)
            seen.setdefault(v)
        elif isinstance(v, L.Op):
            for a in v.args[1:] if v.name in MASKED_OPS else v.args:
                visit(a)
        elif isinstance(v, L.Cast):
            visit(v.value)

    visit(value)
    return list(seen)


def lower_pad(node: ir.Node) -> L.Pointwise:
    """``np.pad(x, widths)`` in constant mode: ``x[i - before]`` inside, the fill outside."""
    x = node.arg("array")
    if node.arg("mode") != "constant" or not isinstance(x, ir.Node):
        raise Unsupported("only constant-mode padding of an array is a masked read")
    fill = node.arg("constant_values")
    if np.ndim(fill) != 0:
        raise Unsupported("per-axis fill values")
    # np.pad's own rule: pad_width broadcasts to one (before, after) pair per axis.
    widths = np.broadcast_to(np.asarray(node.arg("pad_width"), dtype=np.int64), (len(x.shape), 2))
    index = L.loop_index("x", node.shape)
    src = tuple(i - int(before) for i, (before, _) in zip(index, widths))
    load = L.Load(x.name, src, x.dtype)
    bounds = tuple(L.Constant(n, _I64) for n in x.shape)
    body = L.Op("pad_select", (load, load, L.constant(fill, node.dtype)) + bounds, node.dtype)
    return L.Pointwise(node.name, node.shape, body)


def lower_sliding_window_view(node: ir.Node) -> L.Pointwise:
    """``out[..., p_d, ..., k_j] = x[..., p_d + k_j, ...]`` for each windowed axis ``d``."""
    x = node.arg("x")
    window, axis = node.arg("window_shape"), node.arg("axis")
    window = (window,) if isinstance(window, int) else tuple(window)
    axes = range(len(x.shape)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    axes = tuple(a % len(x.shape) for a in axes)
    index = L.loop_index("x", node.shape)
    src = list(index[: len(x.shape)])
    for j, d in enumerate(axes):
        src[d] = src[d] + index[len(x.shape) + j]
    src = [L.Expr() if n == 1 else s for s, n in zip(src, x.shape)]
    return L.Pointwise(node.name, node.shape, L.Load(x.name, tuple(src), x.dtype), is_view=True)


def lower_getitem(node: ir.Node) -> L.Pointwise:
    """Basic indexing: a slice is ``start + step*i``, an integer a constant (axis dropped),
    an Ellipsis the whole axes it stands for.  A key with index arrays is a gather."""
    a, key = node.arg("a"), node.arg("key")
    key = ix.expand_ellipsis(key if isinstance(key, tuple) else (key,), len(a.shape))  # ``x[..., :h]``
    if ix.is_advanced(key):
        return lower_gather(node, a, key)
    if not all(isinstance(k, slice) or (isinstance(k, int) and not isinstance(k, bool)) for k in key):
        raise Unsupported("only integers and slices index as a view")
    if len(key) > len(a.shape) or all(isinstance(k, int) for k in key) and len(key) == len(a.shape):
        raise Unsupported("a key selecting one element gives a NumPy scalar")
    index = iter(L.loop_index("x", node.shape))
    src = []
    for d, n in enumerate(a.shape):
        k = key[d] if d < len(key) else slice(None)
        if isinstance(k, int):
            src.append(L.Expr(None, k % n if not isinstance(n, Sym) else _plain(k)))
            continue
        if isinstance(n, Sym) or isinstance(k.start, Sym) or isinstance(k.stop, Sym):
            # A canonical key (ir.indexing) spells out start and step; over a symbolic
            # axis only a plain start is index arithmetic (``s0 - 2`` is not).  A
            # symbolic stop (``x[:n]``, n a size) is only in the output's shape.
            start = _plain(0 if k.start is None else k.start)
            step = _plain(1 if k.step is None else k.step)
        else:
            start, _, step = k.indices(n)
        i = next(index)
        src.append(L.Expr() if n == 1 else i * step + start)
    return L.Pointwise(node.name, node.shape, L.Load(a.name, tuple(src), a.dtype), is_view=True)


def _plain(part) -> int:
    """A slice bound or integer key over a symbolic axis, as a non-negative int."""
    if not isinstance(part, int) or isinstance(part, bool) or part < 0:
        raise SymbolicUnsupported(f"an index {part} into an axis of symbolic size")
    return part


# ---- Gathers: positions read from index arrays ----
#
# In:  ``getitem`` with integer index arrays in its key (``table[tokens]``,
#      ``x[:, idx]``, ``x[rows, cols]``), ``take`` and ``take_along_axis``, the
#      index arrays being graph values.
# Out: a :class:`~.loop_ir.Pointwise` whose Load reads the array at an
#      :class:`~.loop_ir.Indirect` position: the value of the index array at
#      the output element's place in the broadcast index shape.
#
# NumPy's placement rule (ir/indexing.py): the index arrays broadcast to one
# shape B, which replaces them in the output where they stand together, and
# goes first where other entries separate them.  Only code generators that
# can read an index from memory generate these (the scheduler's
# ``cannot_generate``); the others call NumPy.


def _static_sizes(*nodes: ir.Node) -> None:
    """Gathers are generated for sizes known at compile time; with symbolic sizes
    (a dynamic batch) the node stays a NumPy call and the rest keeps its symbols."""
    if any(is_symbolic(n.shape) for n in nodes if isinstance(n, ir.Node)):
        raise Unsupported("a gather over symbolic sizes")


def _index_read(idx: ir.Node, b_index: tuple[L.Expr, ...]) -> L.Load:
    """``idx`` at a position of the broadcast shape (right-aligned; size-1 axes at 0)."""
    own = b_index[len(b_index) - len(idx.shape):] if idx.shape else ()
    if not all(isinstance(n, int) for n in idx.shape) or idx.dtype.kind not in "iu":
        raise Unsupported("an index array of symbolic size or not of integers")
    return L.Load(idx.name, tuple(L.Expr() if n == 1 else i for i, n in zip(own, idx.shape)), idx.dtype)


def _position(value: L.Value, size: Any, mode: str = "raise") -> L.Expr:
    if not isinstance(size, int):
        raise Unsupported("a gather along an axis of symbolic size")
    return L.Expr({L.Indirect(value, size, mode): 1})


def lower_gather(node: ir.Node, a: ir.Node, key: tuple) -> L.Pointwise:
    """``a[key]`` for a key with integer index arrays (graph values) besides slices,
    integers and ``None``."""
    arrays = [e for e in key if isinstance(e, ir.Node)]
    if any(not (e is None or isinstance(e, (slice, ir.Node)) or type(e) is int) for e in key) or not arrays:
        raise Unsupported("a gather by constant or boolean index arrays")
    _static_sizes(node, a, *arrays)
    b_shape = tuple(np.broadcast_shapes(*[e.shape for e in arrays]))
    advanced = [i for i, e in enumerate(key) if isinstance(e, ir.Node) or type(e) is int]
    adjacent = advanced[-1] - advanced[0] == len(advanced) - 1
    index = L.loop_index("x", node.shape)
    pos = 0 if adjacent else len(b_shape)
    b_index = index[:len(b_shape)]
    src: list[L.Expr] = []
    for i, e in enumerate(key):
        if e is None:
            pos += 1
            continue
        n = a.shape[len(src)]
        if isinstance(e, slice):
            if not isinstance(n, int):
                raise Unsupported("a slice of an axis of symbolic size beside a gather")
            start, _, step = e.indices(n)
            src.append(L.Expr() if n == 1 else index[pos] * step + start)
            pos += 1
            continue
        if adjacent and i == advanced[0]:
            b_index, pos = index[pos:pos + len(b_shape)], pos + len(b_shape)
        src.append(_position(_index_read(e, b_index), n) if isinstance(e, ir.Node) else L.Expr(None, e % n))
    for n in a.shape[len(src):]:
        src.append(L.Expr() if n == 1 else index[pos])
        pos += 1
    return L.Pointwise(node.name, node.shape, L.Load(a.name, tuple(src), a.dtype))


def lower_take(node: ir.Node) -> L.Pointwise:
    """``np.take(a, idx, axis, mode)``: along ``axis``, or into ``a`` flattened."""
    a, idx, axis, mode = node.arg("a"), node.arg("indices"), node.arg("axis"), node.arg("mode")
    if not isinstance(idx, ir.Node) or mode not in ("raise", "wrap", "clip"):
        raise Unsupported("np.take of constant indices")
    _static_sizes(node, a, idx)
    index = L.loop_index("x", node.shape)
    if axis is None:  # a position in a's C-order flattening, unravelled
        if not all(isinstance(n, int) for n in a.shape):
            raise Unsupported("np.take from an array of symbolic size")
        flat = _position(_index_read(idx, index), math.prod(a.shape), mode)
        src = tuple(L.mod(L.floordiv(flat, stride), n) if n != 1 else L.Expr()
                    for stride, n in zip(L.contiguous_strides(a.shape), a.shape))
    else:
        k = len(idx.shape)
        gathered = _position(_index_read(idx, index[axis:axis + k]), a.shape[axis], mode)
        src = index[:axis] + (gathered,) + index[axis + k:]
        src = tuple(L.Expr() if n == 1 and d != axis else i for d, (i, n) in enumerate(zip(src, a.shape)))
    return L.Pointwise(node.name, node.shape, L.Load(a.name, src, a.dtype))


def lower_take_along_axis(node: ir.Node) -> L.Pointwise:
    """``out[..., j, ...] = arr[..., idx[..., j, ...], ...]``, the other axes broadcast."""
    arr, idx, axis = node.arg("arr"), node.arg("indices"), node.arg("axis")
    if not isinstance(idx, ir.Node) or axis is None or len(idx.shape) != len(arr.shape):
        raise Unsupported("np.take_along_axis of constant indices or over the flattened array")
    _static_sizes(node, arr, idx)
    axis %= len(arr.shape)
    index = L.loop_index("x", node.shape)
    src = list(broadcast_index(arr.shape, node.shape, index))
    src[axis] = _position(_index_read(idx, index), arr.shape[axis])
    return L.Pointwise(node.name, node.shape, L.Load(arr.name, tuple(src), arr.dtype))


def lower_roll(node: ir.Node) -> L.Pointwise:
    """``np.roll(x, shift, axis)``: ``out[i] = x[(i - shift) mod n]`` along each rolled axis."""
    x, shift, axis = node.arg("a"), node.arg("shift"), node.arg("axis")
    if axis is None and isinstance(x, ir.Node) and len(x.shape) == 1:
        axis = 0  # a 1-d array is its own flattening
    if not isinstance(x, ir.Node) or axis is None or not all(isinstance(n, int) for n in x.shape):
        raise Unsupported("np.roll over the flattened array or of a symbolic size")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts, axes = np.broadcast_arrays(np.asarray(shift, np.int64), np.asarray(axes, np.int64))
    total = [0] * len(x.shape)
    for k, a in zip(shifts.ravel(), axes.ravel()):
        total[int(a) % len(x.shape)] += int(k)  # NumPy adds the shifts of one axis
    index = L.loop_index("x", node.shape)
    src = tuple(L.mod(i + (-k) % n, n) if n > 1 and k % n else (L.Expr() if n == 1 else i)
                for i, k, n in zip(index, total, x.shape))
    return L.Pointwise(node.name, node.shape, L.Load(x.name, src, x.dtype))


def lower_setitem(node: ir.Node) -> L.Pointwise:
    """``a[key] = value`` for a key of unit-step slices and integers (a box of ``a``):
    the value inside the box, ``a`` outside it — the padding mask with ``a`` as its fill."""
    a, key, value = node.arg("a"), node.arg("key"), node.arg("value")
    key = ix.expand_ellipsis(key if isinstance(key, tuple) else (key,), len(a.shape))
    if not isinstance(a, ir.Node) or not all(isinstance(n, int) for n in a.shape) or ix.is_advanced(key):
        raise Unsupported("only a box of an array of known size is a masked store")
    starts, box, kept = [], [], []
    for d, n in enumerate(a.shape):
        k = key[d] if d < len(key) else slice(None)
        if isinstance(k, int) and not isinstance(k, bool):
            starts.append(k % n)
            box.append(1)
        elif isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step != 1:
                raise Unsupported("a strided slice is no box")
            starts.append(start)
            box.append(max(stop - start, 0))
            kept.append(d)
        else:
            raise Unsupported("only integers and slices index a box")
    index = L.loop_index("x", node.shape)
    inner = tuple(i - s for i, s in zip(index, starts))  # the element's place in the box
    if isinstance(value, ir.Node):
        if value.dtype != a.dtype and not (value.dtype.kind == a.dtype.kind == "f"):
            raise Unsupported(f"a store casting {value.dtype} to {a.dtype}")
        region = tuple(box[d] for d in kept)
        read = L.cast(L.Load(value.name, broadcast_index(value.shape, region, tuple(inner[d] for d in kept)),
                             value.dtype), a.dtype)
    elif np.ndim(value) == 0 and np.asarray(value).dtype.kind in "biuf":
        read = L.constant(np.asarray(value).astype(a.dtype)[()], a.dtype)
    else:
        raise Unsupported("a store of a constant array")
    guard = L.Load(a.name, inner, a.dtype)  # only its index is checked, against the box
    bounds = tuple(L.Constant(n, _I64) for n in box)
    body = L.Op("pad_select", (guard, read, L.Load(a.name, index, a.dtype)) + bounds, a.dtype)
    return L.Pointwise(node.name, node.shape, body)


def lower_concatenate(node: ir.Node) -> L.Pointwise:
    """``np.concatenate(arrays, axis)``: each element read from the piece whose span of the
    axis holds it, as nested masked reads (``pad_select``): piece ``k`` at ``i - offset_k``
    where that index is inside it, else the pieces before.  Every read is guarded, so no
    piece is read outside itself; the pieces' producers inline into the kernel."""
    arrays, axis = node.arg("arrays"), node.arg("axis")
    if node.arg("dtype") is not None or axis is None or not arrays \
            or not all(isinstance(a, ir.Node) for a in arrays) \
            or not all(isinstance(n, int) for a in arrays for n in a.shape):
        raise Unsupported("a concatenation of flattened arrays, constants, a dtype or symbolic sizes")
    axis = axis % len(node.shape)
    index = L.loop_index("x", node.shape)
    pieces = [a for a in arrays if a.shape[axis]]
    if len(pieces) == 1:  # the others are empty: a copy of the one piece (it starts at 0)
        return L.Pointwise(node.name, node.shape, L.cast(L.Load(pieces[0].name, index, pieces[0].dtype),
                                                         node.dtype))
    body: L.Value = L.constant(np.zeros((), node.dtype)[()], node.dtype)  # never taken
    offset = 0
    for a in arrays:
        src = tuple(i - offset if d == axis else i for d, i in enumerate(index))
        offset += a.shape[axis]
        if a.shape[axis] == 0:
            continue
        read = L.cast(L.Load(a.name, src, a.dtype), node.dtype)
        bounds = tuple(L.Constant(n, _I64) for n in a.shape)
        body = L.Op("pad_select", (L.Load(a.name, src, a.dtype), read, body) + bounds, node.dtype)
    return L.Pointwise(node.name, node.shape, body)


def lower_copy(node: ir.Node) -> L.Pointwise:
    """``np.copy(x)``: a new array of the same values (a kernel that fuses)."""
    x = node.arg("a")
    if not isinstance(x, ir.Node):
        raise Unsupported("a copy of a constant")
    return L.Pointwise(node.name, node.shape, L.Load(x.name, L.loop_index("x", node.shape), x.dtype))


WINDOW_LOWERINGS = {
    "roll": lower_roll,
    "setitem": lower_setitem,
    "copy": lower_copy,
    "concatenate": lower_concatenate,
    "pad": lower_pad,
    "sliding_window_view": lower_sliding_window_view,
    "getitem": lower_getitem,
    "take": lower_take,
    "take_along_axis": lower_take_along_axis,
}
LOWERINGS.update(WINDOW_LOWERINGS)

_FILLS = {"zeros": 0, "ones": 1, "empty": 0, "zeros_like": 0, "ones_like": 1, "empty_like": 0}


def lower_fill(node: ir.Node) -> L.Pointwise:
    """``zeros``, ``ones``, ``empty`` (zeros: see :mod:`minicompile.ir.ops.creation`),
    ``full`` of a Python value, and their ``_like`` forms: a kernel of one constant,
    the fill cast to the dtype as ``np.full``'s ``copyto`` casts it (unsafely)."""
    fill = _FILLS.get(node.op.name)
    if fill is None:
        fill = node.arg("fill_value")
        if isinstance(fill, ir.Node) or np.ndim(fill) != 0:
            raise Unsupported("a fill value that is an array")
    if node.dtype.kind not in "biuf":
        raise Unsupported(f"a fill of dtype {node.dtype}")
    with np.errstate(all="ignore"):
        value = np.asarray(fill).astype(node.dtype)[()]
    return L.Pointwise(node.name, node.shape, L.Constant(value.item(), node.dtype))


LOWERINGS.update({name: lower_fill for name in (*_FILLS, "full", "full_like")})
