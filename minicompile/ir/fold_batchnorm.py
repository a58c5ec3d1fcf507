"""Batch-norm folding: ``affine(linear(x, W))`` -> ``linear(x, W * s) + c`` (Graph -> Graph).

In:  a graph and the names of the placeholders whose values are fixed (the
     weights and batch-norm statistics of a model in inference, see
     :mod:`minicompile.ir.freezing`).
Out: a new graph in which every per-channel affine chain that follows a
     linear op has been moved into the linear op's weight.

Batch norm in inference form is ``(h - mean) / sqrt(var + eps) * gamma + beta``
applied per output channel of ``h``; however the NumPy source writes it
(``gamma * (h - mean)``, ``h * (gamma / std) + shift``, a bias add first),
it is a chain of pointwise ops, each combining ``h`` with a value that holds
one number per channel.  Such a chain is an affine map ``h * s + c`` with

    h + p:  c <- c + p      h - p:  c <- c - p      p - h:  s, c <- -s, p - c
    h * p:  s, c <- s*p, c*p      h / p:  s, c <- s/p, c/p      -h:  s, c <- -s, -c

and since a linear op scales its output channel ``o`` when one operand is
scaled along ``o``, ``linear(x, W) * s + c == linear(x, W * s) + c``.  The
linear ops recognized are the three ways NumPy code writes a convolution or a
dense layer: ``x @ W``, ``np.einsum(..., x, W)`` and ``(x * W).sum(axes)``.

When ``W``, ``s`` and ``c`` are computed from fixed placeholders only, the
weight-side work (``W * s``, ``c``) can be evaluated once at compile time, and
what runs per call is the linear op plus one bias add — the folded model.  The
rewrite changes rounding (``(x @ W) * s`` is not ``x @ (W * s)`` bit for bit),
so it is not one of the exact rules of :mod:`minicompile.ir.passes`; like
torch.compile's conv-bn folding it runs only when weights are frozen.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Collection

import numpy as np

from .graph import Graph, Node
from .passes import rewrite

CHAIN_OPS = ("add", "subtract", "multiply", "divide", "negative")


@dataclass
class Linear:
    """A linear op whose output's last axis is scaled by scaling ``weight`` along ``axis``."""
    node: Node          # the linear op's output (matmul, einsum or sum)
    weight: Node        # its fixed operand
    axis: int           # the weight's axis that becomes the output's last axis
    product: Node | None = None   # the multiply under a sum (depthwise convolution)


def fixed_nodes(graph: Graph, constants: Collection[str]) -> set[str]:
    """Names of the nodes computed from the placeholders named in ``constants`` only."""
    fixed: set[str] = set()
    for node in graph.nodes:
        if node.kind == "placeholder" and node.name in constants:
            fixed.add(node.name)
        elif node.kind == "call" and all(i.name in fixed for i in node.inputs):
            fixed.add(node.name)
    return fixed


def _find_linear(node: Node, fixed: set[str], users: dict[str, int], outputs: set[str]) -> Linear | None:
    """``node`` as a linear op with a fixed weight, or None."""
    if node.kind != "call" or node.dtype.kind != "f" or not node.shape:
        return None
    name, args = node.op.name, node.args
    if name == "matmul":
        w = args[1]
        if isinstance(w, Node) and w.name in fixed and w.meta.ndim >= 2:
            return Linear(node, w, w.meta.ndim - 1)
    elif name == "einsum":
        subscripts, operands = args[0], args[1]
        if "..." in subscripts or "->" not in subscripts or len(operands) != 2:
            return None
        inputs, out = subscripts.replace(" ", "").split("->")
        letters = inputs.split(",")
        if not out:
            return None
        for k in (1, 0):
            w = operands[k]
            if isinstance(w, Node) and w.name in fixed and letters[k].count(out[-1]) == 1:
                return Linear(node, w, letters[k].index(out[-1]))
    elif name == "sum":
        product, axis, keepdims = node.arg("a"), node.arg("axis"), node.arg("keepdims")
        if node.arg("dtype") is not None or not isinstance(product, Node) or product.kind != "call" \
                or product.op.name != "multiply" or users[product.name] != 1 or product.name in outputs:
            return None
        reduced = set(range(product.meta.ndim)) if axis is None else set(axis)
        kept = [i for i in range(product.meta.ndim) if keepdims or i not in reduced]
        if not kept or kept[-1] in reduced:
            return None
        for w in product.args[::-1]:
            if isinstance(w, Node) and w.name in fixed:
                p = kept[-1] - (product.meta.ndim - w.meta.ndim)
                if p >= 0 and w.shape[p] == node.shape[-1]:
                    return Linear(node, w, p, product)
    return None


def _per_channel(value: Any, shape: tuple[int, ...], fixed: set[str]) -> bool:
    """``value`` is a fixed scalar or a fixed array with one number per channel (last axis)."""
    if not isinstance(value, Node):
        return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))
    s = value.shape
    return (value.name in fixed and len(s) <= len(shape)
            and all(d == 1 for d in s[:-1]) and (not s or s[-1] in (1, shape[-1])))


def _chain(start: Node, graph_users: dict[str, list[Node]], fixed: set[str], outputs: set[str]) -> list[Node]:
    """The longest run of per-channel affine ops that reads ``start`` and nothing else reads."""
    chain: list[Node] = []
    current = start
    while current.name not in outputs and len(graph_users[current.name]) == 1:
        nxt = graph_users[current.name][0]
        if nxt.kind != "call" or nxt.op.name not in CHAIN_OPS or nxt.meta != start.meta:
            break
        others = [a for a in nxt.args if a is not current]
        if nxt.op.name == "negative":
            ok = len(nxt.args) == 1
        else:
            ok = (len(others) == 1 and _per_channel(others[0], start.shape, fixed)
                  and not (nxt.op.name == "divide" and nxt.args[1] is current))
        if not ok:
            break
        chain.append(nxt)
        current = nxt
    return chain


