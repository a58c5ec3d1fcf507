"""Derivative rules of the contractions: ``einsum`` and everything that is one.

In:  the emitter ``E``, the gradient ``g`` of the op's output, the output
     ``out`` and the op's canonical arguments ``a`` (see derivatives.py).
Out: the rules of ``einsum``, ``tensordot``, ``dot`` (any ranks), ``inner``,
     ``vdot``, ``kron``, ``cross``, ``trace``, ``diagonal``, ``convolve``,
     ``correlate``, ``norm`` and ``attention``, registered in
     :data:`~.derivatives.DERIVATIVES` on import.

A contraction is linear in each operand, so the gradient of one operand is
the same contraction of the output's gradient with the other operands, its
output labelled like that operand: for ``ij,jk->ik`` the first operand gets
``ik,jk->ij``.  Two things need care.  A label repeated in the operand
(``ii->``, a trace) becomes fresh labels tied to the first by identity
matrices (``jk`` of ``eye``), which puts the gradient back on the diagonal.  A
label only the operand has (``ij->i`` sums ``j`` away) is broadcast back by a
vector of ones.  ``tensordot``, ``dot``, ``inner`` and ``vdot`` are written as
the einsum they are and share that rule.
"""
from __future__ import annotations

import string

import numpy as np

from .derivatives import DERIVATIVES, NonDifferentiable, derivative_rule, is_array

_LETTERS = string.ascii_letters


# -- einsum -----------------------------------------------------------------------------------

