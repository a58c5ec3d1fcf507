"""argmax/argmin as generated loop reductions, against eager NumPy.

NumPy's rules are the oracle: the first occurrence of the extreme value wins a
tie, the first NaN wins over everything, ``axis=None`` counts through the
flattened array, the result is intp.  Values are drawn from a handful of small
numbers (so rows have ties) with NaN and infinities mixed in, over random
shapes, axes (negative and None), keepdims and layouts; a few rows are long
enough that one row is split across OpenMP threads.  The Triton backend (in
its interpreter: persistent, looped and row-group kernels) generates them too;
the Spyre backend runs them on the host, and must agree as well.
"""
from __future__ import annotations

import os
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import ir
from minicompile.ir import TensorMeta

from inductor_testing import assert_same, check, run_both
from test_inductor_properties import with_layout

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 60)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_)]
# Long enough for the kernel to run on several threads (PARALLEL_MIN_WORK).
LONG = 40_000


def tie_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, specials: float) -> np.ndarray:
    """Few distinct values (many ties); floats get NaN, +inf and -inf at rate ``specials``."""
    if dtype.kind == "b":
        return rng.random(shape) < rng.random()
    values = rng.integers(-2, 3, size=shape).astype(dtype)
    if dtype.kind == "f":
        mask = rng.random(shape) < specials
        values = np.where(mask, rng.choice(np.array([np.nan, np.inf, -np.inf], dtype), size=shape), values)
    elif dtype.kind == "i":
        info = np.iinfo(dtype)
        mask = rng.random(shape) < specials
        values = np.where(mask, rng.choice(np.array([info.min, info.max], dtype), size=shape), values)
    return values.astype(dtype)


@st.composite
def cases(draw):
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 5, 8])) for _ in range(rank))
    if rank and draw(st.integers(0, 5)) == 0:  # one long axis
        axis = draw(st.integers(0, rank - 1))
        shape = shape[:axis] + (LONG // max(1, int(np.prod(shape)) // shape[axis]),) + shape[axis + 1:]
    axis = None if rank == 0 or draw(st.booleans()) else draw(st.integers(-rank, rank - 1))
    return dict(shape=shape, dtype=draw(st.sampled_from(DTYPES)), axis=axis, keepdims=draw(st.booleans()),
                op=draw(st.sampled_from(["argmax", "argmin"])), prologue=draw(st.booleans()),
                specials=draw(st.sampled_from([0.0, 0.01, 0.3])), seed=draw(st.integers(0, 2**32 - 1)),
                layout=draw(st.sampled_from(["contiguous", "contiguous", "reversed", "transposed"])))


def arg_graph(case: dict) -> ir.Graph:
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(case["shape"], case["dtype"]))
    a = g.call("add", g.call("multiply", x, 2), 1) if case["prologue"] else x
    g.output([g.call(case["op"], a, axis=case["axis"], keepdims=case["keepdims"])])
    return g


def arg_inputs(case: dict) -> list[np.ndarray]:
    rng = np.random.default_rng(case["seed"])
    return [with_layout(rng, tie_values(rng, case["shape"], case["dtype"], case["specials"]), case["layout"])]


@SETTINGS
@given(cases())
def test_arg_reduction_matches_numpy(case):
    graph = arg_graph(case)
    expected, actual, compiled = run_both(graph, arg_inputs(case))
    assert_same(expected, actual, f"{case}\n{compiled}", graph)
    assert not any(line.startswith("extern") for line in compiled.schedule.splitlines()), compiled.schedule


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_one_long_row_ties_and_nans_pick_the_lowest_index(op, dtype):
    """A full reduction over one row split across threads: the partials combine
    to NumPy's first extreme value, and to its first NaN."""
    fn = getattr(np, op)
    x = np.zeros(3 * LONG + 7, dtype)
    x[[LONG - 1, LONG + 5, 2 * LONG + 3]] = 1 if op == "argmax" else 0
    if op == "argmin":
        x[:] = 1
        x[[LONG - 1, LONG + 5, 2 * LONG + 3]] = 0
    compiled = mc.compile(lambda a: fn(a), backend="cpp", fullgraph=True)
    assert compiled(x) == fn(x) == LONG - 1
    if x.dtype.kind == "f":
        x[[LONG + 9, 2 * LONG + 1]] = np.nan
        assert compiled(x) == fn(x) == LONG + 9
    compiled_graph = compiled.cache[0].compiled
    assert "parallel for reduction(mc_" in compiled_graph.kernel_source


def test_argmax_of_an_affine_prologue_is_one_kernel():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((6, 33), np.dtype(np.float32)))
    g.output([g.call("argmax", g.call("add", g.call("multiply", x, 2), 1), axis=-1)])
    x = np.random.default_rng(0).standard_normal((6, 33)).astype(np.float32)
    compiled = check(g, [x])
    assert compiled.kernels == ["kernel_0_multiply_add_argmax"]
    assert "mc_argmax_step" in compiled.kernel_source


