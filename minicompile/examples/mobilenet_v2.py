"""MobileNetV2 (width 1.0) inference in plain NumPy, NHWC, with deterministic random weights.

Inverted residual blocks (1×1 expansion, 3×3 depthwise, 1×1 projection, ReLU6,
residual when shapes allow) as in Sandler et al. 2018; batch norm is folded
into each convolution's weights and bias, as deployed models do.  Convolutions
are written the idiomatic NumPy way: a 1×1 convolution is a matmul over
channels, a 3×3 one gathers windows with ``sliding_window_view`` and contracts
them with ``einsum`` (full) or multiplies and sums (depthwise).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# (expansion t, output channels c, repeats n, first stride s), from the paper's Table 2
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def relu6(x):
    return np.minimum(np.maximum(x, 0.0), 6.0)


def conv1x1(x, w, b):
    return x @ w + b


def conv3x3(x, w, b, stride):
    """Full 3×3 convolution, padding 1: windows (N, H, W, C, 3, 3) contracted with (C, 3, 3, O)."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return np.einsum("nhwcij,cijo->nhwo", windows, w) + b


def depthwise3x3(x, w, b, stride):
    """Depthwise 3×3 convolution, padding 1: each channel with its own (3, 3) filter."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return (windows * w).sum(axis=(-2, -1)) + b


def init_params(seed: int = 0, classes: int = 1000, dtype=np.float32) -> dict:
    """He-initialized weights with batch norm already folded in (zero-mean biases)."""
    rng = np.random.default_rng(seed)

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(dtype)

    def bias(n):
        return (rng.standard_normal(n) * 0.01).astype(dtype)

    params = {"stem_w": he((3, 3, 3, 32), 27), "stem_b": bias(32), "blocks": []}
    c_in = 32
    for t, c, n, s in BLOCKS:
        for i in range(n):
            hidden = c_in * t
            block = {"stride": s if i == 0 else 1, "residual": (s if i == 0 else 1) == 1 and c_in == c}
            if t != 1:
                block["expand_w"], block["expand_b"] = he((c_in, hidden), c_in), bias(hidden)
            block["dw_w"], block["dw_b"] = he((hidden, 3, 3), 9), bias(hidden)
            block["project_w"], block["project_b"] = he((hidden, c), hidden), bias(c)
            params["blocks"].append(block)
            c_in = c
    params["last_w"], params["last_b"] = he((c_in, 1280), c_in), bias(1280)
    params["fc_w"], params["fc_b"] = he((1280, classes), 1280), bias(classes)
    return params


def inverted_residual(x, block):
    h = x
    if "expand_w" in block:
        h = relu6(conv1x1(h, block["expand_w"], block["expand_b"]))
    h = relu6(depthwise3x3(h, block["dw_w"], block["dw_b"], block["stride"]))
    h = conv1x1(h, block["project_w"], block["project_b"])  # linear bottleneck
    return x + h if block["residual"] else h


def forward(params, images):
    """Logits (N, classes) for NHWC float32 images (N, 224, 224, 3)."""
    x = relu6(conv3x3(images, params["stem_w"], params["stem_b"], 2))
    for block in params["blocks"]:
        x = inverted_residual(x, block)
    x = relu6(conv1x1(x, params["last_w"], params["last_b"]))
    return x.mean(axis=(1, 2)) @ params["fc_w"] + params["fc_b"]


def example_images(batch: int = 1, size: int = 224, seed: int = 1, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, size, size, 3)).astype(dtype)
