"""The lane-partial float32 sums of row kernels (codegen/cpp/reductions.py, _write_lane_sums):
rows whose length is not a multiple of the lanes or of the chunk, several
sums in one pass, scratch rows, full reductions split across threads, float16,
and the reductions that keep the plain loop (integers, max with NaN)."""
from __future__ import annotations

import numpy as np
import pytest

from minicompile import ir
from minicompile.inductor.codegen.cpp.reductions import SUM_CHUNK, SUM_LANES
from minicompile.ir import TensorMeta

from inductor_testing import check, layer_norm_graph

F32 = np.dtype(np.float32)


def rand(*shape, dtype=F32, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) + 0.5).astype(dtype)


def sum_graph(shape, dtype=F32, axis=-1):
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, dtype))
    g.output([g.call("sum", x, axis=axis)])
    return g


def softmax_graph(shape):
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, F32))
    m = g.call("max", x, axis=-1, keepdims=True)
    e = g.call("exp", g.call("subtract", x, m))
    g.output([g.call("divide", e, g.call("sum", e, axis=-1, keepdims=True))])
    return g


# Row lengths: lanes only, one partial chunk, a tail after whole chunks, a
# tail inside the last chunk, and a row shorter than the lanes past a chunk.
LENGTHS = [1024, 257, 300, 1000, SUM_CHUNK + SUM_LANES - 1, 4 * SUM_CHUNK + 5]


@pytest.mark.parametrize("n", LENGTHS)
def test_row_sums_match_float64_for_any_row_length(n):
    a = rand(8, n)
    total, = check(sum_graph((8, n)), [a])(a)
    exact = a.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(total, exact, rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize("n", LENGTHS)
def test_row_sums_use_lanes_and_a_plain_tail(n):
    src = check(sum_graph((4, n)), [rand(4, n)]).kernel_source
    assert f"acc0_p[{SUM_LANES}]" in src
    assert ("float acc0_c = 0;" in src) == (n % SUM_LANES != 0)


def test_each_lane_sums_in_order_of_its_elements():
    # 0.1 in every element but one large value: lanes must each see their
    # own elements exactly once (a lane index off by one would double-count).
    n = 1000
    a = np.full((3, n), 0.1, F32)
    a[:, 997] = 1000.0
    a[1, 3] = -7.0
    total, = check(sum_graph((3, n)), [a])(a)
    np.testing.assert_allclose(total, a.astype(np.float64).sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("n", [1024, 1000, 333])
def test_layer_norm_two_lane_passes(n):
    check(layer_norm_graph((16, n)), [rand(16, n)])


@pytest.mark.parametrize("n", [1024, 1000, 333])
def test_softmax_scratch_row_written_in_lanes_and_tail(n):
    compiled = check(softmax_graph((16, n)), [rand(16, n) * 4])
    assert "row0[r0] =" in compiled.kernel_source


def test_two_sums_in_one_pass_each_keep_their_lanes():
    n = 1000
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((8, n), F32))
    g.output([g.call("sum", x, axis=1), g.call("sum", g.call("multiply", x, x), axis=1)])
    a = rand(8, n)
    src = check(g, [a]).kernel_source
    assert "acc0_p" in src and "acc1_p" in src


def test_full_reduction_split_across_threads_with_a_tail():
    n = (1 << 20) + 7
    a = rand(n)
    total, = check(sum_graph((n,)), [a])(a)
    np.testing.assert_allclose(total, a.astype(np.float64).sum(), rtol=1e-6)


def test_sum_over_two_axes_lanes_on_the_inner_one():
    a = rand(4, 3, 1000)
    total, = check(sum_graph((4, 3, 1000), axis=(1, 2)), [a])(a)
    np.testing.assert_allclose(total, a.astype(np.float64).sum(axis=(1, 2)), rtol=1e-6)


def test_float16_row_sums():
    a = rand(4, 1000, dtype=np.dtype(np.float16))
    check(sum_graph((4, 1000), dtype=np.dtype(np.float16)), [a])


def test_integer_sums_keep_the_plain_simd_loop():
    a = np.random.default_rng(0).integers(-1000, 1000, (8, 1000)).astype(np.int32)
    src = check(sum_graph((8, 1000), dtype=np.dtype(np.int32)), [a]).kernel_source
    assert "_p[" not in src


def test_max_with_nan_in_a_row_next_to_a_lane_sum():
    a = rand(6, 1000)
    a[2, 999] = np.nan
    a[4, 0] = np.nan
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((6, 1000), F32))
    g.output([g.call("max", x, axis=1), g.call("sum", x, axis=1)])
    mx, total = check(g, [a])(a)
    assert np.isnan(mx[2]) and np.isnan(mx[4]) and np.isnan(total[2])


