"""Batch-norm folding and freezing: the folded graph equals eager NumPy, and the
batch-norm ops are gone from the per-call path."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import minicompile as mc
from minicompile.ir.fold_batchnorm import fixed_nodes, fold_batchnorm
from minicompile.ir.freezing import freeze, freezing_backend, is_frozen

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
EPS = 1e-5


# The linear ops, each (x, w) -> h with the output channel last.
def dense(x, w):
    return x @ w


def conv3x3(x, w):
    windows = sliding_window_view(np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))), (3, 3), axis=(1, 2))
    return np.einsum("nhwcij,cijo->nhwo", windows, w)


def depthwise3x3(x, w):
    windows = sliding_window_view(np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))), (3, 3), axis=(1, 2))
    return (windows * w).sum(axis=(-2, -1))


# Batch norm as NumPy code writes it, in several op orders.
def bn_textbook(h, g, b, m, v):
    return (h - m) / np.sqrt(v + EPS) * g + b


def bn_gamma_first(h, g, b, m, v):
    return b + g * (h - m) / np.sqrt(v + EPS)


def bn_scale_shift(h, g, b, m, v):
    scale = g / np.sqrt(v + EPS)
    return h * scale + (b - m * scale)


def bn_negated(h, g, b, m, v):
    return b - (m - h) * (g / np.sqrt(v + EPS))


LINEAR = {"dense": dense, "conv3x3": conv3x3, "depthwise3x3": depthwise3x3}
BATCH_NORM = {f.__name__: f for f in (bn_textbook, bn_gamma_first, bn_scale_shift, bn_negated)}


def weight_shape(kind, c_in, c_out):
    return {"dense": (c_in, c_out), "conv3x3": (c_in, 3, 3, c_out), "depthwise3x3": (c_in, 3, 3)}[kind]


def make_model(kind, bn, bias):
    linear, norm = LINEAR[kind], BATCH_NORM[bn]

    def model(x, w, conv_b, g, b, m, v):
        h = linear(x, w)
        if bias:
            h = h + conv_b
        return np.maximum(norm(h, g, b, m, v), 0.0)

    return model


def make_arrays(rng, kind, c_in, c_out, size, dtype):
    c_out = c_in if kind == "depthwise3x3" else c_out
    x_shape = (2, size, c_in) if kind == "dense" else (1, size, size, c_in)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(weight_shape(kind, c_in, c_out)) / np.sqrt(c_in)
    conv_b, g, b, m = (rng.standard_normal(c_out) for _ in range(4))
    v = rng.uniform(0.1, 2.0, c_out)
    return [a.astype(dtype) for a in (x, w, conv_b, g, b, m, v)]


PARAMS = {"w", "conv_b", "g", "b", "m", "v"}
NAMES = ["x", "w", "conv_b", "g", "b", "m", "v"]


def inputs_of(graph, arrays, names=NAMES):
    """The arrays in the order of the graph's placeholders (the order the function first read
    them; an argument it never reads is no input)."""
    named = dict(zip(names, arrays))
    return [named[p.name] for p in graph.placeholders]


def run(graph, arrays, names=NAMES):
    return graph(*inputs_of(graph, arrays, names))


@SETTINGS
@given(kind=st.sampled_from(sorted(LINEAR)), bn=st.sampled_from(sorted(BATCH_NORM)), bias=st.booleans(),
       c_in=st.integers(1, 6), c_out=st.integers(1, 6), size=st.integers(1, 5),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_folded_graph_equals_eager(kind, bn, bias, c_in, c_out, size, dtype, seed):
    model = make_model(kind, bn, bias)
    arrays = make_arrays(np.random.default_rng(seed), kind, c_in, c_out, size, dtype)
    graph = mc.explain(model)(*arrays).graphs[0]
    folded = fold_batchnorm(graph, PARAMS)
    expected = model(*arrays)
    (got,) = run(folded, arrays)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max()))
    # What runs per call on the activations: the linear op, one bias add, the ReLU.
    fixed = fixed_nodes(folded, PARAMS)
    per_call = [n.op.name for n in folded.calls if n.name not in fixed]
    assert "sqrt" not in per_call and "divide" not in per_call and "subtract" not in per_call
    assert per_call.count("add") == 1 and per_call[-2:] == ["add", "maximum"]


def test_fold_prints_before_and_after():
    arrays = make_arrays(np.random.default_rng(0), "dense", 4, 3, 2, np.float32)
    graph = mc.explain(make_model("dense", "bn_textbook", False))(*arrays).graphs[0]
    folded = fold_batchnorm(graph, PARAMS)
    before, after = graph.python_code(), folded.python_code()
    assert "np.sqrt(" in before and "np.matmul(x, w)" in before
    # The weight is scaled (W * s) before the matmul; the statistics only feed weight-side ops.
    assert "np.matmul(x, w)" not in after and "np.matmul(x, multiply" in after


def test_no_fold_when_the_weight_is_not_fixed():
    arrays = make_arrays(np.random.default_rng(1), "dense", 4, 3, 2, np.float32)
    graph = mc.explain(make_model("dense", "bn_textbook", True))(*arrays).graphs[0]
    assert fold_batchnorm(graph, PARAMS - {"w"}).python_code() == graph.python_code()
    assert fold_batchnorm(graph, set()).python_code() == graph.python_code()


def test_chain_stops_where_an_intermediate_is_also_used():
    def model(x, w, g, b, m, v):
        h = x @ w
        n = (h - m) / np.sqrt(v + EPS)
        return n * g + b, n  # n is returned: it stays computed
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    g, b, m = (rng.standard_normal(5).astype(np.float32) for _ in range(3))
    v = rng.uniform(0.5, 1, 5).astype(np.float32)
    graph = mc.explain(model)(x, w, g, b, m, v).graphs[0]
    folded = fold_batchnorm(graph, {"w", "g", "b", "m", "v"})
    for got, want in zip(run(folded, [x, w, g, b, m, v], "x w g b m v".split()), model(x, w, g, b, m, v)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_per_sample_scale_is_not_folded():
    # s varies along the rows, not the output channels: it cannot go into W.
    def model(x, w, s):
        return (x @ w) * s
    x, w, s = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32), np.arange(3, dtype=np.float32)[:, None]
    graph = mc.explain(model)(x, w, s).graphs[0]
    assert fold_batchnorm(graph, {"w", "s"}).python_code() == graph.python_code()


# -- freezing -------------------------------------------------------------------------


def frozen(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


def test_freeze_splits_off_the_weight_side_work():
    x, *params = make_arrays(np.random.default_rng(3), "conv3x3", 3, 4, 4, np.float32)
    frozen(*params)
    model = make_model("conv3x3", "bn_textbook", True)
    graph = mc.explain(model)(x, *params).graphs[0]
    inputs = inputs_of(graph, [x, *params])
    result = freeze(graph, inputs)
    assert sorted(graph.placeholders[i].name for i in result.frozen) == sorted(PARAMS)
    runtime_ops = [n.op.name for n in result.runtime.calls]
    assert runtime_ops.count("einsum") == 1 and "sqrt" not in runtime_ops and "divide" not in runtime_ops
    assert "sqrt" in [n.op.name for n in result.prologue.calls]
    (got,) = result.runtime(*inputs, *result.constants(inputs))
    np.testing.assert_allclose(got, model(x, *params), rtol=1e-4, atol=1e-4)
    assert "computed once" in str(result)


@SETTINGS
@given(kind=st.sampled_from(sorted(LINEAR)), bn=st.sampled_from(sorted(BATCH_NORM)), bias=st.booleans(),
       c_in=st.integers(1, 5), c_out=st.integers(1, 5), size=st.integers(1, 4),
       frozen_mask=st.lists(st.booleans(), min_size=6, max_size=6), seed=st.integers(0, 2**16))
def test_frozen_model_equals_eager(kind, bn, bias, c_in, c_out, size, frozen_mask, seed):
    # any subset of the weights frozen: what is folded must not change the answer
    model = make_model(kind, bn, bias)
    x, *params = make_arrays(np.random.default_rng(seed), kind, c_in, c_out, size, np.float64)
    frozen(*[p for p, keep in zip(params, frozen_mask) if keep])
    got = mc.compile(model, backend="eager", options={"freezing": True})(x, *params)
    expected = model(x, *params)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(expected).max()))


def test_writable_inputs_are_not_frozen():
    arrays = make_arrays(np.random.default_rng(4), "dense", 4, 3, 2, np.float32)
    assert not any(is_frozen(a) for a in arrays)
    view = frozen(arrays[1].copy())[0][:2]
    assert not is_frozen(view)  # a view: its base could still change


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_freezing_option_equals_eager_and_refolds_new_weights(backend):
    model = make_model("dense", "bn_gamma_first", True)
    x, *params = make_arrays(np.random.default_rng(5), "dense", 8, 6, 4, np.float32)
    frozen(*params)
    compiled = mc.compile(model, backend=backend, options={"freezing": True})
    np.testing.assert_allclose(compiled(x, *params), model(x, *params), rtol=1e-5, atol=1e-5)
    # New weight arrays: the folded values are recomputed, not reused.
    _, *others = make_arrays(np.random.default_rng(6), "dense", 8, 6, 4, np.float32)
    frozen(*others)
    np.testing.assert_allclose(compiled(x, *others), model(x, *others), rtol=1e-5, atol=1e-5)
    # A weight made writable again and changed in place: still the right answer.
    w = others[0]
    w.setflags(write=True)
    w *= 2
    np.testing.assert_allclose(compiled(x, *others), model(x, *others), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(compiled(x, *params), model(x, *params), rtol=1e-5, atol=1e-5)


def test_frozen_output_is_a_fresh_array_each_call():
    def fn(x, w):
        return w * 2.0, x + (w * 3.0).sum()
    x, w = np.ones(3, np.float32), frozen(np.arange(3, dtype=np.float32))[0]
    compiled = mc.compile(fn, backend="cpp", options={"freezing": True})
    first = compiled(x, w)
    first[0][:] = -1
    second = compiled(x, w)
    np.testing.assert_array_equal(second[0], w * 2.0)
    np.testing.assert_array_equal(second[1], fn(x, w)[1])


def test_an_output_view_of_a_folded_value_is_not_shared_between_calls():
    def fn(x, w):
        return (w * 2.0).T, (w * 3.0)[1:], x + 1.0
    x, w = np.ones(3, np.float32), frozen(np.arange(6, dtype=np.float32).reshape(2, 3).copy())[0]
    assert is_frozen(w)
    for backend in ("eager", "cpp"):
        compiled = mc.compile(fn, backend=backend, options={"freezing": True})
        first = compiled(x, w)
        first[0][:] = -1
        first[1][:] = -1
        for got, want in zip(compiled(x, w), fn(x, w)):
            np.testing.assert_array_equal(got, want)


def test_unknown_option_is_refused():
    with pytest.raises(ValueError, match="unknown options"):
        mc.compile(dense, options={"freezing": True, "max_autotune": True})


def test_kernel_count_of_unfolded_batch_norm_equals_folded():
    rng = np.random.default_rng(7)
    x, w, conv_b, g, b, m, v = make_arrays(rng, "depthwise3x3", 8, 8, 6, np.float32)
    s = g / np.sqrt(v + EPS)
    folded_w, folded_b = frozen(w * s[:, None, None], b + (conv_b - m) * s)
    frozen(w, conv_b, g, b, m, v)
    from minicompile.inductor.codegen.cpp.compile import compile_graph
    kernels = []

    def counting(graph, example_inputs):
        out = compile_graph(graph, example_inputs)
        kernels.append(len(out.kernels))
        return out

    def folded_model(x, w, b):
        return np.maximum(depthwise3x3(x, w) + b, 0.0)

    unfolded_model = make_model("depthwise3x3", "bn_textbook", True)
    want = folded_model(x, folded_w, folded_b)
    np.testing.assert_allclose(mc.compile(folded_model, backend=counting)(x, folded_w, folded_b), want, rtol=1e-5)
    got = mc.compile(unfolded_model, backend=freezing_backend(counting))(x, w, conv_b, g, b, m, v)
    np.testing.assert_allclose(got, unfolded_model(x, w, conv_b, g, b, m, v), rtol=1e-4, atol=1e-5)
    mc.compile(unfolded_model, backend=counting)(x, w, conv_b, g, b, m, v)
    assert kernels[0] == kernels[1] < kernels[2]


def test_folded_values_are_computed_once_while_the_weights_stay_frozen(monkeypatch):
    from minicompile.ir import freezing
    calls = []
    original = freezing.FrozenGraph.constants
    monkeypatch.setattr(freezing.FrozenGraph, "constants", lambda self, inputs: calls.append(1) or original(self, inputs))
    model = make_model("dense", "bn_textbook", False)
    x, *params = make_arrays(np.random.default_rng(8), "dense", 4, 3, 2, np.float32)
    frozen(*params)
    compiled = mc.compile(model, backend="eager", options={"freezing": True})
    for _ in range(3):
        np.testing.assert_allclose(compiled(x, *params), model(x, *params), rtol=1e-5, atol=1e-5)
    assert len(calls) == 1


def test_profiler_sees_the_kernels_of_a_frozen_function():
    model = make_model("conv3x3", "bn_textbook", True)
    x, *params = make_arrays(np.random.default_rng(9), "conv3x3", 3, 4, 6, np.float32)
    frozen(*params)
    compiled = mc.compile(model, backend="cpp", options={"freezing": True})
    compiled(x, *params)
    with mc.profile() as prof:
        compiled(x, *params)
    inner = compiled.cache[0].compiled.compiled
    kernels = inner.kernels + inner.extern_kernels  # loop kernels and matmuls generated as C++
    assert inner.kernels and sum(r.count for r in prof.key_averages() if r.cat == "kernel") == len(kernels)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_freezing_with_dynamic_shapes_equals_eager(backend):
    model = make_model("dense", "bn_textbook", True)
    _, *params = make_arrays(np.random.default_rng(10), "dense", 5, 4, 3, np.float32)
    frozen(*params)
    compiled = mc.compile(model, backend=backend, options={"freezing": True}, dynamic=True)
    for rows in (2, 3, 7):
        x = np.random.default_rng(rows).standard_normal((2, rows, 5)).astype(np.float32)
        np.testing.assert_allclose(compiled(x, *params), model(x, *params), rtol=1e-5, atol=1e-5)
