"""Linear algebra: ``matmul``/``@``, ``dot``, ``vdot``, ``inner``, ``outer``,
``tensordot``, ``einsum``, ``convolve``, ``trace``.

In:  two arrays (``einsum``: a subscripts string and a tuple of operands).
Out: registered :class:`OpDef` entries of kind ``extern`` (BLAS through
     NumPy); a 0-d result is a NumPy scalar, as in NumPy.

``matmul``, ``dot``, ``inner``, ``outer`` and ``tensordot`` have explicit
shape rules, so that tracing a large product costs nothing; their dtype is
NumPy's answer on one-element samples of the same rank.  ``einsum`` and
``convolve`` ask NumPy on ghost inputs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from .pointwise import ufunc_loop_dtypes
from ..symbolic import is_symbolic
from .registry import (OpDef, TensorMeta, broadcast_shapes, register, simple_op, symbolic_broadcast,
                       symbolic_or_numpy)


def _matmul(x1, x2):
    return np.matmul(x1, x2)


def _matmul_meta(x1: TensorMeta, x2: TensorMeta) -> TensorMeta:
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a = x1.shape if x1.ndim > 1 else (1,) + x1.shape
    b = x2.shape if x2.ndim > 1 else x2.shape + (1,)
    if a[-1] != b[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {b[-2]} is different from {a[-1]})"
        )
    batch = symbolic_broadcast([a[:-2], b[:-2]]) if is_symbolic((a, b)) else tuple(np.broadcast_shapes(a[:-2], b[:-2]))
    shape = batch + (a[-2],) * (x1.ndim > 1) + (b[-1],) * (x2.ndim > 1)
    loop = ufunc_loop_dtypes(np.matmul, (x1, x2))
    return TensorMeta(shape, dt.check_supported(loop[-1]))


register(OpDef("matmul", "extern", _matmul, _matmul_meta, ufunc=np.matmul, scalar_result=True))


def _attention(q, kt, v, mask=None, scale=None, divide=False, fill=None):
    """``softmax(q @ kt, last axis) @ v``, the scores first divided by ``scale`` (``divide``)
    or multiplied by it, then, with a ``mask``, ``where(mask, scores, fill)``: the NumPy
    program a backend's attention pattern replaces (scaled dot-product attention), op for
    op, so its values are that program's.  No user writes it: backends with a fused
    kernel for it form it from those ops (the Triton backend's flash-style template)."""
    s = np.matmul(q, kt)
    if scale is not None:
        s = s / scale if divide else s * scale
    if mask is not None:
        s = np.where(mask, s, fill)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return np.matmul(e / e.sum(axis=-1, keepdims=True), v)


def _attention_meta(q: TensorMeta, kt: TensorMeta, v: TensorMeta, mask=None, scale=None, divide=False,
                    fill=None) -> TensorMeta:
    matrix = _matmul_meta(_matmul_meta(q, kt), v).shape[-2:]
    return TensorMeta(_attention_batch(q, kt, v, mask) + matrix,
                      _tiny_dtype(_attention, q, kt, v, mask, scale, divide, fill))


register(OpDef("attention", "extern", _attention, _attention_meta))


# Attention's backward, as FlashAttention computes it (Dao, 2023): the softmax's weights
# are not kept from the forward but recomputed per block from q, kᵀ and each row's
# statistics, its maximum ``m`` and the sum ``l`` of ``exp(s - m)``: ``p = exp(s - m) / l``
# (kept apart, not as ``m + log(l)``: float32 would lose ``log(l)`` against a fill such as
# -1e9 that masks a row entirely).  With ``delta = rowsum(dout * out)`` (the softmax's
# ``rowsum(p * dp)``), ``ds = p * (dout @ vᵀ - delta)``.  The derivative rule of
# ``attention`` (aot/derivatives_linalg.py) emits these ops; the Triton backend runs each
# as one kernel that never stores ``p`` (codegen/triton/attention_backward.py).

def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype the backward computes in: float32 for float16 operands."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def _scores(q, kt, mask, scale, divide, fill):
    s = np.matmul(q, kt)
    if scale is not None:
        s = s / scale if divide else s * scale
    return np.where(mask, s, fill) if mask is not None else s


def _attention_stats(q, kt, mask=None, scale=None, divide=False, fill=None):
    """Each row's softmax statistics of attention's scores ``s`` (scaled and masked as
    ``attention`` does), ``[..., M, 2]``: its maximum ``m`` (0 where every score is
    ``-inf``) and ``l = sum(exp(s - m))`` (0 there, so the weights are NaN, as NumPy's
    softmax gives); float16 scores give float32."""
    s = _scores(q, kt, mask, scale, divide, fill)
    s = s.astype(_accumulator(s.dtype))
    top = s.max(axis=-1, keepdims=True)
    top = np.where(top == -np.inf, 0.0, top).astype(s.dtype)  # exp against 0 where a row is all -inf
    return np.concatenate([top, np.exp(s - top).sum(axis=-1, keepdims=True)], axis=-1)


def _swap(x):
    return x.swapaxes(-1, -2)


def _attention_grad(q, kt, v, mask, dout, stats, delta, scale=None, divide=False, fill=None, wrt="q"):
    """The gradient of ``attention(q, kt, v, mask, scale, divide, fill)`` with respect to
    ``wrt`` (``"q"``, ``"kt"`` or ``"v"``) for the output's gradient ``dout``, over the
    broadcast batch (the rule sums it to the operand's shape), in the operand's dtype."""
    acc = _accumulator(q.dtype)
    p = np.exp(_scores(q, kt, mask, scale, divide, fill).astype(acc) - stats[..., :1]) / stats[..., 1:]
    if wrt == "v":
        return np.matmul(_swap(p), dout.astype(acc)).astype(v.dtype)
    ds = p * (np.matmul(dout.astype(acc), _swap(v).astype(acc)) - delta)
    if mask is not None:
        ds = np.where(mask, ds, 0.0).astype(acc)
    if scale is not None:
        ds = ds / scale if divide else ds * scale
    if wrt == "q":
        return np.matmul(ds, _swap(kt).astype(acc)).astype(q.dtype)
    return np.matmul(_swap(q).astype(acc), ds).astype(kt.dtype)


def _attention_batch(*metas) -> tuple:
    """The batch dimensions of ``metas`` (TensorMeta or None) broadcast together."""
    batches = [m.shape[:-2] for m in metas if isinstance(m, TensorMeta)]
    return symbolic_broadcast(batches) if is_symbolic(batches) else tuple(np.broadcast_shapes(*batches))


def _attention_stats_meta(q: TensorMeta, kt: TensorMeta, mask=None, scale=None, divide=False,
                          fill=None) -> TensorMeta:
    scores = _matmul_meta(q, kt)
    batch = _attention_batch(scores, mask)
    return TensorMeta(batch + (scores.shape[-2], 2), _accumulator(scores.dtype))


def _attention_grad_meta(q: TensorMeta, kt: TensorMeta, v: TensorMeta, mask, dout: TensorMeta, stats, delta,
                         scale=None, divide=False, fill=None, wrt="q") -> TensorMeta:
    operand = {"q": q, "kt": kt, "v": v}[wrt]
    batch = _attention_batch(q, kt, v, mask, dout)
    return TensorMeta(batch + tuple(operand.shape[-2:]), operand.dtype)


register(OpDef("attention_stats", "extern", _attention_stats, _attention_stats_meta))
register(OpDef("attention_grad", "extern", _attention_grad, _attention_grad_meta))


def _tiny_dtype(fn: Any, *operands: Any, **kwargs: Any) -> np.dtype:
    """NumPy's result dtype for ``fn`` on one-element samples of the same ranks."""
    samples = [np.ones((1,) * o.ndim, o.dtype) if isinstance(o, TensorMeta) else o for o in operands]
    return dt.check_supported(np.asarray(fn(*samples, **kwargs)).dtype)


def _not_aligned(a: TensorMeta, b: TensorMeta, i: int, j: int) -> ValueError:
    return ValueError(f"shapes {a.shape} and {b.shape} not aligned: "
                      f"{a.shape[i]} (dim {i % a.ndim}) != {b.shape[j]} (dim {j % b.ndim})")


def _dot(a, b):
    return np.dot(a, b)


def _dot_meta(a: TensorMeta, b: TensorMeta) -> TensorMeta:
    if a.ndim == 0 or b.ndim == 0:  # dot with a scalar is multiply
        return TensorMeta(broadcast_shapes(a, b), _tiny_dtype(np.dot, a, b))
    k = -2 if b.ndim >= 2 else -1
    if a.shape[-1] != b.shape[k]:
        raise _not_aligned(a, b, a.ndim - 1, k % b.ndim)
    shape = a.shape[:-1] + b.shape[:-2] + (b.shape[-1:] if b.ndim >= 2 else ())
    return TensorMeta(shape, _tiny_dtype(np.dot, a, b))


def _inner(a, b):
    return np.inner(a, b)


def _inner_meta(a: TensorMeta, b: TensorMeta) -> TensorMeta:
    if a.ndim == 0 or b.ndim == 0:
        return TensorMeta(broadcast_shapes(a, b), _tiny_dtype(np.inner, a, b))
    if a.shape[-1] != b.shape[-1]:
        raise ValueError("shapes %s and %s not aligned: %d (dim %d) != %d (dim %d)" % (
            a.shape, b.shape, a.shape[-1], a.ndim - 1, b.shape[-1], b.ndim - 1))
    return TensorMeta(a.shape[:-1] + b.shape[:-1], _tiny_dtype(np.inner, a, b))


def _outer(a, b):
    return np.outer(a, b)


def _outer_meta(a: TensorMeta, b: TensorMeta) -> TensorMeta:
    return TensorMeta((a.size, b.size), _tiny_dtype(np.outer, a, b))


def _vdot(a, b):
    return np.vdot(a, b)


def _vdot_meta(a: TensorMeta, b: TensorMeta) -> TensorMeta:
    if a.size != b.size:
        raise ValueError("cannot reshape array: vdot needs operands of the same size")
    return TensorMeta((), _tiny_dtype(np.vdot, a, b))


register(OpDef("dot", "extern", _dot, _dot_meta, scalar_result=True))
register(OpDef("inner", "extern", _inner, _inner_meta, scalar_result=True))
register(OpDef("outer", "extern", _outer, _outer_meta))
register(OpDef("vdot", "extern", _vdot, _vdot_meta, scalar_result=True))


def _tensordot(a, b, axes=2):
    return np.tensordot(a, b, axes)


def _tensordot_canon(args: dict[str, Any]) -> dict[str, Any]:
    """``axes`` -> the pair of contracted axis tuples, non-negative (NumPy's own reading)."""
    a, b, axes = args["a"], args["b"], args["axes"]
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError("shape-mismatch for sum")
        pair = (tuple(range(a.ndim - n, a.ndim)), tuple(range(n)))
    else:
        xa, xb = axes
        xa = (xa,) if isinstance(xa, (int, np.integer)) else tuple(xa)
        xb = (xb,) if isinstance(xb, (int, np.integer)) else tuple(xb)
        if len(xa) != len(xb):
            raise ValueError("shape-mismatch for sum")
        pair = (tuple(int(i) % max(a.ndim, 1) for i in xa), tuple(int(i) % max(b.ndim, 1) for i in xb))
    for i, j in zip(*pair):
        if a.shape[i] != b.shape[j]:
            raise ValueError("shape-mismatch for sum")
    return {**args, "axes": pair}


def _tensordot_meta(a: TensorMeta, b: TensorMeta, axes: tuple) -> TensorMeta:
    xa, xb = axes
    shape = tuple(n for i, n in enumerate(a.shape) if i not in xa) + \
        tuple(n for i, n in enumerate(b.shape) if i not in xb)
    return TensorMeta(shape, _tiny_dtype(np.dot, a, b))


# np.tensordot returns a 0-d *array* for a full contraction, not a scalar.
register(OpDef("tensordot", "extern", _tensordot, _tensordot_meta, canonicalize=_tensordot_canon))


def _einsum(subscripts, operands, optimize=False):
    return np.einsum(subscripts, *operands, optimize=optimize)


def einsum_call(args: tuple) -> tuple[str, tuple]:
    """``np.einsum``'s positional arguments as (subscripts, operands): the string form
    as it is, the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` spelled as the
    string it means (each integer a letter, ``Ellipsis`` as ``...``)."""
    if isinstance(args[0], str):
        return args[0], tuple(args[1:])

    def term(sublist: Any) -> str:
        return "".join("..." if s is Ellipsis else _SUBLIST_LETTERS[int(s)] for s in sublist)

    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    inputs = ",".join(term(s) for s in pairs[1::2])
    return (inputs if output is None else inputs + "->" + term(output)), tuple(pairs[0::2])


# NumPy's sublist integers 0-25 are 'A'-'Z', 26-51 'a'-'z'
_SUBLIST_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _einsum_canon(args: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(args["subscripts"], str):
        raise NotImplementedError("einsum in its interleaved (sublist) form is not supported")
    return {**args, "operands": tuple(args["operands"])}


def _einsum_shape(subscripts: str, operands: tuple, optimize: Any = False) -> tuple:
    """einsum's output shape over symbolic sizes: each label's size, operands
    agreeing where a label repeats (a guard ``s0 == s1`` when both are symbols)."""
    if "..." in subscripts:
        raise NotImplementedError("einsum with '...' over symbolic sizes")
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError("more operands provided to einstein sum function than specified in the subscripts string")
    sizes: dict[str, Any] = {}
    for term, op in zip(terms, operands):
        if len(term) != op.ndim:
            raise ValueError("operand has more dimensions than subscripts given in einstein sum, "
                             "but no '...' ellipsis provided to broadcast the extra dimensions.")
        for label, n in zip(term, op.shape):
            have = sizes.get(label)
            if have is None or have == 1:
                sizes[label] = n
            elif n != 1 and have != n:
                raise ValueError("operands could not be broadcast together with remapped shapes")
    if not arrow:  # implicit output: the labels used once, sorted
        output = "".join(sorted(c for c in sizes if inputs.count(c) == 1))
    return tuple(sizes[c] for c in output)


simple_op("einsum", _einsum, "extern", scalar_result=True, canonicalize=_einsum_canon,
          meta=symbolic_or_numpy(_einsum, _einsum_shape))


def _convolve(a, v, mode="full"):
    return np.convolve(a, v, mode)


def _correlate(a, v, mode="valid"):
    return np.correlate(a, v, mode)


simple_op("convolve", _convolve, "extern")
simple_op("correlate", _correlate, "extern")


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    return np.trace(a, offset, axis1, axis2, dtype)


simple_op("trace", _trace, "extern", scalar_result=True)


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return np.cross(a, b, axisa, axisb, axisc, axis)


simple_op("cross", _cross, "extern", scalar_result=True)


def _kron(a, b):
    return np.kron(a, b)


simple_op("kron", _kron, "extern", scalar_result=True)
