"""Python numbers in a loop node: the floats and ints a body changes, and values of the index.

In:  from :mod:`.loop_capture`, a local holding a Python float or int at the loop's
     head whose value at the back edge differs (``t += dt``, ``k += 1``,
     ``prev = i``), found by a first trial; or a node of the body computed from
     the index alone (``j = i - 1``) whose value after the loop is wanted.
Out: :class:`CarriedNumber` — the number as a value the loop carries: a 0-d
     float64 or int64 placeholder of the body that the body sees as the Python
     number it is (NEP 50's weak scalar), its next value and its initial node;
     :func:`simulate` — the carried ints' values after the loop;
     :func:`evaluate` — a body node's value, given the values of its inputs.

A Python float's arithmetic is IEEE double's, which the graph computes alike,
so a carried float stays a graph value after the loop (a Python float again
where it leaves the graph).  A Python int never overflows where int64 would.
The ints a body changes are computed from themselves, the index, the carried
floats and constants alone (anything computed from an array is a NumPy scalar,
not a Python int), so capture runs that arithmetic now, in Python, for every
iteration: each value must fit in int64, which makes the graph's int64
arithmetic exact, and after the loop the local holds its last value as a
constant, as eager's int — usable as a size, a key or a trip count.
"""
from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

from .. import ir
from .exc import Unsupported
from .variables.arrays import ArrayVariable
from .variables.base import ConstantVariable

# Iterations the trace runs a loop's int arithmetic for, at most (a longer loop unrolls).
MAX_SIMULATED_ITERATIONS = 1_000_000
INT64 = (-(2 ** 63), 2 ** 63 - 1)

# The graph ops Python arithmetic on numbers makes (variables.arrays.python_arithmetic),
# as Python computes them.  NumPy's floor_divide and remainder round as Python's do.
PYTHON_OPS = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "true_divide": operator.truediv,
    "floor_divide": operator.floordiv, "remainder": operator.mod, "negative": operator.neg,
    "positive": operator.pos, "absolute": abs, "less": operator.lt, "less_equal": operator.le,
    "greater": operator.gt, "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne,
}
PYTHON_TYPES = {"b": bool, "i": int, "u": int, "f": float}


def python_kind(var: Any) -> type | None:
    """``float`` or ``int`` for a Python float or int (not a bool): known now, or
    computed by the graph from Python numbers (a weak 0-d node); else None."""
    if isinstance(var, ConstantVariable):
        kind = var.python_type()  # (a lazy constant's type is guarded, its value not yet)
        return kind if kind in (float, int) else None
    if isinstance(var, ArrayVariable) and var.weak is not None and var.python is None:
        return var.weak[0] if var.weak[0] in (float, int) else None
    return None


def number_var(node: ir.Node, kind: type) -> ArrayVariable:
    """A 0-d node that eager code holds as a Python ``kind`` (NEP 50's weak scalar)."""
    var = ArrayVariable(node, scalar=True)
    var.weak = (kind, None, None)
    return var


class CarriedNumber:
    """A local holding a Python float or int that changes in the body: a carried
    0-d float64 or int64 value of the loop, a Python number inside the body."""

    def __init__(self, name: str, head: Any, body: ir.Graph):
        self.kind = python_kind(head)
        if self.kind is None:
            raise Unsupported(f"{name!r} is not a Python float or int at the loop's head")
        self.name, self.head = name, head
        self.dtype = np.dtype(np.float64 if self.kind is float else np.int64)
        self.placeholder = body.placeholder(name, ir.TensorMeta((), self.dtype))
        self.var = number_var(self.placeholder, self.kind)
        self.out: ir.Node | None = None
        self.result: ir.Node | None = None

    def back_edge(self, var: Any, body: ir.Graph) -> None:
        if python_kind(var) is not self.kind:
            raise Unsupported(f"{self.name!r} stops being a Python {self.kind.__name__} in the loop body")
        self.out = self._node(body, var)

    def initial(self, main: ir.Graph) -> ir.Node:
        return self._node(main, self.head)

    def _node(self, graph: ir.Graph, var: Any) -> ir.Node:
        if isinstance(var, ConstantVariable):
            return graph.call("full", (), self.dtype.type(var.value), dtype=self.dtype)
        if var.node.meta.dtype != self.dtype:  # an int computed as a narrower one (i % 3 stays int64)
            return graph.call("astype", var.node, self.dtype)
        return var.node


