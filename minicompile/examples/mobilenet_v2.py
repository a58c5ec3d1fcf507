"""MobileNetV2 (width 1.0) inference in plain NumPy, NHWC, with deterministic random weights.

Inverted residual blocks (1×1 expansion, 3×3 depthwise, 1×1 projection, ReLU6,
residual when shapes allow) as in Sandler et al. 2018.  By default batch norm
is folded into each convolution's weights and bias, as deployed models do;
``init_params(batch_norm=True)`` keeps it unfolded — each convolution has no
bias and is followed by ``(h - mean) / sqrt(var + eps) * gamma + beta`` — and
``fold_batch_norm`` folds such parameters by hand.  Compiled with
``options={"freezing": True}`` on read-only weights (``freeze``), the unfolded
form compiles to the kernels of the folded one: the compiler folds it
(:mod:`minicompile.ir.fold_batchnorm`).  Convolutions
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


EPS = 1e-5


def relu6(x):
    return np.minimum(np.maximum(x, 0.0), 6.0)


def conv1x1(x, w):
    return x @ w


def conv3x3(x, w, stride):
    """Full 3×3 convolution, padding 1: windows (N, H, W, C, 3, 3) contracted with (C, 3, 3, O)."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return np.einsum("nhwcij,cijo->nhwo", windows, w)


def depthwise3x3(x, w, stride):
    """Depthwise 3×3 convolution, padding 1: each channel with its own (3, 3) filter."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::stride, ::stride]
    return (windows * w).sum(axis=(-2, -1))


def batch_norm(h, bn):
    """Inference batch norm over the channel (last) axis, with running statistics."""
    return (h - bn["mean"]) / np.sqrt(bn["var"] + EPS) * bn["gamma"] + bn["beta"]


def bias_or_batch_norm(h, params, name):
    """What follows convolution ``name``: its batch norm if kept, else its (folded) bias."""
    bn = params.get(name + "_bn")
    return batch_norm(h, bn) if bn is not None else h + params[name + "_b"]


def init_params(seed: int = 0, classes: int = 1000, dtype=np.float32, batch_norm: bool = False) -> dict:
    """He-initialized weights with batch norm already folded in (zero-mean biases);
    with ``batch_norm=True``, the same convolution weights without biases and
    a batch norm (running statistics) after each convolution instead."""
    rng = np.random.default_rng(seed)
    bn_rng = np.random.default_rng(seed + 1)  # separate stream: the folded default stays as it was

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(dtype)

    def bias(n):
        return (rng.standard_normal(n) * 0.01).astype(dtype)

    def conv(layer, name, weight):
        """``name_w`` and, after it, ``name_b`` (folded) or ``name_bn`` (kept)."""
        layer[name + "_w"] = weight
        b = bias(weight.shape[-1] if name != "dw" else weight.shape[0])
        if not batch_norm:
            layer[name + "_b"] = b
            return
        n = b.shape[0]
        layer[name + "_bn"] = {"gamma": (1 + 0.1 * bn_rng.standard_normal(n)).astype(dtype),
                               "beta": b, "mean": (0.1 * bn_rng.standard_normal(n)).astype(dtype),
                               "var": bn_rng.uniform(0.5, 1.5, n).astype(dtype)}

    params = {"blocks": []}
    conv(params, "stem", he((3, 3, 3, 32), 27))
    c_in = 32
    for t, c, n, s in BLOCKS:
        for i in range(n):
            hidden = c_in * t
            block = {"stride": s if i == 0 else 1, "residual": (s if i == 0 else 1) == 1 and c_in == c}
            if t != 1:
                conv(block, "expand", he((c_in, hidden), c_in))
            conv(block, "dw", he((hidden, 3, 3), 9))
            conv(block, "project", he((hidden, c), hidden))
            params["blocks"].append(block)
            c_in = c
    conv(params, "last", he((c_in, 1280), c_in))
    params["fc_w"], params["fc_b"] = he((1280, classes), 1280), bias(classes)
    return params


def fold_batch_norm(params: dict) -> dict:
    """The folded parameters of a model with batch norm kept: ``w * s`` and ``beta - mean * s``,
    ``s = gamma / sqrt(var + eps)`` — folding by hand, as deployment tools do."""
    def fold(layer):
        out = {}
        for key, value in layer.items():
            if key.endswith("_bn"):
                name = key[:-3]
                s = value["gamma"] / np.sqrt(value["var"] + EPS)
                w = layer[name + "_w"]
                out[name + "_w"] = w * (s[:, None, None] if name == "dw" else s)
                out[name + "_b"] = value["beta"] - value["mean"] * s
            elif key == "blocks":
                out[key] = [fold(b) for b in value]
            elif not (key.endswith("_w") and key[:-2] + "_bn" in layer):
                out[key] = value
        return out

    return fold(params)


def freeze(params: dict) -> dict:
    """Make every weight array read-only, so ``options={"freezing": True}`` may treat it
    as a constant (NumPy refuses in-place writes to it from now on); returns ``params``."""
    for value in params.values():
        if isinstance(value, dict):
            freeze(value)
        elif isinstance(value, list):
            for item in value:
                freeze(item)
        elif isinstance(value, np.ndarray):
            value.setflags(write=False)
    return params


def inverted_residual(x, block):
    h = x
    if "expand_w" in block:
        h = relu6(bias_or_batch_norm(conv1x1(h, block["expand_w"]), block, "expand"))
    h = relu6(bias_or_batch_norm(depthwise3x3(h, block["dw_w"], block["stride"]), block, "dw"))
    h = bias_or_batch_norm(conv1x1(h, block["project_w"]), block, "project")  # linear bottleneck
    return x + h if block["residual"] else h


def forward(params, images):
    """Logits (N, classes) for NHWC float32 images (N, 224, 224, 3)."""
    x = relu6(bias_or_batch_norm(conv3x3(images, params["stem_w"], 2), params, "stem"))
    for block in params["blocks"]:
        x = inverted_residual(x, block)
    x = relu6(bias_or_batch_norm(conv1x1(x, params["last_w"]), params, "last"))
    return x.mean(axis=(1, 2)) @ params["fc_w"] + params["fc_b"]


def example_images(batch: int = 1, size: int = 224, seed: int = 1, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, size, size, 3)).astype(dtype)
