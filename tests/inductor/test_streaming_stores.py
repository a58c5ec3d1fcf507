"""Streaming (non-temporal) stores in the C++ backend (codegen/cpp/streaming.py).

Kernels that store at least ``cpp_streaming.MIN_BYTES`` write through an L1
chunk buffer and ``mc_stream_out``, or (a row kernel's one row store) one
vector at a time between a plain head and tail: the results must be exactly
NumPy's for every size (partial last chunks), alignment (arrays not on a
32-byte boundary), dtype and row length, and small or compute-bound kernels
keep their plain stores.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile import config
from minicompile.inductor.codegen.cpp import streaming as cpp_streaming
from minicompile.inductor.codegen.cpp.ops import includes
from minicompile.inductor.codegen.cpp.kernel import PARALLEL_MIN_WORK

BIG = cpp_streaming.MIN_BYTES // 4  # float32 elements of one output at the threshold


def kernel_source(fn) -> str:
    return fn.cache[0].compiled.kernel_source


def momentum(p, g, m):
    m2 = 0.9 * m + 0.1 * g
    return p - 0.01 * m2 / (np.sqrt(m2 * m2) + 1e-8), m2


def layer_norm(x):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)


def mixed(x):
    return x * 2.5 - 1.0, x > 0.25, (x * 100).astype(np.int16), (x * 3).astype(np.float16)


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("n", [BIG, BIG + 37])
@pytest.mark.parametrize("cached_allocator", [True, False])  # outputs 64-byte aligned, or as malloc gives them
def test_big_pointwise_kernel_streams_and_equals_numpy(n, cached_allocator, monkeypatch):
    monkeypatch.setattr(config, "cached_allocator", cached_allocator)
    args = [rand(n, seed=i) for i in range(3)]
    f = mc.compile(momentum)
    got = f(*args)
    assert "mc_stream_vector(&out_" in kernel_source(f) and "mc_stream_fence();" in kernel_source(f)
    for g, e in zip(got, momentum(*args)):
        np.testing.assert_array_equal(g, e)


def test_big_row_kernel_streams_its_rows_and_equals_numpy():
    rows, row = BIG // 257 + 1, 257  # odd row length: every row starts at a different alignment
    x = rand(rows, row)
    f = mc.compile(layer_norm)
    got = f(x)
    source = kernel_source(f)
    assert "mc_stream_head(so_divide, 257)" in source and "mc_stream_vector(&so_divide[r0_v]" in source
    assert "mc_stream_fence();" in source
    np.testing.assert_allclose(got, layer_norm(x), rtol=2e-5, atol=2e-5)


def test_softmax_streams_its_rows_since_exp_is_computed_in_an_earlier_pass():
    x = rand(BIG // 1000 + 1, 1000)
    f = mc.compile(lambda x: np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True))
    got = f(x)
    source = kernel_source(f)
    assert "mc_stream_vector(&so_" in source and "row0[r0]" in source  # the row pass reads exp from the row buffer
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_outputs_of_every_dtype_stream_exactly():
    x = rand(BIG // 2 + 5, dtype=np.float64)
    f = mc.compile(mixed)
    got = f(x)
    assert "mc_stream_out(out_" in kernel_source(f)  # element sizes differ: through chunk buffers
    for g, e in zip(got, mixed(x)):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


def test_small_and_compute_bound_kernels_keep_plain_stores():
    small = mc.compile(momentum)
    small(*[rand(1 << 16, seed=i) for i in range(3)])
    assert "mc_stream" not in kernel_source(small)
    gelu = mc.compile(lambda x: 0.5 * x * (1.0 + np.tanh(0.79788456 * (x + 0.044715 * x * x * x))))
    gelu(rand(BIG))
    assert "mc_stream" not in kernel_source(gelu)


def test_streaming_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(config, "cpp_streaming_stores", False)
    f = mc.compile(momentum)
    f(*[rand(BIG, seed=i) for i in range(3)])
    assert "mc_stream" not in kernel_source(f)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1 << 15, 1 << 17), offset=st.integers(0, 7), row=st.integers(32, 300),
       dtype=st.sampled_from([np.float32, np.float64]), cached=st.booleans())
def test_random_sizes_and_alignments_stream_exactly(n, offset, row, dtype, cached):
    """With the threshold lowered to nothing, every parallel kernel streams:
    random lengths, input offsets (unaligned reads) and row lengths, outputs
    from the cache (no head before the first vector) or from NumPy (a head)."""
    old, old_cached = cpp_streaming.MIN_BYTES, config.cached_allocator
    cpp_streaming.MIN_BYTES, config.cached_allocator = 0, cached
    try:
        base = [rand(n + offset, dtype=dtype, seed=i) for i in range(3)]
        args = [b[offset:] for b in base]
        f = mc.compile(momentum)
        got = f(*args)
        assert "mc_stream_vector(&out_" in kernel_source(f)
        for g, e in zip(got, momentum(*args)):
            np.testing.assert_array_equal(g, e)
        x = rand(max(n // row, 2), row, dtype=dtype)
        ln = mc.compile(layer_norm)
        np.testing.assert_allclose(ln(x), layer_norm(x), rtol=1e-4, atol=1e-4)
    finally:
        cpp_streaming.MIN_BYTES, config.cached_allocator = old, old_cached


@pytest.mark.parametrize("fn", [momentum, layer_norm])
def test_sizes_known_at_run_time_stream_when_big_enough(fn, monkeypatch):
    """A graph recompiled with a symbolic size holds both loops and picks the
    streaming one only when the outputs reach MIN_BYTES (both branches run here)."""
    monkeypatch.setattr(cpp_streaming, "MIN_BYTES", 1 << 16)
    shapes = [(3000,), (300,), (5000,), (17,)] if fn is momentum else [(70, 257), (7, 257), (90, 257), (3, 257)]
    f = mc.compile(fn)
    for i, shape in enumerate(shapes):
        args = [rand(*shape, seed=i * 3 + j) for j in range(3 if fn is momentum else 1)]
        got = f(*args)
        expected = fn(*args)
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
            if fn is momentum:
                np.testing.assert_array_equal(g, e)
            else:
                np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
    assert len(f.cache) == 2  # the first shape, then one symbolic kernel for the rest
    dynamic = next(e.compiled.kernel_source for e in f.cache if "s0" in e.compiled.kernel_source)
    assert ">= 65536)" in dynamic and "mc_stream_vector(&" in dynamic and "else" in dynamic


def centered(x):
    return x - x.max(axis=-1, keepdims=True)


def above_half_max(x):
    return x > x.max(axis=-1, keepdims=True) * 0.5


def centered_and_scaled(x):
    c = x - x.max(axis=-1, keepdims=True)
    return c, c * 0.5


@settings(max_examples=25, deadline=None)
@given(extra_rows=st.integers(0, 40), row=st.integers(32, 300),
       dtype=st.sampled_from([np.float32, np.float64, np.float16]), cached=st.booleans())
def test_one_row_store_streams_directly_from_any_row_start(extra_rows, row, dtype, cached):
    """Rows of every length start at every alignment (a head of 0 to 31
    bytes, then vectors, then a tail), in outputs from the cache (data 64-byte
    aligned) or from NumPy (16 bytes past a page); 1-byte bools have 32 lanes."""
    old, old_cached = cpp_streaming.MIN_BYTES, config.cached_allocator
    cpp_streaming.MIN_BYTES, config.cached_allocator = 0, cached
    try:
        x = rand(-(-PARALLEL_MIN_WORK // row) + extra_rows, row, dtype=dtype, seed=row)  # parallel: big enough to stream
        for fn in (centered, above_half_max):
            f = mc.compile(fn)
            got = f(x)
            source = kernel_source(f)
            assert "mc_stream_vector(&so_" in source and "mc_stream_out(&" not in source
            assert got.dtype == fn(x).dtype
            np.testing.assert_array_equal(got, fn(x))
    finally:
        cpp_streaming.MIN_BYTES, config.cached_allocator = old, old_cached


def test_two_row_stores_stream_through_row_buffers(monkeypatch):
    monkeypatch.setattr(cpp_streaming, "MIN_BYTES", 0)
    x = rand(200, 203)  # above PARALLEL_MIN_WORK
    f = mc.compile(centered_and_scaled)
    got = f(x)
    assert "mc_stream_out(&out_" in kernel_source(f) and "mc_stream_vector(&" not in kernel_source(f)
    for g, e in zip(got, centered_and_scaled(x)):
        np.testing.assert_array_equal(g, e)


HEAD_PROBE = includes([cpp_streaming.HEADER]) + r"""
extern "C" int64_t head_of_one(const float* a, int64_t n) { return mc_stream_head(a, n); }
extern "C" int64_t head_of_three(const float* a, const float* b, const double* c, int64_t n) {
    return mc_stream_head_all(n, a, b, c);
}
"""


def test_stream_heads_reach_the_first_32_byte_boundary_or_cover_everything():
    """Elements before the first 32-byte boundary; all of them (plain stores)
    where outputs do not share a boundary or an array is not element-aligned."""
    import ctypes
    from minicompile.inductor import codecache
    lib, _, _ = codecache.load("#include <cstdint>\n" + HEAD_PROBE)
    lib.head_of_one.restype = lib.head_of_three.restype = ctypes.c_int64
    lib.head_of_one.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.head_of_three.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
    base = np.zeros(64, np.uint8).ctypes.data
    base += -base % 32
    streaming = lib.head_of_one(base + 4, 1000) == 7
    if not streaming:  # no AVX: everything is plain
        assert lib.head_of_one(base, 1000) == 1000
        return
    assert [lib.head_of_one(base + k, 1000) for k in (0, 4, 16, 28)] == [0, 7, 4, 1]
    assert lib.head_of_one(base + 4, 3) == 3  # a row shorter than its head
    assert lib.head_of_one(base + 2, 1000) == 1000  # not aligned to a float
    assert lib.head_of_three(base + 8, base + 8 + 4096, base + 8 + 64, 1000) == 6
    assert lib.head_of_three(base + 8, base + 12, base + 8, 1000) == 1000
