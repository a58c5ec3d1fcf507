"""Training rows of ``make bench``: what the min-cut partition saves, and step times.

* Saved bytes of the default partition (keep every forward value the backward
  reads) against the min-cut partition, on an MLP block and on a layer norm ->
  attention block, both compiled from plain NumPy with ``mc.Tensor`` parameters.
* One training step (forward, backward, Adam) of the example 3-layer MLP:
  eager NumPy on the tape, minicompile (``cpp``, forward and backward compiled),
  and, where torch is installed, the same model in PyTorch eager and under
  ``torch.compile``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

import minicompile as mc
from minicompile.aot.partition import default_partition, min_cut_partition
from minicompile.examples import mlp_train

from .timing import format_seconds, run_times

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def mlp_block(x, w1, b1, w2):
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * h * h * h)))
    return (h @ w2).sum()


def attention_block(x, gamma, wq, wk, wv):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    xn = xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + 1e-5) * gamma
    q, k, v = xn @ wq, xn @ wk, xn @ wv
    scores = q @ k.T / math.sqrt(q.shape[-1])
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return ((scores / scores.sum(axis=-1, keepdims=True)) @ v).sum()


def partition_bytes(fn, arrays: list[np.ndarray], n_inputs: int) -> tuple[int, int]:
    compiled = mc.compile(fn, backend="aot_eager")
    args = arrays[:n_inputs] + [mc.Tensor(a, requires_grad=True) for a in arrays[n_inputs:]]
    compiled(*args)
    joint = compiled.cache[0].compiled.joint
    return default_partition(joint).saved_bytes, min_cut_partition(joint).saved_bytes


def _torch_step():
    import torch

    params = [torch.tensor(p, requires_grad=True) for p in mlp_train.init_params()]
    x, y = (torch.tensor(a) for a in mlp_train.synthetic_data())
    opt = torch.optim.Adam(params, lr=1e-2)

    def loss_fn(w1, b1, w2, b2, w3, b3):
        h = torch.nn.functional.gelu(x @ w1 + b1, approximate="tanh")
        h = torch.nn.functional.gelu(h @ w2 + b2, approximate="tanh")
        return torch.nn.functional.cross_entropy(h @ w3 + b3, y.argmax(dim=1))

    def step(loss):
        opt.zero_grad()
        value = loss(*params)
        value.backward()
        opt.step()

    return step, loss_fn, torch.compile(loss_fn)


def main(quick: bool = False) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    tokens, dim, hidden = (64, 128, 512) if quick else (256, 256, 1024)
    results: dict[str, Any] = {}
    print("\ntraining: saved bytes, default partition vs min-cut (mc.Tensor parameters, float32)")
    blocks = {
        "mlp block": (mlp_block, [rng.standard_normal(s).astype(np.float32)
                                  for s in [(tokens, dim), (dim, hidden), (hidden,), (hidden, dim)]], 1),
        "attention block": (attention_block, [rng.standard_normal(s).astype(np.float32)
                                              for s in [(tokens, dim), (dim,), (dim, 64), (dim, 64), (dim, 64)]], 1),
    }
    for name, (fn, arrays, n_inputs) in blocks.items():
        default, cut = partition_bytes(fn, arrays, n_inputs)
        results[name] = {"default_saved_bytes": default, "min_cut_saved_bytes": cut}
        print(f"  {name:<16} default {default / 2**20:7.2f} MiB   min-cut {cut / 2**20:7.2f} MiB   "
              f"{100 * (1 - cut / default):4.0f}% fewer")

    params = mlp_train.init_params()
    x, y = mlp_train.synthetic_data()
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    c1, c2 = np.asarray(0.1), np.asarray(0.001)
    compiled_loss = mc.compile(mlp_train.loss_fn)
    compiled_adam = mc.compile(mlp_train.adam)

    def step(loss, adam):
        tensors = [mc.Tensor(p, requires_grad=True) for p in params]
        loss(*tensors, x, y).backward()
        return [adam(p, t.grad, m, v, c1, c2) for p, t, (m, v) in zip(params, tensors, moments)]

    budget = 0.3 if quick else 1.5
    t_eager, _ = run_times(step, mlp_train.loss_fn, mlp_train.adam, budget_s=budget)
    t_mc, _ = run_times(step, compiled_loss, compiled_adam, budget_s=budget)
    results["mlp training step"] = {"numpy_s": t_eager, "minicompile_s": t_mc}
    line = f"  mlp training step  numpy {format_seconds(t_eager)}   minicompile {format_seconds(t_mc)}"
    try:
        torch_step, eager_loss, compiled_torch_loss = _torch_step()
        t_te, _ = run_times(torch_step, eager_loss, budget_s=budget)
        t_tc, _ = run_times(torch_step, compiled_torch_loss, budget_s=budget)
        results["mlp training step"].update(torch_eager_s=t_te, torch_compile_s=t_tc)
        line += f"   torch {format_seconds(t_te)}   torch.compile {format_seconds(t_tc)}"
    except ImportError:
        line += "   (torch not installed)"
    print(line)
    return results
