"""A 3-layer MLP classifier trained with Adam on synthetic data, in plain NumPy.

The model and the optimizer are ordinary NumPy functions.  Training either runs
them eagerly on the tape (``mc.value_and_grad``) or compiles the loss with
``mc.compile`` so that the forward and the backward are each one compiled graph;
``train`` returns the loss curve so the two can be compared step by step.
With CuPy arrays (``train(xp=cupy)``) the same code trains on the GPU.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import minicompile as mc

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def init_params(sizes=(32, 64, 64, 4), seed: int = 0, dtype=np.float64) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(dtype))
        params.append(np.zeros(fan_out, dtype))
    return params


def synthetic_data(n: int = 256, features: int = 32, classes: int = 4, seed: int = 1, dtype=np.float64):
    """Points around one random center per class; labels one-hot."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, features)) * 2.0
    labels = rng.integers(0, classes, n)
    x = centers[labels] + rng.standard_normal((n, features))
    return x.astype(dtype), np.eye(classes, dtype=dtype)[labels]


def loss_fn(w1, b1, w2, b2, w3, b3, x, y):
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * h * h * h)))
    h = h @ w2 + b2
    h = 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * h * h * h)))
    logits = h @ w3 + b3
    m = logits.max(axis=1, keepdims=True)
    shifted = logits - m
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -(log_probs * y).sum(axis=1).mean()


BETA1, BETA2 = 0.9, 0.999


def adam(param, grad, m, v, correction1, correction2, lr=1e-2, eps=1e-8):
    """One Adam update, functional: returns the new parameter and moments.

    The bias corrections ``1 - beta**step`` change every step; they come in as
    0-d arrays, which are graph inputs, rather than Python floats, which a
    compiled function would specialize on (one recompile per step).
    """
    m = BETA1 * m + (1.0 - BETA1) * grad
    v = BETA2 * v + (1.0 - BETA2) * grad * grad
    m_hat = m / correction1
    v_hat = v / correction2
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def train(steps: int = 50, compiled: bool = False, backend: str = "auto", dtype=np.float64,
          xp: Any = np) -> list[float]:
    """Adam on the synthetic data; the loss before each step.  ``dtype`` is
    that of the weights, the data and Adam's moments (NumPy keeps it: Python
    float constants do not promote float32 arrays, NEP 50).  ``xp``: the array
    module it trains in (NumPy, or CuPy on the GPU: ``xp.asarray`` copies the
    initial weights and the data there once)."""
    params = [xp.asarray(p) for p in init_params(dtype=dtype)]
    x, y = (xp.asarray(a) for a in synthetic_data(dtype=dtype))
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    loss = mc.compile(loss_fn, backend=backend) if compiled else loss_fn
    update: Callable = mc.compile(adam, backend=backend) if compiled else adam
    curve = []
    for step in range(1, steps + 1):
        tensors = [mc.Tensor(p, requires_grad=True) for p in params]
        value = loss(*tensors, x, y)
        value.backward()
        curve.append(float(value.data))
        c1, c2 = xp.asarray(1.0 - BETA1 ** step, dtype), xp.asarray(1.0 - BETA2 ** step, dtype)
        new = [update(p, t.grad, m, v, c1, c2) for p, t, (m, v) in zip(params, tensors, moments)]
        params = [n[0] for n in new]
        moments = [(n[1], n[2]) for n in new]
    return curve
