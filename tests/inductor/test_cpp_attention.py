"""Softmax attention as one generated C++ kernel (codegen/cpp/attention.py, include/mc_attention.h).

Hypothesis draws the attention NumPy programs write — scores scaled by a
division or a product on either side (or not), masked by a boolean mask
broadcast over the batch (or not; causal, random, rows masked entirely), any
fill, sizes with tails against the kernel's tiles, head dimensions from 1 to 80,
one to three batch dimensions, float32 and float64, q, k and v as views
(transposed, sliced) — and runs them on the C++ backend against NumPy: the
pattern must fire (the generated ``attn_`` kernel, no NumPy call left) and the
values agree, NaN rows included.  Programs that only look like attention (the
softmax over another axis, a scale after the softmax) must not fire, and stay
right; what the kernel does not take (float16) keeps NumPy's reference and says so.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import config

from attention_programs import mask_of, program

TOLERANCE = {np.float32: 3e-5, np.float64: 1e-12}


def compiled_graph(fn):
    return fn.cache[0].compiled


def _view(rng, data, shape: tuple, dtype, how: str) -> np.ndarray:
    """An array of ``shape`` laid out as ``how``: contiguous, the transpose of a
    contiguous array, or a slice of a larger one."""
    if how == "transposed":
        base = rng.standard_normal(shape[:-2] + shape[-2:][::-1]).astype(dtype)
        return np.swapaxes(base, -1, -2)
    if how == "sliced":
        base = rng.standard_normal(shape[:-2] + (shape[-2] + 3, shape[-1] + 2)).astype(dtype)
        return base[..., 2:2 + shape[-2], 1:1 + shape[-1]]
    return rng.standard_normal(shape).astype(dtype)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_attention_is_one_cpp_kernel_and_matches_numpy(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    m, n = data.draw(st.sampled_from([1, 7, 64, 130])), data.draw(st.sampled_from([1, 5, 64, 70, 131]))
    d, dv = data.draw(st.sampled_from([1, 5, 64, 80])), data.draw(st.sampled_from([1, 5, 16, 64, 80]))
    scale = data.draw(st.sampled_from(["divide", "times", "times_left", "none"]))
    masked = data.draw(st.booleans())
    fill = data.draw(st.sampled_from([-np.inf, -1e9, 0.0, -30.0]))
    kind = data.draw(st.sampled_from(["causal", "random", "rows"]))
    mask_batch = data.draw(st.sampled_from([(), (1,) * (len(batch) - 1) + batch[-1:], batch])) if masked else ()
    k_layout = data.draw(st.sampled_from(["swapaxes", "transpose", "given"]))
    layouts = [data.draw(st.sampled_from(["contiguous", "transposed", "sliced"])) for _ in range(3)]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    q = _view(rng, data, batch + (m, d), dtype, layouts[0])
    k = _view(rng, data, batch + ((d, n) if k_layout == "given" else (n, d)), dtype, layouts[1])
    v = _view(rng, data, batch + (n, dv), dtype, layouts[2])
    mask = mask_of(rng, kind, mask_batch, m, n)
    fn = program(scale, masked, fill, k_layout)
    with np.errstate(all="ignore"):
        want = fn(q, k, v, mask)
        compiled = mc.compile(fn, backend="cpp")
        got = compiled(q, k, v, mask)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype], equal_nan=True)
    graph = compiled_graph(compiled)
    assert [k for k in graph.extern_kernels if "_attn_" in k], graph.schedule
    assert not [line for line in graph.schedule.splitlines() if line.startswith("extern")], graph.schedule
    assert "#include" in graph.kernel_source and "mc_attention_binding.h" in graph.kernel_source


def test_causal_attention_of_the_benchmark_is_one_kernel():
    """The benchmark's workload (a [S, S] mask broadcast over batch and heads): one
    generated function, no loop kernel, no GEMM, the scores never stored."""
    from minicompile.benchmarks.workloads import _attention_inputs, attention

    inputs = _attention_inputs(True)
    compiled = mc.compile(attention, backend="cpp")
    np.testing.assert_allclose(compiled(*inputs), attention(*inputs), rtol=3e-5, atol=3e-5)
    graph = compiled_graph(compiled)
    assert graph.kernels == [] and len(graph.extern_kernels) == 1 and "_attn_" in graph.extern_kernels[0]
    assert "generated C++ flash attention" in graph.schedule


def test_the_template_switch_keeps_the_unfused_kernels(monkeypatch):
    monkeypatch.setattr(config, "attention_template", False)
    fn = program("divide", True, -np.inf, "swapaxes")
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 9, 8)).astype(np.float32) for _ in range(3))
    mask = np.tril(np.ones((9, 9), bool))
    compiled = mc.compile(fn, backend="cpp")
    np.testing.assert_allclose(compiled(q, k, v, mask), fn(q, k, v, mask), rtol=3e-5, atol=3e-5)
    assert "flash attention" not in compiled_graph(compiled).schedule


def test_float16_keeps_the_numpy_reference_and_says_why():
    fn = program("times", True, -np.inf, "swapaxes")
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 9, 8)).astype(np.float16) for _ in range(3))
    mask = np.tril(np.ones((9, 9), bool))
    compiled = mc.compile(fn, backend="cpp")
    np.testing.assert_allclose(compiled(q, k, v, mask), fn(q, k, v, mask), rtol=2e-3, atol=2e-3)
    assert "np.attention(...)  the NumPy reference: float16" in compiled_graph(compiled).schedule


def other_axis(q, k, v):
    s = q @ k.T
    s = s - s.max(axis=0, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=0, keepdims=True)) @ v


def scaled_after(q, k, v):
    s = q @ k.T
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True) * 0.5) @ v


@pytest.mark.parametrize("fn", [other_axis, scaled_after])
def test_what_only_looks_like_attention_does_not_fire(fn):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((20, 8)).astype(np.float32) for _ in range(3))
    compiled = mc.compile(fn, backend="cpp")
    np.testing.assert_allclose(compiled(q, k, v), fn(q, k, v), rtol=3e-5, atol=3e-5)
    graph = compiled_graph(compiled)
    assert "flash attention" not in graph.schedule and not [k for k in graph.extern_kernels if "_attn_" in k]


def test_a_numpy_float64_scale_promoting_float32_scores_stays_right():
    """``1 / np.sqrt(d)`` is a float64 NumPy scalar: float32 scores become float64 and so does
    the result.  The attention node would not have the pattern's dtype: the ops stay as written."""
    def promoted(q, k, v):
        s = (q @ np.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(q.shape[-1]))
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        return (e / e.sum(axis=-1, keepdims=True)) @ v

    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((2, 9, 8)).astype(np.float32) for _ in range(3))
    got, want = mc.compile(promoted, backend="cpp")(q, k, v), promoted(q, k, v)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("k_layout", ["swapaxes", "given"])
