"""Gradients through the NumPy functions captured as the ops they are made of (dynamo/polyfills).

Each case is a scalar function of one float64 array: a NumPy function followed
by a fixed random projection of its output (so every output element matters).
Compiled and differentiated (``mc.grad(mc.compile(f))``: the joint graph built
from the ops' derivative rules), its gradient along random directions must
match central finite differences of the eager function.  Inputs keep away from
the kinks (ties, zeros where a rule divides) unless the case is about them.
"""
import numpy as np
import pytest

import minicompile as mc

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 5))
V = RNG.standard_normal(5)
W = RNG.random(5) + 0.5
WITH_ZEROS = np.where(np.abs(X) < 0.4, 0.0, X)

_WEIGHTS: dict[tuple, np.ndarray] = {}


def project(y):
    """A scalar that depends on every element of y: sum(y * fixed weights for its shape)."""
    return (y * _WEIGHTS[np.shape(y)]).sum()


CASES = {
    "sinc": (lambda a: np.sinc(a), X),
    "angle": (lambda a: np.angle(a) + a, X),  # arctan2(0, a): piecewise constant
    "select": (lambda a: np.select([a > 0.5, a < -0.5], [a * 2, np.sin(a)], default=0.0), X),
    "append": (lambda a: np.append(a, a[0] * 3), X),
    "delete": (lambda a: np.delete(a, [0, 2], axis=1), X),
    "delete_flat": (lambda a: np.delete(a, 3), X),
    "insert_one_place": (lambda a: np.insert(a, 1, a[:, 0] * 2, axis=1), X),
    "insert_places": (lambda a: np.insert(a, [0, 2, 2], a[:, :3], axis=1), X),
    "fliplr": (lambda a: np.fliplr(a) + np.flipud(a), X),
    "diagflat": (lambda a: np.diagflat(a[0], 1), X),
    "split": (lambda a: np.hsplit(a, [2])[1] * np.vsplit(a, 3)[0].sum(), X),
    "vander": (lambda a: np.vander(a, 4), V),
    "vander_through_zero": (lambda a: np.vander(a, 4), np.array([1.5, 0.0, -2.0])),
    "cov": (lambda a: np.cov(a), X),
    "cov_weighted": (lambda a: np.cov(a, aweights=W, rowvar=False), X.T),
    "corrcoef": (lambda a: np.corrcoef(a), X),
    "ediff1d": (lambda a: np.ediff1d(a, to_begin=a[0], to_end=[1.0]), V),
    "average": (lambda a: np.average(a, axis=1), X),
    "average_weighted": (lambda a: np.average(a, axis=1, weights=W), X),
    "average_of_weights": (lambda w: np.average(X, axis=1, weights=w), W),
    "trapezoid": (lambda a: np.trapezoid(a, axis=0), X),
    "trapezoid_over_x": (lambda x: np.trapezoid(X, x), np.cumsum(W)),
    "logspace": (lambda a: np.logspace(a, 2, 3), V),
    "geomspace": (lambda a: np.geomspace(np.abs(a) + 1, 10, 3), V),
    "partition": (lambda a: np.partition(a, 2, axis=1), X),
    "partition_flat": (lambda a: np.partition(a, (1, 7), axis=None), X),
    "cumprod_through_zeros": (lambda a: np.cumprod(a, axis=1), WITH_ZEROS),
    "cumprod_flat": (lambda a: np.cumprod(a[:, :3]), WITH_ZEROS),
}


@pytest.mark.parametrize("name", CASES)
def test_gradient_matches_central_differences(name):
    fn, x = CASES[name]
    with np.errstate(all="ignore"):
        out = fn(x)
    _WEIGHTS.setdefault(np.shape(out), np.random.default_rng(len(_WEIGHTS)).standard_normal(np.shape(out)))

    def loss(a):
        return project(fn(a))

    backend = "cpp" if name in ("cov", "partition", "insert_places", "cumprod_through_zeros") else "eager"
    grad = mc.grad(mc.compile(loss, backend=backend))(x)
    assert grad.shape == x.shape and grad.dtype == x.dtype
    rng, eps = np.random.default_rng(1), 1e-6
    for _ in range(3):
        d = rng.standard_normal(x.shape)
        numeric = (loss(x + eps * d) - loss(x - eps * d)) / (2 * eps)
        assert np.isclose(np.sum(grad * d), numeric, rtol=1e-5, atol=1e-7), (np.sum(grad * d), numeric)
