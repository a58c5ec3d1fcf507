"""The flash-attention template on the H200, on CuPy arrays, against CuPy eager.

Skipped unless CuPy sees a CUDA device and Triton is installed.  The template's
float32 products are "tf32x3" (three tensor-core products per float32 product):
the results must stay within float32 tolerance of the exact ones, for the
decoder's shapes, a causal mask with a finite fill, and a ``-inf`` fill with
rows masked entirely (NaN, as eager).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_device import cp, requires_gpu  # noqa: E402  (skips without CuPy and Triton)

pytestmark = requires_gpu

import minicompile as mc  # noqa: E402


def attention(q, k, v, mask, fill):
    s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
    s = np.where(mask, s, fill)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize("fill", [-1e9, -np.inf])
@pytest.mark.parametrize("shape", [(2, 4, 1024, 64), (1, 3, 333, 40)])
def test_flash_attention_on_the_gpu_matches_cupy(shape, fill):
    b, h, s, d = shape
    rng = cp.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape, dtype=cp.float32) for _ in range(3))
    mask = cp.tril(cp.ones((s, s), dtype=bool))
    if fill == -np.inf:
        mask[::7] = False  # rows masked entirely: NaN rows, as CuPy's
    compiled = mc.compile(lambda q, k, v, m: attention(q, k, v, m, fill), backend="triton")
    got, want = compiled(q, k, v, mask), attention(q, k, v, mask, fill)
    assert "template flash attention" in compiled.cache[0].compiled.schedule
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=1e-5, atol=1e-5, equal_nan=True)
