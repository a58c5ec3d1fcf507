"""Gradients through loop nodes (aot/loop_gradients.py) and the scan form of the loop op.

The backward of a loop node is a loop node too: the forward keeps the history
of the carries its backward reads (stacked outputs), the backward runs in
reverse over it (sliced inputs, ``reverse=True``).  Checked here:

* the scan form itself (sliced inputs, stacked outputs, reverse) on every
  backend against the op's reference implementation and against the loop
  written out, and that the C++ backend runs such loops in its generated C++;
* hypothesis over random loop bodies (the statement table of the loop
  tests) and trip counts 0, 1, 2 and long: the gradient of every input
  against central differences on every backend, with the loop node kept in
  the joint graph (never written out) and its backward a reversed loop;
* second derivatives through a loop; nested loops; a float clock carried
  beside the arrays; a loop whose carry starts from a constant.
"""
from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import config, ir
from minicompile.aot.joint import build_joint_graph
from minicompile.aot.partition import min_cut_partition
from minicompile.api import lookup_backend
from minicompile.ir.loops import unroll_loops
from minicompile.ir.ops.control import INDEX_META
from minicompile.testing.gradients import central_differences

try:
    import triton  # noqa: F401
    BACKENDS: tuple[str, ...] = ("eager", "aot_eager", "cpp", "triton")  # triton in its interpreter (conftest)
except ImportError:
    BACKENDS = ("eager", "aot_eager", "cpp")

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 8)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
F64 = np.dtype(np.float64)


def meta(*shape: int) -> ir.TensorMeta:
    return ir.TensorMeta(shape, F64)


def scan_graph(reverse: bool, computed_stack: bool, n: int) -> ir.Graph:
    """c <- c * w + x[k] * index over ``n`` rows of x, keeping c's history (and, with
    ``computed_stack``, each iteration's c.sum() too)."""
    body = ir.Graph()
    c, w, x, i = (body.placeholder("c", meta(3)), body.placeholder("w", meta(3)),
                  body.placeholder("x", meta(3)), body.placeholder("i", INDEX_META))
    nxt = body.call("add", body.call("multiply", c, w), body.call("multiply", x, i))
    body.output([nxt, c] + ([body.call("sum", nxt)] if computed_stack else []))
    g = ir.Graph()
    c0, w0, xs = g.placeholder("c0", meta(3)), g.placeholder("w0", meta(3)), g.placeholder("xs", meta(n, 3))
    loop = g.call("loop", body, 2, 3, n, (c0,), (w0,), (xs,), reverse)
    results = [g.call("loop_result", loop, k) for k in range(len(loop.meta))]
    g.output(results)
    return g


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("computed_stack", [False, True])
@pytest.mark.parametrize("n", [0, 1, 5])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scan_runs_alike_on_every_backend(backend, n, computed_stack, reverse):
    graph = scan_graph(reverse, computed_stack, n)
    rng = np.random.default_rng(n)
    inputs = [rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((n, 3))]
    want = graph(*inputs)
    for got in (unroll_loops(graph)(*inputs), lookup_backend(backend)[0](graph, [a.copy() for a in inputs])(*inputs)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_the_reference_scan_keeps_what_each_iteration_started_from():
    graph = scan_graph(reverse=True, computed_stack=False, n=4)
    c0, w, xs = np.ones(3), np.full(3, 2.0), np.zeros((4, 3))
    final, history = graph(c0, w, xs)
    # Reversed: iteration 3 runs first (from c0), then 2, 1, 0.
    np.testing.assert_array_equal(history[:, 0], [8.0, 4.0, 2.0, 1.0])
    np.testing.assert_array_equal(final, 16.0)


def test_the_cpp_backend_runs_a_scan_of_histories_in_its_generated_loop():
    graph = scan_graph(reverse=True, computed_stack=False, n=6)
    compiled = lookup_backend("cpp")[0](graph, [np.ones(3), np.ones(3), np.ones((6, 3))])
    body = [c for what, c in compiled.parts if "body" in what]
    assert body and "(the loop runs in C++" in body[0].schedule, body[0].schedule
    # A stacked value the body computes is copied by Python: the loop is a host loop.
    graph = scan_graph(reverse=False, computed_stack=True, n=6)
    compiled = lookup_backend("cpp")[0](graph, [np.ones(3), np.ones(3), np.ones((6, 3))])
    body = [c for what, c in compiled.parts if "body" in what]
    assert "(the loop runs in Python" in body[0].schedule


# -- gradients of random loop bodies ---------------------------------------------------

STATEMENTS = [
    "u = u * 0.9 + v * 0.1",
    "v = np.tanh(v) + 0.5 * u",
    "u = u + i * 0.01",
    "v = v - v.mean()",
    "u = u / (1.0 + np.abs(u).max())",
    "u[1:-1] = 0.5 * (u[:-2] + u[2:])",
    "v += np.roll(u, 1) * (i % 3) * w",
    "un = u.copy()\nu[1:] = un[:-1] + 0.1 * v[1:]",
    "u, v = v, u",
    "v = np.where(v > 0, v, 0.1 * v) + 0.5",
    "u = u * (1.0 - t * 0.01)\nt += 0.25",
    "k = (k * 3 + i) % 7\nu = u + k * 0.01 * w",
    "v = np.sin(v * w) + np.exp(-u * u)",
    "u = u + np.tanh((v * v).sum()) * 0.01",
]


def program(statements: list[str]) -> str:
    body = textwrap.indent("\n".join(statements), " " * 8)
    return ("def f(u, v, w, n):\n    u, v = u * 1.0, v * 1.0\n    t, k = 0.5, 0\n"
            f"    for i in range(n):\n{body}\n    return (u * C1).sum() + (v * C2).sum() + t\n")


def build(source: str):
    rng = np.random.default_rng(7)
    namespace = {"np": np, "C1": rng.standard_normal(6), "C2": rng.standard_normal(6)}
    exec(compile(source, "<loop program>", "exec"), namespace)
    return namespace["f"]


def captured_graph(fn, *args) -> ir.Graph:
    graphs = []

    def keep(graph, example_inputs):
        graphs.append(graph)
        return graph

    mc.compile(fn, backend=keep)(*args)
    assert len(graphs) == 1
    return graphs[0]


@SETTINGS
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=4))
def test_gradients_of_random_loop_bodies_match_central_differences(statements):
    source = program(statements)
    note(source)
    fn = build(source)
    rng = np.random.default_rng(3)
    u, v, w = rng.standard_normal(6), rng.standard_normal(6), rng.uniform(0.5, 1.5, 6)
    old = config.loop_unroll_limit
    config.loop_unroll_limit = 0  # short loops are nodes too
    try:
        for n in (0, 1, 2, 23):
            mc.reset()
            graph = captured_graph(fn, u, v, w, n)
            if n and any(node.op.name == "loop" for node in graph.calls):
                # The loop stays a loop in the joint graph, and its backward is a reversed loop.
                joint = build_joint_graph(graph, [True] * 3 + [False] * (len(graph.placeholders) - 3))
                loops = [node for node in joint.graph.calls if node.op.name == "loop"]
                assert any(node.args[-1] for node in loops), str(joint)
            with np.errstate(all="ignore"):
                numeric = [central_differences(lambda *a: fn(*a, n), [u, v, w], k) for k in range(3)]
            assume(all(np.isfinite(g).all() and np.abs(g).max() < 1e6 for g in numeric))
            for backend in BACKENDS:
                mc.reset()
                tensors = [mc.Tensor(a.copy(), requires_grad=True) for a in (u, v, w)]
                loss = mc.compile(fn, backend=backend)(*tensors, n)
                np.testing.assert_allclose(np.asarray(loss.data if hasattr(loss, "data") else loss), fn(u, v, w, n),
                                           rtol=1e-10, atol=1e-10)
                loss.backward()
                for t, want in zip(tensors, numeric):
                    got = t.grad if t.grad is not None else np.zeros_like(want)
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{backend}, n={n}")
    finally:
        config.loop_unroll_limit = old


