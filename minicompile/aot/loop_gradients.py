"""The backward of a loop node: a reversed loop over the carries the forward saved.

In:  a forward ``loop`` node (``ir/ops/control.py``) on a path to a gradient.
Out: :class:`LoopGradient` — the forward loop to run instead, which also keeps
     the *history* of the carries its backward reads (row ``k``: the value
     iteration ``k`` started from, a stacked output), and the backward loop
     that turns the tangents of the loop's results into the gradients of its
     inputs.

The backward of ``c_{k+1} = body(c_k, w, i_k)`` run ``n`` times is the
vector-Jacobian product of the body run ``n`` times in reverse: iteration
``k`` of the backward reads ``c_k`` from the history, recomputes that
iteration's body from it and applies the body's own joint graph (built by the
same :func:`build_joint_graph`, so a loop inside the body differentiates the
same way) to the carried tangent.  The carried tangent ``g_c`` goes from
``g_{c_n}`` (the tangent of the loop's result) down to ``g_{c_0}``, the
gradient of the loop's initial value; the gradients of the invariant inputs
add up over the iterations in carried accumulators.  Sliced inputs (``xs``)
get their gradients as stacked outputs of the backward, and the tangents of
stacked outputs (``ys``) come in as sliced inputs: the backward of a scan is
a scan.

That is JAX's ``scan`` transpose and what torch's ``scan`` higher-order op
does: save the carries, recompute the body.  The memory is ``n`` times the
carries the backward reads, not ``n`` times every intermediate of the body
(which unrolling the loop would have the partitioner choose from); the
partitioner sees the history as one value the forward's loop node makes and
saves it (a loop is not recomputed).  Only the carries the body's backward
reads are kept: a body linear in ``u`` keeps no history of ``u``.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import logs
from ..ir import Graph, Node
from ..ir.graph import _map_nodes, copy_calls
from ..ir.ops.control import INDEX_META, loop_parts
from ..ir.ops.registry import TensorMeta
from ..ir.passes import dead_code_elimination


def _floating(meta: TensorMeta) -> bool:
    return meta.dtype.kind == "f"


class LoopGradient:
    """The forward and backward loops of one loop node ``node`` of a forward graph;
    ``reached``: which of its inputs (nodes of that graph) carry a gradient;
    ``build_joint_graph``: joint.py's, applied to the body (a loop in it differentiates
    through this class again)."""

    def __init__(self, node: Node, reached: set[Node], build_joint_graph: Callable[[Graph, list[bool]], Any]):
        self.node, self.loop = node, loop_parts(node)
        loop = self.loop
        body = loop.body
        nc, ni, ns = len(loop.carried), len(loop.invariant), len(loop.sliced)
        metas = [p.meta for p in body.placeholders]
        # Inside the body every floating carry carries the chain (a carry the loop starts
        # from a constant still depends on the inputs after one iteration); an invariant or
        # sliced input, only when it is reached outside.
        wants = ([_floating(m) for m in metas[:nc]]
                 + [_floating(m) and v in reached for m, v in zip(metas[nc:], (*loop.invariant, *loop.sliced))]
                 + [False])
        joint = build_joint_graph(body, wants)
        self.carried_grads = [j for j in range(nc) if wants[j]]
        self.invariant_grads = [m for m in range(ni) if wants[nc + m]]
        self.sliced_grads = [s for s in range(ns) if wants[nc + ni + s]]
        # Which outputs take a tangent: carried ones from the carried tangent, stacked ones
        # from the rows of the stacked results' tangents.
        self.stacked_tangents = [j - nc for j, t in enumerate(joint.output_has_tangent) if t and j >= nc]

        B = Graph()
        g_carried = {j: B.placeholder(f"grad_{body.placeholders[j].name}", metas[j]) for j in self.carried_grads}
        g_invariant = {m: B.placeholder(f"grad_{body.placeholders[nc + m].name}", metas[nc + m])
                       for m in self.invariant_grads}
        invariant = [B.placeholder(p.name, p.meta) for p in body.placeholders[nc:nc + ni]]
        history = [B.placeholder(p.name, p.meta) for p in body.placeholders[:nc]]
        sliced = [B.placeholder(p.name, p.meta) for p in body.placeholders[nc + ni:nc + ni + ns]]
        stacked_rows = [B.placeholder(f"grad_{body.outputs[nc + j].name}_row", body.outputs[nc + j].meta)
                        for j in self.stacked_tangents]
        index = B.placeholder("index", INDEX_META)
        primals = [*history, *invariant, *sliced, index]
        tangents = ([g_carried[j] for j, t in enumerate(joint.output_has_tangent[:nc]) if t]
                    + stacked_rows)
        env: dict[Node, Any] = dict(zip(joint.graph.placeholders, primals + tangents))
        copy_calls(joint.graph, B, env)
        grads = [env[o] for o in joint.graph.outputs[joint.num_forward_outputs:]]
        grad_of = {i: grads[g] for i, g in enumerate(joint.grad_index) if g is not None}
        outputs = ([grad_of[j] for j in self.carried_grads]
                   + [B.call("add", g_invariant[m], grad_of[nc + m]) for m in self.invariant_grads]
                   + [grad_of[nc + ni + s] for s in self.sliced_grads])
        B.output(outputs)
        B = dead_code_elimination(B)
        # Only what the backward body reads is handed to it: the histories of other carries
        # are not kept at all.
        used = {i for n in B.calls for i in n.inputs} | set(B.outputs)
        self.invariant_read = [m for m, p in enumerate(invariant) if p in used]
        self.history_read = [j for j, p in enumerate(history) if p in used]
        self.sliced_read = [s for s, p in enumerate(sliced) if p in used]
        unread = {p for p in (*invariant, *history, *sliced) if p not in used}
        B.nodes = [n for n in B.nodes if n not in unread]
        self.backward_body = B
        # The forward body, keeping the histories as stacked outputs after its own.
        F = Graph()
        fenv: dict[Node, Any] = {p: F.placeholder(p.name, p.meta) for p in body.placeholders}
        copy_calls(body, F, fenv)
        F.output([fenv[o] for o in body.outputs] + [fenv[body.placeholders[j]] for j in self.history_read])
        self.forward_body = F

    def forward(self, graph: Graph, copy: dict[Node, Node]) -> Node:
        """The forward loop, in ``graph`` (``copy`` maps the forward graph's nodes to it),
        keeping the histories the backward reads."""
        loop = self.loop
        args = _map_nodes((self.forward_body, loop.start, loop.step, loop.n, loop.carried, loop.invariant,
                           loop.sliced, loop.reverse), copy.__getitem__)
        node = graph.call("loop", *args)
        node.user_stack = self.node.user_stack
        first = len(self.node.meta)
        self.histories = [graph.call("loop_result", node, first + h) for h in range(len(self.history_read))]
        return node

    def backward(self, E: Any, copy: dict[Node, Node], tangents: dict[int, Node]) -> dict[Node, Node]:
        """Emit the backward loop; ``tangents``: the tangent of each result of the loop that has
        one, by result position.  Returns the gradient of each input (a forward-graph node)."""
        loop, graph = self.loop, E.graph
        nc = len(loop.carried)
        carried = [tangents[j] if j in tangents else E.call("zeros_like", copy[loop.carried[j]])
                   for j in self.carried_grads]
        carried += [E.call("zeros_like", copy[loop.invariant[m]]) for m in self.invariant_grads]
        rows = [tangents[nc + j] if nc + j in tangents
                else E.call("zeros", tuple(self.node.meta[nc + j].shape), self.node.meta[nc + j].dtype)
                for j in self.stacked_tangents]
        invariant = [copy[loop.invariant[m]] for m in self.invariant_read]
        sliced = self.histories + [copy[loop.sliced[s]] for s in self.sliced_read] + rows
        node = graph.call("loop", self.backward_body, loop.start, loop.step, loop.n, tuple(carried),
                          tuple(invariant), tuple(sliced), not loop.reverse)
        node.user_stack = self.node.user_stack
        logs.log("aot", lambda: (
            f"{self.node.name}: the backward is {node.name}, the loop run in reverse over the saved carries "
            f"({', '.join(h.name for h in self.histories) or 'none'}); each iteration recomputes its body "
            "from its carry"))
        # The backward's results, in order: the gradients of the carried, invariant and sliced
        # inputs it computes.  One input in two places (carried and invariant) gets both.
        inputs = ([loop.carried[j] for j in self.carried_grads] + [loop.invariant[m] for m in self.invariant_grads]
                  + [loop.sliced[s] for s in self.sliced_grads])
        grads: dict[Node, Node] = {}
        for r, value in enumerate(inputs):
            g = graph.call("loop_result", node, r)
            grads[value] = E.call("add", grads[value], g) if value in grads else g
        return grads
