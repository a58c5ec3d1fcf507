"""Each fusion rule, asserted on structure (kernels, passes, bytes) as well as values."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minicompile import config, ir
from minicompile.inductor import compile_graph, scheduler
from minicompile.ir import TensorMeta

from inductor_testing import check, layer_norm_graph, run_both

F32 = np.dtype(np.float32)


def rand(*shape, dtype=F32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def softmax_graph(shape, axis=-1):
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, F32))
    m = g.call("max", x, axis=axis, keepdims=True)
    e = g.call("exp", g.call("subtract", x, m))
    g.output([g.call("divide", e, g.call("sum", e, axis=axis, keepdims=True))])
    return g


def test_softmax_is_one_row_kernel_with_two_reduction_passes():
    g = softmax_graph((64, 33))
    compiled = check(g, [rand(64, 33)])
    assert len(compiled.kernels) == 1
    (kernel,) = scheduler.schedule(g, [rand(64, 33)]).kernels
    assert [len(stage) for stage in kernel.stages] == [1, 1]  # max, then sum of exp
    assert [s.buffer for s in kernel.row_pointwise] == ["divide"]
    # exp is recomputed in the sum pass and the write pass: no buffer for it
    assert "exp" not in scheduler.schedule(g, [rand(64, 33)]).buffers


def test_softmax_row_kernel_computes_exp_once_per_element():
    # exp(x - max) is read by the sum pass and the write pass: the sum pass
    # keeps it in a per-row scratch array that the write pass reads back.
    compiled = check(softmax_graph((64, 33)), [rand(64, 33)])
    kernel = compiled.kernel_source.split('extern "C"', 1)[1]
    assert kernel.count("mc_exp_f32(") == 1
    assert "row0[33]" in kernel


def test_row_scratch_over_two_reduced_axes_and_shared_transcendentals():
    # A row of two axes (a flat scratch index) and two expensive values, each
    # read by a later pass; values match NumPy, including -inf and NaN rows.
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((6, 5, 7), F32))
    m = g.call("max", x, axis=(1, 2), keepdims=True)
    e = g.call("exp", g.call("subtract", x, m))
    t = g.call("tanh", x)
    s = g.call("sum", g.call("multiply", e, t), axis=(1, 2), keepdims=True)
    g.output([g.call("divide", g.call("add", e, t), s)])
    a = rand(6, 5, 7)
    a[1, 2, 3] = np.nan
    a[2] = -np.inf
    compiled = check(g, [a])
    kernel = compiled.kernel_source.split('extern "C"', 1)[1]
    assert kernel.count("mc_exp_f32(") == 1 and kernel.count("mc_tanh_f32(") == 1
    assert "row1[35]" in kernel


def test_layer_norm_is_one_kernel_without_intermediate_buffers():
    compiled = check(layer_norm_graph((32, 100)), [rand(32, 100)])
    assert len(compiled.kernels) == 1
    assert compiled.peak_intermediate_bytes <= 32 * 4 * 4  # per-row scalars at most


def test_softmax_over_a_middle_axis_keeps_values():
    check(softmax_graph((5, 7, 3), axis=1), [rand(5, 7, 3)])


def test_column_reduction_uses_an_array_of_accumulators():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((300, 520), F32))
    g.output([g.call("sum", x, axis=0), g.call("max", x, axis=0)])
    a = rand(300, 520)
    a[7, 9] = np.nan
    compiled = check(g, [a])
    assert len(compiled.kernels) == 1
    assert "acc0[256]" in compiled.kernel_source  # blocks of outputs, rows streamed through


def test_sibling_pointwise_outputs_share_one_kernel():
    g = ir.Graph()
    p, gr, m = (g.placeholder(n, TensorMeta((1000,), F32)) for n in "pgm")
    m2 = g.call("add", g.call("multiply", m, 0.9), g.call("multiply", gr, 0.1))
    g.output([g.call("subtract", p, g.call("multiply", m2, 0.01)), m2])
    compiled = check(g, [rand(1000, seed=i) for i in range(3)])
    assert len(compiled.kernels) == 1


def test_reduction_reading_another_row_does_not_fuse_and_says_why():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((8, 16), F32))
    s = g.call("sum", x, axis=1)                      # (8,)
    y = g.call("multiply", x, g.call("reshape", s, (8, 1)))
    t = g.call("transpose", y, (1, 0))                # read y across rows
    g.output([g.call("sum", g.call("exp", t), axis=1)])
    compiled = check(g, [rand(8, 16)])
    assert len(compiled.kernels) >= 2
    assert "new kernel:" in compiled.schedule


def _exp_matmul_tanh_matmul() -> ir.Graph:
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((64, 64), F32))
    a = g.call("exp", x)                           # a buffer: matmul reads it
    b = g.call("matmul", a, a)                     # a is dead after this
    c = g.call("tanh", b)                          # same size: takes a's storage
    g.output([g.call("matmul", c, c)])
    return g


def test_dead_buffers_are_reused(monkeypatch):
    monkeypatch.setattr(config, "cpp_matmul_epilogues", False)  # tanh a kernel of its own
    compiled = check(_exp_matmul_tanh_matmul(), [rand(64, 64) * 0.1])
    assert "reuses the storage of exp" in compiled.wrapper_source
    assert compiled.peak_intermediate_bytes == 64 * 64 * 4


def test_a_matmul_epilogue_keeps_the_operands_of_its_matmul_alive():
    # tanh runs on the tiles of the first product while the GEMM still reads
    # exp's buffer: tanh's output must not take exp's storage.
    compiled = check(_exp_matmul_tanh_matmul(), [rand(64, 64) * 0.1])
    assert "kernel_1_tanh_tile(" in compiled.kernel_source
    assert "reuses the storage of exp" not in compiled.wrapper_source


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_decompose_into_one_row_kernel(op):
    if op not in ir.OPS:
        pytest.skip(f"{op} is not in the op registry")
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((16, 40), F32))
    g.output([g.call(op, x, axis=1)])
    compiled = check(g, [rand(16, 40)])
    assert len(compiled.kernels) == 1


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(1, 9), st.integers(1, 70), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(["contiguous", "transposed", "strided"]), st.integers(0, 1000))
def test_row_kernels_match_numpy_on_random_shapes_and_layouts(rows, cols, dtype, layout, seed):
    x = rand(rows, cols, dtype=dtype, seed=seed)
    if layout == "transposed":
        x = np.ascontiguousarray(x.T).T
    elif layout == "strided":
        x = np.repeat(x, 2, axis=1)[:, ::2]
    for build in (softmax_graph, layer_norm_graph):
        check(build_typed(build, (rows, cols), np.dtype(dtype)), [x])


def build_typed(build, shape, dtype):
    """``build(shape)`` with its input declared as ``dtype``."""
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, dtype))
    template = build(shape)
    env = {template.placeholders[0]: x}
    for node in template.calls:
        args = [env.get(a, a) if isinstance(a, ir.Node) else a for a in node.args]
        env[node] = g.call(node.op.name, *args)
    g.output([env[o] for o in template.outputs])
    return g


REDUCTIONS = ["sum", "max", "min", "mean"]
POINTWISE = ["exp", "negative", "tanh", "absolute"]


@st.composite
def row_programs(draw):
    """Random chains of row reductions and pointwise ops that read them back."""
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 40))
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((rows, cols), dtype))
    full, value = [x], x
    for _ in range(draw(st.integers(1, 4))):
        r = g.call(draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from(full)), axis=1, keepdims=True)
        p = g.call(draw(st.sampled_from(POINTWISE)), g.call("subtract", draw(st.sampled_from(full)), r))
        full.append(p)
        value = p
    g.output([value] + ([r] if draw(st.booleans()) else []))
    return g


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(row_programs(), st.integers(0, 1000))
def test_row_fused_unfused_and_numpy_agree(graph, seed):
    x = rand(*graph.placeholders[0].shape, dtype=graph.placeholders[0].dtype, seed=seed)
    expected, actual, fused = run_both(graph, [x])
    # Chains like exp(x - sum(exp(...))) amplify float32 rounding (the summation
    # order alone moves a sum of thousands by 1e-3): the fused kernel must be as
    # close to the exact answer (float64) as NumPy's own float32 result is.
    exact = ir.dead_code_elimination(graph)(x.astype(np.float64))
    for a, e, r in zip(actual, expected, exact):
        assert a.dtype == e.dtype and a.shape == e.shape
        slack = 8 * np.abs(e - r) + 1e-5 * np.abs(r) + 1e-6
        assert np.all((np.abs(a - r) <= slack) | (np.isnan(a) & np.isnan(e))), (graph, a, e, r)
    unfused = compile_graph(graph, [x], row_fusion=False)
    for a, b in zip(fused(x), unfused(x)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(fused.kernels) <= len(unfused.kernels)


@pytest.mark.parametrize("op", ["any", "all", "ptp", "clip"])
def test_other_decompositions_lower_to_loops(op):
    if op not in ir.OPS:
        pytest.skip(f"{op} is not in the op registry")
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((6, 9), F32))
    g.output([g.call(op, x, -0.5, 0.5) if op == "clip" else g.call(op, x, axis=1)])
    a = rand(6, 9)
    a[0, :] = 0.0
    a[1, 3] = np.nan
    compiled = check(g, [a])
    assert compiled.kernels and all("extern" not in line for line in compiled.schedule.splitlines())


def test_memory_planning_keeps_a_buffer_alive_while_an_extern_view_of_it_is():
    # np.broadcast_to (an extern) returns a view of add's buffer: reusing that
    # buffer for the negation would change the view under hypot's feet.
    g = ir.Graph()
    a = g.placeholder("a", ir.TensorMeta((3,), np.dtype(np.int8)))
    view = g.call("broadcast_to", g.call("add", a, a), (2, 3))
    negated = g.call("negative", a)
    g.output([g.call("hypot", view, negated), view, negated])
    x = np.array([1, 2, 3], np.int8)
    for got, want in zip(compile_graph(g, [x])(x), g(x)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_maximum_and_minimum_break_zero_ties_like_numpy(backend, dtype):
    # 0.0 == -0.0: NumPy's float32/64 loops return the second operand, float16's the first.
    pytest.importorskip("triton") if backend == "triton" else None
    import minicompile as mc

    def f(a, b):
        return np.maximum(a, b), np.minimum(a, b), np.maximum(b, a), np.minimum(b, a)

    a, b = np.zeros(5, dtype), -np.zeros(5, dtype)
    b[1], a[2] = np.nan, np.nan
    for got, want in zip(mc.compile(f, backend=backend)(a, b), f(a, b)):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)


def test_where_with_an_out_of_range_python_int_wraps_like_numpy():
    import minicompile as mc

    def f(a):
        return np.where(a < a, a, 3_000_000_000), np.where(a > 0, -5_000_000_000, a)

    a = np.array([4, -1], np.int32)
    for got, want in zip(mc.compile(f, backend="cpp")(a), f(a)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_long_float32_sums_stay_accurate():
    # Chunks of 256 are summed in float32 vectors, chunk sums in float64: a
    # million 0.1s sum to within a few float32 roundings of the exact value
    # (one float32 accumulator per lane would be off by about 1e-3 relative).
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((2, 1 << 20), F32))
    g.output([g.call("sum", x, axis=1), g.call("mean", x, axis=1)])
    a = np.full((2, 1 << 20), 0.1, F32)
    a[1] = rand(1 << 20)
    compiled = check(g, [a])
    total, mean = compiled(a)
    exact = a.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(total, exact, rtol=1e-6, atol=1e-3)
    np.testing.assert_allclose(mean, exact / (1 << 20), rtol=1e-6, atol=1e-9)
    assert "r0_c += 256" in compiled.kernel_source  # float32 chunks, added in float64


def test_short_float32_window_sums_accumulate_in_float32():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((64, 9), F32))
    g.output([g.call("sum", x, axis=1)])
    compiled = check(g, [rand(64, 9)])
    kernel = compiled.kernel_source.split('extern "C"', 1)[1]
    assert "float acc0 = 0;" in kernel and "double acc" not in kernel


def test_a_dead_buffer_up_to_twice_the_size_is_reused_for_a_smaller_one(monkeypatch):
    # exp (64x64) dies at the first matmul; tanh of the sliced product (64x40
    # float32: 10 KiB of exp's 16 KiB) takes a view of its first bytes.
    monkeypatch.setattr(config, "cpp_matmul_epilogues", False)
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((64, 64), F32))
    w = g.placeholder("w", TensorMeta((40, 8), F32))
    a = g.call("exp", x)
    b = g.call("matmul", a, a)
    c = g.call("tanh", g.call("getitem", b, (slice(None), slice(0, 40))))
    g.output([g.call("matmul", c, w)])
    compiled = check(g, [rand(64, 64) * 0.1, rand(40, 8, seed=1)])
    assert ".view(_np.uint8)[:10240]" in compiled.wrapper_source and "# reuses exp" in compiled.wrapper_source


def test_a_value_read_twice_at_every_level_is_realized_before_its_tree_doubles_away():
    """``lst[0] += lst[1]`` with both items one array, unrolled n times, is x + x of x + x of ...:
    inlining each level into its one consumer grew a tree of 2**n ops (minutes to compile at
    n = 20).  Past MAX_INLINED_OPS the value is realized, and the result stays NumPy's."""
    import minicompile as mc

    def doubling(lst, n):
        for _ in range(n):
            lst[0] += lst[1]
        return lst

    compiled = mc.compile(doubling, backend="cpp")
    shared = np.ones(3)
    got = compiled([shared, shared], 24)
    np.testing.assert_array_equal(got[0], np.full(3, 2.0 ** 24))
    schedules = " ".join(getattr(e.compiled, "schedule", "") for e in compiled.cache)
    assert "ops as one expression" in schedules
    assert scheduler.MAX_INLINED_OPS < 2 ** 24
