"""How a backend meets a graph with symbolic sizes is decided once, when it is looked up:
compiled once with the sizes as arguments, or once per shape."""
from __future__ import annotations

import numpy as np

import minicompile as mc
from minicompile.api import BACKENDS, lookup_backend
from minicompile.inductor.compiled import CompiledGraph
from minicompile.per_shape import Backend, PerShapeCompiled


def rand(*shape):
    return np.random.default_rng(3).standard_normal(shape).astype(np.float32)


def test_each_named_backend_says_how_it_takes_symbolic_sizes():
    assert all(isinstance(b, Backend) for b in BACKENDS.values())
    assert {n: b.symbolic_sizes for n, b in BACKENDS.items()} == {
        "eager": True, "aot_eager": True, "cpp": True, "triton": True, "spyre": False, "auto": None}
    assert repr(BACKENDS["spyre"]) == "<backend spyre: one compile per shape, floats in float16>"
    assert repr(BACKENDS["cpp"]) == "<backend cpp: symbolic sizes>"


def test_a_callable_is_decided_once():
    def mine(graph, example_inputs):
        return graph

    decided, name = lookup_backend(mine)
    assert name == "mine" and decided.symbolic_sizes is True and decided.compile_fn is mine
    assert lookup_backend(decided)[0] is decided  # looked up again (a report): not wrapped twice


def test_a_callable_can_ask_for_one_compile_per_shape():
    seen = []

    def plans_for_sizes(graph, example_inputs):
        seen.append([p.meta.shape for p in graph.placeholders])
        return graph

    plans_for_sizes.symbolic_sizes = False
    compiled = mc.compile(lambda x: np.tanh(x) * 2, backend=plans_for_sizes, dynamic=True)
    for n in (3, 5, 3):
        x = rand(n, 4)
        np.testing.assert_allclose(compiled(x), np.tanh(x) * 2, rtol=1e-6)
    assert seen == [[(3, 4)], [(5, 4)]]  # never the symbolic graph
    assert len(compiled.cache) == 1 and isinstance(compiled.cache[0].compiled, PerShapeCompiled)


def test_cpp_falls_back_to_per_shape_once_not_nested():
    def f(x):
        return x[::2] * 2  # a strided slice: its size divides, no symbolic kernel

    compiled = mc.compile(f, backend="cpp", dynamic=True)
    for n in (4, 6, 4):
        x = rand(n, 3)
        np.testing.assert_allclose(compiled(x), f(x))
    entry = compiled.cache[0].compiled
    assert isinstance(entry, PerShapeCompiled) and entry.backend == "cpp"
    assert all(type(c) is CompiledGraph for c in entry.compiled.values())  # plain compiles inside
