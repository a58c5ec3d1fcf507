"""Scaled dot-product attention written as NumPy ops, found in a graph and made one node.

In:  an ``ir.Graph`` (after decompositions, or before the joint graph is built).
Out: the graph with each attention pattern replaced by one ``attention`` node
     (``ir/ops/linalg.py``), whose values are the pattern's own.

The pattern is softmax attention as NumPy code writes it::

    s = q @ k.T                        (k's transpose: any view a kernel reads at strides)
    s = s / c   or   s * c             (optional)
    s = np.where(mask, s, fill)        (optional; a boolean mask broadcast to s)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    p = e / e.sum(axis=-1, keepdims=True)
    out = p @ v

with every intermediate read by the pattern alone (a graph output, or a value
read elsewhere, keeps the ops as they are: the ``patterns`` log says which).
Inductor pattern-matches torch's attention the same way (``fuse_attention.py``)
and calls a flash-attention kernel; a backend with such a kernel runs this
pass (the Triton backend's template: ``codegen/triton/attention.py``), and
before a training graph's joint graph is built, so that the ``attention``
node's own derivative rule gives the backward (``aot/derivatives_linalg.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import config, ir, logs


def _last_axis_keepdims(node: ir.Node, op: str, a: ir.Node) -> bool:
    """``node`` is ``op(a, axis=-1, keepdims=True)`` with every other argument its default."""
    if node.op.name != op or node.args[0] is not a or node.arg("axis") != (len(a.shape) - 1,) \
            or node.arg("keepdims") is not True:
        return False
    params = list(node.op.signature.parameters.values())
    return all(v is p.default or (not isinstance(v, ir.Node) and v == p.default)
               for p, v in zip(params[1:], node.args[1:]) if p.name not in ("axis", "keepdims"))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


class _Match:
    """One attention pattern ending at a matmul: its operands and the nodes it replaces."""

    def __init__(self) -> None:
        self.q = self.kt = self.v = self.mask = None
        self.scale, self.divide, self.fill = None, False, None
        self.inner: list[ir.Node] = []  # the nodes the attention node replaces (``out`` is the node itself)


def _match(out: ir.Node, users: dict, outputs: set) -> tuple[_Match | None, str | None]:
    """The attention ending at ``out`` (a matmul), or (None, why not) once its softmax is found
    (None, None: not attention at all)."""
    p, v = out.args
    if not (isinstance(p, ir.Node) and p.kind == "call" and p.op.name == "divide"):
        return None, None
    e, total = p.args
    if not (isinstance(e, ir.Node) and isinstance(total, ir.Node) and e.kind == "call" and e.op.name == "exp"
            and _last_axis_keepdims(total, "sum", e)):
        return None, None
    d = e.args[0]
    if not (isinstance(d, ir.Node) and d.kind == "call" and d.op.name == "subtract"):
        return None, None
    s, top = d.args
    if not (isinstance(s, ir.Node) and isinstance(top, ir.Node) and _last_axis_keepdims(top, "max", s)):
        return None, None
    m = _Match()
    soft = s  # what the softmax reads: the scores, scaled and masked
    below: list[ir.Node] = [s]  # soft, then each node under it down to the matmul
    if s.op.name == "where" and isinstance(s.args[0], ir.Node) and s.args[0].dtype == np.bool_ \
            and isinstance(s.args[1], ir.Node) and _number(s.args[2]):
        m.mask, m.fill = s.args[0], s.args[2]
        s = s.args[1]
        below.append(s)
    if s.op.name in ("divide", "multiply") and _number(s.args[1]) and isinstance(s.args[0], ir.Node):
        m.scale, m.divide = s.args[1], s.op.name == "divide"
        s = s.args[0]
        below.append(s)
    elif s.op.name == "multiply" and _number(s.args[0]) and isinstance(s.args[1], ir.Node):
        m.scale = s.args[0]
        s = s.args[1]
        below.append(s)
    if s.op.name != "matmul":
        return None, "the softmax's scores are not a matmul (scaled or masked)"
    m.q, m.kt = s.args
    m.v = v
    m.inner = [p, total, e, d, top] + below
    readers = {p: [out], total: [p], e: [total, p], d: [e], top: [d], soft: [top, d]}
    readers.update({node: [above] for above, node in zip(below, below[1:])})
    for node in m.inner:
        if node in outputs:
            return None, f"{node.name} is also a result of the graph"
        if sorted(n.name for n in users[node]) != sorted(n.name for n in readers[node]):
            return None, f"{node.name} is read outside the pattern ({', '.join(u.name for u in users[node])})"
    if tuple(soft.shape) != tuple(s.shape) or s.meta.ndim < 2 or out.meta.ndim != s.meta.ndim:
        return None, "the mask broadcasts the scores to another shape"
    if not all(isinstance(x, ir.Node) and x.meta.ndim == s.meta.ndim for x in (m.q, m.kt, m.v)):
        return None, "q, kᵀ and v do not have the scores' rank"
    if not m.q.dtype == m.kt.dtype == m.v.dtype == soft.dtype == out.dtype:
        # (NumPy 2 promotes float32 scores divided by np.sqrt(d), a float64 scalar, to float64.)
        return None, (f"the scores are {soft.dtype} from {m.q.dtype} operands: the scale or the fill is a "
                      "value of a wider dtype (a NumPy float64 scalar such as np.sqrt(d); a Python float is not)")
    return m, None


def fuse_attention(graph: ir.Graph) -> ir.Graph:
    """``graph`` with each attention pattern one ``attention`` node (see the module docstring);
    unchanged when ``config.attention_template`` is off."""
    if not config.attention_template:
        return graph
    users, outputs = graph.users(), set(graph.outputs)
    matches: dict[ir.Node, _Match] = {}
    for node in graph.calls:
        if node.op.name != "matmul" or len(node.args) != 2:
            continue
        found, why = _match(node, users, outputs)
        if found is not None:
            matches[node] = found
            logs.log("patterns", f"attention: {node.name} = softmax({found.inner[-1].name}) @ {node.args[1].name} "
                                 "is one flash-attention kernel")
        elif why is not None:
            logs.log("patterns", f"attention: not at {node.name}: {why}")
    if not matches:
        return graph
    replaced = {n for m in matches.values() for n in m.inner}
    new = ir.Graph()
    env: dict[ir.Node, ir.Node] = {}
    for node in graph.nodes:
        if node.kind == "placeholder":
            env[node] = new.placeholder(node.name, node.meta)
        elif node.kind == "call" and node in matches:
            m = matches[node]
            env[node] = new.call("attention", env[m.q], env[m.kt], env[m.v],
                                 env[m.mask] if m.mask is not None else None, m.scale, m.divide, m.fill)
            env[node].user_stack = node.user_stack
            assert env[node].meta == node.meta, (env[node].meta, node.meta)
        elif node.kind == "call" and node not in replaced:
            env[node] = new.call(node.op.name, *ir.graph._map_nodes(node.args, env.__getitem__))
            env[node].user_stack = node.user_stack
    new.output([env[o] for o in graph.outputs])
    return new