def evaluate(node: ir.Node, values: dict[ir.Node, Any], inside: set[ir.Node]) -> Any:
    """``node``'s value as Python computes it, from ``values`` of the nodes it reads
    (filled in as it goes).  A node outside ``inside``, a placeholder without a value
    or an op that is not Python arithmetic refuses: the value depends on arrays."""
    if node in values:
        return values[node]
    if node.kind != "call" or node not in inside:
        raise Unsupported(f"{node.name} is computed in the loop body from more than Python numbers")
    name = node.op.name
    if name == "full" and node.meta.ndim == 0 and not isinstance(node.args[1], ir.Node):
        value = PYTHON_TYPES[node.meta.dtype.kind](node.args[1])
    elif name == "astype" and node.meta.dtype.kind in PYTHON_TYPES:
        value = PYTHON_TYPES[node.meta.dtype.kind](evaluate(node.args[0], values, inside))
    elif name in PYTHON_OPS and node.meta.ndim == 0:
        args = [evaluate(a, values, inside) if isinstance(a, ir.Node) else a for a in node.args]
        try:
            value = PYTHON_OPS[name](*args)
        except ArithmeticError as e:  # eager raises it: the loop unrolls, and raises there
            raise Unsupported(f"{type(e).__name__} in the loop's Python arithmetic") from None
    else:
        raise Unsupported(f"np.{name} of the loop's Python numbers")
    if type(value) is int and not INT64[0] <= value <= INT64[1]:
        raise Unsupported("a Python int of the loop does not fit in int64")
    values[node] = value
    return value


def simulate(numbers: list[CarriedNumber], index: ir.Node, body: ir.Graph, indices: range | None,
             condition: tuple[ir.Node, bool] | None = None, also: list[ir.Node] = ()
             ) -> tuple[dict[str, Any], int, dict[ir.Node, Any]]:
    """Run the loop's Python arithmetic now: over ``indices`` (a for loop), or while the
    body's ``condition`` node is ``condition[1]`` (a while loop, whose count this finds).
    Returns the carried ints' values after the loop, the number of iterations, and the
    values the index and the numbers run had at the start of the last iteration (what
    the nodes ``also`` are computed from: locals the body derives from them, kept after
    the loop); every int on the way fits in int64, or this refuses."""
    inside = set(body.nodes)
    by_placeholder = {num.placeholder: num for num in numbers}
    # The ints, and the numbers they, the condition and ``also`` are computed from (a float too).
    needed: dict[CarriedNumber, None] = {num: None for num in numbers if num.kind is int}
    roots = [num.out for num in needed] + ([condition[0]] if condition else []) + list(also)
    while roots:
        for p in _cone(roots.pop(), inside):
            if p in by_placeholder and by_placeholder[p] not in needed:
                needed[by_placeholder[p]] = None
                roots.append(by_placeholder[p].out)
    for num in needed:
        if not isinstance(num.head, ConstantVariable):
            raise Unsupported(f"{num.name!r} is computed by the graph before the loop: its Python value "
                              "is not known")
    current = {num.placeholder: num.kind(num.head.value) for num in needed}
    count, values = 0, {}
    for i in indices if indices is not None else itertools.count():
        if count == MAX_SIMULATED_ITERATIONS:
            raise Unsupported(f"a loop of more than {MAX_SIMULATED_ITERATIONS} iterations changes a Python int")
        values = {**current, index: i}
        current = {num.placeholder: evaluate(num.out, values, inside) for num in needed}
        count += 1
        if condition is not None and bool(evaluate(condition[0], values, inside)) != condition[1]:
            break
    last = {node: value for node, value in values.items() if node in by_placeholder or node is index}
    return {num.name: current[num.placeholder] for num in needed if num.kind is int}, count, last


def _cone(node: ir.Node, inside: set[ir.Node]) -> set[ir.Node]:
    """The nodes ``node`` is computed from, within the body, itself included."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            if n.kind == "call" and n in inside:
                stack.extend(n.inputs)
    return seen
