"""``make bench-gpu``: CuPy eager vs minicompile's triton backend (vs torch eager and torch.compile) on a GPU.

In:  nothing but a CUDA device with CuPy and Triton (torch optional).
Out: a table on stdout — median device times, ratios, kernel counts, and for
     memory-bound workloads the fraction of a measured device-to-device copy
     bandwidth — and the same as JSON.

Each workload is one plain NumPy function.  Given CuPy arrays it *is* the
CuPy eager version (NumPy hands ufuncs and array functions to CuPy); compiled
with ``backend="triton"`` it is minicompile; the same math written for torch
runs eagerly and through ``torch.compile``.  Everything runs on the default
stream of one device.  Device time per call is measured with CUDA events
around 50 back-to-back calls (:func:`.gpu_timing.device_ms`; median of 5 rounds), so that
the host's Python time overlaps the kernels as it does in a real loop instead
of being counted into them; host time per call (guards, wrapper, launches) is
its own column (:func:`.gpu_timing.host_ms`).  ``tiny``'s time is host overhead: it is
timed on the wall clock over many back-to-back calls.  The models
(:mod:`.gpu_models`) follow the table.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import minicompile as mc

from .gpu_models import main as run_models
from .gpu_timing import device_ms, host_ms, wall_ms

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
LR, BETA1, BETA2, EPS, STEP = 1e-3, 0.9, 0.999, 1e-8, 10


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)


def adam(p, g, m, v):
    """One Adam step, functional: the new parameters and moments."""
    m = BETA1 * m + (1.0 - BETA1) * g
    v = BETA2 * v + (1.0 - BETA2) * (g * g)
    m_hat = m / (1.0 - BETA1 ** STEP)
    v_hat = v / (1.0 - BETA2 ** STEP)
    return p - LR * m_hat / (np.sqrt(v_hat) + EPS), m, v


def mlp(x, w, b):
    return gelu(x @ w + b)


def transpose_add(x):
    return x.T + 1.0


def batched_matmul(a, b):
    return (a @ b) * 0.125


def tiny(x):
    return x + 1.0


def attention(q, k, v):
    """Softmax attention as NumPy code writes it: one flash-attention kernel (the pattern)."""
    s = (q @ k.transpose(0, 1, 3, 2)) * 0.125
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def _torch_fns() -> dict[str, Callable]:
    import torch

    def t_gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))

    def t_softmax(x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    def t_layer_norm(x):
        c = x - x.mean(dim=-1, keepdim=True)
        return c / torch.sqrt((c * c).mean(dim=-1, keepdim=True) + 1e-5)

    def t_adam(p, g, m, v):
        m = BETA1 * m + (1.0 - BETA1) * g
        v = BETA2 * v + (1.0 - BETA2) * (g * g)
        m_hat = m / (1.0 - BETA1 ** STEP)
        v_hat = v / (1.0 - BETA2 ** STEP)
        return p - LR * m_hat / (torch.sqrt(v_hat) + EPS), m, v

    def t_mlp(x, w, b):
        return t_gelu(x @ w + b)

    def t_attention(q, k, v):
        return t_softmax((q @ k.transpose(-1, -2)) * 0.125) @ v

    return {"gelu": t_gelu, "softmax": t_softmax, "layer_norm": t_layer_norm, "adam": t_adam,
            "gelu_matmul": t_mlp, "transpose": lambda x: x.T + 1.0,
            "batched_matmul": lambda a, b: (a @ b) * 0.125, "tiny": lambda x: x + 1.0,
            "attention": t_attention}


@dataclass(frozen=True)
class GpuWorkload:
    name: str
    fn: Callable[..., Any]
    shapes: tuple
    dtype: type
    outputs: int  # arrays written (for the traffic count)
    flops: float = 0.0  # for compute-bound workloads

    def inputs(self, cp: Any, quick: bool) -> tuple:
        rng = cp.random.default_rng(0)
        arrays = []
        for shape in self.shapes:
            if quick and not self.flops:  # a sixteenth of the rows (matmul keeps its shape)
                shape = (max(1, shape[0] // 16),) + shape[1:]
            arrays.append(rng.standard_normal(shape, dtype=cp.float32).astype(self.dtype))
        if self.name == "adam":
            arrays[3] = cp.abs(arrays[3])  # the second moment is non-negative
        if self.name == "gelu_matmul":
            arrays[1] *= 1.0 / math.sqrt(self.shapes[0][1])  # keep activations O(1) in float16
        return tuple(arrays)

    def bytes_moved(self, arrays: tuple) -> int:
        return sum(a.nbytes for a in arrays) + self.outputs * arrays[0].nbytes


N64M = 64 * 1024 * 1024
WORKLOADS = [
    GpuWorkload("gelu", gelu, ((N64M // 1024, 1024),), np.float32, 1),
    GpuWorkload("softmax", softmax, ((32768, 4096),), np.float32, 1),
    GpuWorkload("layer_norm", layer_norm, ((32768, 4096),), np.float32, 1),
    GpuWorkload("adam", adam, ((N64M,),) * 4, np.float32, 3),
    GpuWorkload("gelu_matmul", mlp, ((4096, 4096), (4096, 4096), (4096,)), np.float16, 1, 2.0 * 4096 ** 3),
    GpuWorkload("transpose", transpose_add, ((8192, 8192),), np.float32, 1),
    GpuWorkload("batched_matmul", batched_matmul, ((64, 1024, 128), (64, 128, 1024)), np.float16, 1,
                2.0 * 64 * 1024 * 1024 * 128),
    GpuWorkload("tiny", tiny, ((8,),), np.float32, 1),
    GpuWorkload("attention", attention, ((8, 16, 1024, 64),) * 3, np.float32, 1, 4.0 * 8 * 16 * 1024 * 1024 * 64),
]


def copy_bandwidth(cp: Any, nbytes: int = 1 << 30) -> float:
    """Bytes/s of a device-to-device copy (read + write): the roof for memory-bound kernels."""
    src = cp.ones(nbytes // 4, cp.float32)
    dst = cp.empty_like(src)
    ms = device_ms(cp, cp.copyto, dst, src)
    return 2 * nbytes / (ms * 1e-3)


def _first(result: Any) -> Any:
    return result[0] if isinstance(result, tuple) else result


def main(json_path: str = "bench_gpu.json", quick: bool = False, models_too: bool = True) -> int:
    import cupy as cp

    try:
        torch_fns = _torch_fns()
        import torch
    except ImportError:
        torch_fns, torch = None, None
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    roof = copy_bandwidth(cp)
    print(f"minicompile bench --gpu on {gpu}; device copy bandwidth {roof / 1e9:.0f} GB/s; "
          f"torch: {torch.__version__ if torch else 'not installed'}")
    cols = ["cupy", "mc-triton"] + (["torch", "torch.compile"] if torch_fns else [])
    print("device ms per call: CUDA events around 50 back-to-back calls, median of 5 rounds "
          "(tiny: wall time per call); host: minicompile's host ms per call, not waiting for the device")
    print(f"{'workload':<15}" + "".join(f"{c:>14}" for c in cols)
          + f"{'mc/cupy':>9}{'mc/tc':>8}{'host':>9}{'kernels':>9}{'%copy-bw':>10}{'TFLOP/s':>9}{'compile':>9}")
    rows = []
    for w in WORKLOADS:
        inputs = w.inputs(cp, quick)
        compiled = mc.compile(w.fn, backend="triton")
        start = time.perf_counter()
        got = compiled(*inputs)
        cp.cuda.Device().synchronize()
        compile_s = time.perf_counter() - start
        expected = w.fn(*inputs)
        tol = 2e-2 if w.dtype == np.float16 else 1e-3
        cp.testing.assert_allclose(_first(got), _first(expected), rtol=tol, atol=tol)
        timer = wall_ms if w.name == "tiny" else device_ms
        times = {"cupy": timer(cp, w.fn, *inputs), "mc-triton": timer(cp, compiled, *inputs)}
        host = host_ms(cp, compiled, *inputs)
        if torch_fns:
            t_inputs = [torch.as_tensor(a, device="cuda") for a in inputs]
            t_fn = torch_fns[w.name]
            times["torch"] = timer(cp, t_fn, *t_inputs)
            times["torch.compile"] = timer(cp, torch.compile(t_fn), *t_inputs)
        mc_ms = times["mc-triton"]
        kernels = len(compiled.cache[0].compiled.kernels)
        frac = None if w.flops or w.name == "tiny" else w.bytes_moved(inputs) / (mc_ms * 1e-3) / roof
        tflops = w.flops / (mc_ms * 1e-3) / 1e12 if w.flops else None
        tc = times.get("torch.compile")
        print(f"{w.name:<15}" + "".join(f"{times[c]:>11.3f} ms" for c in cols)
              + f"{mc_ms / times['cupy']:>9.2f}{(f'{mc_ms / tc:.2f}' if tc else '-'):>8}{host:>9.3f}{kernels:>9}"
              + f"{(f'{100 * frac:.0f}%' if frac else '-'):>10}{(f'{tflops:.0f}' if tflops else '-'):>9}"
              + f"{compile_s:>8.1f}s", flush=True)
        rows.append(dict(workload=w.name, shapes=[list(a.shape) for a in inputs], dtype=np.dtype(w.dtype).name,
                         ms=times, host_ms=host, kernels=kernels, first_call_s=compile_s,
                         fraction_of_copy_bandwidth=frac, tflops=tflops,
                         timing="host wall per call" if w.name == "tiny"
                         else "CUDA events around 50 back-to-back calls, median of 5 rounds"))
    models = None
    if models_too:
        models = run_models(cp, torch, quick=quick)
    with open(json_path, "w") as f:
        json.dump({"gpu": gpu, "copy_bandwidth_Bps": roof, "quick": quick, "results": rows, "models": models},
                  f, indent=2, default=str)
    print(f"results written to {json_path}")
    return 0