def test_argmax_method_and_max_of_the_same_rows_share_a_kernel():
    def fn(x):
        return x.max(axis=1), x.argmax(axis=1), np.argmin(x, axis=1)

    x = np.random.default_rng(1).integers(-3, 3, (7, 50)).astype(np.float32)
    x[2, 7] = np.nan
    compiled = mc.compile(fn, backend="cpp", fullgraph=True)
    assert_same(fn(x), compiled(x), "max, argmax and argmin of the same rows")
    assert len(compiled.cache[0].compiled.kernels) == 1


def test_argmax_over_axis_zero_runs_along_the_contiguous_axis():
    """argmax(axis=0) of a C-ordered matrix: a block of pairs per output, rows streamed through it."""
    x = np.random.default_rng(2).integers(-2, 3, (300, 513)).astype(np.float64)
    x[[5, 9], 17] = np.nan
    compiled = mc.compile(lambda a: np.argmax(a, axis=0), backend="cpp", fullgraph=True)
    np.testing.assert_array_equal(compiled(x), np.argmax(x, axis=0))
    assert "_b +=" in compiled.cache[0].compiled.kernel_source


TRITON_SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 25)), deadline=None,
                           suppress_health_check=[HealthCheck.too_slow])


@TRITON_SETTINGS
@given(cases(), st.booleans(), st.booleans())
def test_triton_arg_reduction_matches_numpy(case, looped, after_max):
    """Triton's interpreter: persistent rows, looped rows (a small PERSISTENT_MAX),
    and an argmax in a row group after the row's max (``argmax(x - max)``)."""
    pytest.importorskip("triton")
    from minicompile.inductor import triton_wrapper
    from minicompile.inductor.codegen import triton as tg

    if case["shape"] and case["shape"][case["axis"] or 0] > 300:
        case["shape"] = tuple(min(n, 300) for n in case["shape"])  # the interpreter is slow
    graph = arg_graph(case)
    if after_max and case["axis"] is not None and case["dtype"].kind == "f":
        g = ir.Graph()
        x = g.placeholder("x", TensorMeta(case["shape"], case["dtype"]))
        centred = g.call("subtract", x, g.call("max", x, axis=case["axis"], keepdims=True))
        g.output([g.call(case["op"], centred, axis=case["axis"], keepdims=case["keepdims"])])
        graph = g
    inputs = arg_inputs(case)
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            mock.patch.object(tg, "PERSISTENT_MAX", 8 if looped else tg.PERSISTENT_MAX):
        warnings.simplefilter("ignore")
        expected = ir.dead_code_elimination(graph)(*inputs)
        compiled = triton_wrapper.compile_graph(graph, inputs)
        actual = compiled(*inputs)
    assert_same(expected, actual, f"{case}\n{compiled}", graph)
    assert "extern" not in str(compiled.schedule), compiled.schedule


@pytest.mark.parametrize("backend", ["triton", "spyre"])
def test_other_backends_agree(backend):
    if backend == "triton":
        pytest.importorskip("triton")

    def fn(x):
        return np.argmax(x * 2 + 1, axis=-1), x.argmin(), np.argmax(x, axis=0, keepdims=True)

    x = np.random.default_rng(3).integers(-2, 3, (9, 40)).astype(np.float32)
    x[4, 11] = np.nan
    compiled = mc.compile(fn, backend=backend, fullgraph=True)
    assert_same(fn(x), compiled(x), backend)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_rows_of_extreme_values_across_blocks(op):
    """Rows longer than a block whose every element is the pair's starting value
    (-inf, INT_MIN, False for argmax), all NaN, or whose first NaN or better
    value comes in a later block."""
    fn = getattr(np, op)
    n = 3 * 128 + 5
    f = np.zeros((6, n))
    f[0] = -np.inf if op == "argmax" else np.inf
    f[1] = np.nan
    f[2, 300] = np.nan
    f[2, 7] = 5.0 if op == "argmax" else -5.0
    f[3, [130, 260]] = 1.0 if op == "argmax" else -1.0
    f[4] = -0.0
    f[4, 200] = 0.0
    f[5, ::2] = np.inf if op == "argmax" else -np.inf
    info = np.iinfo(np.int32)
    i = np.full((2, n), info.min if op == "argmax" else info.max, np.int32)
    i[1, 250:] += 1 if op == "argmax" else -1
    b = np.full((2, n), op != "argmax")
    b[1, 200] = op == "argmax"
    for x in (f, f.astype(np.float32), i, b):
        compiled = mc.compile(lambda a: (fn(a, axis=1), fn(a)), backend="cpp", fullgraph=True)
        assert_same(tuple(map(np.asarray, (fn(x, axis=1), fn(x)))), compiled(x), f"{op} {x.dtype}")
