"""Intermediate arrays kept from one call to the next (wrapper.kept_buffers)."""
from __future__ import annotations

import threading

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import config, ir
from minicompile.inductor import compile_graph
from minicompile.ir import TensorMeta

F32 = np.dtype(np.float32)


def chain(shape) -> ir.Graph:
    # Two intermediates (exp, and a matmul product), then outputs computed from them.
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, F32))
    e = g.call("exp", g.call("multiply", x, 0.1))
    s = g.call("sum", e, axis=-1, keepdims=True)
    p = g.call("matmul", e, g.call("transpose", e, (1, 0)))
    g.output([g.call("divide", e, s), g.call("tanh", p)])
    return g


def eager(x):
    e = np.exp(x * np.float32(0.1))
    return e / e.sum(axis=-1, keepdims=True), np.tanh(e @ e.T)


def test_intermediates_are_kept_and_outputs_are_fresh():
    compiled = compile_graph(chain((20, 30)), [np.zeros((20, 30), F32)])
    assert "_kept('sum'" in compiled.wrapper_source and "_kept('matmul'" in compiled.wrapper_source
    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal((20, 30), dtype=np.float32), rng.standard_normal((20, 30), dtype=np.float32)
    first = compiled(x1)
    saved = [o.copy() for o in first]
    second = compiled(x2)
    # The second call wrote into the kept intermediates, never into what the first returned.
    for a, b in zip(first, saved):
        np.testing.assert_array_equal(a, b)
    for got, want in zip(second, eager(x2)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not any(np.shares_memory(a, b) for a in first for b in second)


def test_buffers_numpy_calls_read_are_not_kept():
    # np.sort has no loop lowering: its input (a kernel's buffer) goes to NumPy, which may
    # hand back its argument itself; that buffer is allocated afresh on each call.
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((8, 9), F32))
    g.output([g.call("sort", g.call("exp", x), axis=-1)])
    compiled = compile_graph(g, [np.zeros((8, 9), F32)])
    assert "_kept(" not in compiled.wrapper_source


def test_keeping_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(config, "keep_intermediates", False)
    compiled = compile_graph(chain((20, 30)), [np.zeros((20, 30), F32)])
    assert "_kept(" not in compiled.wrapper_source


def test_threads_keep_their_own_arrays():
    compiled = compile_graph(chain((64, 48)), [np.zeros((64, 48), F32)])
    inputs = [np.random.default_rng(i).standard_normal((64, 48), dtype=np.float32) for i in range(4)]
    errors = []

    def worker(x):
        try:
            for _ in range(30):
                for got, want in zip(compiled(x), eager(x)):
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        except AssertionError as why:
            errors.append(why)

    threads = [threading.Thread(target=worker, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(2, 40), min_size=3, max_size=6))
def test_kept_arrays_follow_changing_sizes(rows):
    # Dynamic shapes: one compiled graph, a different row count per call.
    f = mc.compile(lambda x: (lambda e: (e / e.sum(axis=-1, keepdims=True), np.tanh(e @ e.T)))(np.exp(x * np.float32(0.1))),
                   backend="cpp", dynamic=True)
    results = []
    for i, n in enumerate(rows):
        x = np.random.default_rng(i).standard_normal((n, 16), dtype=np.float32)
        results.append((x, f(x)))
    for x, got in results:  # earlier results untouched by later calls
        for a, b in zip(got, eager(x)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
