"""Structural tests: fusion actually happens (kernel counts), not only equal numbers."""
from __future__ import annotations

import numpy as np
import pytest

from minicompile import ir
from minicompile.inductor import compile_graph
from minicompile.inductor.codegen.cpp.ops import CPP_OPS
from minicompile.inductor.lowering import POINTWISE_KINDS
from minicompile.ir import TensorMeta

from inductor_testing import check

F32 = np.dtype(np.float32)


def graph_with(*shapes, dtype=F32):
    g = ir.Graph()
    return g, [g.placeholder(f"x{i}", TensorMeta(s, dtype)) for i, s in enumerate(shapes)]


def rand(*shape, dtype=F32):
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


def test_tanh_of_affine_then_sum_is_one_kernel():
    g, (x,) = graph_with((4, 8))
    g.output([g.call("sum", g.call("tanh", g.call("add", g.call("multiply", x, 2), 1)), axis=1)])
    compiled = check(g, [rand(4, 8)])
    assert compiled.kernels == ["kernel_0_multiply_add_tanh_sum"]


def test_pointwise_chain_is_one_kernel():
    g, (x, y) = graph_with((3, 5), (5,))
    a = g.call("multiply", x, y)
    b = g.call("exp", g.call("subtract", a, 1.5))
    c = g.call("where", g.call("greater", b, 1), b, 0.0)
    g.output([g.call("sqrt", c)])
    compiled = check(g, [rand(3, 5), rand(5)])
    assert len(compiled.kernels) == 1


def test_prologue_fuses_into_reduction():
    g, (x,) = graph_with((6, 7))
    g.output([g.call("max", g.call("exp", g.call("negative", x)), axis=0)])
    compiled = check(g, [rand(6, 7)])
    assert compiled.kernels == ["kernel_0_negative_exp_max"]


def test_transcendental_with_two_consumers_is_computed_once():
    g, (x,) = graph_with((16,))
    e = g.call("exp", x)
    g.output([g.call("add", e, 1), g.call("multiply", e, 2)])
    compiled = check(g, [rand(16)])
    decision = next(line for line in compiled.schedule.splitlines() if line.strip().startswith("exp "))
    assert "realized" in decision and "transcendental" in decision
    kernels_only = compiled.kernel_source.split('extern "C"', 1)[1]  # the kernels, not the #include lines
    assert kernels_only.count("mc_exp_f32(") == 1
    # Same loops, read at the same element: one loop nest writes all three.
    assert len(compiled.kernels) == 1


def test_cheap_expression_with_two_consumers_is_recomputed():
    g, (x,) = graph_with((16,))
    a = g.call("add", x, 1)
    g.output([g.call("sum", g.call("multiply", a, 2)), g.call("max", g.call("multiply", a, 3))])
    compiled = check(g, [rand(16)])
    assert "recomputed" in compiled.schedule
    assert len(compiled.kernels) == 1  # two sibling reductions share their loops


def test_broadcast_consumer_does_not_recompute_exp():
    g, (x, y) = graph_with((8,), (5, 8))
    e = g.call("exp", x)
    g.output([g.call("add", e, y)])
    compiled = check(g, [rand(8), rand(5, 8)])
    assert len(compiled.kernels) == 2


def test_pointwise_epilogue_joins_its_reduction():
    g, (x,) = graph_with((4, 8))
    s = g.call("sum", x, axis=1)
    g.output([g.call("tanh", g.call("multiply", s, 0.5))])
    compiled = check(g, [rand(4, 8)])
    assert len(compiled.kernels) == 1


def test_views_are_index_arithmetic():
    g, (x,) = graph_with((2, 3, 4))
    t = g.call("transpose", x, (2, 0, 1))
    r = g.call("reshape", t, (4, 6))
    g.output([g.call("add", r, 1)])
    compiled = check(g, [rand(2, 3, 4)])
    assert len(compiled.kernels) == 1
    assert "memcpy" not in compiled.kernel_source.split('extern "C"', 1)[1]


def test_broadcast_to_is_a_stride_zero_read_not_a_copy():
    g, (x, y) = graph_with((3, 1), (4, 3, 5))
    b = g.call("broadcast_to", x, (4, 3, 5))
    g.output([g.call("add", g.call("multiply", b, y), 1.0), b])
    arr = rand(3, 1)
    compiled = check(g, [arr, rand(4, 3, 5)])
    assert len(compiled.kernels) == 1 and "broadcast_to" in compiled.kernels[0]
    _, view = compiled(arr, rand(4, 3, 5))
    assert np.shares_memory(view, arr) and not view.flags.writeable  # as np.broadcast_to


