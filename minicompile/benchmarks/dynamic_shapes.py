"""Dynamic-shape kernels against static ones: what a symbolic batch size costs.

In:  fixed CPU workloads (row softmax, GELU + layer norm) at one batch size.
Out: :func:`main` prints one row per workload and returns them: the median
     time of the kernels compiled for exactly that shape (``dynamic=False``)
     and of the kernels compiled once with the batch size as an argument
     (the automatic dynamic entry, reached after a first call at another
     size), their ratio (goal: within 10%), and how many compiles twenty
     different batch sizes cost each way.

Both run in this process on the same inputs; the static entry knows every
trip count, the dynamic one reads ``s0`` at run time and lets OpenMP decide
threading there.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

import minicompile as mc

from .timing import format_seconds, median_seconds


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def gelu_layernorm(x, w, b):
    g = 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    m = g.mean(axis=1, keepdims=True)
    v = ((g - m) ** 2).mean(axis=1, keepdims=True)
    return (g - m) / np.sqrt(v + 1e-5) * w + b


def _inputs(name: str, rows: int, rng: np.random.Generator) -> tuple:
    if name == "softmax":
        return (rng.standard_normal((rows, 1024)).astype(np.float32),)
    width = 768
    return (rng.standard_normal((rows, width)).astype(np.float32),
            rng.standard_normal(width).astype(np.float32), rng.standard_normal(width).astype(np.float32))


WORKLOADS: dict[str, Callable] = {"softmax": softmax, "gelu_layernorm": gelu_layernorm}
SIZES = [3, 5, 8, 2, 17, 4, 9, 33, 6, 12, 7, 64, 10, 11, 13, 100, 15, 16, 20, 31]


def _row(name: str, fn: Callable, rows: int, budget: float) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    inputs = _inputs(name, rows, rng)
    static = mc.compile(fn, backend="cpp", dynamic=False)
    dynamic = mc.compile(fn, backend="cpp")
    dynamic(*_inputs(name, rows // 2, rng))  # first call static, at another size
    for f in (static, dynamic):
        np.testing.assert_allclose(f(*inputs), fn(*inputs), rtol=1e-4, atol=1e-4)
    assert len(dynamic.cache) == 2 and "int64_t s0" in dynamic.cache[1].compiled.kernel_source
    # Interleave the two so that a busy machine slows both alike.
    t_static, t_dynamic = [], []
    for _ in range(3):
        t_static.append(median_seconds(static, *inputs, budget_s=budget / 6))
        t_dynamic.append(median_seconds(dynamic, *inputs, budget_s=budget / 6))
    s, d = sorted(t_static)[1], sorted(t_dynamic)[1]
    compiles = {}
    for mode in (False, None):
        f = mc.compile(fn, backend="cpp", dynamic=mode)
        with warnings.catch_warnings():  # static: the recompile limit (8 entries) is the point
            warnings.simplefilter("ignore")
            for n in SIZES:
                f(*_inputs(name, n, rng))
        compiles["static" if mode is False else "dynamic"] = len(f.cache)
    return {"workload": name, "shape": tuple(inputs[0].shape), "static_s": s, "dynamic_s": d,
            "dynamic_over_static": d / s, "compiles_20_sizes_static": compiles["static"],
            "compiles_20_sizes_dynamic": compiles["dynamic"]}


def main(quick: bool = False) -> list[dict[str, Any]]:
    rows = 1024 if quick else 8192
    budget = 0.5 if quick else 2.0
    out = [_row(name, fn, rows, budget) for name, fn in WORKLOADS.items()]
    print()
    print(f"{'dynamic shapes':<18} {'shape':>12} {'static':>10} {'dynamic':>10} {'dyn/static':>10} "
          f"{'compiles (20 sizes) static/dynamic':>36}")
    for r in out:
        shape = "x".join(map(str, r["shape"]))
        print(f"{r['workload']:<18} {shape:>12} {format_seconds(r['static_s']):>10} "
              f"{format_seconds(r['dynamic_s']):>10} {r['dynamic_over_static']:>10.2f} "
              f"{r['compiles_20_sizes_static']:>17}/{r['compiles_20_sizes_dynamic']}")
    print("dyn/static: median time of the kernels taking the batch size as an argument over those "
          "compiled for this exact shape (goal: at most 1.10); static compiles stop at the recompile limit (8)")
    return out


if __name__ == "__main__":
    main()
