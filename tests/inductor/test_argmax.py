"""argmax/argmin as generated loop reductions, against eager NumPy.

NumPy's rules are the oracle: the first occurrence of the extreme value wins a
tie, the first NaN wins over everything, ``axis=None`` counts through the
flattened array, the result is intp.  Values are drawn from a handful of small
numbers (so rows have ties) with NaN and infinities mixed in, over random
shapes, axes (negative and None), keepdims and layouts; a few rows are long
enough that one row is split across OpenMP threads.  The Triton backend (in
its interpreter: persistent, looped and row-group kernels) generates them too;
the Spyre backend runs them on the host, and must agree as well.  A 0-d array
takes ``axis=0`` or ``axis=-1`` in NumPy (read as its flattened 1-d self); the
reductions of a 0-d array are checked here too, each against NumPy's own
answer, errors included.
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
    # A 0-d array takes axis 0 or -1 as NumPy does, as its flattened 1-d self.
    axis = None if draw(st.booleans()) else draw(st.integers(-max(rank, 1), max(rank, 1) - 1))
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
    assert "mc_argmax_beats(" in compiled.kernel_source  # the blocked argmax loop (reductions.py)


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
    from minicompile.inductor.codegen.triton import compile as triton_compile, kernel as tg

    if case["shape"] and max(case["shape"]) > 300:
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
        compiled = triton_compile.compile_graph(graph, inputs)
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


# -- 0-d arrays: NumPy reads them as their flattened 1-d self (or, for mean/var/std, refuses an axis)

BACKENDS = ["eager", "cpp", pytest.param("triton", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("triton") is None, reason="triton is not installed"))]


def _numpy_and_compiled(fn, x, backend):
    """(NumPy's answer, the compiled answer); either may be the exception raised."""
    results = []
    for run in (fn, mc.compile(fn, backend=backend, fullgraph=True)):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                results.append(run(x))
        except Exception as why:
            results.append(why)
    return results


def assert_like_numpy(expected, actual, what: str) -> None:
    """Same value, Python type (NumPy scalar or ndarray), dtype and shape — or the same error."""
    if isinstance(expected, Exception):
        assert isinstance(actual, type(expected)), f"{what}: NumPy raised {expected!r}, got {actual!r}"
        return
    assert not isinstance(actual, Exception), f"{what}: raised {actual!r}, NumPy gave {expected!r}"
    assert type(actual) is type(expected), f"{what}: {type(actual)} is not {type(expected)}"
    assert np.asarray(actual).dtype == np.asarray(expected).dtype, what
    assert np.shape(actual) == np.shape(expected), what
    np.testing.assert_allclose(actual, expected, err_msg=what)


@pytest.mark.parametrize("backend", BACKENDS)
def test_argmax_of_a_0d_array_along_its_last_axis_is_zero(backend):
    out = mc.compile(lambda x: np.argmax(x, axis=-1), backend=backend, fullgraph=True)(np.array(1.5, np.float32))
    assert type(out) is np.int64 and out == 0


ZERO_D_AXES = [dict(axis=-1), dict(axis=0), dict(axis=0, keepdims=True), dict(axis=-1, keepdims=True),
               dict(axis=None, keepdims=True), dict(axis=1), dict(axis=-2)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["argmax", "argmin", "nanargmax", "nanargmin"])
def test_arg_reductions_of_a_0d_array(op, backend):
    fn = getattr(np, op)
    for dtype in (np.float32, np.int32, np.bool_):
        x = np.array(1, dtype)
        for kwargs in ZERO_D_AXES:
            if op.startswith("nan") and dtype is np.bool_:
                continue
            fused = (lambda a: fn(a, **kwargs) + 1) if dtype is np.bool_ else (lambda a: fn(a * 2 + 1, **kwargs) + 1)
            for program in (lambda a: fn(a, **kwargs), fused):
                expected, actual = _numpy_and_compiled(program, x, backend)
                assert_like_numpy(expected, actual, f"{op} {kwargs} {np.dtype(dtype)} {backend}")


ZERO_D_REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all", "var", "std", "ptp", "count_nonzero",
                     "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "median"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reductions_of_a_0d_array_accept_the_axes_numpy_accepts(backend):
    """sum, max, any, ptp and the nan forms take axis 0 or -1 of a 0-d array (and
    fold nothing); mean, var, std and median raise AxisError: both as in NumPy,
    and a program NumPy runs compiles into one graph (no break on a false error)."""
    x = np.array(1.5, np.float32)
    for op in ZERO_D_REDUCTIONS:
        fn = getattr(np, op)
        for kwargs in ZERO_D_AXES + [dict(axis=()), dict(axis=(0,)), dict(axis=(-1,))]:
            def program(a, fn=fn, kwargs=kwargs):
                return fn(a * 2, **kwargs)
            expected, actual = _numpy_and_compiled(program, x, backend)
            assert_like_numpy(expected, actual, f"np.{op}(x0, {kwargs}) on {backend}")
            if not isinstance(expected, Exception):
                assert mc.explain(program)(x).graph_break_count == 0, f"np.{op}(x0, {kwargs})"


@pytest.mark.parametrize("backend", BACKENDS)
def test_scans_and_take_of_a_0d_array(backend):
    x = np.array(-2.5, np.float64)
    programs = [lambda a: np.cumsum(a, axis=-1), lambda a: np.cumsum(a * 2, axis=0), lambda a: np.cumsum(a),
                lambda a: np.cumprod(a, axis=0), lambda a: np.cumsum(a, axis=1),
                lambda a: np.take(a, 0, axis=0), lambda a: np.take(a, [0, 0], axis=-1),
                lambda a: np.take(a, 0, axis=1)]
    for i, program in enumerate(programs):
        expected, actual = _numpy_and_compiled(program, x, backend)
        assert_like_numpy(expected, actual, f"program {i} on {backend}")
