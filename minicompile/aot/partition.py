"""Cutting the joint graph into a forward and a backward graph.

Every value the backward reads from the forward half must either be *saved*
(kept in memory from the forward pass until the backward runs) or
*recomputed* in the backward from saved values.  Two partitions:

* :func:`default_partition` saves every forward value the backward reads;
* :func:`min_cut_partition` saves as few bytes as possible (AOTAutograd's
  rematerialization partitioner): each forward value ``v`` becomes an edge
  ``v_in -> v_out`` whose capacity is its size in bytes; data dependencies
  are infinite edges; values the backward reads drain into the sink; inputs,
  forward outputs and ops that must not be recomputed (matmul, reductions,
  anything that is not pointwise, a view or a creation such as ``zeros_like``)
  hang off the source.  A minimum cut is then a cheapest set of values to
  save, and every forward value on the sink side is recomputed by the backward.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import logs
from ..ir import Graph, Node
from ..ir.graph import _map_nodes
from ..ir.passes import dead_code_elimination
from .joint import JointGraph
from .maxflow import FlowNetwork

RECOMPUTABLE_KINDS = frozenset({"pointwise", "view", "creation"})


def nbytes(node: Node) -> int:
    return node.meta.size * node.meta.dtype.itemsize


@dataclass
class Partition:
    forward: Graph     # primals -> forward outputs + saved values
    backward: Graph    # saved values + tangents -> input gradients
    saved: list[Node]  # joint-graph nodes the forward hands to the backward
    recomputed: list[Node] = field(default_factory=list)
    kind: str = "min-cut"

    @property
    def saved_bytes(self) -> int:
        return sum(nbytes(n) for n in self.saved)

    def summary(self) -> str:
        saved = ", ".join(f"{n.name} ({nbytes(n)} B)" for n in self.saved) or "nothing"
        recomputed = ", ".join(n.name for n in self.recomputed) or "nothing"
        return (f"{self.kind} partition: saves {self.saved_bytes} bytes: {saved}\n"
                f"  recomputed in the backward: {recomputed}")


def _halves(joint: JointGraph) -> tuple[list[Node], set[Node], set[Node], list[Node]]:
    """(forward values, backward nodes, values the backward needs, forward outputs)."""
    g = joint.graph
    tangents = g.placeholders[joint.num_primals:]
    backward: set[Node] = set(tangents)
    for node in g.calls:
        if any(i in backward for i in node.inputs):
            backward.add(node)
    forward = [n for n in g.nodes if n.kind in ("placeholder", "call") and n not in backward]
    needed = {i for n in g.calls if n in backward for i in n.inputs if i not in backward}
    grads = g.outputs[joint.num_forward_outputs:]
    needed |= {n for n in grads if n not in backward}
    return forward, backward, needed, list(g.outputs[: joint.num_forward_outputs])


def default_partition(joint: JointGraph) -> Partition:
    forward, _, needed, _ = _halves(joint)
    saved = [n for n in forward if n in needed]
    return _build(joint, saved, "default")


def min_cut_partition(joint: JointGraph) -> Partition:
    forward, _, needed, fwd_outputs = _halves(joint)
    net = FlowNetwork()
    users: dict[Node, list[Node]] = {n: [] for n in forward}
    forward_set = set(forward)
    for n in forward:
        for i in n.inputs:
            if i in forward_set:
                users[i].append(n)
    for n in forward:
        if n.kind == "call" and n.op.name == "loop":  # never saved itself: its results are
            net.add_edge((n, "in"), (n, "out"))
        else:
            net.add_edge((n, "in"), (n, "out"), nbytes(n))
        must_run_forward = (n.kind == "placeholder" or n in fwd_outputs
                            or n.op.kind not in RECOMPUTABLE_KINDS)
        if must_run_forward:
            net.add_edge("source", (n, "in"))
        for u in users[n]:
            net.add_edge((n, "out"), (u, "in"))
        if n in needed:
            net.add_edge((n, "out"), "sink")
    if not needed:
        return _build(joint, [], "min-cut")
    _, source_side = net.min_cut("source", "sink")
    saved = [n for n in forward if (n, "in") in source_side and (n, "out") not in source_side]
    return _build(joint, saved, "min-cut")


def _build(joint: JointGraph, saved: list[Node], kind: str) -> Partition:
    g = joint.graph
    primals = g.placeholders[: joint.num_primals]
    tangents = g.placeholders[joint.num_primals:]
    fwd_outputs = list(g.outputs[: joint.num_forward_outputs])
    grad_outputs = list(g.outputs[joint.num_forward_outputs:])

    fwd = Graph()
    fmap = {p: fwd.placeholder(p.name, p.meta) for p in primals}
    _copy_calls(g, fwd, fmap)
    fwd.output([fmap[n] for n in fwd_outputs + saved])
    fwd = dead_code_elimination(fwd)

    bwd = Graph()
    bmap = {n: bwd.placeholder(f"saved_{n.name}", n.meta) for n in saved}
    bmap.update({t: bwd.placeholder(t.name, t.meta) for t in tangents})
    _copy_calls(g, bwd, bmap)
    bwd.output([bmap[n] for n in grad_outputs])
    bwd = dead_code_elimination(bwd)
    kept = set(bwd.nodes)
    backward_nodes = _halves(joint)[1]
    saved_set = set(saved)
    recomputed = [n for n in g.calls
                  if n not in backward_nodes and n not in saved_set and n in bmap and bmap[n] in kept]
    part = Partition(fwd, bwd, saved, recomputed, kind)
    logs.log("partition", part.summary)
    return part


def _copy_calls(src: Graph, dst: Graph, mapping: dict[Node, Node]) -> None:
    """Copy every call of ``src`` whose inputs are available in ``dst`` (names kept)."""
    for node in src.calls:
        if node in mapping:
            continue
        if any(i not in mapping for i in node.inputs):
            continue  # depends on something this graph does not have
        args = dict(zip(node.op.param_names, _map_nodes(node.args, mapping.__getitem__)))
        new = dst.call(node.op.name, **args)
        mapping[node] = new


def to_dot(joint: JointGraph, partition: Partition) -> str:
    """Graphviz DOT of the joint graph with the cut: forward values blue, backward
    nodes orange, saved values boxed in bold red, recomputed values dashed."""
    forward, backward, _, _ = _halves(joint)
    saved, recomputed = set(partition.saved), set(partition.recomputed)
    lines = ["digraph joint {", "  rankdir=LR;", '  node [shape=ellipse, fontname="monospace"];']
    for n in joint.graph.nodes:
        if n.kind == "output":
            continue
        label = f"{n.name}\\n{n.meta}"
        style = 'color="#1f77b4"' if n in forward else 'color="#ff7f0e"'
        if n in saved:
            style = 'shape=box, color="#d62728", penwidth=3'
        elif n in recomputed:
            style += ", style=dashed"
        lines.append(f'  "{n.name}" [label="{label}", {style}];')
    for n in joint.graph.calls:
        for i in n.inputs:
            lines.append(f'  "{i.name}" -> "{n.name}";')
    lines.append("}")
    return "\n".join(lines)
