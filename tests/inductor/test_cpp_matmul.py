"""Small float32 matmuls generated as C++ kernels (codegen/cpp_matmul.py) instead of BLAS calls."""
from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minicompile import ir
from minicompile.inductor.codegen import cpp_matmul
from minicompile.ir import TensorMeta

from inductor_testing import check

F32 = np.dtype(np.float32)


def rand(*shape, dtype=F32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def matmul_graph(a_shape, b_shape, dtype=F32, epilogue=True):
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta(a_shape, dtype))
    b = g.placeholder("b", TensorMeta(b_shape, dtype))
    h = g.call("matmul", a, b)
    g.output([g.call("maximum", h, 0.0) if epilogue else h])
    return g


def test_small_float32_matmul_is_a_generated_kernel():
    compiled = check(matmul_graph((70, 33), (33, 24)), [rand(70, 33), rand(33, 24, seed=1)])
    assert 'void mm_matmul(' in compiled.kernel_source
    assert "mm_matmul(a, b, buf_matmul)  # generated, not BLAS" in compiled.wrapper_source
    assert "_op_matmul" not in compiled.wrapper_source
    assert compiled.extern_kernels == ["mm_matmul"] and compiled.kernels == ["kernel_0_maximum"]


def test_matmul_reading_views_and_kernel_outputs():
    # A transposed input (not C-contiguous: copied once on entry) and a
    # prologue kernel's buffer feed the generated kernel; both orders of use.
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta((40, 17), F32))
    b = g.placeholder("b", TensorMeta((40, 9), F32))
    at = g.call("transpose", a, (1, 0))                   # (17, 40) view
    h = g.call("matmul", at, g.call("multiply", b, 2.0))  # (17, 9)
    g.output([g.call("matmul", h, g.call("transpose", h, (1, 0)))])  # (17, 17)
    compiled = check(g, [rand(40, 17), rand(40, 9, seed=1)])
    assert len(re.findall(r"void mm_matmul\w*\(const float", compiled.kernel_source)) == 2


def test_big_integer_and_broadcast_matmuls_stay_with_blas():
    big = matmul_graph((512, 1024), (1024, 1024), epilogue=False)
    compiled = check(big, [rand(512, 1024), rand(1024, 1024, seed=1)])
    assert "mm_matmul" not in compiled.kernel_source and "_op_matmul" in compiled.wrapper_source
    ints = matmul_graph((5, 6), (6, 7), dtype=np.dtype(np.int64), epilogue=False)
    compiled = check(ints, [np.arange(30).reshape(5, 6), np.arange(42).reshape(6, 7)])
    assert "_op_matmul" in compiled.wrapper_source
    broadcast = matmul_graph((3, 5, 6), (6, 7), epilogue=False)
    compiled = check(broadcast, [rand(3, 5, 6), rand(6, 7, seed=1)])
    assert "_op_matmul" in compiled.wrapper_source


def test_stacked_matmuls_of_equal_batches_are_one_kernel():
    # Attention's scores: q @ k^T over (batch, heads); k^T is a view, copied once.
    g = ir.Graph()
    q = g.placeholder("q", TensorMeta((2, 3, 20, 8), F32))
    k = g.placeholder("k", TensorMeta((2, 3, 20, 8), F32))
    g.output([g.call("matmul", q, g.call("transpose", k, (0, 1, 3, 2)))])
    compiled = check(g, [rand(2, 3, 20, 8), rand(2, 3, 20, 8, seed=1)])
    assert "6 time(s)" in compiled.kernel_source and "_op_matmul" not in compiled.wrapper_source


def test_tile_shapes_cover_the_edges():
    assert cpp_matmul.tile_shape(100, 32) == (6, 16)
    assert cpp_matmul.tile_shape(100, 24) == (8, 8)
    assert cpp_matmul.tile_shape(100, 20) == (6, 16)
    assert cpp_matmul.tile_shape(1, 1000) == (1, 16)
    assert cpp_matmul.tile_shape(3, 8) == (1, 8)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(1, 40), st.integers(1, 70), st.integers(1, 40), st.booleans(), st.integers(0, 1000))
def test_generated_matmul_matches_numpy(m, k, n, transposed_b, seed):
    # Every tile shape and edge: rows and columns not multiples of the tile,
    # a single row or column, a B read through a transposed view.
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta((m, k), F32))
    if transposed_b:
        b = g.call("transpose", g.placeholder("b", TensorMeta((n, k), F32)), (1, 0))
        b_value = rand(n, k, seed=seed + 1)
    else:
        b = g.placeholder("b", TensorMeta((k, n), F32))
        b_value = rand(k, n, seed=seed + 1)
    g.output([g.call("add", g.call("matmul", a, b), 1.0)])
    compiled = check(g, [rand(m, k, seed=seed), b_value])
    assert "mm_matmul" in compiled.kernel_source
