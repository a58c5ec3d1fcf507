"""NumPy's exact semantics in the generated C++: the corners C gets wrong by default."""
from __future__ import annotations

import numpy as np
import pytest

from minicompile import ir
from minicompile.ir import TensorMeta

from inductor_testing import check, run_both

SPECIALS = [-np.inf, -7.5, -3.0, -2.0, -0.5, -0.0, 0.0, 0.5, 2.0, 3.0, 7.5, np.inf, np.nan]


def binary(op: str, a: np.ndarray, b: np.ndarray):
    g = ir.Graph()
    x = g.placeholder("a", TensorMeta(a.shape, a.dtype))
    y = g.placeholder("b", TensorMeta(b.shape, b.dtype))
    g.output([g.call(op, x, y)])
    expected, actual, _ = run_both(g, [a, b])
    return np.asarray(expected[0]), np.asarray(actual[0])


def unary_graph(op: str, a: np.ndarray, *args, **kwargs):
    g = ir.Graph()
    x = g.placeholder("a", TensorMeta(a.shape, a.dtype))
    g.output([g.call(op, x, *args, **kwargs)])
    return g


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_integer_division_by_zero_and_overflow(op, dtype):
    info = np.iinfo(dtype)
    if info.min:
        a = np.array([7, -7, 0, info.min, info.max, info.min, 5, -5], dtype)
        b = np.array([0, 0, 0, -1, -1, 0, 3, -3], dtype)
    else:
        a = np.array([7, 0, info.max, 5], dtype)
        b = np.array([0, 0, 3, 2], dtype)
    expected, actual = binary(op, a, b)
    np.testing.assert_array_equal(actual, expected)
    assert actual.dtype == expected.dtype


def test_int_min_floor_divide_minus_one_wraps():
    for dtype in (np.int32, np.int64):
        info = np.iinfo(dtype)
        expected, actual = binary("floor_divide", np.array([info.min], dtype), np.array([-1], dtype))
        assert actual[0] == expected[0] == info.min


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_float_floor_divide_and_remainder_match_npy_divmod(op, dtype):
    a, b = np.meshgrid(np.array(SPECIALS, dtype), np.array(SPECIALS, dtype))
    expected, actual = binary(op, a, b)
    np.testing.assert_array_equal(actual, expected)
    same = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(actual[same]), np.signbit(expected[same]))


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan(op):
    a = np.array([1.0, np.nan, 3.0, np.nan, -np.inf], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan, 0.0], np.float32)
    expected, actual = binary(op, a, b)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_reductions_propagate_nan(op):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 5.0], [4.0, 1.0, np.nan], [-np.inf, -np.inf, -np.inf]])
    for axis in (0, 1, None):
        check(unary_graph(op, x, axis=axis), [x])


def test_float16_from_exp_of_bool():
    x = np.array([True, False, True])
    compiled = check(unary_graph("exp", x), [x])
    result = compiled(x)[0]
    assert result.dtype == np.float16
    np.testing.assert_array_equal(result, np.exp(x))
    assert "_Float16" in compiled.kernel_source


def test_float16_arithmetic_rounds_after_each_op():
    x = np.linspace(-10, 10, 101).astype(np.float16)
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta(x.shape, x.dtype))
    g.output([g.call("multiply", g.call("add", a, 0.1), g.call("divide", a, 3))])
    expected, actual, _ = run_both(g, [x])
    np.testing.assert_array_equal(actual[0], expected[0])


def test_float32_times_point_one_is_bit_exact():
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    compiled = check(unary_graph("multiply", x, 0.1), [x])
    result = compiled(x)[0]
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result.view(np.uint32), (x * 0.1).view(np.uint32))
    assert "double" not in compiled.kernel_source.split('extern "C"')[1]


def test_strong_numpy_scalar_promotes():
    x = np.arange(6, dtype=np.float32)
    compiled = check(unary_graph("multiply", x, np.float64(0.1)), [x])
    assert compiled(x)[0].dtype == np.float64


