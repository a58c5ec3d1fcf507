"""``Graph`` and ``Node``: the IR every stage hands to the next (our torch.fx).

A graph is a list of nodes in topological order:

* ``placeholder`` — one per input array, named after the user's variable;
* ``call``        — an op from the registry (:mod:`minicompile.ir.ops`) applied
  to earlier nodes and Python constants; its ``args`` hold every parameter of
  the op's signature, in order, already canonicalized;
* ``output``      — the tuple of nodes the graph returns.

Every placeholder and call node carries :class:`TensorMeta` (shape, dtype),
computed by the op's meta rule when the node is created, so a graph that
exists is a graph NumPy would accept.  A graph prints as readable Python and
is itself callable: it runs its nodes through NumPy, which makes it both the
``eager`` backend and the oracle the compiled backends are tested against.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from . import dtypes as dt
from . import symbolic
from .ops import OpDef, TensorMeta, get_op
from .ops.control import loop_parts


class SourceLine(NamedTuple):
    """One frame of the user's code: where a node was created."""

    filename: str
    lineno: int
    function: str


class Node:
    __slots__ = ("name", "kind", "op", "args", "meta", "user_stack")

    def __init__(self, name: str, kind: str, op: OpDef | None, args: tuple, meta: TensorMeta | None,
                 user_stack: tuple[SourceLine, ...] = ()):
        self.name = name
        self.kind = kind  # "placeholder" | "call" | "output"
        self.op = op
        self.args = args
        self.meta = meta
        # The user's frames (outermost first) whose line made this node, set by
        # capture and kept by passes: how a kernel leads back to source lines.
        self.user_stack = user_stack

    @property
    def inputs(self) -> list["Node"]:
        """The nodes this node reads, in argument order (nested tuples included)."""
        return [a for a in _flatten(self.args) if isinstance(a, Node)]

    def arg(self, name: str) -> Any:
        """An argument of a call node by its parameter name."""
        assert self.op is not None
        return self.args[self.op.param_names.index(name)]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.meta.shape

    @property
    def dtype(self) -> np.dtype:
        return self.meta.dtype

    @property
    def metas(self) -> tuple[TensorMeta, ...]:
        """The meta of each value the node makes: one, or a loop's one per result."""
        return self.meta if self.kind == "call" and self.op.name == "loop" else (self.meta,)

    def __repr__(self) -> str:
        return f"%{self.name}"


def _flatten(values: Iterable) -> Iterable:
    for v in values:
        if isinstance(v, (tuple, list)):
            yield from _flatten(v)
        else:
            yield v


def _map_nodes(value: Any, fn) -> Any:
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map_nodes(v, fn) for v in value)
    if isinstance(value, list):
        return [_map_nodes(v, fn) for v in value]
    return value


