"""The benchmark workloads, each in plain NumPy and (for comparison) in PyTorch.

A workload is a NumPy function, a maker of its inputs, and optionally the
same computation written for torch, so that eager NumPy, minicompile, torch
eager and ``torch.compile`` run the same math on the same data in one process.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..examples.gelu_layernorm import gelu_layernorm

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(var + eps)


def adam(param, grad, m, v, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, step=10):
    # Functional: returns the new arrays (in-place updates are not captured).
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    m_hat = m / (1.0 - beta1 ** step)
    v_hat = v / (1.0 - beta2 ** step)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def attention(q, k, v, mask):
    # Causal attention: mask[i, j] is True where query i may see key j.
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(q.shape[-1]))
    scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ v


def mlp(x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def tiny(x):
    return x + 1.0


def _torch_versions() -> dict[str, Callable]:
    import torch

    def t_gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))

    def t_softmax(x):
        m = x.amax(dim=-1, keepdim=True)
        e = torch.exp(x - m)
        return e / e.sum(dim=-1, keepdim=True)

    def t_layer_norm(x, eps=1e-5):
        mean = x.mean(dim=-1, keepdim=True)
        c = x - mean
        return c / torch.sqrt((c * c).mean(dim=-1, keepdim=True) + eps)

    def t_gelu_layernorm(x):
        return t_layer_norm(t_gelu(x))

    def t_adam(param, grad, m, v, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, step=10):
        m = beta1 * m + (1.0 - beta1) * grad
        v = beta2 * v + (1.0 - beta2) * grad * grad
        m_hat = m / (1.0 - beta1 ** step)
        v_hat = v / (1.0 - beta2 ** step)
        return param - lr * m_hat / (torch.sqrt(v_hat) + eps), m, v

    def t_attention(q, k, v, mask):
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
        scores = torch.where(mask, scores, -torch.inf)
        return t_softmax(scores) @ v

    def t_mlp(x, w1, b1, w2, b2):
        return t_gelu(x @ w1 + b1) @ w2 + b2

    return {"gelu": t_gelu, "softmax": t_softmax, "layer_norm": t_layer_norm,
            "gelu_layernorm": t_gelu_layernorm, "adam": t_adam, "attention": t_attention,
            "mlp": t_mlp, "tiny": lambda x: x + 1.0}


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[bool], tuple]
    memory_bound: bool = True
    kernel_goal: int | None = None  # the most kernels the fused version should need

    def bytes_moved(self, inputs: tuple, outputs: tuple) -> int:
        """Minimum traffic: read every input once, write every output once."""
        return sum(np.asarray(a).nbytes for a in inputs) + sum(np.asarray(o).nbytes for o in outputs)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _randn(*shape: int) -> Callable[[bool], tuple]:
    def make(quick: bool) -> tuple:
        dims = (max(shape[0] // 8, 1),) + shape[1:] if quick else shape
        return (_rng().standard_normal(dims, dtype=np.float32),)
    return make


def _adam_inputs(quick: bool) -> tuple:
    n = (1 << 22) // (8 if quick else 1)
    rng = _rng()
    param, grad, m = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    v = np.abs(rng.standard_normal(n, dtype=np.float32))
    return param, grad, m, v


def _attention_inputs(quick: bool) -> tuple:
    b, h, t, d = (2, 8, 256, 64) if quick else (8, 8, 256, 64)
    rng = _rng()
    q, k, v = (rng.standard_normal((b, h, t, d), dtype=np.float32) for _ in range(3))
    return q, k, v, np.tril(np.ones((t, t), dtype=bool))


def _mlp_inputs(quick: bool) -> tuple:
    n, d, hidden = (128, 1024, 4096) if quick else (512, 1024, 4096)
    rng = _rng()
    scale = np.float32(1.0 / math.sqrt(d))
    return (rng.standard_normal((n, d), dtype=np.float32),
            rng.standard_normal((d, hidden), dtype=np.float32) * scale,
            rng.standard_normal(hidden, dtype=np.float32),
            rng.standard_normal((hidden, d), dtype=np.float32) * scale,
            rng.standard_normal(d, dtype=np.float32))


WORKLOADS = [
    Workload("gelu", gelu, _randn(1 << 22), kernel_goal=1),
    Workload("softmax", softmax, _randn(4096, 1024), kernel_goal=2),
    Workload("layer_norm", layer_norm, _randn(4096, 1024), kernel_goal=2),
    Workload("gelu_layernorm", gelu_layernorm, _randn(4096, 1024)),
    Workload("adam", adam, _adam_inputs, kernel_goal=1),
    Workload("attention", attention, _attention_inputs, memory_bound=False),
    Workload("mlp", mlp, _mlp_inputs, memory_bound=False),
    Workload("tiny", tiny, lambda quick: (np.ones(8, np.float32),), memory_bound=False),
]


def torch_versions() -> dict[str, Callable] | None:
    try:
        return _torch_versions()
    except ImportError:
        return None
