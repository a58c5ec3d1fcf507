"""Compiled training: the forward/backward pair as one node on the eager tape.

``AotFunction`` is what a backend's compiled callable becomes when a graph's
inputs are :class:`Tensor` objects.  At compile time it builds the joint graph,
partitions it (min-cut by default) and compiles the forward graph with the
inner backend; the backward graph is compiled on the first ``backward()``.
Each call runs the forward, keeps the saved values, and returns tensors whose
tape node runs the compiled backward — so compiled regions compose with eager
tensor code and with graph breaks, and gradients flow through all of them.
Differentiated again (``mc.grad(mc.grad(f))`` of a compiled ``f``), a node's
backward runs as a compiled training graph of its own (:func:`vjp_graph`):
what torch.compile's compiled backward cannot do.
Arrays stay in their module: with CuPy inputs the backend gets CuPy arrays,
and outputs, saved values, tangents and gradients are CuPy arrays.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import graph_id, ir, logs
from ..ir.graph import copy_calls
from ..ir.passes import dead_code_elimination
from ..ir.ops.registry import array_module, as_array
from .joint import build_joint_graph
from .partition import Partition, default_partition, min_cut_partition
from .tensor import Tensor, TapeNode, apply, grad_enabled

Backend = Callable[[ir.Graph, list], Callable[..., tuple]]
PARTITIONERS = {"min_cut": min_cut_partition, "default": default_partition}


class AotFunction:
    def __init__(self, graph: ir.Graph, example_inputs: list, backend: Backend,
                 partitioner: str = "min_cut"):
        self.backend = backend
        # The forward compiles as the graph being compiled now; the backward, later,
        # as a graph of its own (graph_id.py), derived from it.
        self.graph_id = graph_id.current()
        self.backward_graph_id: graph_id.GraphId | None = None
        self.requires_grad = [isinstance(x, Tensor) and x.requires_grad for x in example_inputs]
        self.graph = graph
        # Outputs no tensor input reaches are plain arrays, as eager NumPy's ``a * 2`` is
        # beside ``t * 2``: handed back as the backend made them, not as tensors.
        tensor_nodes = {p for p, x in zip(graph.placeholders, example_inputs) if isinstance(x, Tensor)}
        for node in graph.nodes:
            if node.kind == "call" and any(i in tensor_nodes for i in node.inputs):
                tensor_nodes.add(node)
        self.plain = [isinstance(o, ir.Node) and o not in tensor_nodes for o in graph.outputs]
        arrays = [_data(x) for x in example_inputs]
        if any(self.requires_grad):
            # The backend's pre-grad pass (the Triton backend's attention): ops whose own
            # rules give a backward it runs as kernels too.
            pre_grad = getattr(backend, "pre_grad", None)
            self.fused = pre_grad(graph, arrays) if pre_grad is not None else graph
            self.joint = build_joint_graph(self.fused, self.requires_grad)
            logs.log("aot", lambda: str(self.joint))
            self.partition: Partition | None = PARTITIONERS[partitioner](self.joint)
            self.forward = backend(self.partition.forward, arrays)
        else:  # tensors that need no gradient: only the forward exists
            self.fused, self.joint, self.partition = graph, None, None
            self.forward = backend(graph, arrays)
        self._backward: Any = None
        self._unfused_joint: Any = None
        self._vjp: dict[tuple, AotFunction] = {}  # the backward as a training graph, by which inputs need grads

    def __call__(self, *inputs: Any) -> tuple:
        arrays = [_data(x) for x in inputs]
        outputs = self.forward(*arrays)
        if self.partition is None or not grad_enabled():
            n = len(self.graph.outputs)
            return tuple(o if plain else Tensor(o) for o, plain in zip(outputs[:n], self.plain))
        n = self.joint.num_forward_outputs
        forward_outputs, saved = outputs[:n], outputs[n:]
        tensors = {i: x for i, (x, r) in enumerate(zip(inputs, self.requires_grad)) if r}
        results = []
        for k, (out, has_tangent) in enumerate(zip(forward_outputs, self.joint.output_has_tangent)):
            if not has_tangent:
                results.append(out if self.plain[k] else Tensor(out))
                continue
            node = TapeNode("compiled", {}, tensors, as_array(out),
                            backward=self._backward_for(k, saved, forward_outputs))
            node.backward_on_tape = self._backward_on_tape_for(k, node, inputs, forward_outputs)
            results.append(Tensor(out, requires_grad=True, _node=node))
        return tuple(results)

    def _backward_for(self, k: int, saved: tuple, forward_outputs: tuple) -> Callable:
        """The backward of output ``k``: the compiled backward with zero tangents elsewhere
        (gradients are linear in the tangents, so per-output calls add up correctly)."""
        def run(g: Any) -> dict[int, Any]:
            tangents = [_tangent(g if i == k else None, out)
                        for i, (out, has) in enumerate(zip(forward_outputs, self.joint.output_has_tangent))
                        if has]
            if self._backward is None:
                with graph_id.compiling(self._derived_id("backward")) as gid:
                    self._backward = self.backend(self.partition.backward, list(saved) + tangents)
                self.backward_graph_id = gid
            grads = self._backward(*saved, *tangents)
            return {i: grads[j] for i, j in enumerate(self.joint.grad_index) if j is not None}
        return run


    def _backward_on_tape_for(self, k: int, node: TapeNode, inputs: tuple, forward_outputs: tuple) -> Callable:
        """The backward of output ``k`` on tensors, recorded on the tape (``create_graph``):
        the joint graph's backward half, as a graph of its own — primals and tangents in,
        gradients out — compiled as a training graph in turn: its joint graph is built by
        the same rules and partitioned again, so it can be differentiated again."""
        def run(g: Any) -> dict[int, Any]:
            tangents = [_tangent_on_tape(g) if i == k else _tangent(None, out)
                        for i, (out, has) in enumerate(zip(forward_outputs, self.joint.output_has_tangent))
                        if has]
            # The inputs that need a gradient as the tape node holds them: one written in place
            # since (t += 1) is its old value there.
            example = [node.tensors.get(i, x) for i, x in enumerate(inputs)] + tangents
            pattern = tuple(isinstance(x, Tensor) and x.requires_grad for x in example)
            if pattern not in self._vjp:
                with graph_id.compiling(self._derived_id("backward as a training graph")):
                    self._vjp[pattern] = AotFunction(vjp_graph(self.unfused_joint()), example, self.backend)
            grads = self._vjp[pattern](*example)
            return {i: grads[j] for i, j in enumerate(self.joint.grad_index) if j is not None}
        return run

    def unfused_joint(self) -> Any:
        """The joint graph of the graph as captured, before the pre-grad pass: the one a
        second derivative differentiates (a fused op's backward ops have no rules of their
        own).  Its inputs and outputs are the fused joint graph's."""
        if self.fused is self.graph:
            return self.joint
        if self._unfused_joint is None:
            self._unfused_joint = build_joint_graph(self.graph, self.requires_grad)
        return self._unfused_joint

    def _derived_id(self, what: str) -> graph_id.GraphId | None:
        """The id a graph made from this one compiles under (its backward): the next of the function's."""
        if self.graph_id is None:
            return None
        return self.graph_id.derived(f"{what} of graph {self.graph_id.index}")