class Graph:
    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._names: set[str] = set()

    # -- building ----------------------------------------------------------

    def _unique(self, base: str) -> str:
        base = re.sub(r"\W", "_", base).strip("_") or "v"
        if base[0].isdigit():
            base = "v_" + base
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    def placeholder(self, name: str, meta: TensorMeta) -> Node:
        dt.check_supported(meta.dtype)
        node = Node(self._unique(name), "placeholder", None, (), TensorMeta(tuple(meta.shape), np.dtype(meta.dtype)))
        self.nodes.append(node)
        return node

    def call(self, op_name: str, *args: Any, **kwargs: Any) -> Node:
        """Add ``op(*args, **kwargs)``; raises what NumPy would raise on bad input."""
        op = get_op(op_name)
        bound = op.bind(args, kwargs)
        as_meta = {k: _map_nodes(v, lambda n: n.meta) for k, v in bound.items()}
        if op.canonicalize is not None:
            canonical = op.canonicalize(as_meta)
            # canonicalize sees metas in place of nodes and may move them around
            # (an index key gains a trailing slice); put each node back where
            # its meta ended up.
            pending: dict[int, list[Node]] = {}
            for n in _flatten(bound.values()):
                if isinstance(n, Node):
                    pending.setdefault(id(n.meta), []).append(n)
            bound = {k: _restore_nodes(canonical[k], pending) for k in bound}
            as_meta = canonical
        meta = op.meta(**as_meta)
        node = Node(self._unique(op.name), "call", op, tuple(bound.values()), meta)
        self.nodes.append(node)
        return node

    def output(self, results: Sequence[Node]) -> Node:
        node = Node("output", "output", None, tuple(results), None)
        self.nodes.append(node)
        return node

    # -- reading -----------------------------------------------------------

    @property
    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "placeholder"]

    @property
    def calls(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "call"]

    @property
    def output_node(self) -> Node:
        assert self.nodes and self.nodes[-1].kind == "output", "graph has no output node"
        return self.nodes[-1]

    @property
    def outputs(self) -> tuple[Node, ...]:
        return self.output_node.args

    def users(self) -> dict[Node, list[Node]]:
        table: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                table[i].append(n)
        return table

    def op_count(self) -> int:
        return len(self.calls)

    # -- running -----------------------------------------------------------

    def __call__(self, *inputs: Any) -> tuple:
        """Run the graph through the NumPy reference implementations."""
        ph = self.placeholders
        if len(inputs) != len(ph):
            raise TypeError(f"graph takes {len(ph)} inputs, got {len(inputs)}")
        env: dict[Node, Any] = dict(zip(ph, inputs))
        bindings = self.bind_symbols(inputs) if self.is_dynamic else None
        for node in self.nodes:
            if node.kind == "call":
                args = _map_nodes(node.args, env.__getitem__)
                if bindings is not None:  # sizes in arguments (a reshape's shape) for this call
                    args = symbolic.substitute(args, bindings)
                env[node] = node.op.impl(*args)
        return tuple(env[n] for n in self.outputs)

    # -- symbolic sizes ----------------------------------------------------

    @property
    def is_dynamic(self) -> bool:
        """Whether some input has a symbolic size (``s0``): one graph for many shapes."""
        return any(symbolic.is_symbolic(p.meta.shape) for p in self.placeholders)

    def bind_symbols(self, inputs: Sequence[Any]) -> dict[str, int]:
        """The value of each size symbol for these inputs (read off their shapes)."""
        return symbolic.symbol_bindings([p.meta.shape for p in self.placeholders],
                                        [getattr(x, "shape", ()) for x in inputs])

    # -- printing ----------------------------------------------------------

    def python_code(self, name: str = "graph", prefix: str = "") -> str:
        """The graph as Python source; ``prefix`` names the loop bodies of a loop's body
        (``loop_loop_body`` is the body of the loop inside ``loop_body``)."""
        header = ", ".join(f'{p.name}: "{p.meta}"' for p in self.placeholders)
        # A loop's body is a graph of its own: printed first, as the function the loop calls.
        bodies = [node.args[0].python_code(f"{prefix}{node.name}_body", f"{prefix}{node.name}_") + "\n"
                  for node in self.calls if node.op.name == "loop"]
        lines = bodies + [f"def {name}({header}):"]
        for node in self.calls:
            meta = ("(" + ", ".join(map(str, node.meta)) + ")") if node.op.name == "loop" else node.meta
            lines.append(f"    {node.name} = {format_call(node, prefix)}  # {meta}")
        lines.append(f"    return {format_value(tuple(self.outputs))}")
        return "\n".join(lines)

    __str__ = python_code

    def __repr__(self) -> str:
        return f"<Graph {len(self.placeholders)} inputs, {self.op_count()} ops>"


def copy_calls(source: Graph, graph: Graph, env: dict[Node, Any]) -> None:
    """Copy every call of ``source`` into ``graph``, in order (a loop node as a loop node);
    ``env`` maps ``source``'s placeholders to values of ``graph`` and gains each call's copy."""
    for node in source.calls:
        args = dict(zip(node.op.param_names, _map_nodes(node.args, env.__getitem__)))
        env[node] = graph.call(node.op.name, **args)
        env[node].user_stack = node.user_stack


def _restore_nodes(value: Any, pending: dict[int, list[Node]]) -> Any:
    if isinstance(value, TensorMeta):
        nodes = pending.get(id(value))
        if not nodes:
            raise TypeError("canonicalize returned an array argument that was not an input")
        # Keep the last one for repeated uses of one node (x + x).
        return nodes.pop(0) if len(nodes) > 1 else nodes[0]
    if isinstance(value, tuple):
        return tuple(_restore_nodes(v, pending) for v in value)
    if isinstance(value, list):
        return [_restore_nodes(v, pending) for v in value]
    return value


def format_value(value: Any) -> str:
    if isinstance(value, Node):
        return value.name
    if isinstance(value, np.dtype):
        return f"np.{value.name}"
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}({value.item()!r})"
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, complex):  # repr's (nan+infj) and (-0+1j) do not read back
        return f"complex({value.real!r}, {value.imag!r})"
    return repr(value)


def format_call(node: Node, prefix: str = "") -> str:
    """``np.sum(x, axis=(1,))``: positional for arrays, keywords when not default."""
    if node.op.name == "loop":  # loop(body, range(...), carried=..., invariant=..., sliced=...)
        loop = loop_parts(node)
        indices = f"range({loop.start}, {loop.start + loop.n * loop.step}, {loop.step})"
        extra = f", sliced={format_value(tuple(loop.sliced))}" if loop.sliced else ""
        return (f"loop({prefix}{node.name}_body, {f'reversed({indices})' if loop.reverse else indices}, "
                f"carried={format_value(tuple(loop.carried))}, invariant={format_value(tuple(loop.invariant))}"
                f"{extra})")
    if node.op.name == "loop_result":
        return f"{format_value(node.args[0])}[{node.args[1]}]"
    params = node.op.signature.parameters
    parts = []
    for (pname, param), value in zip(params.items(), node.args):
        if param.default is param.empty:
            parts.append(format_value(value))
        elif not (value is param.default or (not isinstance(value, Node) and _eq(value, param.default))):
            parts.append(f"{pname}={format_value(value)}")
    return f"np.{node.op.name}({', '.join(parts)})"


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False
