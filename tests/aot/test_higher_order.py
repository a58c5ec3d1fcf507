"""Higher-order gradients: nested mc.grad, mc.jacobian, mc.hessian, Hessian-vector products.

On the tape (the backward recorded on the tape, torch's ``create_graph=True``)
and compiled (a compiled region's backward run as a training graph of its
own), against closed forms and finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import minicompile as mc
from minicompile.aot import Tensor

X = np.array([0.3, -1.2, 2.0])


def energy(x):
    return np.sum(np.sin(x) * x ** 2)


def energy_hessian(x):
    return np.diag(-np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x))


def compiled(fn, backend):
    return fn if backend is None else mc.compile(fn, backend=backend)


@pytest.mark.parametrize("backend", [None, "aot_eager", "cpp"])
def test_hessian(backend):
    f = compiled(energy, backend)
    np.testing.assert_allclose(mc.hessian(f)(X), energy_hessian(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_second_and_third_derivative_of_a_scalar(backend):
    f = compiled(lambda s: np.sin(s) * s ** 3, backend)
    s = 0.7
    d2 = mc.grad(mc.grad(f))(np.array(s))
    np.testing.assert_allclose(d2, -np.sin(s) * s ** 3 + 6 * s ** 2 * np.cos(s) + 6 * s * np.sin(s), rtol=1e-12)
    d3 = mc.grad(mc.grad(mc.grad(f)))(np.array(s))
    exact = -np.cos(s) * s ** 3 - 9 * s ** 2 * np.sin(s) + 18 * s * np.cos(s) + 6 * np.sin(s)
    np.testing.assert_allclose(d3, exact, rtol=1e-10)


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_hessian_vector_product(backend):
    f = compiled(lambda x, w: np.sum(np.tanh(x @ w) ** 2), backend)
    w = np.random.default_rng(0).standard_normal((3, 2))
    v = np.array([1.0, 2.0, -1.0])
    hvp = mc.grad(lambda x: np.sum(mc.grad(f)(x, w) * v))(X)
    eps = 1e-5
    grad = mc.grad(lambda x, w: np.sum(np.tanh(x @ w) ** 2))
    numeric = (grad(X + eps * v, w) - grad(X - eps * v, w)) / (2 * eps)
    np.testing.assert_allclose(hvp, numeric, rtol=1e-6, atol=1e-8)


def test_jacobian_shapes_and_values():
    J = mc.jacobian(lambda x: np.tanh(x)[::-1] * 2)(X)
    np.testing.assert_allclose(J, np.diag(2 / np.cosh(X) ** 2)[::-1], rtol=1e-12)  # out[i] = 2 tanh(x[2 - i])
    A = np.arange(6.0).reshape(2, 3)
    Ja, Jx = mc.jacobian(lambda a, x: a @ x, argnums=(0, 1))(A, X)
    assert Ja.shape == (2, 2, 3) and Jx.shape == (2, 3)
    np.testing.assert_allclose(Jx, A)
    np.testing.assert_allclose(Ja[1, 1], X)
    np.testing.assert_allclose(Ja[0, 1], 0)


def test_hessian_by_several_arguments():
    f = lambda x, y: np.sum(x ** 2 * y)  # noqa: E731
    (hxx, hxy), (hyx, hyy) = mc.hessian(f, argnums=(0, 1))(X, X + 1)
    np.testing.assert_allclose(hxx, np.diag(2 * (X + 1)))
    np.testing.assert_allclose(hxy, np.diag(2 * X))
    np.testing.assert_allclose(hyx, np.diag(2 * X))
    np.testing.assert_allclose(hyy, 0)


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x y)] = d/dx x^2 = 2x: the inner derivative is by y only
    g = mc.grad(lambda x: x * mc.grad(lambda y: x * y)(np.array(1.0)))(np.array(2.0))
    assert float(g) == 4.0
    g = mc.grad(lambda x: mc.grad(lambda y: np.sin(x * y))(x))(np.array(0.5))  # f(x) = x cos(x^2)
    np.testing.assert_allclose(g, np.cos(0.25) - 2 * 0.25 * np.sin(0.25), rtol=1e-12)


def test_backward_with_create_graph():
    t = Tensor(X, requires_grad=True)
    energy(t).backward(create_graph=True)
    assert isinstance(t.grad, Tensor)
    g = t.grad
    t.grad = None
    np.sum(g).backward()
    np.testing.assert_allclose(t.grad, energy_hessian(X).sum(axis=0), rtol=1e-12)


def test_second_order_of_piecewise_linear_is_zero():
    f = lambda x: np.sum(np.abs(x) * 3 + np.maximum(x, 0.1))  # noqa: E731
    np.testing.assert_array_equal(mc.hessian(f)(X), np.zeros((3, 3)))
