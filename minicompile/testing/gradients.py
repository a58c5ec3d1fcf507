"""Are the gradients right?  ``mc.grad`` against central differences in random directions.

In:  a NumPy function of float64 arrays, the point to check it at, and
     optionally a backend (the gradient of ``mc.compile(fn, backend=...)``).
Out: :func:`check_gradients` returns nothing, or raises ``AssertionError``
     with the directional derivative ``mc.grad`` gives and the one central
     differences give, as HIPS/autograd's and JAX's ``check_grads`` do.

The function's result may be an array of any shape: the loss checked is its
projection on fixed random weights, so every element of the result matters.
Its gradient with respect to every array argument together, dotted with a
random direction ``d``, must match ``(L(x + eps d) - L(x - eps d)) / 2 eps``.
``order=2`` also checks a Hessian-vector product (``mc.grad`` of the gradient
along ``v``) against differences of gradients.  Choose points away from kinks
(``abs`` at zero, ties of ``max``): there the two sides legitimately disagree.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import minicompile as mc


def projected(fn: Callable, seed: int = 0) -> Callable:
    """``sum(fn(*args) * W)`` for fixed random weights ``W`` of the result's shape."""
    weights: dict[tuple, np.ndarray] = {}

    def loss(*args: Any) -> Any:
        out = fn(*args)
        shape = np.shape(out)
        if shape not in weights:
            weights[shape] = np.random.default_rng(seed + len(shape) * 7 + int(np.prod(shape))).standard_normal(shape)
        return np.sum(out * weights[shape])

    return loss


def directions(args: list, seed: int) -> list[np.ndarray]:
    """A random direction per argument (zero where the argument is NaN)."""
    rng = np.random.default_rng(seed)
    return [np.where(np.isnan(a), 0.0, rng.standard_normal(np.shape(a))) for a in args]


def directional(loss: Callable, args: list, direction: list, eps: float) -> float:
    """Central difference of ``loss`` at ``args`` along ``direction``."""
    plus = loss(*[a + eps * d for a, d in zip(args, direction)])
    minus = loss(*[a - eps * d for a, d in zip(args, direction)])
    return float((plus - minus) / (2 * eps))


def central_differences(loss: Callable, args: list, which: int, eps: float = 1e-6) -> np.ndarray:
    """The whole gradient of the scalar ``loss`` with respect to ``args[which]``, element by
    element: :func:`directional` along each basis direction of that argument."""
    grad = np.zeros(np.shape(args[which]))
    for j in range(grad.size):
        direction = [np.zeros(np.shape(a)) for a in args]
        direction[which].flat[j] = 1.0
        grad.flat[j] = directional(loss, args, direction, eps)
    return grad


def dot(grads: Any, direction: list) -> float:
    return float(sum(np.nansum(np.where(np.isnan(d), 0.0, np.asarray(g) * d)) for g, d in zip(grads, direction)))


def check_gradients(fn: Callable, *args: np.ndarray, order: int = 1, backend: Any = None,
                    eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-6, n_directions: int = 2,
                    seed: int = 0) -> None:
    """Check ``mc.grad(fn)`` (``mc.grad(mc.compile(fn, backend=backend))`` when a
    backend is given) at ``args`` against central differences along
    ``n_directions`` random directions; ``order=2`` adds a Hessian-vector product.
    The arguments should be float64 (central differences need the precision)."""
    if order not in (1, 2):
        raise ValueError(f"check_gradients: order must be 1 or 2, not {order}")
    args = [np.asarray(a) for a in args]
    loss = projected(fn, seed)
    name = getattr(fn, "__qualname__", repr(fn))
    how = "on the tape" if backend is None else f"compiled with backend {backend!r}"
    argnums = tuple(range(len(args)))
    with np.errstate(all="ignore"):
        loss(*args)  # fixes the weights for the result's shape
        target = loss if backend is None else mc.compile(loss, backend=backend)
        grads = mc.grad(target, argnums=argnums)(*args)
        for i, (g, a) in enumerate(zip(grads, args)):
            if np.shape(g) != np.shape(a) or np.asarray(g).dtype != a.dtype:
                raise AssertionError(f"gradient of {name} ({how}) for argument {i}: "
                                     f"{np.asarray(g).dtype}{list(np.shape(g))}, argument {a.dtype}{list(a.shape)}")
            if np.any(np.isnan(g)):
                raise AssertionError(f"gradient of {name} ({how}) for argument {i} holds NaN: {g!r}")
        for k in range(n_directions):
            d = directions(args, seed + k)
            analytic, numeric = dot(grads, d), directional(loss, args, d, eps)
            if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
                raise AssertionError(
                    f"gradient of {name} ({how}) along random direction {k} (seed {seed + k}): "
                    f"mc.grad gives {analytic!r}, central differences (eps={eps:g}) {numeric!r}; "
                    f"difference {abs(analytic - numeric):.3g} (rtol={rtol:g}, atol={atol:g})")
        if order == 2:
            _check_second_order(loss, target, args, argnums, name, how, seed, rtol * 10, atol * 10)


def _check_second_order(loss: Callable, target: Callable, args: list, argnums: tuple, name: str, how: str,
                        seed: int, rtol: float, atol: float) -> None:
    """A Hessian-vector product H v (mc.grad of <mc.grad(f), v>) against differences of gradients."""
    v = directions(args, seed + 5)
    first = mc.grad(target, argnums=argnums)

    def along_v(*xs: Any) -> Any:
        return sum(np.sum(g * vi) for g, vi in zip(first(*xs), v))

    hv = mc.grad(along_v, argnums=argnums)(*args)
    u = directions(args, seed + 6)
    eps = 1e-5
    plus = mc.grad(loss, argnums=argnums)(*[a + eps * ui for a, ui in zip(args, u)])
    minus = mc.grad(loss, argnums=argnums)(*[a - eps * ui for a, ui in zip(args, u)])
    analytic, numeric = dot(hv, u), dot([(p - m) / (2 * eps) for p, m in zip(plus, minus)], v)
    if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
        raise AssertionError(
            f"second derivative of {name} ({how}): u·Hv from mc.grad of mc.grad is {analytic!r}, "
            f"from differences of gradients (eps={eps:g}) {numeric!r} (rtol={rtol:g}, atol={atol:g})")
