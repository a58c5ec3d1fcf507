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

    return {"gelu": t_gelu, "softmax": t_softmax, "layer_norm": t_layer_norm,
            "gelu_layernorm": t_gelu_layernorm, "tiny": lambda x: x + 1.0}


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[bool], tuple]
    memory_bound: bool = True

    def bytes_moved(self, inputs: tuple) -> int:
        """Minimum traffic: read every input once, write an output as large as the first."""
        return sum(a.nbytes for a in inputs) + inputs[0].nbytes


def _randn(rows: int, cols: int) -> Callable[[bool], tuple]:
    def make(quick: bool) -> tuple:
        r, c = (rows // 8, cols) if quick else (rows, cols)
        return (np.random.default_rng(0).standard_normal((r, c), dtype=np.float32),)
    return make


WORKLOADS = [
    Workload("gelu", gelu, _randn(4096, 1024)),
    Workload("softmax", softmax, _randn(4096, 1024)),
    Workload("layer_norm", layer_norm, _randn(4096, 1024)),
    Workload("gelu_layernorm", gelu_layernorm, _randn(4096, 1024)),
    Workload("tiny", tiny, lambda quick: (np.ones(8, np.float32),), memory_bound=False),
]


def torch_versions() -> dict[str, Callable] | None:
    try:
        return _torch_versions()
    except ImportError:
        return None
