"""Models written as classes, the way NumPy models are written in the wild.

A :class:`Module` calls its ``forward`` from ``__call__``, as ``torch.nn.Module``
does; layers are objects with ``__call__`` held as attributes or in a list;
configuration is a dataclass and recurrent state a ``NamedTuple``.  Each model
is compiled as the object itself — ``mc.compile(model)`` traces
``type(model).__call__`` with ``self`` bound — and captures as one graph:

* :class:`MLP`: a stack of :class:`Linear` layers with an activation between;
* :class:`ResidualBlock`: layer norm, two linear layers and a GELU, added back
  to the input (``x + mlp(norm(x))``, a transformer block's second half);
* :class:`LSTMCell`: one step of an LSTM, taking and returning an
  :class:`LSTMState` (a named tuple made inside the traced code).

The weights are attributes of the objects: arrays read from ``self`` are graph
inputs guarded on their shape, dtype and layout, not on their values, so
updating a weight in place or replacing it with another of the same shape
reuses the compiled code.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class Module:
    """What every layer shares: calling it runs ``forward``."""

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError


class Linear(Module):
    def __init__(self, weight: np.ndarray, bias: np.ndarray):
        self.weight = weight  # (in_features, out_features)
        self.bias = bias

    @classmethod
    def init(cls, rng: np.random.Generator, n_in: int, n_out: int, dtype=np.float32) -> "Linear":
        bound = 1.0 / math.sqrt(n_in)
        return cls(rng.uniform(-bound, bound, (n_in, n_out)).astype(dtype),
                   rng.uniform(-bound, bound, n_out).astype(dtype))

    @property
    def out_features(self) -> int:
        return self.weight.shape[1]

    def forward(self, x):
        return x @ self.weight + self.bias


class ReLU(Module):
    def forward(self, x):
        return np.maximum(x, 0)


class GELU(Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


class LayerNorm(Module):
    def __init__(self, size: int, eps: float = 1e-5, dtype=np.float32):
        self.gamma = np.ones(size, dtype)
        self.beta = np.zeros(size, dtype)
        self.eps = eps

    def forward(self, x):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.gamma + self.beta


@dataclass
class MLPConfig:
    sizes: tuple = (64, 128, 128, 10)
    activation: str = "relu"
    seed: int = 0


class MLP(Module):
    """Linear layers with an activation between each pair."""

    def __init__(self, config: MLPConfig):
        rng = np.random.default_rng(config.seed)
        self.layers = [Linear.init(rng, a, b) for a, b in zip(config.sizes, config.sizes[1:])]
        self.activation = ReLU() if config.activation == "relu" else GELU()

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = self.activation(x)
        return x


class ResidualBlock(Module):
    """``x + fc2(gelu(fc1(norm(x))))``."""

    def __init__(self, size: int, hidden: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.norm = LayerNorm(size)
        self.fc1 = Linear.init(rng, size, hidden)
        self.fc2 = Linear.init(rng, hidden, size)
        self.act = GELU()

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class LSTMState(NamedTuple):
    h: np.ndarray
    c: np.ndarray


class LSTMCell(Module):
    """One LSTM step: gates from the input and the hidden state, a new cell and hidden state."""

    def __init__(self, n_in: int, hidden: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.inputs = Linear.init(rng, n_in, 4 * hidden)
        self.recurrent = Linear.init(rng, hidden, 4 * hidden)
        self.hidden = hidden

    def zero_state(self, batch: int) -> LSTMState:
        return LSTMState(np.zeros((batch, self.hidden), np.float32), np.zeros((batch, self.hidden), np.float32))

    def forward(self, x, state: LSTMState) -> LSTMState:
        gates = self.inputs(x) + self.recurrent(state.h)
        n = self.hidden
        i, f, g, o = gates[:, :n], gates[:, n:2 * n], gates[:, 2 * n:3 * n], gates[:, 3 * n:]
        c = sigmoid(f) * state.c + sigmoid(i) * np.tanh(g)
        return LSTMState(sigmoid(o) * np.tanh(c), c)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def example_batch(batch: int = 32, size: int = 64, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, size), dtype=np.float32)
