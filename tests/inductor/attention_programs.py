"""Softmax attention as NumPy programs write it, for the attention tests of every backend.

``program`` builds the function the pattern matcher must find (scaled by a division or a
product or not, masked or not, k's transpose taken one of three ways); ``mask_of`` draws
its boolean mask (causal, random, or with rows masked entirely).
"""
from __future__ import annotations

import math

import numpy as np


def program(scale: str, masked: bool, fill: float, k_layout: str = "swapaxes"):
    """``softmax(q @ kᵀ [scaled] [masked with fill]) @ v``; ``k_layout="given"`` takes kᵀ itself."""
    c = 0.125

    def attention(q, k, v, mask):
        if k_layout == "swapaxes":
            kt = np.swapaxes(k, -1, -2)
        elif k_layout == "transpose":
            kt = k.transpose(tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2))
        else:  # "given": kᵀ itself
            kt = k
        s = q @ kt
        if scale == "divide":
            s = s / math.sqrt(q.shape[-1])
        elif scale == "times":
            s = s * c
        elif scale == "times_left":
            s = c * s
        if masked:
            s = np.where(mask, s, fill)
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        p = e / e.sum(axis=-1, keepdims=True)
        return p @ v

    return attention


def mask_of(rng: np.random.Generator, kind: str, batch: tuple, m: int, n: int) -> np.ndarray:
    """A boolean ``batch + (m, n)`` mask: ``causal``, ``random``, or ``rows`` (random, every
    third row masked entirely: NaN or uniform weights, by the fill)."""
    if kind == "causal":
        return np.broadcast_to(np.tril(np.ones((m, n), bool)), batch + (m, n)).copy()
    mask = rng.random(batch + (m, n)) < 0.7
    if kind == "rows":
        mask[..., ::3, :] = False
    return mask