@pytest.mark.parametrize("key", [
    (Ellipsis, slice(0, 2)), (Ellipsis, 1), (1, Ellipsis, slice(None, None, 2)),
    (Ellipsis,), (slice(1, 3), Ellipsis, slice(3, 0, -1)),
])
def test_an_ellipsis_key_is_a_view_fused_into_its_consumer(key):
    g, (x,) = graph_with((3, 4, 5))
    g.output([g.call("multiply", g.call("getitem", x, key), 2.0)])
    compiled = check(g, [rand(3, 4, 5)])
    assert len(compiled.kernels) == 1 and "getitem" in compiled.kernels[0]
    assert "_op_getitem" not in compiled.wrapper_source  # read in place, not copied


def test_an_ellipsis_key_of_integers_only_is_a_0d_array():
    g, (x,) = graph_with((3, 4, 5))
    g.output([g.call("getitem", x, (0, 1, Ellipsis, 2))])
    arr = rand(3, 4, 5)
    (out,) = check(g, [arr])(arr)
    assert isinstance(out, np.ndarray) and out.shape == () and out == arr[0, 1, 2]  # as NumPy: not a scalar


def test_view_outputs_are_numpy_views_and_inputs_are_returned_as_is():
    g, (x,) = graph_with((3, 4))
    e = g.call("exp", x)
    g.output([g.call("transpose", x, (1, 0)), x, g.call("reshape", e, (12,)), e])
    arr = rand(3, 4)
    compiled = check(g, [arr])
    t, same, flat, full = compiled(arr)
    assert same is arr
    assert np.shares_memory(t, arr)
    assert np.shares_memory(flat, full)


def test_matmul_is_an_extern_not_a_kernel():
    g, (x, w) = graph_with((4, 5), (5, 3))
    h = g.call("matmul", g.call("multiply", x, 2), w)
    g.output([g.call("tanh", h)])
    compiled = check(g, [rand(4, 5), rand(5, 3)])
    assert len(compiled.kernels) == 2  # the prologue (an extern input) and tanh
    assert "extern matmul" in compiled.schedule


def test_unsupported_combination_falls_back_to_numpy_extern():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((5,), np.dtype(np.int64)))
    y = g.placeholder("y", TensorMeta((5,), np.dtype(np.int64)))
    g.output([g.call("add", g.call("power", x, y), 1)])
    compiled = check(g, [np.arange(5), np.array([0, 1, 2, 3, 2])])
    assert "fallback" in compiled.schedule and len(compiled.kernels) == 1
    check(g, [np.arange(5), np.array([0, 1, -2, 3, 2])])  # NumPy raises; so do we


def test_generated_code_is_deterministic_and_printable():
    def build():
        g, (x,) = graph_with((4, 8))
        g.output([g.call("mean", g.call("log", g.call("absolute", x)), axis=(0, 1))])
        return compile_graph(g, [rand(4, 8)])

    a, b = build(), build()
    assert a.kernel_source == b.kernel_source and a.wrapper_source == b.wrapper_source
    text = str(a)
    for part in (a.kernels[0], "def call(", 'extern "C"', "-fwrapv", "loops"):
        assert part in text


def test_graph_without_computation_needs_no_compiler():
    g, (x,) = graph_with((3, 4))
    g.output([g.call("transpose", x, (1, 0)), x])
    compiled = check(g, [rand(3, 4)])
    assert compiled.kernels == [] and compiled.kernel_source == ""


def test_large_kernels_run_in_parallel_small_ones_do_not():
    g, (x,) = graph_with((256, 512))
    g.output([g.call("add", g.call("multiply", x, 3), 1), g.call("sum", x)])
    compiled = check(g, [rand(256, 512)])
    assert compiled.kernel_source.count("#pragma omp parallel for") == 2
    g, (x,) = graph_with((4, 4))
    g.output([g.call("add", x, 1)])
    assert "omp parallel" not in check(g, [rand(4, 4)]).kernel_source


def test_every_lowered_op_has_cpp_code():
    for name, kinds in POINTWISE_KINDS.items():
        assert name in ir.OPS
        for kind in kinds:
            assert kind in CPP_OPS[name], (name, kind)
