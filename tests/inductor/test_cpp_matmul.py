"""Float32 matmuls generated as C++ (codegen/cpp/matmul.py: a packed GEMM in the C++
runtime library) instead of BLAS calls, with the pointwise kernel after them as their epilogue."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minicompile import config, ir
from minicompile.inductor.codegen.cpp import matmul as cpp_matmul
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


def test_float32_matmul_runs_its_epilogue_on_each_tile():
    compiled = check(matmul_graph((70, 33), (33, 24)), [rand(70, 33), rand(33, 24, seed=1)])
    # One entry computes the product and the maximum: the GEMM calls the
    # kernel's tile function on each finished tile of the product.
    assert "kernel_0_maximum_tile(" in compiled.kernel_source
    assert "mc_gemm_f32(A, 0, B, 0, C, 1, 70, 24, 33" in compiled.kernel_source
    assert "kernel_0_maximum(a, b, buf_matmul" in compiled.wrapper_source
    assert "_op_matmul" not in compiled.wrapper_source and "mm_matmul(" not in compiled.wrapper_source
    assert compiled.extern_kernels == [] and compiled.kernels == ["kernel_0_maximum"]
    assert compiled.kernel_origins["kernel_0_maximum"][0] == "matmul"
    assert "epilogue fusion" in compiled.schedule


def test_matmul_without_epilogue_fusion_is_a_kernel_of_its_own(monkeypatch):
    monkeypatch.setattr(config, "cpp_matmul_epilogues", False)
    compiled = check(matmul_graph((70, 33), (33, 24)), [rand(70, 33), rand(33, 24, seed=1)])
    assert "void mm_matmul(" in compiled.kernel_source
    assert "mm_matmul(a, b, buf_matmul)  # generated, not BLAS" in compiled.wrapper_source
    assert compiled.extern_kernels == ["mm_matmul"] and compiled.kernels == ["kernel_0_maximum"]


def test_epilogue_that_reads_the_product_elsewhere_is_not_fused():
    # (a @ b) + (a @ b).T reads the product transposed: not at its own element.
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta((20, 7), F32))
    b = g.placeholder("b", TensorMeta((7, 20), F32))
    h = g.call("matmul", a, b)
    g.output([g.call("add", h, g.call("transpose", h, (1, 0)))])
    compiled = check(g, [rand(20, 7), rand(7, 20, seed=1)])
    assert "_tile(" not in compiled.kernel_source and "void mm_matmul(" in compiled.kernel_source


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


def test_integer_and_broadcast_matmuls_stay_with_blas():
    ints = matmul_graph((5, 6), (6, 7), dtype=np.dtype(np.int64), epilogue=False)
    compiled = check(ints, [np.arange(30).reshape(5, 6), np.arange(42).reshape(6, 7)])
    assert "_op_matmul" in compiled.wrapper_source
    broadcast = matmul_graph((5, 6), (3, 6, 7), epilogue=False)  # one matrix times a stack
    compiled = check(broadcast, [rand(5, 6), rand(3, 6, 7, seed=1)])
    assert "_op_matmul" in compiled.wrapper_source


def test_a_stack_times_one_matrix_is_one_gemm_over_all_rows():
    # A linear layer: (batch, seq, d) @ (d, n) is one (batch * seq) x d GEMM.
    compiled = check(matmul_graph((3, 5, 6), (6, 7)), [rand(3, 5, 6), rand(6, 7, seed=1)])
    assert "mc_gemm_f32(A, 0, B, 0, C, 1, 15, 7, 6" in compiled.kernel_source
    assert "for (int64_t r = i0; r < i0 + mr; ++r)" in compiled.kernel_source


def test_large_matmul_is_generated_across_slices_of_k_and_blocks_of_columns():
    # K > 256 (several packed slices, the product accumulated in C) and
    # N > 4096 (two blocks of packed B), with the epilogue after the last slice.
    big = matmul_graph((13, 600), (600, 4100))
    compiled = check(big, [rand(13, 600), rand(600, 4100, seed=1)])
    assert "_tile(" in compiled.kernel_source and "_op_matmul" not in compiled.wrapper_source


def test_stacked_matmuls_of_equal_batches_are_one_kernel():
    # Attention's scores: q @ k^T over (batch, heads); k^T is read transposed
    # in place by the packing, not copied.
    g = ir.Graph()
    q = g.placeholder("q", TensorMeta((2, 3, 20, 8), F32))
    k = g.placeholder("k", TensorMeta((2, 3, 20, 8), F32))
    g.output([g.call("matmul", q, g.call("transpose", k, (0, 1, 3, 2)))])
    compiled = check(g, [rand(2, 3, 20, 8), rand(2, 3, 20, 8, seed=1)])
    assert "6 time(s); B read transposed in place" in compiled.kernel_source
    assert "_op_matmul" not in compiled.wrapper_source and "ascontiguousarray" not in compiled.wrapper_source


def test_transposed_operands_are_read_in_place_and_keep_the_epilogue():
    # The backward pass's shapes: grad @ w.T and x.T @ grad, each with a pointwise kernel after it.
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((30, 20), F32))
    w = g.placeholder("w", TensorMeta((20, 40), F32))
    grad = g.placeholder("grad", TensorMeta((30, 40), F32))
    dx = g.call("multiply", g.call("matmul", grad, g.call("transpose", w, (1, 0))), 2.0)
    dw = g.call("add", g.call("matmul", g.call("transpose", x, (1, 0)), grad), 1.0)
    g.output([dx, dw])
    compiled = check(g, [rand(30, 20), rand(20, 40, seed=1), rand(30, 40, seed=2)])
    assert compiled.kernel_source.count("_tile(") >= 4 and "ascontiguousarray" not in compiled.wrapper_source
    assert "mc_gemm_f32(A, 0, B, 1, C" in compiled.kernel_source and "mc_gemm_f32(A, 1, B, 0, C" in compiled.kernel_source


def test_a_transposed_stack_times_one_matrix_is_copied_first():
    # (x.transpose(0, 2, 1)) @ w: the stack's rows cannot be flattened in place.
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3, 6, 5), F32))
    w = g.placeholder("w", TensorMeta((6, 7), F32))
    g.output([g.call("matmul", g.call("transpose", x, (0, 2, 1)), w)])
    compiled = check(g, [rand(3, 6, 5), rand(6, 7, seed=1)])
    assert "mc_gemm_f32(A, 0, B, 0, C, 1, 15, 7, 6" in compiled.kernel_source


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
    assert "mc_gemm_f32(" in compiled.kernel_source


EPILOGUES = {
    "bias": lambda g, h, shape: g.call("add", h, g.placeholder("bias", TensorMeta(shape[-1:], F32))),
    "residual_gelu": lambda g, h, shape: g.call(
        "multiply", g.call("tanh", g.call("add", h, g.placeholder("r", TensorMeta(shape, F32)))), 0.5),
    "column_scale": lambda g, h, shape: g.call(
        "multiply", h, g.placeholder("s", TensorMeta(shape[:-1] + (1,), F32))),
    "two_outputs": lambda g, h, shape: (g.call("maximum", h, 0.0), g.call("subtract", 1.0, h)),
}


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from([(), (3,), (2, 2)]), st.integers(1, 30), st.sampled_from([1, 5, 16, 300]),
       st.integers(1, 40), st.sampled_from(sorted(EPILOGUES)), st.booleans(), st.booleans(),
       st.sampled_from(["", "a", "b", "ab"]), st.integers(0, 1000))
def test_fused_epilogues_match_numpy(batch, m, k, n, epilogue, product_is_output, b_is_matrix, transposed, seed):
    # Stacks (the tile's stack index split back into axes), a stack times one
    # matrix (rows flattened across the stack: a tile's rows may span two
    # matrices of the stack), edge tiles, several slices of K, epilogues
    # reading broadcast and same-shape operands, several outputs, and the
    # product itself also returned.
    # An operand given transposed: the placeholder holds its transpose, read in place.
    g = ir.Graph()

    def operand(name, shape, flip):
        if not flip:
            return g.placeholder(name, TensorMeta(shape, F32))
        swapped = shape[:-2] + shape[-1:] + shape[-2:-1]
        axes = tuple(range(len(shape) - 2)) + (len(shape) - 1, len(shape) - 2)
        return g.call("transpose", g.placeholder(name, TensorMeta(swapped, F32)), axes)

    a = operand("a", batch + (m, k), "a" in transposed)
    b = operand("b", (k, n) if b_is_matrix else batch + (k, n), "b" in transposed)
    h = g.call("matmul", a, b)
    outs = EPILOGUES[epilogue](g, h, batch + (m, n))
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    g.output(outs + ([h] if product_is_output else []))
    values = [rand(*p.meta.shape, seed=seed + i) for i, p in enumerate(g.placeholders)]
    compiled = check(g, values)
    # A product over K = 1 is simplified to a broadcast multiply; a transposed
    # stack times one matrix is copied first (its rows cannot be flattened in place).
    if k > 1 and not ("a" in transposed and b_is_matrix and batch):
        assert "_tile(" in compiled.kernel_source


def test_generated_gemm_from_the_disk_cache_in_a_fresh_process(tmp_path):
    # The second process loads the kernel library from the disk cache: the GEMM
    # of the C++ runtime must be bound on that path too.
    script = (
        "import numpy as np, minicompile as mc\n"
        "from minicompile import config\n"
        f"config.cache_dir = __import__('pathlib').Path({str(tmp_path)!r})\n"
        "f = mc.compile(lambda a, b, c: np.tanh(a @ b + c), backend='cpp')\n"
        "r = np.random.default_rng(0)\n"
        "a, b, c = (r.standard_normal(s, dtype=np.float32) for s in ((300, 200), (200, 70), (70,)))\n"
        "np.testing.assert_allclose(f(a, b, c), np.tanh(a @ b + c), rtol=1e-5, atol=1e-5)\n"
        "print(sum(1 for p in config.cache_dir.glob('*.so')))\n"
    )
    outs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for out in outs:
        assert out.returncode == 0, out.stderr
    assert outs[0].stdout.strip() == outs[1].stdout.strip() == "1"  # compiled once, then loaded
