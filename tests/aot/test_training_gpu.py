"""Training on a real GPU: the decoder's SGD step and the MLP with Adam on CuPy
arrays, compiled with ``backend="triton"`` (forward and backward graphs), follow
CuPy eager's loss curve, and every gradient is a CuPy array.

Skipped unless CuPy sees a CUDA device and Triton is installed; on a CPU,
``test_training_on_device_arrays.py`` runs the same programs on a stand-in for CuPy.
"""
from __future__ import annotations

import numpy as np
import pytest

from gpu_device import cp, requires_gpu  # noqa: E402  (skips without CuPy and Triton)

pytestmark = requires_gpu

import minicompile as mc  # noqa: E402
from minicompile.examples import decoder_block, mlp_train  # noqa: E402

SMALL = decoder_block.Config(vocab=32, dim=32, heads=2, layers=1, hidden=64, seq=16)
# float32 on both sides; the compiled kernels sum in another order than CuPy's.
RTOL = 1e-4


def _decoder_inputs():
    params = decoder_block.to_module(decoder_block.init_params(SMALL), cp)
    cos, sin = decoder_block.rotary_tables(SMALL)
    tokens, targets = decoder_block.synthetic_tokens(SMALL, batch=2)
    data = (tokens, targets, cos, sin, decoder_block.causal_mask(SMALL), SMALL.heads, SMALL.layers)
    return params, decoder_block.to_module(data, cp)


def _leaves(tree: dict) -> list:
    return [x for v in tree.values() for x in (_leaves(v) if isinstance(v, dict) else [v])]


def test_decoder_gradients_are_cupy_arrays_equal_to_eager():
    params, data = _decoder_inputs()
    grads = []
    for loss in (decoder_block.loss, mc.compile(decoder_block.loss, backend="triton")):
        tensors = decoder_block.as_tensors(params)
        loss(tensors, *data).backward()
        grads.append([t.grad for t in _leaves(tensors)])
    for got, expected in zip(*grads[::-1]):
        assert type(got) is cp.ndarray and got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(expected), rtol=RTOL, atol=1e-5)


def test_decoder_training_follows_cupy_eager():
    eager = decoder_block.train(SMALL, steps=5, batch=2, xp=cp)
    compiled = decoder_block.train(SMALL, steps=5, batch=2, xp=cp, compiled=True, backend="triton")
    np.testing.assert_allclose(compiled, eager, rtol=RTOL)
    assert compiled[-1] < compiled[0]


def test_mlp_with_adam_follows_cupy_eager():
    eager = mlp_train.train(steps=10, dtype=np.float32, xp=cp)
    compiled = mlp_train.train(steps=10, compiled=True, backend="triton", dtype=np.float32, xp=cp)
    np.testing.assert_allclose(compiled, eager, rtol=RTOL)
    assert compiled[-1] < compiled[0]


def test_value_and_grad_of_cupy_arrays_through_triton():
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((16, 8)).astype(np.float32)

    def loss(w, x):
        return (np.tanh(x @ w) ** 2).mean()

    value, grad = mc.value_and_grad(mc.compile(loss, backend="triton"))(cp.asarray(w), cp.asarray(x))
    expected_value, expected_grad = mc.value_and_grad(loss)(w, x)
    assert type(grad) is cp.ndarray and grad.dtype == np.float32
    np.testing.assert_allclose(float(value), expected_value, rtol=RTOL)
    np.testing.assert_allclose(cp.asnumpy(grad), expected_grad, rtol=RTOL, atol=1e-6)