def vjp_graph(joint: Any) -> ir.Graph:
    """The joint graph with only its gradients as outputs: (primals, tangents) -> gradients."""
    graph = ir.Graph()
    copy = {p: graph.placeholder(p.name, p.meta) for p in joint.graph.placeholders}
    copy_calls(joint.graph, graph, copy)
    graph.output([copy[o] for o in joint.graph.outputs[joint.num_forward_outputs:]])
    return dead_code_elimination(graph)


def _tangent(g: Any, out: Any) -> Any:
    """The tangent of forward output ``out`` as the compiled backward takes it: ``g`` (zeros
    where None) in the output's module (NumPy's, or CuPy's on the GPU) and dtype, and
    C-contiguous.  The backward is compiled for the layout of the tangents of its first
    call, as any compiled graph is for its example inputs, and nothing guards it later;
    a gradient reaches an output in whatever layout the tape's rules made it (that of
    ``out.T`` is a transposed view), so every tangent is made one layout, torch's too."""
    out = as_array(out)
    xp = array_module(out)
    if g is None:
        return xp.zeros(out.shape, out.dtype)
    return xp.asarray(as_array(g, out.dtype, like=out), order="C")


def _tangent_on_tape(g: Any) -> Any:
    """:func:`_tangent` of a tensor, on the tape (a C-ordered copy where it is needed)."""
    if not isinstance(g, Tensor):
        return array_module(g).asarray(g, order="C")
    return g if g.data.flags.c_contiguous else apply("copy", (g,), {"order": "C"})


def _data(x: Any) -> Any:
    return x.data if isinstance(x, Tensor) else x
