"""A GPT-style decoder layer stack in plain NumPy (RMSNorm, rotary embeddings,
causal multi-head attention, a SwiGLU MLP, residuals), like the Granite family
at toy size, with deterministic random weights.

``forward`` runs inference on token ids; ``loss`` is the next-token
cross-entropy used to train a tiny model on synthetic token data, and
``train`` runs plain SGD on it — eagerly on the tape or with the loss compiled
— returning the loss curve so the two can be compared step by step.  The model
is written once, in NumPy: with CuPy arrays (``train(xp=cupy)``) the same code
trains on the GPU, its parameters and gradients never leaving it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import minicompile as mc


@dataclass(frozen=True)
class Config:
    vocab: int = 64
    dim: int = 64
    heads: int = 4
    layers: int = 2
    hidden: int = 128
    seq: int = 32


def init_params(cfg: Config = Config(), seed: int = 0, dtype=np.float32) -> dict:
    rng = np.random.default_rng(seed)

    def dense(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(dtype)

    params = {"embed": (rng.standard_normal((cfg.vocab, cfg.dim)) * 0.02).astype(dtype),
              "norm": np.ones(cfg.dim, dtype), "head": dense(cfg.dim, cfg.vocab)}
    for i in range(cfg.layers):
        params[f"layer{i}"] = {
            "ln1": np.ones(cfg.dim, dtype), "ln2": np.ones(cfg.dim, dtype),
            "wq": dense(cfg.dim, cfg.dim), "wk": dense(cfg.dim, cfg.dim),
            "wv": dense(cfg.dim, cfg.dim), "wo": dense(cfg.dim, cfg.dim),
            "w_gate": dense(cfg.dim, cfg.hidden), "w_up": dense(cfg.dim, cfg.hidden),
            "w_down": dense(cfg.hidden, cfg.dim),
        }
    return params


def rotary_tables(cfg: Config = Config(), base: float = 10000.0, dtype=np.float32):
    """cos and sin of the rotary angles, shape (seq, head_dim // 2)."""
    half = cfg.dim // cfg.heads // 2
    freqs = base ** (-np.arange(half) / half)
    angles = np.arange(cfg.seq)[:, None] * freqs[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def causal_mask(cfg: Config = Config()) -> np.ndarray:
    return np.tril(np.ones((cfg.seq, cfg.seq), dtype=bool))


def rms_norm(x, weight, eps=1e-6):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * weight


def rotate(x, cos, sin):
    """Rotary embedding: rotate each (first half, second half) pair by its angle."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def attention(x, p, cos, sin, mask, heads):
    batch, seq, dim = x.shape
    head_dim = dim // heads

    def split(t):
        return t.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

    q = rotate(split(x @ p["wq"]), cos, sin)
    k = rotate(split(x @ p["wk"]), cos, sin)
    v = split(x @ p["wv"])
    scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(head_dim)
    scores = np.where(mask, scores, -1e9)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, seq, dim)
    return out @ p["wo"]


def swiglu(x, p):
    gate = x @ p["w_gate"]
    return (gate / (1.0 + np.exp(-gate)) * (x @ p["w_up"])) @ p["w_down"]


def forward(params, tokens, cos, sin, mask, heads=4, layers=2):
    """Logits for every position: (batch, seq, vocab)."""
    x = params["embed"][tokens]
    for i in range(layers):
        p = params[f"layer{i}"]
        x = x + attention(rms_norm(x, p["ln1"]), p, cos, sin, mask, heads)
        x = x + swiglu(rms_norm(x, p["ln2"]), p)
    return rms_norm(x, params["norm"]) @ params["head"]


def loss(params, tokens, targets_onehot, cos, sin, mask, heads=4, layers=2):
    """Mean next-token cross-entropy."""
    logits = forward(params, tokens, cos, sin, mask, heads, layers)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -(log_probs * targets_onehot).sum(axis=-1).mean()


def synthetic_tokens(cfg: Config = Config(), batch: int = 4, seed: int = 1):
    """Sequences that count upward modulo the vocabulary: learnable next-token data."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, cfg.vocab, (batch, 1))
    seq = (start + np.arange(cfg.seq + 1)) % cfg.vocab
    tokens, targets = seq[:, :-1], seq[:, 1:]
    return tokens, np.eye(cfg.vocab, dtype=np.float32)[targets]


def as_tensors(params: dict) -> dict:
    """The parameters as ``mc.Tensor`` leaves that want gradients (same nesting)."""
    return {k: as_tensors(v) if isinstance(v, dict) else mc.Tensor(v, requires_grad=True)
            for k, v in params.items()}


def sgd_step(loss_fn: Callable, params: dict, data: tuple, lr: float) -> tuple[dict, float]:
    """One SGD step: ``(new parameters, loss before the step)``; ``data`` is
    ``(tokens, targets_onehot, cos, sin, mask, heads, layers)``."""
    tensors = as_tensors(params)
    value = loss_fn(tensors, *data)
    value.backward()

    def update(p: Any, t: Any) -> Any:
        if isinstance(p, dict):
            return {k: update(p[k], t[k]) for k in p}
        return p - lr * t.grad

    return update(params, tensors), float(value.data)


def to_module(tree: Any, xp: Any) -> Any:
    """Every array of a nested dict or tuple as an array of ``xp`` (``cupy.asarray``
    copies it to the GPU once; ``np.asarray`` leaves a NumPy array as it is)."""
    if isinstance(tree, dict):
        return {k: to_module(v, xp) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(to_module(v, xp) for v in tree)
    return xp.asarray(tree) if isinstance(tree, np.ndarray) else tree


def train(cfg: Config = Config(), steps: int = 50, lr: float = 0.02, batch: int = 4,
          compiled: bool = False, backend: str = "auto", dtype=np.float32, xp: Any = np) -> list[float]:
    """SGD on synthetic counting sequences; the loss before each step.  ``xp``:
    the array module the model trains in (NumPy, or CuPy on the GPU)."""
    params = to_module(init_params(cfg, dtype=dtype), xp)
    cos, sin = rotary_tables(cfg, dtype=dtype)
    tokens, targets = synthetic_tokens(cfg, batch)
    targets = targets.astype(dtype)
    data = to_module((tokens, targets, cos, sin, causal_mask(cfg), cfg.heads, cfg.layers), xp)
    loss_fn = mc.compile(loss, backend=backend) if compiled else loss
    curve = []
    for _ in range(steps):
        params, value = sgd_step(loss_fn, params, data, lr)
        curve.append(value)
    return curve