def test_sizes_known_only_at_run_time_are_arguments_of_the_kernel(k_layout):
    """Dynamic shapes: batch, heads, sequence and head sizes are the function's size
    arguments, the problem filled in from them on each call; k's transpose (or kᵀ given)
    is read as it lies."""
    fn = program("divide", True, -np.inf, k_layout)
    compiled = mc.compile(fn, backend="cpp", dynamic=True)
    rng = np.random.default_rng(7)
    for b, s in ((2, 9), (3, 70)):
        q, v = (rng.standard_normal((b, 4, s, 8)).astype(np.float32) for _ in range(2))
        k = rng.standard_normal((b, 4, s, 8) if k_layout == "swapaxes" else (b, 4, 8, s)).astype(np.float32)
        mask = np.tril(np.ones((s, s), bool))
        np.testing.assert_allclose(compiled(q, k, v, mask), fn(q, k, v, mask), rtol=3e-5, atol=3e-5)
    graph = compiled.cache[-1].compiled
    assert "generated C++ flash attention" in graph.schedule, graph.schedule
    assert "p.M = (s" in graph.kernel_source and "const int64_t s0" in graph.kernel_source


@pytest.mark.parametrize("fill", [-np.inf, -1e9, -30.0, 0.0])
@pytest.mark.parametrize("kind", ["causal", "late_columns", "upper"])
def test_masked_tiles_are_skipped_only_where_exact(kind, fill):
    """Several tiles of keys and of queries with tails: a causal mask (tiles above the
    diagonal hidden), rows whose first 150 columns are masked (the maximum stays -inf for
    whole tiles), and an upper-triangular mask (the first row keeps every column, the
    last one only its own); each with fills where skipping is exact and where it is not."""
    m = n = 300
    i, j = np.indices((m, n))
    mask = {"causal": j <= i, "late_columns": j >= 150, "upper": j >= i}[kind]
    fn = program("divide", True, fill, "swapaxes")
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, m, 24)).astype(np.float32) for _ in range(3))
    with np.errstate(all="ignore"):
        want = fn(q, k, v, mask)
        got = mc.compile(fn, backend="cpp")(q, k, v, mask)
    np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-5, equal_nan=True)


def test_a_view_at_no_fixed_strides_is_copied_first_and_the_schedule_says_so():
    def attention(q, k, v):
        kt = k.transpose(0, 3, 2, 1).reshape(2, 8, 9)  # merges two axes whose strides do not chain
        s = q @ kt
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        return (e / e.sum(axis=-1, keepdims=True)) @ v

    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((2, 5, 8), (2, 9, 4, 2), (2, 9, 3)))
    compiled = mc.compile(attention, backend="cpp")
    np.testing.assert_allclose(compiled(q, k, v), attention(q, k, v), rtol=3e-5, atol=3e-5)
    graph = compiled_graph(compiled)
    assert "reshape copied to a contiguous array first" in graph.schedule
    assert "_np.ascontiguousarray(reshape)" in graph.wrapper_source
