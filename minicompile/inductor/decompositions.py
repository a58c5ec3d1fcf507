"""Decompositions: composite ops rewritten into the primitives the loops know.

In:  an ``ir.Graph``.
Out: an equivalent ``ir.Graph`` in which every op of :data:`DECOMPOSITIONS`
     is replaced by a few primitive nodes (pointwise ops and the reductions
     sum/max/min), so that the scheduler can fuse them with their neighbours:
     ``x.var(axis=1)`` becomes a mean, a subtraction, a square and a sum, and
     the two row reductions then share one kernel.  Contractions go the other
     way, into one large BLAS call: a stacked ``(..., K) @ (K, N)`` and a
     matmul-shaped ``einsum`` become a 2-D matmul between reshapes.

Each entry builds the replacement with ``graph.call``, so the result gets
NumPy's own shape and dtype rules; a decomposition whose result does not have
exactly the node's shape and dtype, or that does not apply (a dtype argument,
an empty axis), returns None and the node stays as it is — lowered, or run as
an Extern.  Printable before/after with ``MINICOMPILE_LOGS=decomp``.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Collection

import numpy as np

from .. import logs
from ..ir import passes
from ..ir.graph import Graph, Node


def _reduced_count(node: Node) -> int:
    a, axes = node.arg("a"), node.arg("axis")
    return math.prod(a.shape[i] for i in axes)


def _mean(g: Graph, n: Node) -> Node | None:
    a, axis, dtype, keepdims = n.arg("a"), n.arg("axis"), n.arg("dtype"), n.arg("keepdims")
    if a.dtype.kind not in "f" or dtype is not None or a.dtype.itemsize < 4:
        return None  # integer and float16 means accumulate in another dtype
    total = g.call("sum", a, axis=axis, keepdims=keepdims)
    # Division, not multiplication by 1/n: the same rounding as NumPy's mean.
    return g.call("divide", total, _reduced_count(n))


def _var(g: Graph, n: Node, root: bool = False) -> Node | None:
    a, axis, keepdims = n.arg("a"), n.arg("axis"), n.arg("keepdims")
    if a.dtype.kind != "f" or a.dtype.itemsize < 4 or n.arg("dtype") is not None:
        return None
    count = _reduced_count(n)
    if count == 0:
        return None  # NumPy warns and returns NaN: leave that to NumPy
    mean = g.call("divide", g.call("sum", a, axis=axis, keepdims=True), count)
    centered = g.call("subtract", a, mean)
    # keepdims=True like the first sum, so both run over the same loops (one
    # kernel); the dropped axes come back off with a free reshape.
    total = g.call("sum", g.call("multiply", centered, centered), axis=axis, keepdims=True)
    var = g.call("divide", total, max(count - n.arg("ddof"), 0))
    out = g.call("sqrt", var) if root else var
    return out if keepdims else g.call("reshape", out, n.shape)


def _clip(g: Graph, n: Node) -> Node | None:
    a, lo, hi = n.args[0], n.args[1], n.args[2]
    out = a
    if lo is not None:
        out = g.call("maximum", out, lo)  # NaN stays NaN, as in np.clip
    if hi is not None:
        out = g.call("minimum", out, hi)
    return None if out is a else out


def _any_all(reduction: str) -> Callable[[Graph, Node], Node | None]:
    def rule(g: Graph, n: Node) -> Node | None:
        if _reduced_count(n) == 0:
            return None  # any([]) is False, but max([]) raises
        truth = g.call("not_equal", n.arg("a"), 0)  # NaN != 0: NaN is true, as in NumPy
        return g.call(reduction, truth, axis=n.arg("axis"), keepdims=n.arg("keepdims"))
    return rule


def _ptp(g: Graph, n: Node) -> Node | None:
    a, axis, keepdims = n.arg("a"), n.arg("axis"), n.arg("keepdims")
    return g.call("subtract", g.call("max", a, axis=axis, keepdims=keepdims),
                  g.call("min", a, axis=axis, keepdims=keepdims))


def _reciprocal(g: Graph, n: Node) -> Node | None:
    x = n.args[0]
    return g.call("divide", 1, x) if isinstance(x, Node) and x.dtype.kind == "f" else None


def _fabs(g: Graph, n: Node) -> Node | None:
    x = n.args[0]
    return g.call("absolute", x) if isinstance(x, Node) and x.dtype.kind == "f" else None


def _matmul(g: Graph, n: Node) -> Node | None:
    a, b = n.args[0], n.args[1]
    if not (isinstance(a, Node) and isinstance(b, Node)) or len(a.shape) <= 2 or len(b.shape) != 2:
        return None
    if a.kind == "placeholder":
        return None  # an input's layout is the caller's: NumPy's own matmul handles any strides
    # One (M*..., K) @ (K, N) product instead of NumPy's loop of one small
    # product per leading index (a 1x1 convolution over an NHWC image).
    rows = g.call("reshape", a, (math.prod(a.shape[:-1]), a.shape[-1]))
    return g.call("reshape", g.call("matmul", rows, b), n.shape)


def _swapaxes(g: Graph, n: Node) -> Node | None:
    a, first, second = n.args
    if not isinstance(a, Node) or not all(isinstance(x, (int, np.integer)) for x in (first, second)):
        return None
    axes = list(range(len(a.shape)))
    i, j = int(first) % len(a.shape), int(second) % len(a.shape)
    axes[i], axes[j] = axes[j], axes[i]
    return g.call("transpose", a, tuple(axes))


def _moveaxis(g: Graph, n: Node) -> Node | None:
    a, source, destination = n.args
    src = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    dst = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if not isinstance(a, Node) or len(src) != len(dst) or not all(
            isinstance(x, (int, np.integer)) and -len(a.shape) <= x < len(a.shape) for x in src + dst):
        return None  # NumPy's own call raises its error
    src, dst = tuple(int(x) % len(a.shape) for x in src), tuple(int(x) % len(a.shape) for x in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        return None
    order = [axis for axis in range(len(a.shape)) if axis not in src]
    for d, axis in sorted(zip(dst, src)):
        order.insert(d, axis)
    return g.call("transpose", a, tuple(order))


def _einsum(g: Graph, n: Node) -> Node | None:
    spec, operands = n.arg("subscripts"), n.arg("operands")
    if "->" not in spec or "." in spec or len(operands) != 2 or not all(isinstance(o, Node) for o in operands):
        return None
    (sa, sb), out = spec.replace(" ", "").split("->")[0].split(","), spec.replace(" ", "").split("->")[1]
    a, b = operands
    k = len(set(sa) & set(sb) - set(out))
    contracted, free_a, free_b = sa[len(sa) - k:], sa[:len(sa) - k], sb[k:]
    # Only the matmul-shaped contraction: a = (free_a, c), b = (c, free_b), out = (free_a, free_b).
    if k == 0 or sb[:k] != contracted or out != free_a + free_b or len(set(sa + sb)) != len(free_a + sb):
        return None
    m, kk, cols = (math.prod(a.shape[:len(free_a)]), math.prod(a.shape[len(free_a):]), math.prod(b.shape[k:]))
    if math.prod(b.shape[:k]) != kk:
        return None
    # A 3x3 convolution's windows (N, H, W, C, 3, 3) become an im2col matrix
    # (N*H*W, C*9), gathered by NumPy's reshape, times the (C*9, O) filter.
    rows = g.call("reshape", a, (m, kk))
    product = g.call("matmul", rows, g.call("reshape", b, (kk, cols)))
    return g.call("reshape", product, n.shape)


# op name -> rule building the replacement.  Only ops present in the registry
# ever reach a rule; the others are simply never matched.
DECOMPOSITIONS: dict[str, Callable[[Graph, Node], Node | None]] = {
    "mean": _mean,                                  # mean(x) = sum(x) / n
    "var": _var,                                    # var(x) = sum((x - mean(x))^2) / (n - ddof)
    "std": lambda g, n: _var(g, n, root=True),      # std(x) = sqrt(var(x))
    "clip": _clip,                                  # clip(x, lo, hi) = minimum(maximum(x, lo), hi)
    "any": _any_all("max"),                         # any(x) = max(x != 0)
    "all": _any_all("min"),                         # all(x) = min(x != 0)
    "ptp": _ptp,                                    # ptp(x) = max(x) - min(x)
    "reciprocal": _reciprocal,                      # 1/x, floats only (ints truncate)
    "fabs": _fabs,                                  # fabs(x) = |x|, floats only
    "matmul": _matmul,                              # (..., K) @ (K, N) = reshape((M, K) @ (K, N))
    "einsum": _einsum,                              # einsum("mk,kn->mn") = matmul, any ranks of m, k, n
    "swapaxes": _swapaxes,                          # swapaxes(x, i, j) = transpose(x, axes with i, j swapped)
    "moveaxis": _moveaxis,                          # moveaxis(x, s, d) = transpose(x, the axes moved)
}


def decompose(graph: Graph, keep: Collection[str] = ()) -> Graph:
    """``graph`` with each op of :data:`DECOMPOSITIONS` replaced by primitives,
    except the ops named in ``keep``."""

    def rule(g: Graph, node: Node, outputs: set[Node]) -> Any:
        fn = DECOMPOSITIONS.get(node.op.name) if node.op.name not in keep else None
        if fn is None:
            return None
        mark = len(g.nodes)
        try:
            out = fn(g, node)
        except Exception:  # an op it needs is missing, or NumPy rejects the call
            out = None
        if out is None or not isinstance(out, Node) or out.meta != node.meta:
            del g.nodes[mark:]  # take back what the rule built
            return None
        return out

    if not any(n.op.name in DECOMPOSITIONS and n.op.name not in keep for n in graph.calls):
        return graph
    new = passes.rewrite(graph, rule)
    logs.log("decomp", lambda: f"# before\n{graph.python_code()}\n# after\n{new.python_code()}")
    return new


def before_lowering(graph: Graph, *, keep: Collection[str] = (), optimize: bool = True) -> Graph:
    """The graph passes every backend runs before lowering, in this order.

    1. :func:`decompose` — composite ops become primitives the loops know
       (``var`` becomes a mean, a subtraction, a square and a sum; ``clip`` a
       maximum and a minimum), so the scheduler can fuse them with their
       neighbours instead of calling NumPy, and a stacked ``(..., K) @ (K, N)``
       becomes one 2-D matmul.  A backend whose generator has its own form of
       a composite op names it in ``keep`` and lowers the op itself (Triton's
       batched matmul template, its ``mean`` reduction).
    2. :func:`minicompile.ir.passes.optimize` (``optimize``) — constant folding,
       algebraic simplification (``x * 1 -> x``, a reshape to the same shape
       dropped) and common-subexpression elimination, to a fixed point: fewer
       nodes, so fewer loads, buffers and kernels.  A backend would skip it to
       generate one value per captured node (reading generated code against
       the captured graph, or measuring what the rewrites save).
    3. :func:`minicompile.ir.passes.dead_code_elimination` — always (also the
       last step of ``optimize``): the scheduler gives every node a place in a
       kernel or a buffer, so a node no output needs would be computed for
       nothing.
    """
    graph = decompose(graph, keep)
    return passes.optimize(graph) if optimize else passes.dead_code_elimination(graph)
