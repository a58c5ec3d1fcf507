"""Dynamic shapes in the C++ backend: kernels take the sizes as arguments.

A graph whose inputs have symbolic sizes (``f32[s0, 16]``) compiles to kernels
with ``const int64_t s0`` parameters; the wrapper reads ``s0`` off the input
shapes and allocates outputs with the computed shapes.  Where the loops cannot
express a size symbolically (a symbolic stride, a strided slice), the compiled
callable specializes per shape instead — never a wrong answer.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.inductor.compiled import CompiledGraph
from minicompile.per_shape import PerShapeCompiled
from inductor_testing import assert_close  # noqa: E402

RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)



def pointwise(x, w):
    return np.tanh(x) * w + 1.0


def reduction(x, w):
    y = x * w
    return y.sum(axis=1), y.max(axis=0), y.mean(axis=0), (y - y.mean(axis=1, keepdims=True)).sum()


def softmax(x, w):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) * w


def reshape(x, w):
    n = x.shape[0]
    flat = np.exp(x).reshape(-1) * 2
    return flat, (x * w).reshape(n, 2, -1).sum(axis=-1), flat.reshape(n, -1)


def mlp(x, w):
    h = np.maximum(x @ np.outer(w, w) + w, 0.0)
    return h @ np.outer(w, w).T, x.T @ h


PROGRAMS = [pointwise, reduction, softmax, reshape, mlp]
SIZES = [3, 5, 8, 2, 17, 4, 9, 33, 6, 12, 7, 64, 10, 11, 13, 100, 15, 16, 20, 1500]


def run_sizes(fn, sizes, width=8, dynamic=None, dtype=np.float32):
    compiled = mc.compile(fn, backend="cpp", dynamic=dynamic)
    w = rand(width, dtype=dtype)
    for n in sizes:
        x = rand(n, width, dtype=dtype)
        assert_close(compiled(x, w), fn(x, w))
    return compiled


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_twenty_batch_sizes_two_compiles_one_kernel_set(fn):
    compiled = run_sizes(fn, SIZES)
    assert len(compiled.cache) == 2
    dynamic = compiled.cache[1].compiled
    # One C++ compile serves every later size: sizes are kernel arguments.
    assert isinstance(dynamic, CompiledGraph), str(dynamic)
    assert dynamic.kernels and "const int64_t s0" in dynamic.kernel_source
    assert "s0 = x.shape[0]" in dynamic.wrapper_source


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(2, 300), min_size=2, max_size=8),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_random_size_sequences_equal_eager(fn, sizes, dtype):
    compiled = run_sizes(fn, sizes, dtype=dtype)
    assert len(compiled.cache) <= 2


def test_mean_over_a_symbolic_axis_divides_by_the_runtime_count():
    def f(x):
        return x.mean(axis=0), x.mean()

    compiled = mc.compile(f, backend="cpp", dynamic=True)
    for n in (3, 7, 1000):
        x = rand(n, 1)[:, 0].copy()
        assert_close(compiled(x), f(x))
    assert "(double)(s0)" in compiled.cache[0].compiled.kernel_source


def test_column_reduction_over_a_symbolic_number_of_rows():
    # sum over axis 0 streams a symbolic number of rows through a block of accumulators.
    def f(x):
        return x.sum(axis=0), np.exp(x).max(axis=0) + 1

    compiled = mc.compile(f, backend="cpp")
    for n in (300, 5, 777, 256, 2):
        x = rand(n, 40)
        assert_close(compiled(x), f(x))
    assert len(compiled.cache) == 2 and isinstance(compiled.cache[1].compiled, CompiledGraph)
    assert "r0 < s0" in compiled.cache[1].compiled.kernel_source


def test_parallel_loop_decides_at_run_time():
    compiled = run_sizes(pointwise, [4, 5], width=64)
    source = compiled.cache[1].compiled.kernel_source
    assert "if(64*s0 >= 32768)" in source
    x, w = rand(20000, 64), rand(64)
    assert_close(compiled(x, w), pointwise(x, w))


def test_symbolic_strides_are_kernel_arguments_too():
    # dynamic=True makes the inner axis symbolic too: the row stride is s1.
    compiled = run_sizes(reduction, [4, 5, 4], dynamic=True)
    assert len(compiled.cache) == 1
    entry = compiled.cache[0].compiled
    assert isinstance(entry, CompiledGraph) and "*(s1)" in entry.kernel_source


def sequence_model(x, w):
    # (batch, time, channels) with batch and time varying: merging them for a
    # dense layer divides the flat index by the symbolic time length.
    b, t, c = x.shape
    h = np.tanh(x.reshape(-1, c) @ np.outer(w, w)).reshape(b, t, c)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), h.mean(axis=(0, 1))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.tuples(st.integers(2, 9), st.integers(2, 40)), min_size=2, max_size=6))
def test_batch_and_sequence_length_both_symbolic(shapes):
    compiled = mc.compile(sequence_model, backend="cpp")
    w = rand(8)
    for b, t in shapes:
        x = rand(b, t, 8)
        assert_close(compiled(x, w), sequence_model(x, w))
    # Static, then one axis, then both (if both changed); and once more where
    # both became symbolic on a shape with batch == time: equal sizes share
    # one symbol (duck sizing, as in torch.compile) until a shape tells them apart.
    duck = any(b == t for b, t in shapes[1:])
    assert len(compiled.cache) <= 3 + duck
    assert all(isinstance(e.compiled, CompiledGraph) for e in compiled.cache)


def test_equal_sizes_share_a_symbol_until_they_differ():
    compiled = mc.compile(sequence_model, backend="cpp")
    w = rand(8)
    for b, t in [(2, 2), (3, 2), (3, 3), (2, 3), (5, 7)]:
        x = rand(b, t, 8)
        assert_close(compiled(x, w), sequence_model(x, w))
    guards = [str(e.capture.guards) for e in compiled.cache]
    assert len(guards) == 4 and "L['x'].shape[1] == s0" in guards[2] and "s1 = L['x'].shape[1]" in guards[3]


def test_strided_slice_falls_back_to_per_shape():
    def f(x):
        return x[::2] * 2

    compiled = mc.compile(f, backend="cpp", dynamic=True)
    for n in (4, 6, 8, 6):
        x = rand(n, 3)
        assert_close(compiled(x), f(x))
    entry = compiled.cache[0].compiled
    assert isinstance(entry, PerShapeCompiled) and len(entry.compiled) == 3


def depthwise(x, w, stride):
    """A padded 3x3 depthwise convolution the NumPy way (pad, windows, strided slice)."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return np.minimum(np.maximum((windows * w).sum(axis=(-2, -1)) + 0.5, 0.0), 6.0)


