"""Attention's backward as flash-style Triton kernels (codegen/triton/attention_backward.py).

Training graphs on the Triton backend run the attention pattern through a pre-grad
pass, so the ``attention`` node's own rule gives the backward: each row's
log-sum-exp, then one kernel each for dq, dkᵀ and dv that recomputes the softmax's
weights.  Hypothesis draws the programs of test_triton_attention.py (scales, masks
broadcast or not, causal, random, rows masked entirely, any fill, tails, batch
dimensions, float32 and float16) and compares every gradient through Triton's
interpreter with ``aot_eager``'s, which differentiates the unfused ops: NaN where
it has NaN.  The rule itself is checked in float64 against central differences
(the templates take float32 and float16, so float64 runs the ops' references),
and a second derivative goes through the unfused joint graph.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile.aot import Tensor  # noqa: E402
from minicompile.testing.gradients import central_differences  # noqa: E402

from attention_programs import mask_of, program  # noqa: E402
from test_triton_attention import TOLERANCE  # noqa: E402


def gradients(fn, backend, *arrays):
    """The gradients of ``sum(fn(*arrays) * weights)``, by ``backend``, and the compiled entry."""
    mc.reset()
    compiled = mc.compile(fn, backend=backend)
    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    compiled(*tensors).backward()
    return [t.grad for t in tensors], compiled.cache[0].compiled


def backward_schedule(aot) -> str:
    return aot._backward.schedule + aot.forward.schedule


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_attention_gradients_are_template_kernels_and_match_the_unfused_ops(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float32, np.float16]))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    m, n = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40))
    d, dv = data.draw(st.sampled_from([4, 16, 24])), data.draw(st.sampled_from([8, 16, 40]))
    scale = data.draw(st.sampled_from(["divide", "times", "times_left", "none"]))
    masked = data.draw(st.booleans())
    fill = data.draw(st.sampled_from([-np.inf, -1e9, 0.0, -30.0]))
    kind = data.draw(st.sampled_from(["causal", "random", "rows"]))
    mask_batch = data.draw(st.sampled_from([(), batch[-1:], batch])) if masked else ()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    q, k = (rng.standard_normal(batch + (s, d)).astype(dtype) for s in (m, n))
    v = rng.standard_normal(batch + (n, dv)).astype(dtype)
    weights = rng.standard_normal(batch + (m, dv)).astype(dtype)
    mask = mask_of(rng, kind, mask_batch, m, n)
    attention = program(scale, masked, fill)

    def loss(q, k, v):
        return (attention(q, k, v, mask) * weights).sum()

    with np.errstate(all="ignore"):
        want, _ = gradients(loss, "aot_eager", q, k, v)
        got, aot = gradients(loss, "triton", q, k, v)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        scale_of = np.nanmax(np.abs(w), initial=1.0)
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype] * 5, atol=TOLERANCE[dtype] * 5 * scale_of,
                                   equal_nan=True)
    text = backward_schedule(aot)
    for part in ("(stats)", "(q)", "(kt)", "(v)"):
        assert f"template flash attention backward {part}" in text, text
    assert "extern" not in aot._backward.schedule


def test_the_rule_matches_central_differences_in_float64():
    """float64 runs the ops' NumPy references (no template takes it): the rule alone."""
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 7, 3))
    v, weights = rng.standard_normal((2, 7, 4)), rng.standard_normal((2, 5, 4))
    mask = np.tril(np.ones((5, 7), bool))
    mask[1] = False
    attention = program("divide", True, -30.0)

    def loss(q, k, v):
        return (attention(q, k, v, mask) * weights).sum()

    got, aot = gradients(loss, "triton", q, k, v)
    assert any(n.op.name == "attention_grad" for n in aot.partition.backward.calls)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, central_differences(loss, [q, k, v], i), rtol=1e-6, atol=1e-8)


def test_a_second_derivative_goes_through_the_unfused_ops():
    """Differentiated again, the attention's backward is the unfused joint graph's."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((1, 6, 4)).astype(np.float32) for _ in range(3))
    attention = program("times", False, 0.0)

    def loss(q):
        return (attention(q, k, v, None) ** 2).sum()

    direction = rng.standard_normal(q.shape).astype(np.float32)

    def hvp(backend):
        mc.reset()
        f = mc.compile(loss, backend=backend)
        return mc.grad(lambda x: np.sum(mc.grad(f)(x) * direction))(q)

    np.testing.assert_allclose(hvp("triton"), hvp("aot_eager"), rtol=1e-4, atol=1e-5)


def test_a_float64_scale_keeps_the_ops():
    """``/ np.sqrt(d)`` is a float64 scalar: NumPy computes float64 scores, so the pattern
    must not fire (its kernel is float32), and the gradients stay right."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 8, 4)).astype(np.float32) for _ in range(3))

    def loss(q, k, v):
        s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        return ((e / e.sum(axis=-1, keepdims=True)) @ v).sum()

    want, _ = gradients(loss, "aot_eager", q, k, v)
    got, aot = gradients(loss, "triton", q, k, v)
    assert not any(n.op.name.startswith("attention") for n in aot.joint.graph.calls)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_row_masked_entirely_with_a_finite_fill_has_uniform_weights_in_the_backward():
    """A row masked entirely with -1e9 has uniform weights 1/n.  The backward once kept each
    row's ``m + log(l)`` in float32, where ``-1e9 + log(2)`` is ``-1e9``: weights of 1, and
    dv twice NumPy's.  The maximum and the sum are now kept apart."""
    rng = np.random.default_rng(6)
    q, k = rng.standard_normal((1, 3, 4)).astype(np.float32), rng.standard_normal((1, 2, 4)).astype(np.float32)
    v, weights = rng.standard_normal((1, 2, 8)).astype(np.float32), rng.standard_normal((1, 3, 8)).astype(np.float32)
    mask = np.array([[False, False], [True, False], [True, True]])
    attention = program("divide", True, -1e9)

    def loss(q, k, v):
        return (attention(q, k, v, mask) * weights).sum()

    want, _ = gradients(loss, "aot_eager", q, k, v)
    got, aot = gradients(loss, "triton", q, k, v)
    assert "template flash attention backward (v)" in aot._backward.schedule
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
