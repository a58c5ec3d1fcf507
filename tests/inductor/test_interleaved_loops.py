"""Interleaved vectors in the C++ backend (codegen/cpp/interleave.py).

A pointwise loop that evaluates float32 exp, log or tanh runs four vectors at
a time, statement by statement, then the elements left over.  Each element
computes exactly as in the plain loop, so the results must be bit for bit
those of the kernel compiled with ``config.cpp_interleave`` off, for every
length (a remainder of 0 to 31 elements), layout and dtype, and within the
functions' bounds of NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile import config
from minicompile.inductor.codegen.cpp import interleave as cpp_interleave, streaming as cpp_streaming

STEP = cpp_interleave.COPIES * 8  # float32 elements per interleaved iteration on AVX2


def kernel_source(fn) -> str:
    return fn.cache[0].compiled.kernel_source


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def log_sigmoid_and_softplus(x, b):
    e = np.exp(-np.abs(x + b))
    return -np.log(1.0 + e), np.log(1.0 + e) + np.maximum(x + b, 0.0)


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def compiled_both_ways(fn, args, monkeypatch):
    """(results interleaved, results of the plain loop, the interleaved source)."""
    f = mc.compile(fn)
    got = f(*args)
    source = kernel_source(f)
    monkeypatch.setattr(config, "cpp_interleave", False)
    plain = mc.compile(fn)
    expected = plain(*args)
    assert "MC_SCHEDULED" not in kernel_source(plain)
    return got, expected, source


def assert_identical(got, expected):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("n", [1, STEP - 1, STEP, STEP + 1, 1000, 40_000 + 13])
def test_gelu_interleaves_and_is_bit_identical_to_the_plain_loop(n, monkeypatch):
    x = rand(n)
    got, expected, source = compiled_both_ways(gelu, (x,), monkeypatch)
    interleaved = "MC_SCHEDULED void" in source and f"x0_g += {STEP}" in source and "mc_tanh_f32(t" in source
    assert interleaved == (n >= STEP)  # shorter loops: one vector at a time
    assert_identical(got, expected)
    np.testing.assert_allclose(got, gelu(x), rtol=1e-5, atol=1e-6)


def test_rows_interleave_inside_the_outer_loop_with_a_broadcast_operand(monkeypatch):
    x, b = rand(37, 203), rand(203, seed=1)  # 203 = 6 * 32 + 11: each row has a remainder
    got, expected, source = compiled_both_ways(log_sigmoid_and_softplus, (x, b), monkeypatch)
    assert "x1_g += 32" in source and source.count("mc_log_f32(t") == cpp_interleave.COPIES + 1  # and the tail
    assert_identical(got, expected)
    for g, e in zip(got, log_sigmoid_and_softplus(x, b)):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_transposed_and_float16_inputs(monkeypatch):
    x = rand(70, 90).T  # read across: the store is contiguous, the load is not
    h = rand(70, 90, dtype=np.float16, seed=2)
    fn = lambda x, h: (np.exp(x * 0.5), np.tanh(h))  # noqa: E731
    got, expected, source = compiled_both_ways(fn, (x, h), monkeypatch)
    assert source.count("MC_SCHEDULED void") >= 1
    assert_identical(got, expected)
    np.testing.assert_allclose(got[0], np.exp(x * 0.5), rtol=1e-6)
    np.testing.assert_allclose(got[1].astype(np.float32), np.tanh(h).astype(np.float32), rtol=1e-3)


def test_loops_without_vector_math_keep_one_vector():
    f = mc.compile(lambda x: x * 2.0 + np.sqrt(np.abs(x)))
    f(rand(10_000))
    assert "MC_SCHEDULED" not in kernel_source(f)
    g = mc.compile(lambda x: np.sin(x))  # the C library's sin: one call per element
    g(rand(10_000))
    assert "MC_SCHEDULED" not in kernel_source(g)


def test_float64_loops_keep_one_vector():
    # GCC 12 leaves the interleaved float64 loop scalar: float64 keeps the plain vector loop.
    f = mc.compile(gelu)
    x = rand(5003, dtype=np.float64)
    np.testing.assert_allclose(f(x), gelu(x), rtol=1e-14, atol=1e-15)
    assert "MC_SCHEDULED" not in kernel_source(f) and "mc_tanh_f64(t" in kernel_source(f)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 5), n=st.integers(1, 3 * STEP + 7), seed=st.integers(0, 2**16))
def test_interleaved_equals_plain_for_any_shape(rows, n, seed):
    x = rand(rows, n, seed=seed) * 4
    fn = lambda x: np.tanh(x) * np.exp(-x * x) + np.log(np.abs(x) + 1.0)  # noqa: E731
    f = mc.compile(fn)
    got = f(x)
    config.cpp_interleave = False
    try:
        expected = mc.compile(fn)(x)
    finally:
        config.cpp_interleave = True
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(got, fn(x), rtol=1e-5, atol=1e-6)


def test_two_streaming_kernels_include_the_streaming_header_once(monkeypatch):
    """Two kernels that both stream once put the streaming helpers in the
    translation unit twice: the compile failed and the graph fell back to NumPy."""
    monkeypatch.setattr(cpp_streaming, "MIN_BYTES", 0)
    x, y = rand(100_000), rand(50_000, seed=1)  # two sizes: two kernels
    fn = lambda x, y: (x * 2.0 + 1.0, y * 3.0 + 1.0)  # noqa: E731
    f = mc.compile(fn)
    got = f(x, y)
    source = kernel_source(f)
    assert source.count(cpp_streaming.HEADER) == 1 and source.count("= mc_stream_head_all(") == 2
    assert_identical(got, fn(x, y))
