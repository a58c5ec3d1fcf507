"""Tiled loops for transposed pointwise kernels (C++ backend), against NumPy.

A kernel that stores along one loop and reads a big input along another is
walked in tiles (:mod:`minicompile.inductor.codegen.cpp.tiling`).  The property
test shrinks the tiles and the size threshold so that small arrays with odd
sizes (never a multiple of a tile) are tiled, with partial tiles at both ends
of both axes, over 2-D and 3-D permutations and several dtypes.
"""
from __future__ import annotations

import os
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import ir
from minicompile.inductor.codegen.cpp import tiling as cpp_tiling
from minicompile.ir import TensorMeta

from inductor_testing import assert_same, check, run_both
from test_inductor_properties import random_values

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 40)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_)]
# Tiles of a few elements: 16 x 8 bytes (4 x 2 float32), and no size threshold.
SMALL_TILES = dict(TILE_LOAD_BYTES=16, TILE_STORE_BYTES=8, MIN_TILED_NUMEL=1)


def small_tiles():
    return mock.patch.multiple(cpp_tiling, **SMALL_TILES)


@st.composite
def permuted_programs(draw):
    """``op(x.transpose(p), y)`` with ``y`` laid out like the output (or a constant)."""
    rank = draw(st.sampled_from([2, 3]))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 5, 7, 13])) for _ in range(rank))
    perm = tuple(draw(st.permutations(range(rank))))
    dtype = draw(st.sampled_from(DTYPES))
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, dtype))
    xt = g.call("transpose", x, perm)
    out_shape = tuple(shape[i] for i in perm)
    op = draw(st.sampled_from(["add", "multiply", "maximum", "subtract"]))
    if dtype.kind == "b" and op == "subtract":
        op = "add"
    if draw(st.booleans()):
        # y is read either in the output's layout or permuted by q: two loads, two layouts.
        q = tuple(draw(st.sampled_from([tuple(range(rank)), tuple(draw(st.permutations(range(rank))))])))
        y_shape = [0] * rank
        for i, src in enumerate(q):
            y_shape[src] = out_shape[i]
        y = g.placeholder("y", TensorMeta(tuple(y_shape), draw(st.sampled_from(DTYPES))))
        out = g.call(op, xt, g.call("transpose", y, q))
    else:
        out = g.call(op, xt, draw(st.sampled_from([1, 2.5, True])))
    g.output([out])
    return g


@SETTINGS
@given(permuted_programs(), st.integers(0, 2**32 - 1))
def test_permuted_pointwise_matches_numpy(graph, seed):
    rng = np.random.default_rng(seed)
    inputs = [random_values(rng, p.shape, p.dtype) for p in graph.placeholders]
    with small_tiles():
        expected, actual, compiled = run_both(graph, inputs)
    assert_same(expected, actual, f"\n{graph}\n{compiled}", graph)


def test_transpose_plus_one_is_tiled():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((200, 300), np.dtype(np.float32)))
    g.output([g.call("add", g.call("transpose", x, (1, 0)), 1.0)])
    compiled = check(g, [np.random.default_rng(0).standard_normal((200, 300)).astype(np.float32)])
    src = compiled.kernel_source
    assert "for (int64_t x0_t = 0; x0_t < 300; x0_t += 64)" in src
    assert "for (int64_t x1_t = 0; x1_t < 200; x1_t += 8)" in src
    # The innermost loop runs along the stores and stays vectorizable.
    assert "#pragma omp simd\n" + " " * 16 + "for (int64_t x1 = x1_t; x1 < (x1_t + 8 < 200 ? x1_t + 8 : 200); ++x1)" in src
    assert "collapse(2)" in src


def test_three_d_permutation_tiles_the_two_swapped_axes():
    def fn(x, y):
        return x.transpose(0, 2, 1) * y

    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((3, 130, 150)), rng.standard_normal((3, 150, 130))
    compiled = mc.compile(fn, backend="cpp", fullgraph=True)
    np.testing.assert_array_equal(compiled(x, y), fn(x, y))
    src = compiled.cache[0].compiled.kernel_source
    assert "x1_t += " in src and "x2_t += " in src and "int64_t x0_t" not in src and "collapse(3)" in src


def test_contiguous_and_broadcast_reads_are_not_tiled():
    def fn(x, b):
        return x * 2.0 + b[:, None]  # b is read along x0 with stride 0 along x1: no transpose

    rng = np.random.default_rng(2)
    compiled = mc.compile(fn, backend="cpp", fullgraph=True)
    x, b = rng.standard_normal((300, 200)), rng.standard_normal(300)
    np.testing.assert_array_equal(compiled(x, b), fn(x, b))
    assert "_t += " not in compiled.cache[0].compiled.kernel_source


def test_dynamic_shapes_tile_with_symbolic_bounds():
    def fn(x):
        return x.T + 1.0

    compiled = mc.compile(fn, backend="cpp", dynamic=True)
    rng = np.random.default_rng(3)
    for shape in [(130, 70), (67, 201), (5, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(compiled(x), fn(x))
    cg = compiled.cache[0].compiled
    assert cg.fallback_reason is None and "x0_t += 64" in cg.kernel_source and " < s" in cg.kernel_source
