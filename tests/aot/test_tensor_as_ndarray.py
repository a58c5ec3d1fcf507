"""mc.Tensor behaves like an ndarray: NumPy's functions, methods, operators, conversions, writes.

Each function is differentiated on the tape and its gradient checked against
central differences; conversions never turn a tensor that requires grad
into plain numbers silently; every op of the registry either has a rule or
is listed as non-differentiable with its reason.
"""
from __future__ import annotations

import numpy as np
import pytest

import minicompile as mc
from minicompile.aot import DERIVATIVES, NON_DIFFERENTIABLE, Tensor
from minicompile.aot.derivatives import REWRITTEN_FOR_GRADIENTS
from minicompile.ir import OPS

X = np.random.default_rng(0).standard_normal((3, 4))

FUNCTIONS = {
    "split": lambda a: np.split(a, 3)[1],
    "array_split": lambda a: np.array_split(a, 3, axis=1)[0],
    "vsplit": lambda a: np.vsplit(a, 3)[2],
    "hsplit": lambda a: np.hsplit(a, [1])[1],
    "dsplit": lambda a: np.dsplit(a[None], 2)[0],
    "gradient": lambda a: np.gradient(a)[0] * np.gradient(a, 0.5, axis=1, edge_order=2),
    "partition": lambda a: np.partition(a, 1, axis=1),
    "rollaxis": lambda a: np.rollaxis(a, 1),
    "select": lambda a: np.select([a > 0.5, a < -0.5], [a * 2, np.sin(a)], 0.25),
    "flipud_fliplr": lambda a: np.flipud(a) * np.fliplr(a),
    "append": lambda a: np.append(a, a[0] * 2),
    "append_axis": lambda a: np.append(a, a[:1], axis=0),
    "real_imag": lambda a: np.real(a) + np.imag(a),
    "ndim": lambda a: a * np.ndim(a) + np.size(a) + np.shape(a)[0],
    "r_": lambda a: np.r_[a[0], a[1, :2]],
    "c_": lambda a: np.c_[a[0], a[1]],
    "degrees_radians_conjugate": lambda a: np.degrees(a) + np.radians(a) + np.conjugate(a),
    "methods": lambda a: a.var(axis=0) + a.std(axis=0) + a.ravel()[:4] + a.flatten()[4:8] + a[:1].squeeze(),
    "more_methods": lambda a: a.cumsum(axis=1)[0] + a.clip(-0.5, 0.5)[1] + a.T.dot(a[:, 0]) + a.diagonal().sum(),
    "modulo": lambda a: (a + 5.0) % 1.5,
    "array_of_0d": lambda a: np.array([a[0, 0], a[1, 1] * 2]) ** 2,
    "exp_of_array_of_0d": lambda a: np.exp(np.array([a[0, 0], a[1, 1]])),
    "stack_of_0d": lambda a: np.stack([a[0, 0], a[1, 1]]),
    "dot_with_python_float": lambda a: np.dot(a, 2.5),
    "einsum_sublist": lambda a: np.einsum(a, [0, 1], a, [0, 1], [1]),
    "std_of_one": lambda a: np.std(a[0, 0]) + np.std(a[:1], axis=0) + a[0],
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradient_through_numpy_function(name):
    fn = FUNCTIONS[name]
    weights = np.random.default_rng(1).standard_normal(np.shape(fn(X)))

    def loss(a):
        return np.sum(fn(a) * weights)

    g = mc.grad(loss)(X)
    assert g.shape == X.shape and not np.any(np.isnan(g))
    rng, eps = np.random.default_rng(2), 1e-6
    for _ in range(2):
        d = rng.standard_normal(X.shape)
        numeric = (loss(X + eps * d) - loss(X - eps * d)) / (2 * eps)
        assert np.isclose(np.sum(g * d), numeric, rtol=1e-5, atol=1e-7)


def test_conversions():
    t = Tensor(np.array(2.5), requires_grad=True)
    assert int(t) == 2 and float(t) == 2.5 and bool(t)
    with pytest.raises(TypeError, match="cut the tape"):
        np.asarray(Tensor(X, requires_grad=True), dtype=np.float64)
    np.testing.assert_array_equal(np.asarray(Tensor(X)), X)  # no gradient: plain values are fine
    objects = np.array([t, t])
    assert objects.dtype == object and all(isinstance(v, Tensor) for v in objects)


def test_in_place_writes_take_a_new_tape_node():
    def f(a, b):
        out = a * 1.0
        out[1, 1:3] = b * 3.0
        np.copyto(out, b[0] * 2, where=np.array([True, False, True, False]))
        np.add.at(out, np.array([0, 0]), b[1])
        np.put_along_axis(out, np.array([[2], [0], [1]]), b[0], axis=1)
        return np.sum(out * np.arange(12.0).reshape(3, 4))

    a, b = X, np.array([0.5, -1.0])
    ga, gb = mc.grad(f, argnums=(0, 1))(a, b)
    eps, rng = 1e-6, np.random.default_rng(3)
    da, db = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    numeric = (f(a + eps * da, b + eps * db) - f(a - eps * da, b - eps * db)) / (2 * eps)
    assert np.isclose(np.sum(ga * da) + np.sum(gb * db), numeric, rtol=1e-6)
    leaf = Tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf[0, 0] = 1.0


def test_an_output_that_does_not_depend_on_the_input_has_zero_gradient():
    np.testing.assert_array_equal(mc.grad(lambda a: 3.0)(X), np.zeros_like(X))
    np.testing.assert_array_equal(mc.grad(lambda a: np.sum(np.ones(3)))(X), np.zeros_like(X))
    np.testing.assert_array_equal(mc.grad(lambda a: np.sum(np.floor(a)))(X), np.zeros_like(X))


def test_every_op_has_a_rule_or_a_reason():
    """A rule, a reason it needs none, or a rewrite into ops that have rules (loops): one each."""
    kinds = (DERIVATIVES, NON_DIFFERENTIABLE, REWRITTEN_FOR_GRADIENTS)
    counts = {op: sum(op in kind for kind in kinds) for op in OPS}
    assert {op for op, n in counts.items() if n != 1} == set()


@pytest.mark.parametrize("op", sorted(NON_DIFFERENTIABLE))
def test_a_listed_op_gives_no_float_from_float_inputs(op):
    """A non-differentiable op either takes no array or never makes a float from floats:
    whatever path goes through it carries no gradient (its derivative is zero)."""
    with np.errstate(all="ignore"):
        if NON_DIFFERENTIABLE[op].startswith("no array input"):
            return
        definition = OPS[op]
        floats = np.array([0.5, 1.5, -2.0])
        try:
            out = definition.impl(*[floats if i < 2 else p.default for i, p in
                                    enumerate(definition.signature.parameters.values())
                                    if i < 2 or p.default is not p.empty])
        except (TypeError, ValueError, IndexError):
            return  # refuses floats altogether (bitwise ops, gcd)
        assert np.asarray(out).dtype.kind != "f", f"np.{op} made floats from floats"