def einsum_labels(subscripts: str, shapes: list[tuple]) -> tuple[list[str], str]:
    """The explicit form of an einsum: one label string per operand and the output's,
    with every ``...`` spelled out as letters the subscripts do not use (right-aligned,
    broadcasting as NumPy does) and an implicit output made explicit (the broadcast
    dimensions, then the labels used once, sorted as NumPy sorts them)."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    spare = [c for c in _LETTERS if c not in spec]
    m = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    dots = "".join(spare[:m])
    expanded = []
    for t, shape in zip(terms, shapes):
        k = len(shape) - len(t.replace("...", ""))
        expanded.append(t.replace("...", dots[m - k:] if k else ""))
    if arrow:
        out = output.replace("...", dots)
    else:
        labels = "".join(t.replace("...", "") for t in terms)
        out = dots + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    return expanded, out


def einsum_grads(E, g, terms: list[str], out: str, operands: list) -> list:
    """The gradient of each array operand of ``einsum(",".join(terms) + "->" + out, *operands)``."""
    sizes: dict[str, int] = {}
    for t, x in zip(terms, operands):
        for c, n in zip(t, x.shape if is_array(x) else ()):
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    spare = iter(c for c in _LETTERS if c not in "".join(terms) + out)
    grads = []
    for i, (term, x) in enumerate(zip(terms, operands)):
        if not is_array(x):
            grads.append(None)
            continue
        ins, ops = [out], [g]
        for j, (t, y) in enumerate(zip(terms, operands)):
            if j != i:
                ins.append(t)
                ops.append(y)
        target, seen = "", set()
        for c in term:
            if c in seen:  # a repeated label: a fresh one, tied to it on the diagonal
                fresh = next(spare)
                ins.append(c + fresh)
                ops.append(E.call("eye", sizes[c], dtype=g.dtype))
                target += fresh
            else:
                seen.add(c)
                target += c
        for c in seen:
            if c not in "".join(ins):  # summed away by this operand only: broadcast back
                ins.append(c)
                ops.append(E.call("ones", (sizes[c],), dtype=g.dtype))
        grad = E.call("einsum", ",".join(ins) + "->" + target, tuple(ops))
        grads.append(E.sum_to(grad, tuple(x.shape)))  # size-1 axes that broadcast
    return grads


@derivative_rule("einsum")
def _einsum(E, g, out, a):  # linear in each operand: contract g with the others
    operands = list(a["operands"])
    shapes = [tuple(x.shape) if is_array(x) else () for x in operands]
    terms, output = einsum_labels(a["subscripts"], shapes)
    return {"operands": tuple(einsum_grads(E, g, terms, output, operands))}


def _labelled(E, g, terms: list[str], out: str, names: tuple[str, ...], operands: list) -> dict:
    return dict(zip(names, einsum_grads(E, g, terms, out, operands)))


@derivative_rule("tensordot")
def _tensordot(E, g, out, a):  # sum over the paired axes: an einsum
    A, B = a["a"], a["b"]
    xa, xb = a["axes"]
    la = list(_LETTERS[:len(A.shape)])
    lb = list(_LETTERS[len(A.shape):len(A.shape) + len(B.shape)])
    for i, j in zip(xa, xb):
        lb[j] = la[i]
    free = "".join(c for i, c in enumerate(la) if i not in xa) + "".join(c for j, c in enumerate(lb) if j not in xb)
    return _labelled(E, g, ["".join(la), "".join(lb)], free, ("a", "b"), [A, B])


@derivative_rule("dot")
def _dot(E, g, out, a):  # the last axis of a with the second-to-last of b (the last, if 1-D)
    A, B = a["a"], a["b"]
    if not is_array(A) or not is_array(B) or len(A.shape) == 0 or len(B.shape) == 0:
        return _renamed_multiply(DERIVATIVES["multiply"](E, g, out, {"x1": A, "x2": B}))  # with a scalar
    if len(A.shape) <= 2 and len(B.shape) <= 2:  # matmul: its own rule lowers to GEMMs
        grads = DERIVATIVES["matmul"](E, g, out, {"x1": A, "x2": B})
        return {"a": grads["x1"], "b": grads["x2"]}
    la = _LETTERS[:len(A.shape)]
    rest = _LETTERS[len(A.shape):len(A.shape) + len(B.shape) - 1]
    k = la[-1]
    lb = rest[:-1] + k + rest[-1:] if len(B.shape) >= 2 else k
    free = la[:-1] + (rest[:-1] + rest[-1:] if len(B.shape) >= 2 else "")
    return _labelled(E, g, [la, lb], free, ("a", "b"), [A, B])


def _renamed_multiply(grads: dict) -> dict:
    return {"a": grads.get("x1"), "b": grads.get("x2")}


@derivative_rule("inner")
def _inner(E, g, out, a):  # the last axes of both, summed
    A, B = a["a"], a["b"]
    if not is_array(A) or not is_array(B) or len(A.shape) == 0 or len(B.shape) == 0:
        return _renamed_multiply(DERIVATIVES["multiply"](E, g, out, {"x1": A, "x2": B}))
    la = _LETTERS[:len(A.shape)]
    lb = _LETTERS[len(A.shape):len(A.shape) + len(B.shape) - 1] + la[-1]
    return _labelled(E, g, [la, lb], la[:-1] + lb[:-1], ("a", "b"), [A, B])


@derivative_rule("vdot")
def _vdot(E, g, out, a):  # both flattened, then dotted (real arrays: no conjugate)
    A, B = a["a"], a["b"]
    return {"a": E.call("reshape", E.call("multiply", g, B), tuple(A.shape)) if is_array(A) else None,
            "b": E.call("reshape", E.call("multiply", g, A), tuple(B.shape)) if is_array(B) else None}


@derivative_rule("kron")
def _kron(E, g, out, a):  # out viewed as (a0, b0, a1, b1, ...) is the outer product of a and b
    A, B = a["a"], a["b"]
    if not (is_array(A) and is_array(B)):
        return _renamed_multiply(DERIVATIVES["multiply"](E, g, out, {"x1": A, "x2": B}))
    nd = max(len(A.shape), len(B.shape))
    sa = (1,) * (nd - len(A.shape)) + tuple(A.shape)
    sb = (1,) * (nd - len(B.shape)) + tuple(B.shape)
    pairs = E.call("reshape", g, tuple(n for p in zip(sa, sb) for n in p))
    a_axes, b_axes = tuple(range(0, 2 * nd, 2)), tuple(range(1, 2 * nd, 2))
    a_wide = E.call("reshape", A, tuple(n for p in zip(sa, (1,) * nd) for n in p))
    b_wide = E.call("reshape", B, tuple(n for p in zip((1,) * nd, sb) for n in p))
    ga = E.call("sum", E.call("multiply", pairs, b_wide), axis=b_axes)
    gb = E.call("sum", E.call("multiply", pairs, a_wide), axis=a_axes)
    return {"a": E.call("reshape", ga, tuple(A.shape)), "b": E.call("reshape", gb, tuple(B.shape))}


@derivative_rule("cross")
def _cross(E, g, out, a):  # <g, a x b> = <a, b x g> = <b, g x a>
    A, B = a["a"], a["b"]
    axisa, axisb, axisc = (a["axis"],) * 3 if a["axis"] is not None else (a["axisa"], a["axisb"], a["axisc"])
    if not (is_array(A) and is_array(B)) or A.shape[axisa] != 3 or B.shape[axisb] != 3:
        raise NonDifferentiable("np.cross of 2-vectors has no derivative rule yet (3-vectors have one)")
    A2, B2 = E.call("moveaxis", A, axisa, -1), E.call("moveaxis", B, axisb, -1)
    g2 = E.call("moveaxis", g, axisc, -1)
    ga = E.sum_to(E.call("cross", B2, g2), tuple(A2.shape))
    gb = E.sum_to(E.call("cross", g2, A2), tuple(B2.shape))
    return {"a": E.call("moveaxis", ga, -1, axisa), "b": E.call("moveaxis", gb, -1, axisb)}


# -- diagonals ------------------------------------------------------------------------------

def diagonal_grad(E, g, x, offset: int, axis1: int, axis2: int):
    """The gradient of ``np.diagonal(x, offset, axis1, axis2)``: g put back on that diagonal."""
    nd = len(x.shape)
    axis1, axis2 = axis1 % nd, axis2 % nd
    n1, n2 = x.shape[axis1], x.shape[axis2]
    k = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    rows = tuple(range(-min(offset, 0), -min(offset, 0) + k))
    cols = tuple(range(max(offset, 0), max(offset, 0) + k))
    moved = E.call("moveaxis", E.call("zeros_like", x), (axis1, axis2), (-2, -1))
    placed = E.call("setitem", moved, (Ellipsis, rows, cols), g) if k else moved
    return E.call("moveaxis", placed, (-2, -1), (axis1, axis2))


@derivative_rule("diagonal")
def _diagonal(E, g, out, a):
    return {"a": diagonal_grad(E, g, a["a"], a["offset"], a["axis1"], a["axis2"])}


@derivative_rule("trace")
def _trace(E, g, out, a):  # the sum of the diagonal: g on every diagonal element
    x = a["a"]
    g = E.call("expand_dims", g, -1)
    nd = len(x.shape)
    diag_shape = tuple(n for i, n in enumerate(x.shape) if i not in (a["axis1"] % nd, a["axis2"] % nd))
    n1, n2, off = x.shape[a["axis1"] % nd], x.shape[a["axis2"] % nd], a["offset"]
    k = max(0, min(n1 + min(off, 0), n2 - max(off, 0)))
    g = E.call("broadcast_to", g, diag_shape + (k,))
    return {"a": diagonal_grad(E, g, x, off, a["axis1"], a["axis2"])}


# -- 1-D convolutions -----------------------------------------------------------------------

def _full_offset(mode: str, m: int, n: int) -> int:
    """Where NumPy's ``mode`` window starts in the full convolution of lengths m and n."""
    return {"full": 0, "same": (min(m, n) - 1) // 2, "valid": min(m, n) - 1}[mode]


def _convolve_grads(E, g, A, V, mode: str):
    m, n = A.shape[0], V.shape[0]
    start = _full_offset(mode, m, n)
    full = E.call("pad", g, ((start, m + n - 1 - start - g.shape[0]),))
    # out[i] = sum_k a[k] v[i - k]: a[k] gets sum_i g[i] v[i - k], a correlation (and v alike)
    return E.call("correlate", full, V, "valid"), E.call("correlate", full, A, "valid")


@derivative_rule("convolve")
def _convolve(E, g, out, a):
    ga, gv = _convolve_grads(E, g, a["a"], a["v"], a["mode"])
    return {"a": ga if is_array(a["a"]) else None, "v": gv if is_array(a["v"]) else None}


@derivative_rule("correlate")
def _correlate(E, g, out, a):  # correlate(a, v) = convolve(a, v reversed)
    A, V = a["a"], a["v"]
    if V.shape[0] > A.shape[0] and a["mode"] == "same":
        raise NonDifferentiable("np.correlate(mode='same') with v longer than a has no derivative rule yet")
    ga, gv = _convolve_grads(E, g, A, E.call("flip", V, 0), a["mode"])
    return {"a": ga, "v": E.call("flip", gv, 0)}


# -- norms ------------------------------------------------------------------------------------

def _safe_divide(E, num, den):
    """num / den, and 0 where den is 0 (the norm of zeros: its subgradient 0)."""
    zero = E.call("equal", den, 0)
    return E.call("where", zero, 0.0, E.call("divide", num, E.call("where", zero, 1.0, den)))


def _winners(E, values, extreme, axis):
    """1 where ``values`` attain ``extreme`` along ``axis`` (shared evenly among ties)."""
    hits = E.call("astype", E.call("equal", values, extreme), values.dtype)
    return E.call("divide", hits, E.call("sum", hits, axis=axis, keepdims=True))


@derivative_rule("norm")
def _norm(E, g, out, a):
    x, ord, axis = a["x"], a["ord"], a["axis"]
    nd = len(x.shape)
    if axis is None:
        axes = tuple(range(nd))
        matrix = nd == 2 and ord is not None
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = tuple(int(i) % nd for i in axes)
        matrix = len(axes) == 2
    keep = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    g = E.call("reshape", g, keep)
    o = E.call("reshape", out, keep)
    sign = E.call("sign", x)
    if ord is None or ord == "fro" or (not matrix and ord == 2):  # sqrt(sum x^2): x / |x|
        return {"x": E.call("multiply", g, _safe_divide(E, x, o))}
    if matrix:
        if ord in (1, -1, np.inf, -np.inf):  # the extreme column (1) or row (inf) sum of |x|
            summed, other = (axes[0], axes[1]) if ord in (1, -1) else (axes[1], axes[0])
            sums = E.call("sum", E.call("absolute", x), axis=summed, keepdims=True)
            pick = _winners(E, sums, o, other)
            return {"x": E.call("multiply", E.call("multiply", g, pick), sign)}
        raise NonDifferentiable(f"np.linalg.norm(ord={ord!r}) of a matrix needs the SVD: no derivative rule")
    axis_t = axes
    if ord in (np.inf, -np.inf):  # |x| at the extreme
        pick = _winners(E, E.call("absolute", x), o, axis_t)
        return {"x": E.call("multiply", E.call("multiply", g, pick), sign)}
    if ord == 0:  # the count of nonzeros: piecewise constant
        return {}
    if ord == 1:
        return {"x": E.call("multiply", g, sign)}
    p = float(ord)  # (sum |x|^p)^(1/p): sign(x) |x|^(p-1) / out^(p-1)
    ratio = _safe_divide(E, E.call("absolute", x), o)
    return {"x": E.call("multiply", E.call("multiply", g, sign), E.call("power", ratio, p - 1.0))}


# -- attention ----------------------------------------------------------------------------------

@derivative_rule("attention")
def _attention(E, g, out, a):
    """FlashAttention's backward: each row's softmax maximum and sum, ``delta =
    rowsum(g * out)``, then one op per operand that recomputes the softmax's weights from
    them (ir/ops/linalg.py): the ``[M, N]`` weights are never saved by the forward."""
    options = dict(scale=a["scale"], divide=a["divide"], fill=a["fill"])
    stats = E.call("attention_stats", a["q"], a["kt"], a["mask"], **options)
    delta = E.call("sum", E.call("multiply", g, out), axis=-1, keepdims=True)
    return {name: E.sum_to(E.call("attention_grad", a["q"], a["kt"], a["v"], a["mask"], g, stats, delta,
                                  wrt=name, **options), tuple(a[name].shape))
            for name in ("q", "kt", "v")}
