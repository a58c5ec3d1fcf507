"""Softmax attention as one flash-style Triton kernel (codegen/triton/attention.py).

Hypothesis draws the attention NumPy programs write — scores scaled by a
division or a product (or not), masked by a boolean mask broadcast over the
batch (or not; causal, random, rows masked entirely), any fill, sizes with
tails against the blocks, one to three batch dimensions, float32 and float16 —
and runs them through Triton's interpreter against NumPy: the pattern must
fire (one template kernel, no extern) and the values agree, NaN rows
included.  Programs that only look like attention (the softmax over another
axis, a scale after the softmax, the scores also returned, no max subtracted)
must not fire, and stay right.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402

from attention_programs import mask_of, program  # noqa: E402

TOLERANCE = {np.float32: 2e-5, np.float16: 2e-2}


def schedule_of(fn) -> str:
    return fn.cache[0].compiled.schedule


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_attention_is_one_template_kernel_and_matches_numpy(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float16]))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    m, n = data.draw(st.integers(1, 70)), data.draw(st.integers(1, 70))
    d, dv = data.draw(st.sampled_from([4, 16, 24, 64])), data.draw(st.sampled_from([8, 16, 40]))
    scale = data.draw(st.sampled_from(["divide", "times", "times_left", "none"]))
    masked = data.draw(st.booleans())
    fill = data.draw(st.sampled_from([-np.inf, -1e9, 0.0, -30.0]))
    kind = data.draw(st.sampled_from(["causal", "random", "rows"]))
    mask_batch = data.draw(st.sampled_from([(), batch[-1:], batch])) if masked else ()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    q = rng.standard_normal(batch + (m, d)).astype(dtype)
    k = rng.standard_normal(batch + (n, d)).astype(dtype)
    v = rng.standard_normal(batch + (n, dv)).astype(dtype)
    mask = mask_of(rng, kind, mask_batch, m, n)
    fn = program(scale, masked, fill)
    with np.errstate(all="ignore"):
        want = fn(q, k, v, mask)
        compiled = mc.compile(fn, backend="triton")
        got = compiled(q, k, v, mask)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype], equal_nan=True)
    assert "template flash attention" in schedule_of(compiled) and "extern" not in schedule_of(compiled)


def test_a_transposed_head_layout_is_read_at_its_strides():
    """The decoder's layout: heads split by a reshape and a transpose of [B, S, H * D]."""
    def heads(x, w_q, w_k, w_v):
        b, s, dim = x.shape

        def split(t):
            return t.reshape(b, s, 4, dim // 4).transpose(0, 2, 1, 3)

        q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
        scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(dim // 4)
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights = weights / weights.sum(axis=-1, keepdims=True)
        return (weights @ v).transpose(0, 2, 1, 3).reshape(b, s, dim)

    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 33, 64)).astype(np.float32)
    ws = [rng.standard_normal((64, 64)).astype(np.float32) / 8 for _ in range(3)]
    compiled = mc.compile(heads, backend="triton")
    np.testing.assert_allclose(compiled(x, *ws), heads(x, *ws), rtol=2e-5, atol=2e-5)
    assert "template flash attention [2, 4] x [33, 16] x [33, 16]" in schedule_of(compiled)


def other_axis(q, k, v):
    s = q @ k.T
    s = s - s.max(axis=0, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=0, keepdims=True)) @ v


def scaled_after(q, k, v):
    s = q @ k.T
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True) * 0.5) @ v


def scores_returned(q, k, v):
    s = q @ k.T
    t = s - s.max(axis=-1, keepdims=True)
    e = np.exp(t)
    return (e / e.sum(axis=-1, keepdims=True)) @ v, s


def no_max(q, k, v):
    e = np.exp(q @ k.T)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize("fn", [other_axis, scaled_after, scores_returned, no_max])
def test_what_only_looks_like_attention_does_not_fire(fn):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((20, 8)).astype(np.float32) for _ in range(3))
    compiled = mc.compile(fn, backend="triton")
    got, want = compiled(q, k, v), fn(q, k, v)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    assert "flash attention" not in schedule_of(compiled)


def test_the_log_says_why_a_softmax_attention_did_not_fire(capsys):
    from minicompile import logs

    logs.set_logs("patterns")
    try:
        rng = np.random.default_rng(3)
        q, k, v = (rng.standard_normal((20, 8)).astype(np.float32) for _ in range(3))
        mc.compile(scores_returned, backend="triton")(q, k, v)
    finally:
        logs.set_logs("")
    assert "attention: not at" in capsys.readouterr().err
