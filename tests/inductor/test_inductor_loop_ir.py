"""Index expressions simplify as they are built; lowering writes readable loop IR."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicompile import ir
from minicompile.inductor import loop_ir as L
from minicompile.inductor.lowering import lower
from minicompile.ir import TensorMeta

x0, x1 = (L.Expr({v: 1}) for v in L.loop_vars("x", (4, 6)))


def test_identities_and_constant_folding():
    assert x0 * 1 == x0  # x*1 -> x
    assert x0 + 0 == x0  # x+0 -> x
    assert (x0 * 0).is_const and (x0 * 0).const == 0
    assert (L.Expr.of(7) * 3 + 2).const == 23
    assert x0 + x0 == x0 * 2
    assert L.floordiv(x0, 1) == x0 and L.mod(x0, 1) == L.Expr()


def test_division_and_modulo_use_ranges():
    assert L.floordiv(x1, 6) == L.Expr()  # 0 <= x1 < 6
    assert L.mod(x1, 6) == x1
    assert L.floordiv(x0 * 6 + x1, 6) == x0
    assert L.mod(x0 * 6 + x1, 6) == x1
    assert L.floordiv(L.floordiv(x0 * 6 + x1, 2), 3) == x0


def test_reshape_round_trip_folds_to_loop_variables():
    (y,) = L.loop_vars("y", (24,))
    ye = L.Expr({y: 1})
    unravel = (L.floordiv(ye, 12), L.mod(L.floordiv(ye, 4), 3), L.mod(ye, 4))
    assert L.linearize(unravel, (12, 4, 1)) == ye


def test_printing():
    e = L.floordiv(x0 * 6 + x1 + 4, 4)
    assert str(x0 * 6 + x1) == "6*x0 + x1"
    assert "//" in str(e)
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta((4, 6), np.dtype(np.float32)))
    node = g.call("sum", g.call("transpose", a, (1, 0)), axis=1)
    red = lower(node)
    assert isinstance(red, L.Reduction) and red.acc_dtype == np.float64
    assert "Reduction sum" in str(red) and "transpose[x0, r0]" in str(red)


def test_affine_only():
    with pytest.raises(ValueError):
        x0 * x1


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.lists(st.integers(0, 7), min_size=1, max_size=3),
    st.integers(0, 9),
    st.integers(1, 12),
)
def test_simplified_expressions_evaluate_like_python(sizes, coeffs, const, d):
    variables = L.loop_vars("v", tuple(sizes))
    e = L.Expr({v: c for v, c in zip(variables, coeffs)}, const)
    for point in np.ndindex(*sizes):
        env = {v.name: int(i) for v, i in zip(variables, point)}
        value = sum(c * env[v.name] for v, c in zip(variables, coeffs)) + const
        assert evaluate(L.floordiv(e, d), env) == value // d
        assert evaluate(L.mod(e, d), env) == value % d
        assert evaluate(L.floordiv(L.mod(e, d * 2), d), env) == (value % (2 * d)) // d
        # A reshape undone (d*(e//d) + e%d folds to e): its constant included.
        assert evaluate(L.floordiv(e, d) * d + L.mod(e, d), env) == value


def evaluate(e: L.Expr, env: dict[str, int]) -> int:
    total = e.const
    for atom, c in e.terms:
        if isinstance(atom, L.Var):
            total += c * env[atom.name]
        elif isinstance(atom, L.FloorDiv):
            total += c * (evaluate(atom.base, env) // atom.divisor)
        else:
            total += c * (evaluate(atom.base, env) % atom.divisor)
    return total


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(-3, 3), st.integers(0, 30), st.integers(2, 7))
def test_division_of_a_non_negative_index_with_negative_terms(n, coeff, const, d):
    """``(const + coeff*x) // d`` and ``% d`` over ``0 <= x < n`` (a reversed view of a
    reshape gives ``11 - x``): the simplified form evaluates as Python's, and never
    leaves a possibly negative remainder for C's truncating ``/`` and ``%``."""
    x = L.Expr({L.loop_vars("x", (n,))[0]: 1})
    e = x * coeff + const
    if e.bounds()[0] < 0:
        return  # not an index
    for fn, py in ((L.floordiv, lambda v: v // d), (L.mod, lambda v: v % d)):
        out = fn(e, d)
        for atom, _ in out.terms:
            if isinstance(atom, (L.FloorDiv, L.Mod)):
                assert atom.base.bounds()[0] >= 0, (fn.__name__, e, out)
        for i in range(n):
            assert evaluate(out, {"x0": i}) == py(coeff * i + const), (fn.__name__, e, out, i)

