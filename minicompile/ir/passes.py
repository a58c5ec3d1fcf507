"""Graph -> Graph passes over the IR.  Each pass returns a new graph; the
input graph is never changed.

* :func:`dead_code_elimination` — drop nodes no output depends on;
* :func:`constant_folding`      — evaluate nodes whose inputs are all scalars;
* :func:`common_subexpression_elimination` — one node per distinct computation;
* :func:`algebraic_simplification` — the rewrite rules of :data:`RULES`;
* :func:`optimize` — all of them, to a fixed point (what the inductor runs).

Every rule must be exact under IEEE arithmetic and NumPy's dtype rules: a
rewrite keeps the node's shape and dtype and the value of every element,
NaN, infinity and the sign of zero included.  So ``x*1 -> x`` is a rule but
``x*0 -> 0`` is not (``inf*0`` is NaN), and ``x+0 -> x`` holds for integers
only (``-0.0 + 0.0`` is ``+0.0``); its float twin is ``x + (-0.0) -> x``.
A node the caller receives as an output is never replaced by another graph
value: eager NumPy hands back a fresh array, never an alias of an input.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .graph import Graph, Node


def rebuild(graph: Graph, keep) -> Graph:
    """A new graph with the nodes for which ``keep(node)`` is true, same names."""
    new = Graph()
    for node in graph.nodes:
        if keep(node):
            new.nodes.append(node)
            new._names.add(node.name)
    return new


def dead_code_elimination(graph: Graph) -> Graph:
    """Drop call nodes whose value no output depends on.

    Every registered op is pure (no in-place op reaches the IR), so anything an
    output does not need can go, except the ops marked ``effectful`` (``check``,
    which raises by values).  Placeholders stay: they are the signature.
    """
    live: set[Node] = set()
    for node in reversed(graph.nodes):
        if node.kind in ("output", "placeholder") or node in live or \
                (node.kind == "call" and node.op.extra.get("effectful")):
            live.add(node)
            live.update(node.inputs)
    return rebuild(graph, lambda n: n in live)


# ---------------------------------------------------------------------------
# Rewriting: one walk over the graph, each node offered to a rule function
# ---------------------------------------------------------------------------


def _map_args(value: Any, env: dict[Node, Any]) -> Any:
    if isinstance(value, Node):
        return env.get(value, value)
    if isinstance(value, tuple):
        return tuple(_map_args(v, env) for v in value)
    if isinstance(value, list):
        return [_map_args(v, env) for v in value]
    return value


def rewrite(graph: Graph, rule: Callable[[Graph, Node, set[Node]], Any]) -> Graph:
    """Copy ``graph``; ``rule(new_graph, node, outputs)`` returns a replacement
    (a node of the new graph, or a scalar for a folded constant) or None."""
    new = Graph()
    # Nodes a rule creates get names no node of the old graph has.
    new._names.update(n.name for n in graph.nodes)
    env: dict[Node, Any] = {}
    outputs = set(graph.outputs)
    for node in graph.nodes:
        args = _map_args(node.args, env)
        if node.kind == "output":
            new.output(tuple(args))
            continue
        copy = node if args == node.args and all(a is b for a, b in zip(_leaves(args), _leaves(node.args))) \
            else Node(node.name, node.kind, node.op, args, node.meta, node.user_stack)
        new.nodes.append(copy)
        env[node] = copy
        if node.kind == "call":
            mark = len(new.nodes)
            replacement = rule(new, copy, outputs | {env.get(o, o) for o in outputs})
            for made in new.nodes[mark:]:  # nodes a rule adds come from the node it rewrote
                made.user_stack = made.user_stack or node.user_stack
            if replacement is not None:
                env[node] = replacement
    return dead_code_elimination(new)


def drop_inner_copies(graph: Graph) -> Graph:
    """Read ``x`` where ``np.copy(x)`` only feeds other ops: in a functional graph a copy
    matters only as an output (a distinct array the caller may write), so one that
    no output is keeps nothing from fusing through it."""
    return rewrite(graph, lambda g, node, outputs: node.args[0]
                   if node.op.name == "copy" and node not in outputs else None)


def _leaves(values: Any) -> list:
    out = []
    for v in values:
        out += _leaves(v) if isinstance(v, (tuple, list)) else [v]
    return out


# ---------------------------------------------------------------------------
# Constant folding
# ---------------------------------------------------------------------------


def constant_folding(graph: Graph) -> Graph:
    """Evaluate a 0-d node whose inputs are all constants, once, at compile time.

    Its readers get the NumPy scalar it evaluates to: a *strong* scalar of the
    node's dtype, which promotes exactly like the 0-d array it replaces.
    Outputs are kept as nodes (the caller gets what eager NumPy returns).
    """

    users = graph.users()
    # Only pointwise readers take a scalar where a 0-d array was.
    foldable = {n.name for n in graph.calls
                if all(u.kind == "call" and u.op.kind == "pointwise" for u in users[n])}

    def fold(g: Graph, node: Node, outputs: set[Node]) -> Any:
        if node.inputs or node.shape != () or node in outputs or node.name not in foldable:
            return None
        try:
            with np.errstate(all="ignore"):
                value = node.op.impl(*node.args)
        except Exception:  # NumPy raises at run time: leave it to run time
            return None
        value = np.asarray(value)
        if value.shape != () or value.dtype != node.dtype:
            return None
        return value[()]

    return rewrite(graph, fold)


# ---------------------------------------------------------------------------
# Common-subexpression elimination
# ---------------------------------------------------------------------------


def _key(value: Any) -> Any:
    """A hashable stand-in that tells ``1``, ``1.0``, ``True`` and np.float32(1) apart."""
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_key(v) for v in value)
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())  # -0.0 and 0.0 differ
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, complex):
        return ("complex", value.real.hex(), value.imag.hex())
    return (type(value).__name__, value)


def common_subexpression_elimination(graph: Graph) -> Graph:
    """Merge call nodes with the same op and the same arguments (ops are pure)."""
    seen: dict[Any, Node] = {}

    def merge(g: Graph, node: Node, outputs: set[Node]) -> Any:
        try:
            key = (node.op.name, _key(node.args))
            hash(key)
        except TypeError:
            return None
        first = seen.get(key)
        if first is None:
            seen[key] = node
            return None
        # Two outputs computed alike are still two arrays in eager NumPy.
        return None if node in outputs else first

    return rewrite(graph, merge)


# ---------------------------------------------------------------------------
# Algebraic simplification: a table of exact rewrite rules
# ---------------------------------------------------------------------------


def _is(value: Any, target: float, negative_zero: bool = False) -> bool:
    """``value`` is a scalar constant equal to ``target`` (and -0.0 when asked)."""
    if isinstance(value, Node) or isinstance(value, (bool, np.bool_)) or not np.isscalar(value):
        return False
    if not value == target:
        return False
    return not negative_zero or bool(np.signbit(value))


def _int_kind(node: Node) -> bool:
    return node.dtype.kind in "iub"


def _real(node: Node) -> bool:
    return node.dtype.kind != "c"


def _call(g: Graph, name: str, *args: Any) -> Node:
    return g.call(name, *args)


# Each rule: (its math, op name, condition on the node, replacement); a replacement that
# is a graph node must have the node's shape and dtype (checked centrally).
# `x`/`c` below: the array operand and the scalar constant.
RULES: list[tuple[str, str, Callable[[Node], bool], Callable[[Graph, Node], Any]]] = [
    # not complex: (re + inf*1j) * (1+0j) has a NaN real part (inf * 0)
    ("x * 1 -> x", "multiply", lambda n: _is(n.args[1], 1) and _real(n), lambda g, n: n.args[0]),
    ("1 * x -> x", "multiply", lambda n: _is(n.args[0], 1) and _real(n), lambda g, n: n.args[1]),
    ("x * -1 -> -x", "multiply", lambda n: _is(n.args[1], -1) and n.dtype.kind in "if",
     lambda g, n: _call(g, "negative", n.args[0])),
    ("x / 1 -> x", "divide", lambda n: _is(n.args[1], 1) and _real(n), lambda g, n: n.args[0]),
    # -0.0 - 0.0 is -0.0: exact for floats too
    ("x - 0 -> x", "subtract", lambda n: _is(n.args[1], 0), lambda g, n: n.args[0]),
    # integers only: -0.0 + 0.0 is +0.0
    ("x + 0 -> x (int)", "add", lambda n: _is(n.args[1], 0) and _int_kind(n), lambda g, n: n.args[0]),
    ("0 + x -> x (int)", "add", lambda n: _is(n.args[0], 0) and _int_kind(n), lambda g, n: n.args[1]),
    # -0.0 is the float additive identity (a complex -0.0 is -0.0+0j: it turns an imaginary -0.0 into +0.0)
    ("x + (-0.0) -> x", "add", lambda n: _is(n.args[1], 0, negative_zero=True) and _real(n),
     lambda g, n: n.args[0]),
    ("x ** 1 -> x", "power", lambda n: _is(n.args[1], 1), lambda g, n: n.args[0]),
    # NumPy's float power computes x*x for this exponent
    ("x ** 2 -> square(x)", "power", lambda n: _is(n.args[1], 2) and n.dtype.kind == "f",
     lambda g, n: _call(g, "square", n.args[0])),
    ("-(-x) -> x", "negative", lambda n: _op(n.args[0]) == "negative", lambda g, n: n.args[0].args[0]),
    ("+x -> x", "positive", lambda n: True, lambda g, n: n.args[0]),
    ("maximum(x, x) -> x", "maximum", lambda n: n.args[0] is n.args[1], lambda g, n: n.args[0]),
    ("minimum(x, x) -> x", "minimum", lambda n: n.args[0] is n.args[1], lambda g, n: n.args[0]),
    # a copy with the same values (the dtype check is central)
    ("x.astype(x.dtype) -> x", "astype", lambda n: isinstance(n.args[0], Node), lambda g, n: n.args[0]),
    ("x.reshape(s1).reshape(s2) -> x.reshape(s2)", "reshape", lambda n: _op(n.args[0]) == "reshape",
     lambda g, n: _call(g, "reshape", n.args[0].args[0], n.args[1])),
    ("x.reshape(x.shape) -> x", "reshape", lambda n: isinstance(n.args[0], Node), lambda g, n: n.args[0]),
    ("x.transpose(p).transpose(q) -> x.transpose(p[q])", "transpose", lambda n: _op(n.args[0]) == "transpose",
     lambda g, n: _call(g, "transpose", n.args[0].args[0], tuple(n.args[0].args[1][i] for i in n.args[1]))),
    ("x.transpose(identity) -> x", "transpose", lambda n: tuple(n.args[1]) == tuple(range(len(n.shape))),
     lambda g, n: n.args[0]),
]


def _op(value: Any) -> str | None:
    return value.op.name if isinstance(value, Node) and value.kind == "call" else None


def algebraic_simplification(graph: Graph) -> Graph:
    """Apply the first matching rule of :data:`RULES` to each node, once."""

    def simplify(g: Graph, node: Node, outputs: set[Node]) -> Any:
        for _, op_name, matches, replace in RULES:
            if op_name != node.op.name:
                continue
            try:
                if not matches(node):
                    continue
            except (IndexError, AttributeError, TypeError):
                continue
            mark = len(g.nodes)
            try:
                out = replace(g, node)
            except Exception:  # the replacement is not a valid NumPy program
                out = None
            fresh = len(g.nodes) > mark
            # Same shape and dtype; and an output stays a fresh array, never
            # an alias of an input or of another output (eager NumPy's answer).
            if not isinstance(out, Node) or out.meta != node.meta or (node in outputs and not fresh):
                del g.nodes[mark:]
                continue
            return out
        return None

    return rewrite(graph, simplify)


def optimize(graph: Graph, max_rounds: int = 4) -> Graph:
    """Constant folding, simplification, CSE and DCE until nothing changes."""
    for _ in range(max_rounds):
        before = graph.python_code()
        graph = constant_folding(graph)
        graph = algebraic_simplification(graph)
        graph = common_subexpression_elimination(graph)
        graph = dead_code_elimination(graph)
        if graph.python_code() == before:
            break
    return graph


def specialize(graph: Graph, bindings: dict[str, int]) -> Graph:
    """A copy of a dynamic-shape graph with every size symbol replaced by its
    value in ``bindings``: each node is re-created, so every shape rule runs
    again on the concrete sizes."""
    from . import symbolic
    from .ops import TensorMeta

    new = Graph()
    env: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.kind == "placeholder":
            meta = TensorMeta(symbolic.substitute(node.meta.shape, bindings), node.meta.dtype)
            env[node] = new.placeholder(node.name, meta)
        elif node.kind == "call":
            args = symbolic.substitute(_map_args(node.args, env), bindings)
            env[node] = new.call(node.op.name, *args)
            env[node].user_stack = node.user_stack
        else:
            new.output([env[n] for n in node.args])
    return new
