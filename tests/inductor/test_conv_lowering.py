"""Convolutions written the NumPy way (pad, sliding windows, slicing) compiled to kernels.

Each program is captured by dynamo, compiled with the C++ backend (and the
Triton backend, in its interpreter, for the padded ones) and compared with
eager NumPy; the structural tests assert that the depthwise pattern — pad,
windows, strided slice, multiply, window sum, bias, clip — is one kernel that
reads the unpadded input, on both.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import minicompile as mc
from minicompile.inductor import compile_graph as compile_cpp

TOL = {np.dtype(np.float32): dict(rtol=1e-4, atol=1e-4), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-10)}


def compile_triton(graph, example_inputs):
    pytest.importorskip("triton")
    from minicompile.inductor.codegen.triton.compile import compile_graph

    return compile_graph(graph, example_inputs)


BACKENDS = {"cpp": compile_cpp, "triton": compile_triton}


def compiled(fn, backend_name="cpp"):
    """``fn`` compiled with the C++ (or Triton) backend, and the list its CompiledGraphs land in."""
    graphs = []

    def backend(graph, example_inputs):
        out = BACKENDS[backend_name](graph, example_inputs)
        assert out.fallback_reason is None, out.fallback_reason
        graphs.append(out)
        return out

    # A fresh cache each time: past the recompile limit a function runs eagerly.
    mc.reset()
    return mc.compile(fn, backend=backend), graphs


def depthwise(x, w, b, stride):
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return np.minimum(np.maximum((windows * w).sum(axis=(-2, -1)) + b, 0.0), 6.0)


def expand_then_depthwise(x, we, be, w, b, stride):
    h = np.minimum(np.maximum(x @ we + be, 0.0), 6.0)
    return depthwise(h, w, b, stride)


def conv3x3(x, w, b, stride):
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return np.einsum("nhwcij,cijo->nhwo", windows, w) + b


def rng_arrays(seed, dtype, *shapes):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 2).astype(dtype) for s in shapes]


shapes = st.tuples(st.integers(1, 2), st.integers(1, 9), st.integers(1, 9), st.integers(1, 19))
dtypes = st.sampled_from([np.float32, np.float64])


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None)
@given(shape=shapes, stride=st.sampled_from([1, 2]), dtype=dtypes, seed=st.integers(0, 99))
def test_depthwise_matches_numpy(backend, shape, stride, dtype, seed):
    n, h, w, c = shape
    x, wt, b = rng_arrays(seed, dtype, (n, h, w, c), (c, 3, 3), (c,))
    fn, graphs = compiled(depthwise, backend)
    expected = depthwise(x, wt, b, stride)
    got = fn(x, wt, b, stride)
    assert graphs, "ran eagerly"
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, **TOL[np.dtype(dtype)])


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=8, deadline=None)
@given(shape=shapes, stride=st.sampled_from([1, 2]), dtype=dtypes, seed=st.integers(0, 99))
def test_expansion_epilogue_inlined_under_the_mask_matches_numpy(backend, shape, stride, dtype, seed):
    n, h, w, c = shape
    x, we, be, wt, b = rng_arrays(seed, dtype, (n, h, w, 3), (3, c), (c,), (c, 3, 3), (c,))
    fn, graphs = compiled(expand_then_depthwise, backend)
    expected = expand_then_depthwise(x, we, be, wt, b, stride)
    np.testing.assert_allclose(fn(x, we, be, wt, b, stride), expected, **TOL[np.dtype(dtype)])
    assert graphs, "ran eagerly"


@settings(max_examples=6, deadline=None)
@given(shape=shapes, stride=st.sampled_from([1, 2]), seed=st.integers(0, 99))
def test_full_conv_with_windows_as_extern_input_matches_numpy(shape, stride, seed):
    n, h, w, c = shape
    x, wt, b = rng_arrays(seed, np.float32, (n, h, w, c), (c, 3, 3, 4), (4,))
    fn, graphs = compiled(conv3x3)
    np.testing.assert_allclose(fn(x, wt, b, stride), conv3x3(x, wt, b, stride), rtol=1e-4, atol=1e-4)
    assert graphs, "ran eagerly"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pad_width, fill", [
    (((1, 2), (0, 3)), 0.0), (1, 2.5), ((2, 0), -1.0), (((0, 0), (1, 1)), 0.0),
])
def test_pad_alone_and_padded_views(pad_width, fill, backend):
    x = np.arange(20, dtype=np.float32).reshape(4, 5) - 7

    def f(x):
        return np.pad(x, pad_width, constant_values=fill) * 2, np.pad(x[1:, ::2], pad_width) + 1, \
            np.pad(x.T, pad_width, constant_values=fill).sum(axis=0)

    fn, graphs = compiled(f, backend)
    for got, want in zip(fn(x), f(x)):
        np.testing.assert_allclose(got, want)
    assert "extern" not in str(graphs[0].schedule), graphs[0].schedule  # every pad is inside a kernel


def test_getitem_views_and_windows():
    x = np.random.default_rng(0).standard_normal((5, 7, 3)).astype(np.float32)

    def f(x):
        return (x[1:4, ::3] * 2, x[2, 1:] + 1, x[::-2, 1] - 1,
                sliding_window_view(x, (2, 3), axis=(0, 1)).sum(axis=(-2, -1)),
                sliding_window_view(x, 2, axis=-1).max(axis=-1))

    fn, _ = compiled(f)
    for got, want in zip(fn(x), f(x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_depthwise_pattern_is_one_kernel_reading_the_unpadded_input(backend):
    x, wt, b = rng_arrays(0, np.float32, (1, 8, 8, 16), (16, 3, 3), (16,))
    fn, graphs = compiled(depthwise, backend)
    np.testing.assert_allclose(fn(x, wt, b, 2), depthwise(x, wt, b, 2), rtol=1e-4, atol=1e-4)
    (cg,) = graphs
    assert len(cg.kernels) == 1, cg.schedule
    assert "extern" not in str(cg.schedule), cg.schedule
    # No padded buffer exists: the border is a bounds check in the kernel (C++'s
    # ``if``; Triton's loads masked by it and a ``tl.where`` to the fill).
    assert ("if (" if backend == "cpp" else "tl.where(inside") in cg.kernel_source


def test_expansion_bias_and_clip_fuse_into_the_depthwise_kernel():
    x, we, be, wt, b = rng_arrays(0, np.float32, (1, 8, 8, 4), (4, 24), (24,), (24, 3, 3), (24,))
    fn, graphs = compiled(expand_then_depthwise)
    np.testing.assert_allclose(fn(x, we, be, wt, b, 1), expand_then_depthwise(x, we, be, wt, b, 1),
                               rtol=1e-4, atol=1e-4)
    (cg,) = graphs
    assert len(cg.kernels) == 1, cg.schedule  # the matmul is the only other step
    steps = [line for line in cg.schedule.splitlines() if not line.startswith(" ") and not line.endswith(":")]
    assert [s.split()[0] for s in steps] == ["matmul", cg.kernels[0]], cg.schedule


def test_full_conv_einsum_becomes_one_matmul():
    x, wt, b = rng_arrays(0, np.float32, (2, 7, 7, 3), (3, 3, 3, 8), (8,))
    fn, graphs = compiled(conv3x3)
    np.testing.assert_allclose(fn(x, wt, b, 2), conv3x3(x, wt, b, 2), rtol=1e-4, atol=1e-4)
    (cg,) = graphs
    steps = [line for line in cg.schedule.splitlines() if not line.startswith(" ") and not line.endswith(":")]
    products = [line for line in steps if not line.startswith(tuple(cg.kernels))]
    # one product, the float32 GEMM generated as C++
    assert len(products) == 1 and products[0].startswith("matmul = g0_mm_matmul("), cg.schedule


def test_stacked_matmul_is_one_2d_product():
    def conv1x1(x, w, b):
        return np.minimum(np.maximum((x * 2.0) @ w + b, 0.0), 6.0)

    x, w, b = rng_arrays(0, np.float64, (2, 5, 3, 4), (4, 6), (6,))
    fn, graphs = compiled(conv1x1)
    np.testing.assert_allclose(fn(x, w, b), conv1x1(x, w, b), rtol=1e-12)
    (cg,) = graphs
    # The matmul reads a (30, 4) NumPy view of the kernel's (2, 5, 3, 4) result.
    assert "(30, 4)" in cg.wrapper_source and len(cg.kernels) == 2, cg.wrapper_source