@pytest.mark.parametrize("stride", [1, 2])
def test_padded_convolution_over_a_symbolic_batch_is_one_kernel_set(stride):
    w = rand(4, 3, 3)
    compiled = mc.compile(lambda x: depthwise(x, w, stride), backend="cpp")
    for n in (1, 2, 3, 5, 7):
        x = rand(n, 9, 8, 4)
        assert_close(compiled(x), depthwise(x, w, stride))
    assert len(compiled.cache) == 2
    dynamic = compiled.cache[1].compiled
    assert isinstance(dynamic, CompiledGraph), str(dynamic)
    assert "const int64_t s0" in dynamic.kernel_source


def test_small_matmuls_over_a_symbolic_row_count_are_generated_kernels():
    # A 1x1 convolution over (batch, H, W, C), and a stack of products: rows and batch vary.
    w = rand(12, 24)

    def f(x, y):
        return np.maximum(x.reshape(-1, 12) @ w, 0.0), (y + 1.0) @ np.exp(y).transpose(0, 1, 3, 2)

    compiled = mc.compile(f, backend="cpp")
    for n in (1, 2, 3, 7, 13):
        x, y = rand(n, 5, 3, 12), rand(n, 4, 6, 7)
        assert_close(compiled(x, y), f(x, y))
    assert len(compiled.cache) == 2
    dynamic = compiled.cache[1].compiled
    assert isinstance(dynamic, CompiledGraph), str(dynamic)
    # The first product runs inside its epilogue's kernel, the second on its own.
    assert "generated, not BLAS" in dynamic.wrapper_source and "BLAS through NumPy" not in dynamic.wrapper_source
    assert "mc_gemm_f32(A, 0, B, 0, C, 1, (15*s0), 24, 12, " in dynamic.kernel_source
    assert "const int64_t s0)" in dynamic.kernel_source


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.integers(0, 2), after=st.integers(0, 2), window=st.integers(1, 3), stride=st.integers(1, 2),
       batches=st.lists(st.integers(2, 9), min_size=3, max_size=5))  # a batch of 1 stays specialized