def test_nan_inf_and_extreme_integer_constants():
    x = np.array([1.0, -2.0, 0.0], np.float64)
    for c in (float("nan"), float("inf"), -float("inf"), -0.0, 1e-310):
        check(unary_graph("add", x, c), [x])
    i = np.array([0, 1, -1], np.int64)
    for c in (-(2**63), 2**63 - 1):
        check(unary_graph("add", i, c), [i])
    u = np.array([0, 1, 2], np.uint64)
    check(unary_graph("add", u, 2**64 - 1), [u])


def test_integer_overflow_wraps():
    x = np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min, 3], np.int32)
    for op, c in [("add", 1), ("multiply", 3), ("subtract", 2), ("power", 3)]:
        check(unary_graph(op, x, c), [x])
    check(unary_graph("absolute", x), [x])
    check(unary_graph("negative", x), [x])


def test_reduction_dtypes_and_empty_reductions():
    i = np.arange(12, dtype=np.int32).reshape(3, 4) * 100000000
    check(unary_graph("sum", i, axis=1), [i])  # int32 sums in int64
    check(unary_graph("prod", i + 1, axis=0), [i + 1])  # wraps in int64
    check(unary_graph("mean", i, axis=0), [i])
    check(unary_graph("sum", i, axis=1, dtype=np.int16), [i])
    b = np.array([[True, False], [True, True]])
    check(unary_graph("sum", b, axis=0), [b])
    empty = np.zeros((3, 0), np.float32)
    for op in ("sum", "prod", "mean"):
        check(unary_graph(op, empty, axis=1), [empty])


def test_zero_d_results_are_scalars_as_in_numpy():
    x = np.arange(5.0)
    compiled = check(unary_graph("sum", x), [x])
    assert isinstance(compiled(x)[0], np.float64)


def test_where_condition_is_truthiness():
    c = np.array([0.0, np.nan, -0.0, 2.0])
    g = ir.Graph()
    a = g.placeholder("c", TensorMeta(c.shape, c.dtype))
    g.output([g.call("where", a, 1, 2)])
    check(g, [c])


def test_casts_as_numpy_does():
    f = np.array([-3.7, -0.5, 0.0, 0.5, 3.7, 100.9], np.float64)
    for target in (np.int32, np.int64, np.int8, np.bool_, np.float16, np.float32):
        check(unary_graph("astype", f, target), [f])
    i = np.array([-(2**62), -1, 0, 70000, 2**40], np.int64)
    for target in (np.float16, np.float32, np.float64, np.int16, np.uint8, np.bool_):
        check(unary_graph("astype", i, target), [i])


def test_large_full_reduction_in_parallel():
    x = np.random.default_rng(2).standard_normal(1 << 20)
    check(unary_graph("sum", x), [x])
    n = np.arange(1 << 20, dtype=np.int64)
    check(unary_graph("sum", n * n), [n * n])
    check(unary_graph("max", x), [x])


@pytest.mark.parametrize("ints", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
@pytest.mark.parametrize("floats", [np.float32, np.float64])
def test_float_to_int_and_back_has_no_negative_zero(ints, floats):
    """``(-0.25).astype(int).astype(float)`` is +0.0 (an integer has no sign of zero);
    GCC folds the round trip to trunc(), which is -0.0: 1 / it would be -inf."""
    g = ir.Graph()
    x = g.placeholder("a", TensorMeta((6,), np.dtype(floats)))
    back = g.call("astype", g.call("astype", x, np.dtype(ints)), np.dtype(floats))
    g.output([g.call("divide", 1.0, back)])
    # Only values the integer type holds: out of its range NumPy's cast is undefined.
    a = np.array([-0.25, -0.75, 0.5, 1.5, 2.25, -0.0], floats)
    expected, actual, _ = run_both(g, [a])
    np.testing.assert_array_equal(actual[0], expected[0])
    assert (np.signbit(actual[0]) == np.signbit(expected[0])).all()