def _combine(g: Graph, op: str, a: Any, b: Any) -> Any:
    """``a op b`` where either side may be a node of ``g`` or a Python/NumPy scalar."""
    if isinstance(a, Node) or isinstance(b, Node):
        return g.call(op, a, b)
    return {"add": operator.add, "subtract": operator.sub,
            "multiply": operator.mul, "divide": operator.truediv}[op](a, b)


def _scale_and_shift(g: Graph, chain: list[Node], start: Node) -> tuple[Any, Any]:
    """(s, c) with ``chain(h) == h * s + c``; None stands for s = 1 or c = 0."""
    s: Any = None
    c: Any = None
    previous = start
    for node in chain:
        op = node.op.name
        if op == "negative":
            s = -1.0 if s is None else _combine(g, "multiply", s, -1.0)
            c = None if c is None else _combine(g, "multiply", c, -1.0)
            previous = node
            continue
        left = node.args[0] is previous
        p = node.args[1] if left else node.args[0]
        if op == "add":
            c = p if c is None else _combine(g, "add", c, p)
        elif op == "subtract" and left:
            c = _combine(g, "multiply", p, -1.0) if c is None else _combine(g, "subtract", c, p)
        elif op == "subtract":  # p - h
            s = -1.0 if s is None else _combine(g, "multiply", s, -1.0)
            c = p if c is None else _combine(g, "subtract", p, c)
        elif op in ("multiply", "divide"):
            s = (p if op == "multiply" else _combine(g, "divide", 1.0, p)) if s is None else _combine(g, op, s, p)
            c = None if c is None else _combine(g, op, c, p)
        previous = node
    return s, c


def _scaled_weight(g: Graph, lin: Linear, s: Any) -> Node:
    """``W`` with its output-channel axis multiplied by ``s``."""
    w = lin.weight
    if isinstance(s, Node):
        target = [1] * w.meta.ndim
        if s.meta.size != 1:
            target[lin.axis] = lin.node.shape[-1]
        s = g.call("reshape", s, tuple(target))
    return g.call("multiply", w, s)


def _relinear(g: Graph, lin: Linear, old: Node, weight: Node) -> Node:
    """The linear op again, reading ``weight`` in place of the original weight."""
    def swap(args: tuple) -> tuple:
        return tuple(weight if a is lin.weight else swap(a) if isinstance(a, tuple) else a for a in args)

    if lin.product is not None:
        product = g.call("multiply", *swap(lin.product.args))
        return g.call("sum", product, *old.args[1:])
    return g.call(old.op.name, *swap(old.args))


def fold_batchnorm(graph: Graph, constants: Collection[str]) -> Graph:
    """Fold every per-channel affine chain after a linear op with a fixed weight into it.

    ``constants`` names the placeholders whose values are fixed; the weight and
    every value the chain combines with must be computed from them alone.
    """
    fixed = fixed_nodes(graph, constants)
    users = graph.users()
    users_by_name = {n.name: users[n] for n in graph.nodes}
    counts = {k: len(v) for k, v in users_by_name.items()}
    outputs = {n.name for n in graph.outputs}
    # Chain end's name -> (linear op, chain), found on the input graph.
    matches: dict[str, tuple[Linear, list[str]]] = {}
    for node in graph.calls:
        if node.name in fixed:
            continue
        lin = _find_linear(node, fixed, counts, outputs)
        if lin is None:
            continue
        chain = _chain(node, users_by_name, fixed, outputs)
        scales = any(n.op.name in ("multiply", "divide", "negative") for n in chain)
        if scales or len(chain) >= 2:
            matches[chain[-1].name] = (lin, [n.name for n in chain])

    def fold(g: Graph, node: Node, _outputs: set[Node]) -> Any:
        if node.name not in matches:
            return None
        lin, names = matches[node.name]
        # Walk back from the copy of the chain's end to the copies of its nodes.
        chain = [node]
        while len(chain) < len(names):
            chain.insert(0, next(a for a in chain[0].args if isinstance(a, Node) and a.name == names[-len(chain) - 1]))
        start = next(a for a in chain[0].args if isinstance(a, Node) and a.name == lin.node.name)
        lin_copy = _copied_linear(lin, start)
        mark = len(g.nodes)
        try:
            s, c = _scale_and_shift(g, chain, start)
            new = _relinear(g, lin_copy, start, _scaled_weight(g, lin_copy, s) if s is not None else lin_copy.weight)
            if c is not None:
                new = g.call("add", new, c)
        except Exception:  # a combination NumPy refuses: leave the chain as written
            new = None
        if new is None or new.meta != node.meta:
            del g.nodes[mark:]
            return None
        return new

    return rewrite(graph, fold)


def _copied_linear(lin: Linear, start: Node) -> Linear:
    """``lin`` in terms of the rewritten graph's copies (``start`` is the copy of ``lin.node``)."""
    product = start.args[0] if lin.product is not None else None
    operands = product.args if product is not None else \
        start.args[1] if start.op.name == "einsum" else start.args
    weight = next(a for a in operands if isinstance(a, Node) and a.name == lin.weight.name)
    return Linear(start, weight, lin.axis, product)
