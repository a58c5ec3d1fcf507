"""The joint graph and the partitioners.

* the joint graph's gradients equal the eager tape's (the two share rules,
  but not the code that applies them);
* the min-cut partition is minimal: on random small graphs its saved bytes
  equal a brute-force minimum over every valid set of saved values;
* forward + backward of a partition compute what the joint graph computes;
* compiled training through ``mc.compile`` gives the eager tape's gradients,
  with graph breaks in the middle too.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile import ir
from minicompile.aot.joint import build_joint_graph
from minicompile.aot.partition import (
    RECOMPUTABLE_KINDS, _halves, default_partition, min_cut_partition, nbytes,
)

F32 = np.dtype(np.float32)
UNARY = ["exp", "tanh", "negative", "square"]
BINARY = ["add", "multiply", "subtract"]


@st.composite
def small_graphs(draw):
    """A random forward graph over 2 inputs of mixed sizes, ending in a scalar loss."""
    g = ir.Graph()
    shapes = [(draw(st.integers(1, 4)), 3), (1, 3)]
    values = [g.placeholder(f"x{i}", ir.TensorMeta(s, F32)) for i, s in enumerate(shapes)]
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce"]))
        a = draw(st.sampled_from(values))
        if kind == "unary":
            values.append(g.call(draw(st.sampled_from(UNARY)), a))
        elif kind == "binary":
            values.append(g.call(draw(st.sampled_from(BINARY)), a, draw(st.sampled_from(values))))
        else:
            values.append(g.call("sum", a, axis=1, keepdims=True))
    loss = g.call("sum", values[-1])
    g.output([loss])
    return g, shapes


def valid(joint, saved):
    """Can the backward run from ``saved`` (recomputing only pointwise ops and views)?"""
    forward, backward, needed, _ = _halves(joint)
    available = set(saved)
    for n in forward:  # topological order
        if n in available:
            continue
        if n.kind == "call" and n.op.kind in RECOMPUTABLE_KINDS and all(i in available for i in n.inputs):
            available.add(n)
    return needed <= available


@given(small_graphs())
@settings(max_examples=40, deadline=None)
def test_min_cut_is_minimal(case):
    g, _ = case
    joint = build_joint_graph(g, [True, True])
    forward, _, _, _ = _halves(joint)
    best = min(sum(nbytes(n) for n in subset)
               for r in range(len(forward) + 1)
               for subset in itertools.combinations(forward, r)
               if valid(joint, subset))
    part = min_cut_partition(joint)
    assert valid(joint, part.saved)
    assert part.saved_bytes == best
    assert part.saved_bytes <= default_partition(joint).saved_bytes


@given(small_graphs(), st.integers(0, 100))
@settings(max_examples=30, deadline=None)
def test_joint_graph_and_partitions_match_the_eager_tape(case, seed):
    g, shapes = case
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    joint = build_joint_graph(g, [True, True])
    out = joint.graph(*xs, np.float32(1.0))
    tensors = [mc.Tensor(x, requires_grad=True) for x in xs]
    loss = g.calls[-1]
    # The same forward on the eager tape.
    env = dict(zip(g.placeholders, tensors))
    from minicompile.aot.tensor import apply
    from minicompile.ir.graph import _map_nodes
    for node in g.calls:
        env[node] = apply(node.op.name, tuple(_map_nodes(node.args, env.__getitem__)), {})
    env[loss].backward()
    for grad, t in zip(out[1:], tensors):
        expected = t.grad if t.grad is not None else np.zeros_like(t.data)  # unused input
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-5)
    for part in (default_partition(joint), min_cut_partition(joint)):
        fwd = part.forward(*xs)
        grads = part.backward(*fwd[1:], np.float32(1.0))
        np.testing.assert_allclose(fwd[0], out[0], rtol=1e-6)
        for a, b in zip(grads, out[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def mlp_loss(w1, b1, w2, x, y):
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
    logits = h @ w2
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    p = e / e.sum(axis=1, keepdims=True)
    return ((p - y) * (p - y)).mean()


def mlp_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((16, 32)) * 0.3, rng.standard_normal(32) * 0.1,
            rng.standard_normal((32, 4)) * 0.3, rng.standard_normal((8, 16)),
            np.eye(4)[rng.integers(0, 4, 8)])


@pytest.mark.parametrize("backend", ["aot_eager", "cpp"])
def test_compiled_training_matches_the_eager_tape(backend):
    w1, b1, w2, x, y = mlp_inputs()
    expected = mc.grad(mlp_loss, (0, 1, 2))(w1, b1, w2, x, y)
    compiled = mc.compile(mlp_loss, backend=backend)
    params = [mc.Tensor(p, requires_grad=True) for p in (w1, b1, w2)]
    loss = compiled(*params, x, y)
    loss.backward()
    assert isinstance(loss, mc.Tensor)
    np.testing.assert_allclose(loss.data, mlp_loss(w1, b1, w2, x, y), rtol=1e-10)
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.grad, e, rtol=1e-7, atol=1e-9)
    part = compiled.cache[0].compiled.partition
    assert part.saved_bytes < default_partition(compiled.cache[0].compiled.joint).saved_bytes


def test_min_cut_saves_much_less_than_the_default_on_an_mlp_block():
    w1, b1, w2, x, y = mlp_inputs()
    compiled = mc.compile(mlp_loss, backend="aot_eager")
    compiled(*[mc.Tensor(p, requires_grad=True) for p in (w1, b1, w2)], x, y)
    joint = compiled.cache[0].compiled.joint
    assert min_cut_partition(joint).saved_bytes <= 0.6 * default_partition(joint).saved_bytes


def test_gradients_flow_through_a_graph_break():
    def loss(w, x):
        h = np.tanh(x @ w)
        scale = float(h.mean().item())  # leaves the graph: a break
        return (h * h).sum() * scale

    w, x = np.random.default_rng(1).standard_normal((3, 2)), np.random.default_rng(2).standard_normal((4, 3))
    expected = mc.grad(loss)(w, x)
    t = mc.Tensor(w, requires_grad=True)
    compiled = mc.compile(loss, backend="aot_eager")
    compiled(t, x).backward()
    np.testing.assert_allclose(t.grad, expected, rtol=1e-10)
    assert mc.explain(loss)(mc.Tensor(w, requires_grad=True), x).graph_break_count == 1


def test_requires_grad_is_guarded():
    f = mc.compile(lambda w: (w * w).sum(), backend="aot_eager")
    w = np.ones(3)
    f(mc.Tensor(w))
    f(mc.Tensor(w, requires_grad=True)).backward()
    assert len(f.cache) == 2