def test_multi_pass_row_kernels_prefetch_the_next_row():
    src = check(layer_norm_graph((16, 1000)), [rand(16, 1000)]).kernel_source
    assert "__builtin_prefetch(&in_x[r0 + 1000*x0 + 1000])" in src


def test_prefetch_on_rows_of_a_3d_input_and_the_last_row():
    # The next row of the last row (of each outer index) lies past the rows
    # this thread runs, or past the array: a prefetch never faults.
    a = rand(3, 5, 300)
    src = check(layer_norm_graph((3, 5, 300)), [a]).kernel_source
    assert "__builtin_prefetch" in src


def test_single_pass_row_sums_prefetch_too():
    src = check(sum_graph((16, 1000)), [rand(16, 1000)]).kernel_source
    assert "__builtin_prefetch(&in_x[r0 + 1000*x0 + 1000])" in src


def test_short_rows_do_not_prefetch():
    # 100 floats: the hardware prefetcher's stream covers several rows.
    assert "__builtin_prefetch" not in check(sum_graph((16, 100)), [rand(16, 100)]).kernel_source


def test_rows_reduced_across_columns_do_not_prefetch():
    # x.sum(axis=0) streams whole rows through a block of accumulators.
    src = check(sum_graph((300, 1000), axis=0), [rand(300, 1000)]).kernel_source
    assert "__builtin_prefetch" not in src


def test_rows_counted_at_run_time_prefetch_too():
    """A batch size known only at run time (dynamic shapes) keeps the prefetch:
    the row length is still a constant, and the last row is checked at run time."""
    import minicompile as mc

    def layer_norm(x):
        c = x - x.mean(axis=-1, keepdims=True)
        return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)

    f = mc.compile(layer_norm)
    for rows in (16, 9, 23):
        x = rand(rows, 1000, seed=rows)
        np.testing.assert_allclose(f(x), layer_norm(x), rtol=2e-5, atol=2e-5)
    src = next(e.compiled.kernel_source for e in f.cache if "s0" in e.compiled.kernel_source)
    assert "if (x0 + 1 < s0) for (int64_t r0 = 0; r0 < 1000; r0 += 16) __builtin_prefetch(&in_x[r0 + 1000*x0 + 1000])" in src


def lane_sum_model(row: np.ndarray) -> np.float32:
    """The order a row kernel's float32 sum adds in (rows of whole 32-lane
    blocks): per chunk of SUM_CHUNK, 32 lanes in float32, folded by
    mc_sum_lanes32, into a float64 total."""
    total = 0.0
    for c in range(0, row.size, SUM_CHUNK):
        p = np.zeros(SUM_LANES, np.float32)
        for b in range(c, min(c + SUM_CHUNK, row.size), SUM_LANES):
            p += row[b:b + SUM_LANES]
        v = p.reshape(4, 8)
        s = (v[0] + v[2]) + (v[1] + v[3])
        s = s + s[[1, 0, 3, 2, 5, 4, 7, 6]]
        s = s + s[[2, 3, 0, 1, 6, 7, 4, 5]]
        total += float(np.float32(s[0] + s[4]))
    return np.float32(total)


def test_lane_sums_add_in_the_stated_order():
    # Magnitudes from 1e-3 to 1e5: a different order of the float32 adds gives other bits.
    x = (rand(4, 320) * np.float32(10.0) ** np.random.default_rng(1).integers(-3, 6, (4, 320))).astype(F32)
    got = check(sum_graph((4, 320)), [x])(x)[0]
    np.testing.assert_array_equal(got, [lane_sum_model(row) for row in x])
