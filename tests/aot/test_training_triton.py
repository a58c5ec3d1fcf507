"""Training through the triton backend on the CPU (kernels in Triton's interpreter):
the decoder's gradients against eager NumPy's.

Its backward holds what its forward does not: the gradient of a slice is a pad,
whose border is a masked select inside a kernel, read next to other inlined
values (the rotary halves) — the GPU module tests/aot/test_training_gpu.py runs
the same on CuPy arrays.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile.examples import decoder_block as D  # noqa: E402

SMALL = D.Config(vocab=32, dim=32, heads=2, layers=1, hidden=64, seq=16)


def _leaves(tree: dict) -> list:
    return [x for v in tree.values() for x in (_leaves(v) if isinstance(v, dict) else [v])]


def test_decoder_gradients_equal_eager_numpys():
    params = D.init_params(SMALL)
    cos, sin = D.rotary_tables(SMALL)
    tokens, targets = D.synthetic_tokens(SMALL, batch=2)
    data = (tokens, targets, cos, sin, D.causal_mask(SMALL), SMALL.heads, SMALL.layers)
    grads = []
    for loss in (D.loss, mc.compile(D.loss, backend="triton")):
        tensors = D.as_tensors(params)
        loss(tensors, *data).backward()
        grads.append([t.grad for t in _leaves(tensors)])
    for got, expected in zip(*grads[::-1]):
        assert type(got) is np.ndarray and got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