def test_random_windows_over_a_symbolic_batch_equal_numpy(before, after, window, stride, batches):
    w = rand(3, window)

    def f(x):
        padded = np.pad(x, ((0, 0), (before, after), (0, 0)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, window, axis=1)[:, ::stride]
        return (windows * w).sum(axis=-1) * 2.0

    compiled = mc.compile(f, backend="cpp")
    for n in batches:
        x = rand(n, 6, 3)
        assert_close(compiled(x), f(x))
    assert len(compiled.cache) <= 2


def test_padded_convolution_over_symbolic_rows_specializes_per_shape():
    # A padded axis of symbolic size reads at x1 - 1 times a symbolic stride: one compile per shape.
    w = rand(4, 3, 3)
    compiled = mc.compile(lambda x: depthwise(x, w, 1), backend="cpp", dynamic=True)
    for h in (5, 7, 5, 9):
        x = rand(2, h, 6, 4)
        assert_close(compiled(x), depthwise(x, w, 1))
    assert len(compiled.cache) == 1


def test_output_views_and_reuse_with_symbolic_sizes():
    def f(x):
        a = np.exp(x)
        b = a * 2
        c = np.sqrt(np.abs(b)) + 1
        return c.T, c.reshape(-1)

    compiled = run_sizes(lambda x, w: f(x), [3, 4, 9, 50])
    assert len(compiled.cache) == 2


def test_dynamic_false_keeps_static_kernels():
    compiled = run_sizes(pointwise, [4, 5], dynamic=False)
    assert all("int64_t s0" not in e.compiled.kernel_source for e in compiled.cache)


def test_eager_and_aot_eager_backends_run_symbolic_graphs():
    for backend in ("eager", "aot_eager"):
        compiled = mc.compile(reduction, backend=backend, dynamic=True)
        for n in (3, 9):
            x, w = rand(n, 8), rand(8)
            assert_close(compiled(x, w), reduction(x, w))
        assert len(compiled.cache) == 1


@pytest.mark.parametrize("backend", ["triton", "spyre"])
def test_triton_compiles_once_spyre_specializes_per_shape(backend):
    if backend == "triton":
        pytest.importorskip("triton")

    def f(x, w):
        return np.maximum(x * w, 0.0).sum(axis=1)

    compiled = mc.compile(f, backend=backend)
    w = rand(16)
    tol = 1e-2 if backend == "spyre" else 1e-4  # the simulated card computes in half precision
    for n in (4, 6, 9, 6):
        x = rand(n, 16)
        got, want = compiled(x, w), f(x, w)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert len(compiled.cache) == 2
    entry = compiled.cache[1].compiled
    if backend == "triton":
        # Triton kernels take the sizes as int arguments: one compile serves every later size.
        assert isinstance(entry, CompiledGraph) and not isinstance(entry, PerShapeCompiled)
        assert "s0" in entry.kernel_source
        return
    # The simulated card plans for concrete sizes: one compile per shape, inside one cache entry.
    assert isinstance(entry, PerShapeCompiled) and sorted(entry.compiled) == [(6,), (9,)]


def test_creation_with_a_symbolic_shape():
    def f(x, w):
        return np.zeros((x.shape[0], 8)) + x * w, np.ones(x.shape[0] * 2).reshape(-1, 2) * 3

    compiled = run_sizes(f, [3, 5, 9, 40])
    assert len(compiled.cache) == 2 and isinstance(compiled.cache[1].compiled, CompiledGraph)
    assert "(s0, 8)" in compiled.cache[1].compiled.wrapper_source


def test_per_shape_compiles_stop_at_the_recompile_limit(monkeypatch):
    from minicompile import config

    monkeypatch.setattr(config, "recompile_limit", 2)

    def f(x):
        return x[::2] * 2

    compiled = mc.compile(f, backend="cpp", dynamic=True)
    with pytest.warns(UserWarning, match="running new shapes through NumPy"):
        for n in (4, 6, 8, 10, 12):
            x = rand(n, 3)
            assert_close(compiled(x), f(x))
    entry = compiled.cache[0].compiled
    assert isinstance(entry, PerShapeCompiled) and len(entry.compiled) == 2
