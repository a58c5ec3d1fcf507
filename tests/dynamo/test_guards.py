"""Guards and recompiles: a cache entry is reused exactly when its assumptions still hold.

Capture specializes on everything it looked at: each array input's type, shape,
dtype and strides, and the type and value of each Python scalar.  Those facts
become the entry's guard function.  A call whose inputs satisfy the guards
reuses the entry; any other call compiles a new entry, up to
``config.recompile_limit`` (8) entries, after which the function runs eagerly
with one warning.  A stale entry must never run: that would be a silently wrong
result.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import config
from minicompile.logs import set_logs
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

RNG = np.random.default_rng(1)


def randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)



def scale_shift(x, s):
    return x * s + 1


def double(x):
    return x * 2


# ---------------------------------------------------------------------------
# When an entry is reused, and when a new one is compiled
# ---------------------------------------------------------------------------


def test_same_shapes_twice_use_one_entry():
    f = mc.compile(double, backend="eager")
    f(randn(2, 3))
    entry = f.cache[0]
    x = randn(2, 3)  # new values, same shape/dtype/strides
    assert_same(f(x), x * 2)
    assert len(f.cache) == 1 and f.cache[0] is entry


@pytest.mark.parametrize(
    "first, second",
    [
        pytest.param(randn(2, 3), randn(3, 3), id="new-shape"),
        pytest.param(randn(2, 3), randn(2, 3, 1), id="new-rank"),
        pytest.param(randn(2, 3), randn(2, 3, dtype=np.float32), id="new-dtype"),
        pytest.param(randn(3, 3), randn(3, 3).T, id="new-strides-transposed"),
        pytest.param(randn(4), randn(8)[::2], id="new-strides-step"),
        pytest.param(randn(3, 4), np.broadcast_to(randn(4), (3, 4)), id="new-strides-broadcast"),
    ],
)
def test_new_array_layout_recompiles(first, second):
    f = mc.compile(double, backend="eager")
    assert_same(f(first), first * 2)
    assert_same(f(second), second * 2)
    assert len(f.cache) == 2
    assert_same(f(first), first * 2)  # the first entry still serves the first layout
    assert len(f.cache) == 2


@pytest.mark.parametrize(
    "x, first, second",
    [
        pytest.param(randn(3), 2.0, 3.0, id="new-float-value"),
        pytest.param(randn(3), 2, 5, id="new-int-value"),
        pytest.param(np.arange(3, dtype=np.int32), 2, 2.0, id="int-then-float"),  # int32 vs float64
        pytest.param(np.array([True, False]), True, 1, id="bool-then-int"),  # bool vs int64
        pytest.param(randn(3, dtype=np.float32), 2.0, np.float64(2.0), id="float-then-np-float64"),
        pytest.param(randn(3), float("nan"), 1.0, id="nan-then-float"),
    ],
)
def test_new_python_scalar_recompiles(x, first, second):
    f = mc.compile(scale_shift, backend="eager")
    assert_same(f(x, first), scale_shift(x, first))
    assert_same(f(x, first), scale_shift(x, first))
    assert len(f.cache) == 1
    assert_same(f(x, second), scale_shift(x, second))
    assert len(f.cache) == 2


def test_zero_float_scalar_is_guarded():
    x = randn(3)
    f = mc.compile(scale_shift, backend="eager")
    f(x, 0.0)
    assert_same(f(x, 0.0), scale_shift(x, 0.0))  # second call evaluates the guard
    assert len(f.cache) == 1


def test_negative_zero_recompiles():
    x = np.ones(3)
    # 0.0 == -0.0, but x * 0.0 and x * -0.0 differ in the sign of their zeros.
    g = mc.compile(lambda x, s: x * s, backend="eager")
    assert not np.signbit(g(x, 0.0)).any()
    assert np.signbit(g(x, -0.0)).all()
    assert len(g.cache) == 2


def test_nan_scalar_hits_its_entry():
    x = randn(3)
    f = mc.compile(scale_shift, backend="eager")
    f(x, float("nan"))
    assert np.isnan(f(x, float("nan"))).all()
    assert len(f.cache) == 1


def test_keyword_and_default_arguments_are_guarded():
    def affine(x, scale=2.0, *, shift=0):
        return x * scale + shift

    x = randn(3)
    f = mc.compile(affine, backend="eager")
    assert_same(f(x), affine(x))
    assert_same(f(x, shift=1), affine(x, shift=1))
    assert_same(f(x, 2.0), affine(x))  # same as the defaults: first entry
    assert len(f.cache) == 2


GLOBAL_W = np.ones((3, 2))
GLOBAL_SCALE = 2.0


def uses_globals(x):
    return (x @ GLOBAL_W) * GLOBAL_SCALE


def test_global_values_are_read_per_call_and_guarded():
    global GLOBAL_W, GLOBAL_SCALE
    saved = GLOBAL_W, GLOBAL_SCALE
    f = mc.compile(uses_globals, backend="eager")
    x = randn(4, 3)
    try:
        assert_same(f(x), uses_globals(x))
        GLOBAL_W = randn(3, 2)  # new values, same shape: same entry, new data
        assert_same(f(x), uses_globals(x))
        assert len(f.cache) == 1
        GLOBAL_W = randn(3, 5)  # new shape: recompile
        assert_same(f(x), uses_globals(x))
        GLOBAL_SCALE = -1.0  # new Python value: recompile
        assert_same(f(x), uses_globals(x))
        assert len(f.cache) == 3
    finally:
        GLOBAL_W, GLOBAL_SCALE = saved


def test_closure_cells_are_guarded():
    def make():
        scale = 1.0

        def scaled(x):
            return x * scale

        def set_scale(value):
            nonlocal scale
            scale = value

        return scaled, set_scale

    scaled, set_scale = make()
    f = mc.compile(scaled, backend="eager")
    x = randn(3)
    assert_same(f(x), x * 1.0)
    set_scale(3.0)
    assert_same(f(x), x * 3.0)
    assert len(f.cache) == 2


def test_graph_break_entries_are_cached_and_guarded_too():
    def prints(x):
        print(x.shape)
        return x + 1

    f = mc.compile(prints, backend="eager")
    f(randn(2))
    f(randn(2))
    assert len(f.cache) == 1
    assert f.cache[0].capture.break_reason is not None
    f(randn(5))
    assert len(f.cache) == 2


# ---------------------------------------------------------------------------
# The recompile limit, reset, and looking at guards
# ---------------------------------------------------------------------------


def test_recompile_limit_then_eager_with_one_warning():
    assert config.recompile_limit == 8
    f = mc.compile(double, backend="eager", dynamic=False)  # every size its own entry
    for n in range(1, 9):  # 8 distinct shapes: 8 entries
        x = randn(n)
        assert_same(f(x), x * 2)
    assert len(f.cache) == 8

    x = randn(9)
    with pytest.warns(UserWarning, match="recompile limit") as record:
        assert_same(f(x), x * 2)  # the 9th distinct input runs eagerly
    assert len(record) == 1
    assert len(f.cache) == 8

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        for n in (10, 11, 9):
            x = randn(n)
            assert_same(f(x), x * 2)
        x = randn(3)
        assert_same(f(x), x * 2)  # entries still serve the shapes they were made for
    assert len(f.cache) == 8


def test_reset_clears_every_cache():
    f = mc.compile(double, backend="eager")
    g = mc.compile(scale_shift, backend="eager")
    f(randn(2))
    g(randn(2), 3)
    mc.reset()
    assert len(f.cache) == 0 and len(g.cache) == 0
    x = randn(2)
    assert_same(f(x), x * 2)
    assert len(f.cache) == 1


def test_guard_source_is_printable():
    f = mc.compile(scale_shift, backend="eager")
    f(np.ones((2, 3), dtype=np.float32), 2.5)
    source = f.cache[0].guard.source
    assert source.startswith("def guard(L, G):")
    assert "L['x'].shape == (2, 3)" in source
    assert "L['x'].dtype ==" in source
    assert "L['x'].strides == (12, 4)" in source
    assert "type(L['s']) is" in source
    compile(source, "<guard>", "exec")  # valid Python


def test_recompiles_log_names_the_failing_guard(capsys):
    f = mc.compile(double, backend="eager")
    set_logs("recompiles")
    try:
        f(randn(2, 3))
        assert capsys.readouterr().err == ""  # the first compile is not a recompile
        f(randn(4, 3))
        err = capsys.readouterr().err
    finally:
        set_logs("")
    assert "[minicompile:recompiles]" in err
    assert "double" in err
    assert "L['x'].shape == (2, 3)" in err
    assert "(4, 3)" in err  # what it saw instead


def test_recompiles_log_for_dtype_and_scalar(capsys):
    f = mc.compile(scale_shift, backend="eager")
    set_logs("recompiles")
    try:
        f(randn(3), 2)
        f(randn(3, dtype=np.float32), 2)
        dtype_log = capsys.readouterr().err
        f(randn(3, dtype=np.float32), 5)
        value_log = capsys.readouterr().err
    finally:
        set_logs("")
    assert "L['x'].dtype" in dtype_log and "float32" in dtype_log
    assert "L['s']" in value_log and "5" in value_log


# ---------------------------------------------------------------------------
# Property: one compiled function, any call sequence, always eager's answer
# ---------------------------------------------------------------------------


def guarded_fn(x, s):
    y = x * s + 1
    if x.ndim >= 2:
        y = y.sum(axis=0)
    # Python values computed while tracing: constants of the cache entry.
    return y, x.shape, x.dtype.itemsize * s


SHAPES = [(), (3,), (4,), (2, 3), (3, 2), (2, 1, 3)]
DTYPES = [np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)]
LAYOUTS = ["contiguous", "transposed", "strided"]
# Scalars that compare equal but differ in type (True == 1 == 1.0 == np.float32(1)):
# only a type guard tells them apart; 0.0 and -0.0 differ only in their sign.
SCALARS = [True, False, 0, 1, 1.0, np.float32(1.0), np.int32(1), 2, 2.0, np.float64(2.0),
           -1, -1.0, 0.5, -1.5, math.inf, 0.0, -0.0, np.float64(-0.0)]


@st.composite
def call_sequences(draw):
    """Up to 12 calls drawn from a few shapes, dtypes, layouts and scalars, so they repeat."""
    def few(options, most):
        return draw(st.lists(st.sampled_from(options), min_size=1, max_size=most, unique_by=repr))

    shapes, dtypes, layouts, scalars = few(SHAPES, 2), few(DTYPES, 2), few(LAYOUTS, 2), few(SCALARS, 3)
    n = draw(st.integers(1, 12))
    return [
        (draw(st.sampled_from(shapes)), draw(st.sampled_from(dtypes)),
         draw(st.sampled_from(layouts)), draw(st.sampled_from(scalars)))
        for _ in range(n)
    ]


def make_input(shape, dtype, layout, rng):
    if layout == "transposed" and len(shape) >= 2:
        return np.ascontiguousarray(rng.integers(-3, 4, shape[::-1]).astype(dtype)).T
    if layout == "strided" and len(shape) >= 1:
        return rng.integers(-3, 4, (2 * shape[0],) + shape[1:]).astype(dtype)[::2]
    return rng.integers(-3, 4, shape).astype(dtype)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=call_sequences(), seed=st.integers(0, 2**16))
def test_any_call_sequence_matches_eager(calls, seed):
    rng = np.random.default_rng(seed)
    f = mc.compile(guarded_fn, backend="eager")  # a fresh cache for each example
    with np.errstate(all="ignore"):  # inf * 0 and friends
        for shape, dtype, layout, s in calls:
            x = make_input(shape, dtype, layout, rng)
            check_one_call(f, x, s)
    assert len(f.cache) <= config.recompile_limit


def check_one_call(f, x, s):
    try:
        expected = guarded_fn(x, s)
    except Exception as e:  # bool - bool and friends: the same error, compiled
        with pytest.raises(type(e)), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(x, s)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recompile-limit warning
        actual = f(x, s)
    assert_same(actual, expected)
