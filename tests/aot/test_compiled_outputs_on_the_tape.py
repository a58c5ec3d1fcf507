"""A compiled region's outputs used by eager code on the tape, call after call.

A compiled function with mc.Tensor inputs is one node on the tape: the eager
code after it reads its outputs as it likes (``out.T``, ``out[::-1]``, a
broadcast, not at all), so the gradient reaching each output comes in
whatever layout the tape's rules made it: the transpose rule's is a
transposed view.  The compiled backward is compiled once, on the first
``backward()``, for the layout of that call's tangents; a later call whose
tangents came another way must still get the right gradients.  (They were
silently wrong on the C++ and Triton backends: a backward compiled for the
transposed tangent of ``(f(x).T * c).sum()`` read the C-ordered one of
``(f(x) * c.T).sum()`` as if it were transposed.)

Hypothesis draws regions (one to three outputs, an input passed through, a view
of one) and, for each of several calls, how eager code reads each output; the
gradients accumulated in ``.grad`` over the calls must equal the sum of each
call's central differences.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.testing.gradients import central_differences

try:
    import triton  # noqa: F401
    BACKENDS: tuple[str, ...] = ("aot_eager", "cpp", "triton")  # triton in its interpreter (conftest)
except ImportError:
    BACKENDS = ("aot_eager", "cpp")

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 15)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

X = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])
W = np.array([0.5, -1.5, 0.8])

# Compiled regions of (x [2, 3], w [3]): each returns a tuple of outputs.
REGIONS = {
    "one": lambda x, w: (np.sin(x) * w,),
    "a view of an input": lambda x, w: (np.tanh(x * w), x.T),
    "three": lambda x, w: ((x * w).sum(), x @ w, np.exp(x) * 0.5),
    "an input itself": lambda x, w: (x, w * 2.0),
    "a transposed result": lambda x, w: ((np.cos(x) * w).T, np.sum(x * x, axis=0)),
}

# How eager code reads one output ``o`` (any shape); ``None``: it does not.
READS = [
    None,
    "o",
    "o.T",
    "o[::-1]",
    "o.reshape(-1)[::2]",
    "np.broadcast_to(o, (2,) + o.shape)",
    "o * o",
    "np.expand_dims(o, 0).swapaxes(0, -1)",
    "np.flip(o.T, 0)[..., 1:]",
]


def weights(shape):
    return np.random.default_rng(len(shape) * 7 + int(np.prod(shape))).standard_normal(shape)


def read(expr, o):
    value = eval(expr, {"np": np, "o": np.atleast_1d(o)})  # (a sum's 0-d result too)
    return np.sum(value * weights(np.shape(value)))


def loss_of(region, reads):
    def loss(x, w):
        outs = region(x, w)
        return sum((read(r, o) for r, o in zip(reads, outs) if r is not None), 0.0 * np.sum(w))
    return loss


@SETTINGS
@given(st.sampled_from(sorted(REGIONS)), st.lists(st.lists(st.sampled_from(READS), min_size=3, max_size=3),
                                                   min_size=2, max_size=4))
def test_gradients_reaching_a_compiled_region_in_any_layout(name, calls):
    note(f"{name}: {calls}")
    region = REGIONS[name]
    want = [sum(central_differences(loss_of(region, reads), [X, W], k) for reads in calls) for k in range(2)]
    for backend in BACKENDS:
        mc.reset()
        compiled = mc.compile(region, backend=backend)
        x, w = mc.Tensor(X.copy(), requires_grad=True), mc.Tensor(W.copy(), requires_grad=True)
        for reads in calls:
            loss = loss_of(compiled, reads)(x, w)
            np.testing.assert_allclose(float(loss), loss_of(region, reads)(X, W), rtol=1e-12, err_msg=backend)
            if isinstance(loss, mc.Tensor) and loss.requires_grad:
                loss.backward()
        for t, g in zip((x, w), want):
            got = np.zeros_like(g) if t.grad is None else t.grad
            np.testing.assert_allclose(got, g, rtol=1e-6, atol=1e-7, err_msg=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backward_compiled_for_a_transposed_tangent_takes_a_contiguous_one(backend):
    f = mc.compile(lambda x: np.sin(x) * 2.0, backend=backend)
    c = np.arange(6.0).reshape(3, 2)
    x = mc.Tensor(X.copy(), requires_grad=True)
    (f(x).T * c).sum().backward()  # the tangent arrives as a transposed view: the backward compiles
    x.grad = None
    (f(x) * c.T.copy()).sum().backward()  # a C-ordered one
    np.testing.assert_allclose(x.grad, 2.0 * np.cos(X) * c.T, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_second_derivative_through_tangents_of_two_layouts(backend):
    f = mc.compile(lambda x: np.sin(x) * 2.0, backend=backend)
    c, v = np.arange(6.0).reshape(3, 2), np.arange(6.0).reshape(2, 3)
    for cotangent in (lambda y: (y.T * c).sum(), lambda y: (y * c.T.copy()).sum()):
        x = mc.Tensor(X.copy(), requires_grad=True)
        cotangent(f(x)).backward(create_graph=True)
        g, x.grad = x.grad, None
        np.testing.assert_allclose(g.data, 2.0 * np.cos(X) * c.T, rtol=1e-12)
        (g * v).sum().backward()
        np.testing.assert_allclose(x.grad, -2.0 * np.sin(X) * c.T * v, rtol=1e-12)
