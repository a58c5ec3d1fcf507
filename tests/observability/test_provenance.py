"""Graph nodes remember the source lines that made them, through passes and into kernels."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.aot.joint import build_joint_graph
from minicompile.inductor import decompositions
from minicompile.ir import passes

pytestmark = pytest.mark.capture  # line numbers come from each Python version's bytecode

UNARY = ["exp", "tanh", "sin", "negative", "abs", "sqrt"]


def _program(ops: list[str], reduce_last: str):
    """A function with one NumPy call per line; returns it and each call's line."""
    body = ["def program(x):", "    v0 = np.abs(x)"]
    for i, op in enumerate(ops, 1):
        body.append(f"    v{i} = np.{op}(v{i - 1})")
    body.append(f"    return np.{reduce_last}(v{len(ops)}, axis=0)")
    namespace = {"np": np}
    exec(compile("\n".join(body), "<provenance test>", "exec"), namespace)
    return namespace["program"], {f"v{i}": 2 + i for i in range(len(ops) + 1)}, len(body)


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.sampled_from(UNARY), min_size=1, max_size=6),
       reduce_last=st.sampled_from(["sum", "mean", "var"]))
def test_each_node_carries_its_line_through_decomposition(ops, reduce_last):
    program, _, last_line = _program(ops, reduce_last)
    x = np.linspace(0.1, 1.0, 12).reshape(3, 4)
    with np.errstate(all="ignore"):
        graph = mc.explain(program)(x).graphs[0]
    lines = [n.user_stack[-1].lineno for n in graph.calls]
    assert lines == list(range(2, 2 + len(ops) + 1)) + [last_line]
    assert all(n.user_stack[-1].filename == "<provenance test>" for n in graph.calls)
    decomposed = passes.optimize(decompositions.decompose(graph))
    for n in decomposed.calls:
        assert n.user_stack, f"{n.name} lost its source line"
        assert 2 <= n.user_stack[-1].lineno <= last_line
    # mean/var become several primitives, all from the last line
    if reduce_last != "sum":
        assert sum(n.user_stack[-1].lineno == last_line for n in decomposed.calls) > 1


def helper(y):
    return np.exp(y)


def caller(x):
    a = x * 2
    return helper(a).sum()


def test_an_inlined_call_records_both_frames():
    graph = mc.explain(caller)(np.ones(3)).graphs[0]
    exp = next(n for n in graph.calls if n.op.name == "exp")
    assert [(f.function, f.lineno) for f in exp.user_stack] == [
        ("caller", caller.__code__.co_firstlineno + 2), ("helper", helper.__code__.co_firstlineno + 1)]


def test_the_backward_of_a_line_comes_from_that_line():
    def loss(x, w):
        h = np.tanh(x @ w)
        return (h * h).sum()

    graph = mc.explain(loss)(np.ones((2, 3)), np.ones((3, 2))).graphs[0]
    joint = build_joint_graph(graph, [False, True]).graph
    assert all(n.user_stack for n in joint.calls)
    lines = {n.user_stack[-1].lineno for n in joint.calls}
    first = loss.__code__.co_firstlineno
    assert lines == {first + 1, first + 2}


def test_compiled_kernels_know_the_nodes_they_compute():
    f = mc.compile(lambda x, w: np.tanh(x @ w + 1).sum(axis=1), backend="cpp")
    f(np.ones((4, 3)), np.ones((3, 2)))
    compiled = f.cache[0].compiled
    assert list(compiled.kernel_origins) == compiled.kernels
    names = {n.name for n in compiled.graph.nodes}
    for origins in compiled.kernel_origins.values():
        assert origins and set(origins) <= names


def test_a_dynamic_graph_specialized_to_one_shape_keeps_its_lines():
    graphs = []

    def keep(graph, example_inputs):
        graphs.append(graph)
        return graph

    def f(x):
        y = np.exp(x)
        return y.sum(axis=0)

    compiled = mc.compile(f, backend=keep, dynamic=True)
    compiled(np.ones((3, 4)))
    graph = graphs[-1]
    assert graph.is_dynamic
    concrete = passes.specialize(graph, graph.bind_symbols([np.ones((3, 4))]))
    first = f.__code__.co_firstlineno
    assert [n.user_stack[-1].lineno for n in concrete.calls] == [first + 1, first + 2]
