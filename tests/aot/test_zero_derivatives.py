"""Piecewise-constant and integer-valued ops on the path to a gradient; remainder and fmod.

``floor``, ``sign``, ``floor_divide``, comparisons, ``argmax``, bitwise ops...
have a derivative of zero almost everywhere: on the path to a result they
must add nothing to the gradient, and neither drop the paths around them
(``np.floor(x) + x`` has gradient 1) nor raise (``np.sum(np.floor(x))`` has
gradient 0).  ``remainder`` and ``fmod`` are no such ops: x1 - q x2 with q an
integer, their gradient is (1, -q).  Each program is written once and run on
the eager tape (``mc.grad``), and compiled through the joint graph (the
``aot_eager`` backend, and ``cpp``) — every gradient against central finite
differences, at random points a margin away from every jump.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.aot import NonDifferentiable, Tensor

EPS = 1e-6        # finite-difference step (float64)
MARGIN = 1e-3     # points this close to a jump are skipped: the step would cross it
GRID = np.linspace(-4.0, 4.0, 9)


def to_integer(q):
    return np.abs(q - np.round(q))


def to_half(q):
    return to_integer(q - 0.5)


def apart(x):
    """The smallest gap between two elements (argmax, argsort change where two tie)."""
    flat = np.sort(np.ravel(x))
    return np.min(np.diff(flat)) if flat.size > 1 else np.inf


def last(w):
    return w[..., 0]


# name -> (term(x, y, w): a scalar using the op, distance(x, y): how far the point is from a jump).
# x lies in [-4, 4], y in [0.5, 3] (a divisor); w is a fixed random weight of x's shape.
CASES = {
    # rounding: zero derivative
    "floor": (lambda x, y, w: np.sum(np.floor(x) * w), lambda x, y: to_integer(x)),
    "ceil": (lambda x, y, w: np.sum(np.ceil(x) * w), lambda x, y: to_integer(x)),
    "trunc": (lambda x, y, w: np.sum(np.trunc(x) * w), lambda x, y: to_integer(x)),
    "rint": (lambda x, y, w: np.sum(np.rint(x) * w), lambda x, y: to_half(x)),
    "round": (lambda x, y, w: np.sum(np.round(x) * w), lambda x, y: to_half(x)),
    "round_1": (lambda x, y, w: np.sum(np.round(x, 1) * w), lambda x, y: to_half(10 * x) / 10),
    "sign": (lambda x, y, w: np.sum(np.sign(x) * w), lambda x, y: np.abs(x)),
    # division: the quotient is piecewise constant, the remainder is not
    "floor_divide": (lambda x, y, w: np.sum(np.floor_divide(x, y) * w), lambda x, y: to_integer(x / y)),
    "floordiv_operator": (lambda x, y, w: np.sum((x // 1.5) * w), lambda x, y: to_integer(x / 1.5)),
    "remainder": (lambda x, y, w: np.sum(np.remainder(x, y) * w), lambda x, y: to_integer(x / y)),
    "mod": (lambda x, y, w: np.sum(np.mod(x, 2.0) * w), lambda x, y: to_integer(x / 2.0)),
    "mod_operator": (lambda x, y, w: np.sum((x % 1.5) * w), lambda x, y: to_integer(x / 1.5)),
    "rmod_operator": (lambda x, y, w: np.sum((5.0 % y) * w), lambda x, y: to_integer(5.0 / y)),
    "fmod": (lambda x, y, w: np.sum(np.fmod(x, y) * w), lambda x, y: to_integer(x / y)),
    "fmod_negative": (lambda x, y, w: np.sum(np.fmod(x, -y) * w), lambda x, y: to_integer(x / y)),
    "divmod": (lambda x, y, w: np.sum(np.divmod(x, y)[0] * w + np.divmod(x, y)[1] * w * w),
               lambda x, y: to_integer(x / y)),
    # comparisons and logic: boolean results
    "less": (lambda x, y, w: np.sum(np.less(x, 0.5) * w), lambda x, y: np.abs(x - 0.5)),
    "less_equal": (lambda x, y, w: np.sum((x <= y) * w), lambda x, y: np.abs(x - y)),
    "greater": (lambda x, y, w: np.sum((x > 0.5) * w), lambda x, y: np.abs(x - 0.5)),
    "greater_equal": (lambda x, y, w: np.sum(np.greater_equal(x, y) * w), lambda x, y: np.abs(x - y)),
    "equal": (lambda x, y, w: np.sum(np.equal(x, np.round(x)) * w), lambda x, y: np.inf),
    "not_equal": (lambda x, y, w: np.sum(np.not_equal(x, y) * w), lambda x, y: np.abs(x - y)),
    "logical_not": (lambda x, y, w: np.sum(np.logical_not(x > 0) * w), lambda x, y: np.abs(x)),
    "logical_and": (lambda x, y, w: np.sum(np.logical_and(x > 0, y > 1) * w),
                    lambda x, y: np.minimum(np.abs(x), np.abs(y - 1))),
    "logical_or": (lambda x, y, w: np.sum(np.logical_or(x > 0, y > 1) * w),
                   lambda x, y: np.minimum(np.abs(x), np.abs(y - 1))),
    "logical_xor": (lambda x, y, w: np.sum(np.logical_xor(x > 0, y > 1) * w),
                    lambda x, y: np.minimum(np.abs(x), np.abs(y - 1))),
    "isnan": (lambda x, y, w: np.sum(np.isnan(x) * w), lambda x, y: np.inf),
    "isinf": (lambda x, y, w: np.sum(np.isinf(x) * w), lambda x, y: np.inf),
    "isfinite": (lambda x, y, w: np.sum(np.isfinite(x) * w), lambda x, y: np.inf),
    # integer results
    "argmax": (lambda x, y, w: np.sum(np.argmax(x, axis=-1) * last(w)), lambda x, y: apart(x)),
    "argmin": (lambda x, y, w: np.sum(np.argmin(x * y, axis=0) * w[0]), lambda x, y: apart(x * y)),
    "argsort": (lambda x, y, w: np.sum(np.argsort(x, axis=-1) * w), lambda x, y: apart(x)),
    "searchsorted": (lambda x, y, w: np.sum(np.searchsorted(GRID, x) * w),
                     lambda x, y: np.abs(x[..., None] - GRID)),
    "any": (lambda x, y, w: np.sum(np.any(x > 0, axis=-1) * last(w)), lambda x, y: np.abs(x)),
    "all": (lambda x, y, w: np.sum(np.all(x > 0, axis=-1) * last(w)), lambda x, y: np.abs(x)),
    "count_nonzero": (lambda x, y, w: np.sum(np.count_nonzero(x > 0, axis=-1) * last(w)),
                      lambda x, y: np.abs(x)),
    "astype_int": (lambda x, y, w: np.sum(x.astype(np.int64) * w), lambda x, y: to_integer(x)),
    "bitwise_and": (lambda x, y, w: np.sum(np.bitwise_and(x.astype(np.int64), 3) * w),
                    lambda x, y: to_integer(x)),
    "bitwise_or": (lambda x, y, w: np.sum(np.bitwise_or(x.astype(np.int64), 1) * w), lambda x, y: to_integer(x)),
    "bitwise_xor": (lambda x, y, w: np.sum(np.bitwise_xor(x.astype(np.int64), 5) * w),
                    lambda x, y: to_integer(x)),
    "invert": (lambda x, y, w: np.sum(np.invert(x.astype(np.int64)) * w), lambda x, y: to_integer(x)),
    "left_shift": (lambda x, y, w: np.sum(np.left_shift(x.astype(np.int64), 2) * w), lambda x, y: to_integer(x)),
    "right_shift": (lambda x, y, w: np.sum(np.right_shift(x.astype(np.int64), 1) * w),
                    lambda x, y: to_integer(x)),
    # the others beside them in the rule table
    "heaviside": (lambda x, y, w: np.sum(np.heaviside(x, y) * w), lambda x, y: np.abs(x)),
    "copysign": (lambda x, y, w: np.sum(np.copysign(y, x) * w + np.copysign(x, -1.0) * w),
                 lambda x, y: np.abs(x)),
    "clip_arrays": (lambda x, y, w: np.sum(np.clip(x, y - 2, y) * w),
                    lambda x, y: np.minimum(np.abs(x - y + 2), np.abs(x - y))),
    "clip_upper": (lambda x, y, w: np.sum(np.clip(x, None, y) * w), lambda x, y: np.abs(x - y)),
    "nan_to_num": (lambda x, y, w: np.sum(np.nan_to_num(x) * w), lambda x, y: np.inf),
    "ones_like": (lambda x, y, w: np.sum(np.ones_like(x) * w * x), lambda x, y: np.inf),
}

# Few programs for the C++ backend (each is one compile): every case of a family summed.
FAMILIES = {
    "rounding": ["floor", "ceil", "trunc", "rint", "round", "round_1", "sign"],
    "division": ["floor_divide", "floordiv_operator", "remainder", "mod", "mod_operator", "rmod_operator",
                 "fmod", "fmod_negative"],
    "comparisons": ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_not",
                    "logical_and", "logical_or", "logical_xor", "isnan", "isinf", "isfinite"],
    "integers": ["argmax", "argmin", "argsort", "searchsorted", "any", "all", "count_nonzero", "astype_int",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"],
    "others": ["heaviside", "copysign", "clip_arrays", "clip_upper", "nan_to_num", "ones_like"],
}
# Capture does not take np.divmod into a graph: it runs eagerly, on the tape, between graphs.
NOT_CAPTURED = ["divmod"]
assert sorted(sum(FAMILIES.values(), NOT_CAPTURED)) == sorted(CASES)

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.filter_too_much])


@st.composite
def points(draw):
    """(x, y, w, v) in float64, away from 0 in y; the shape is (2, 3) or (3,)."""
    shape = draw(st.sampled_from([(2, 3), (3,)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return (rng.uniform(-4, 4, shape), rng.uniform(0.5, 3, shape),
            rng.standard_normal(shape), rng.standard_normal(shape))


def program_of(names: list[str]):
    """sum_k c_k term_k(x, y, w) + sum(v x) + sum(v y): the last two keep a path of
    gradient 1 around every op, which the op must not drop."""
    terms = [(float(k + 1), CASES[name][0]) for k, name in enumerate(names)]

    def program(x, y, w, v):
        total = np.sum(x * v) + np.sum(y * v)
        for c, term in terms:
            total = total + c * term(x, y, w)
        return total
    return program


def check_against_differences(grad_fn, names: list[str], point) -> None:
    x, y, w, v = point
    for name in names:
        assume(np.min(CASES[name][1](x, y)) > MARGIN)
    program = program_of(names)
    gx, gy = grad_fn(program)(x, y, w, v)
    assert gx.shape == x.shape and gx.dtype == x.dtype and gy.shape == y.shape
    rng = np.random.default_rng(0)
    for _ in range(2):
        dx, dy = rng.uniform(-1, 1, x.shape), rng.uniform(-1, 1, y.shape)
        with np.errstate(all="ignore"):
            plus = program(x + EPS * dx, y + EPS * dy, w, v)
            minus = program(x - EPS * dx, y - EPS * dy, w, v)
        numeric = (plus - minus) / (2 * EPS)
        analytic = np.sum(gx * dx) + np.sum(gy * dy)
        assert np.isclose(analytic, numeric, rtol=1e-6, atol=1e-6), (names, analytic, numeric, gx, gy)


def tape_grad(program):
    return mc.grad(program, argnums=(0, 1))


def compiled_grad(backend: str):
    return lambda program: mc.grad(mc.compile(program, backend=backend), argnums=(0, 1))


@pytest.mark.parametrize("name", sorted(CASES))
@SETTINGS
@given(point=points())
def test_gradient_on_the_tape_matches_differences(name, point):
    check_against_differences(tape_grad, [name], point)


@pytest.mark.parametrize("name", sorted(CASES))
@SETTINGS
@given(point=points())
def test_gradient_of_the_joint_graph_matches_differences(name, point):
    check_against_differences(compiled_grad("aot_eager"), [name], point)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(SETTINGS, max_examples=4)
@given(point=points())
def test_gradient_compiled_to_cpp_matches_differences(family, point):
    check_against_differences(compiled_grad("cpp"), FAMILIES[family], point)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_program_compiles_into_one_graph(family):
    """The compiled tests above differentiate a joint graph, not an eager fallback."""
    x, y, w, v = np.linspace(-3.3, 3.7, 6).reshape(2, 3), np.full((2, 3), 1.3), np.ones((2, 3)), np.ones((2, 3))
    explained = mc.explain(program_of(FAMILIES[family]))(x, y, w, v)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


# -- the examples, exactly --------------------------------------------------------------------

def test_remainder_has_the_gradient_of_x1_minus_q_x2():
    np.testing.assert_array_equal(mc.grad(lambda x: np.sum(np.mod(x, 2.0) + x))(np.array([0.5, 3.0])), [2.0, 2.0])
    np.testing.assert_array_equal(mc.grad(lambda y: np.sum(np.remainder(3.0, y) + y))(np.array([2.0, 1.25])),
                                  [0.0, -1.0])
    # fmod truncates where remainder floors: -7 = -1 * 5 - 2 (fmod) = -2 * 5 + 3 (remainder)
    np.testing.assert_array_equal(mc.grad(lambda y: np.sum(np.fmod(-7.0, y)))(np.array([5.0])), [1.0])
    np.testing.assert_array_equal(mc.grad(lambda y: np.sum(np.remainder(-7.0, y)))(np.array([5.0])), [2.0])


PIECEWISE_CONSTANT = [np.floor, np.ceil, np.trunc, np.rint, np.round, np.sign,
                      lambda x: np.floor_divide(x, 0.7), lambda x: (x > 0) * 1.0, lambda x: np.argmax(x) * 1.0]


@pytest.mark.parametrize("op", PIECEWISE_CONSTANT, ids=["floor", "ceil", "trunc", "rint", "round", "sign",
                                                         "floor_divide", "greater", "argmax"])
@pytest.mark.parametrize("path", ["tape", "aot_eager", "cpp"])
def test_a_piecewise_constant_result_alone_has_a_zero_gradient(op, path):
    """np.sum(np.floor(x)) alone: backward() runs and every gradient is zero, not missing."""
    x = np.array([0.3, -1.6, 2.5])
    fn = (lambda a: np.sum(op(a))) if path == "tape" else mc.compile(lambda a: np.sum(op(a)), backend=path)
    t = Tensor(x, requires_grad=True)
    out = fn(t)
    assert out.requires_grad
    out.backward()
    assert t.grad is not None and t.grad.dtype == x.dtype
    np.testing.assert_array_equal(t.grad, np.zeros(3))
    np.testing.assert_array_equal(mc.grad(fn)(x), np.zeros(3))


def test_an_integer_result_has_a_zero_gradient():
    x = np.array([0.3, -1.6, 2.5])
    for fn in (lambda a: np.sum(a > 0), lambda a: np.argmax(a), lambda a: np.count_nonzero(np.floor(a))):
        np.testing.assert_array_equal(mc.grad(fn)(x), np.zeros(3))
        np.testing.assert_array_equal(mc.grad(mc.compile(fn, backend="aot_eager"))(x), np.zeros(3))


def test_a_float_op_without_a_rule_is_named(monkeypatch):
    from minicompile.aot import DERIVATIVES
    monkeypatch.delitem(DERIVATIVES, "logaddexp2")  # every float op has one: take one away
    t = Tensor(np.array([0.5, 2.0]), requires_grad=True)
    with pytest.raises(NonDifferentiable, match="np.logaddexp2"):
        np.sum(np.logaddexp2(t, 1.0)).backward()


def test_a_form_a_rule_does_not_cover_is_named():
    m = np.array([[1.0, 2.0], [0.5, -1.0]])
    with pytest.raises(NonDifferentiable, match="ord=2"):
        mc.grad(lambda a: np.linalg.norm(a, 2))(m)