def test_the_partition_saves_the_history_not_every_intermediate():
    def f(u, w):
        for t in range(200):
            u = np.tanh(u * w) + 0.5 * np.sin(u)
        return u.sum()

    graph = captured_graph(f, np.ones(8), np.ones(8))
    joint = build_joint_graph(graph, [True, True])
    part = min_cut_partition(joint)
    # One history of u (200 x 8 float64), the weights; nothing per iteration beside it.
    assert part.saved_bytes <= 200 * 8 * 8 + 3 * 8 * 8, part.summary()
    # The backward's zero accumulators are made there, not saved.
    assert not any(node.op.name in ("zeros_like", "zeros") for node in part.saved if node.kind == "call")
    assert sum(node.op.name == "loop" for node in part.forward.calls) == 1
    assert sum(node.op.name == "loop" for node in part.backward.calls) == 1


def test_a_body_linear_in_its_carry_keeps_no_history():
    def f(u, w):
        for t in range(50):
            u = u * 0.5 + w
        return u.sum()

    joint = build_joint_graph(captured_graph(f, np.ones(4), np.ones(4)), [True, True])
    forward_loop = next(node for node in joint.graph.calls if node.op.name == "loop" and not node.args[-1])
    assert len(forward_loop.meta) == 1  # its carry alone: no stacked history
    U, W = mc.Tensor(np.ones(4), requires_grad=True), mc.Tensor(np.ones(4), requires_grad=True)
    mc.compile(f, backend="cpp")(U, W).backward()
    np.testing.assert_allclose(U.grad, np.full(4, 0.5 ** 50))
    np.testing.assert_allclose(W.grad, np.full(4, sum(0.5 ** k for k in range(50))))


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_derivatives_through_a_loop(backend):
    def f(u, w):
        for t in range(30):
            u = np.tanh(u * w) + 0.5 * u
        return (u * u).sum()

    rng = np.random.default_rng(1)
    u, w = rng.random(4), rng.random(4)
    compiled = mc.compile(f, backend=backend)
    got = mc.grad(lambda u, w: mc.grad(compiled)(u, w).sum())(u, w)
    want = central_differences(lambda u, w: mc.grad(f)(u, w).sum(), [u, w], 0, eps=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_through_nested_loops(backend):
    def f(u, w, n, m):
        for i in range(n):
            for j in range(m):
                u = np.tanh(u * w + j * 0.01)
            u = u + 0.1 * i * w
        return u.sum()

    rng = np.random.default_rng(2)
    u, w = rng.standard_normal(5), rng.uniform(0.5, 1.0, 5)
    old = config.loop_unroll_limit
    config.loop_unroll_limit = 0
    try:
        U, W = mc.Tensor(u.copy(), requires_grad=True), mc.Tensor(w.copy(), requires_grad=True)
        mc.compile(f, backend=backend)(U, W, 6, 11).backward()
    finally:
        config.loop_unroll_limit = old
    for got, which in ((U.grad, 0), (W.grad, 1)):
        want = central_differences(lambda u, w: f(u, w, 6, 11), [u, w], which)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
