"""Window lowerings: padding, sliding windows and basic slicing as index arithmetic.

In:  a call node of ``pad`` (constant mode), ``sliding_window_view`` or
     ``getitem`` with a key of integers and slices.
Out: a :class:`~.loop_ir.Pointwise` reading its input at a shifted index.

These are the three ops a NumPy convolution is written with::

    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::s, ::s]
    out = (windows * w).sum(axis=(-2, -1))

Lowered here, none of them moves data.  A window is ``x[h*s + i, w*s + j]``
(``sliding_window_view`` adds the window offset, the strided slice scales the
position), and padding is a *masked* read: ``pad(x)[h] = x[h - 1]`` where
``0 <= h - 1 < H``, else the fill value.  After the scheduler inlines them,
the multiply and the sum over the window become one reduction kernel over
``(N, H, W, C) x (3, 3)`` that reads the unpadded input — the depthwise
convolution — and a bias and clip after it are that kernel's epilogue.

The mask is the loop-IR op ``pad_select(guard, value, fill, n0, n1, ...)``:
``guard`` is a ``Load`` of the pad's input whose index is only *checked*
(``0 <= index_d < n_d``), never read; ``value`` is what is read where the
check passes.  Both start as the same ``Load``.  When the scheduler inlines
the pad's input (the bias and clip after a matmul), it expands ``value`` and
keeps ``guard`` (:func:`map_loads_guarded`), so the check stays in the input's
own coordinates however much is inlined around it.  Code generators compute
``value`` only where the check passes: a border never reads out of bounds.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir import indexing as ix
from ..ir.symbolic import Sym, SymbolicUnsupported
from . import loop_ir as L
from .lowering import LOWERINGS, Unsupported

# Loop-IR ops whose first operand is a guard: a Load checked, never read.
MASKED_OPS = frozenset({"pad_select"})
_I64 = np.dtype(np.int64)


def masked_parts(op: L.Op) -> tuple[L.Load, L.Value, L.Value, tuple[int, ...]]:
    """``pad_select``'s guard, guarded value, fill and the guard's bounds."""
    guard, value, fill, *bounds = op.args
    # A bound is the size of the pad's input axis: a symbolic size (a batch) stays a Sym.
    return guard, value, fill, tuple(b.value if isinstance(b.value, Sym) else int(b.value) for b in bounds)


def map_loads_guarded(value: L.Value, fn, memo: dict | None = None) -> L.Value:
    """``loop_ir.map_loads``, except that a mask's guard is left alone: only
    the value it guards is rewritten (inlining must not erase the check)."""
    memo = {} if memo is None else memo
    if value in memo:
        return memo[value]
    if isinstance(value, L.Load):
        out = fn(value)
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
    an Ellipsis the whole axes it stands for."""
    a, key = node.arg("a"), node.arg("key")
    key = ix.expand_ellipsis(key if isinstance(key, tuple) else (key,), len(a.shape))  # ``x[..., :h]``
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


WINDOW_LOWERINGS = {
    "pad": lower_pad,
    "sliding_window_view": lower_sliding_window_view,
    "getitem": lower_getitem,
}
LOWERINGS.update(WINDOW_LOWERINGS)
