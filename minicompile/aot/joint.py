"""The joint graph: forward and backward traced into one graph (AOTAutograd's first step).

In:  a forward ``ir.Graph`` and, per input, whether it needs a gradient.
Out: a :class:`JointGraph` — one ``ir.Graph`` whose placeholders are the
     forward inputs ("primals") followed by one tangent per differentiable
     forward output, and whose outputs are the forward outputs followed by the
     gradient of every input that needs one.

The backward half is built by walking the forward nodes in reverse and
applying each op's derivative rule through a :class:`GraphEmitter`, so the
backward is made of the same registry ops as the forward and can be
partitioned, fused and compiled like it.  Nothing is in place: the joint
graph is functional by construction.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node
from ..ir.graph import _map_nodes
from ..ir.passes import common_subexpression_elimination, dead_code_elimination
from .derivatives import DERIVATIVES, NonDifferentiable, complex_on_path
from .emit import GraphEmitter
from .loop_gradients import LoopGradient


@dataclass
class JointGraph:
    graph: Graph
    num_primals: int
    num_tangents: int
    num_forward_outputs: int
    # For each forward output: does it carry a tangent (is it differentiable)?
    output_has_tangent: list[bool]
    # For each primal: its position among the gradient outputs, or None
    grad_index: list[int | None]

    def __str__(self) -> str:
        return self.graph.python_code("joint")


def _differentiable(node: Node) -> bool:
    """Does ``node`` carry a gradient: a floating-point value (a loop, one of its results)."""
    return node.meta is not None and any(m.dtype.kind == "f" for m in node.metas)


def build_joint_graph(forward: Graph, requires_grad: list[bool]) -> JointGraph:
    # Which forward values lie on a path from an input that needs a gradient (the
    # "active" ones carry a gradient: the floating-point ones).  An integer or boolean
    # value on the path (x > 0) carries none, a piecewise-constant op's rule (floor)
    # gives none: a float computed from them still wants a tangent, and an input
    # reached only through them gets zeros.
    reached: set[Node] = {p for p, r in zip(forward.placeholders, requires_grad) if r}
    for node in forward.calls:
        if any(i in reached for i in node.inputs):
            reached.add(node)
    for node in forward.calls:
        # (A complex value a loop carries is checked inside its body, by the body's joint graph.)
        if node in reached and node.op.kind != "loop" and node.meta.dtype.kind == "c":
            raise NonDifferentiable(complex_on_path(node.op.name, node.meta.dtype))
    active = {n for n in reached if _differentiable(n)}

    joint = Graph()
    primals = [joint.placeholder(f"primal_{p.name}", p.meta) for p in forward.placeholders]
    copy: dict[Node, Node] = dict(zip(forward.placeholders, primals))
    loops: dict[Node, LoopGradient] = {}
    for node in forward.calls:  # the forward half, node for node
        if node.op.name == "loop" and node in active:  # kept with the carries its backward reads
            loops[node] = LoopGradient(node, reached, build_joint_graph)
            copy[node] = loops[node].forward(joint, copy)
            continue
        args = dict(zip(node.op.param_names, _map_nodes(node.args, copy.__getitem__)))
        copy[node] = joint.call(node.op.name, **args)
        copy[node].user_stack = node.user_stack

    outputs = list(forward.outputs)
    has_tangent = [o in active for o in outputs]
    tangents = [joint.placeholder(f"tangent_{i}", o.meta) for i, (o, t) in enumerate(zip(outputs, has_tangent)) if t]

    E = GraphEmitter(joint)
    grads: dict[Node, Node] = {}
    tangent_iter = iter(tangents)
    for out, t in zip(outputs, has_tangent):
        if t:
            tangent = next(tangent_iter)
            grads[out] = E.call("add", grads[out], tangent) if out in grads else tangent

    loop_tangents: dict[Node, dict[int, Node]] = {}  # a loop's results' tangents, by position
    for node in reversed(forward.calls):
        if node.op.name == "loop_result" and node in active and node in grads:
            loop, position = node.args
            tangents = loop_tangents.setdefault(loop, {})
            g = grads.pop(node)
            tangents[position] = E.call("add", tangents[position], g) if position in tangents else g
            continue
        if node in loops:
            mark = len(joint.nodes)
            for value, gv in loops[node].backward(E, copy, loop_tangents.pop(node, {})).items():
                if value in active:
                    grads[value] = E.call("add", grads[value], gv) if value in grads else gv
            for made in joint.nodes[mark:]:
                made.user_stack = made.user_stack or node.user_stack
            continue
        g = grads.pop(node, None)
        if g is None or node not in active:
            continue
        rule = DERIVATIVES.get(node.op.name)
        if rule is None:
            raise NonDifferentiable(f"no derivative rule for np.{node.op.name}: cannot differentiate through it")
        args = dict(zip(node.op.param_names, _map_nodes(node.args, copy.__getitem__)))
        mark = len(joint.nodes)
        input_grads = rule(E, g, copy[node], args)
        for param, value in zip(node.op.param_names, node.args):
            gi = input_grads.get(param)
            # A parameter holding several arrays (np.concatenate's) gets a tuple of grads.
            pairs = zip(value, gi) if isinstance(value, (tuple, list)) and gi is not None else [(value, gi)]
            for v, gv in pairs:
                if isinstance(v, Node) and v in active and gv is not None:
                    if gv.meta.dtype != v.meta.dtype:
                        gv = E.call("astype", gv, v.meta.dtype)
                    grads[v] = E.call("add", grads[v], gv) if v in grads else gv
        for made in joint.nodes[mark:]:  # the backward of a line comes from that line
            made.user_stack = made.user_stack or node.user_stack

    grad_outputs, grad_index = [], []
    for p, r in zip(forward.placeholders, requires_grad):
        if not r:
            grad_index.append(None)
            continue
        g = grads.get(p)
        if g is None:  # no path from this input to an output: its gradient is zero
            zeros = E.call("where", E.call("equal", copy[p], copy[p]), 0.0, 0.0)
            g = E.call("astype", zeros, p.meta.dtype)
        grad_index.append(len(grad_outputs))
        grad_outputs.append(g)
    joint.output([copy[o] for o in outputs] + grad_outputs)
    # Rules also emit gradients nobody asked for (of inputs without requires_grad), and
    # the same value twice (matmul's rule transposes an input once per use): clean up
    # before partitioning, so no value is saved twice.
    joint = common_subexpression_elimination(dead_code_elimination(joint))
    return JointGraph(joint, len(primals), len(tangents), len(outputs), has_tangent, grad_index)

