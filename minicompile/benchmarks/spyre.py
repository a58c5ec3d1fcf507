"""Spyre backend numbers: what double buffering and fusion buy on the simulated card.

In:  nothing (fixed workloads, fixed seeds).
Out: :func:`main` prints two tables and returns their rows as a dict:

* a 4096 x 4096 x 4096 fp16 matmul timed by the cycle model alone
  (``functional=False``: no arithmetic runs), matrix-unit utilization with and
  without double-buffered DMA;
* a GELU -> layer norm -> matmul chain compiled with ``backend="spyre"``,
  fused (the schedule's kernels, epilogues on the core) and unfused (every
  op's result stored to DRAM and read back), DRAM bytes and cycles of each.
"""
from __future__ import annotations

import numpy as np

from ..spyre.simulator import simulate

MATMUL = (4096, 4096, 4096)
CHAIN = (256, 256, 256)  # rows, features, outputs


def matmul_utilization(double_buffer: bool, shape=MATMUL) -> dict:
    from ..inductor.spyre_matmul import matmul_cycles_program
    program = matmul_cycles_program(*shape, double_buffer=double_buffer)
    _, report = simulate(program, functional=False)
    return {"double_buffer": double_buffer, "cycles": report.total_cycles,
            "matrix_utilization": report.matrix_utilization, "bottleneck": report.bottleneck}


def _chain(x, w, b, W):
    g = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    m = g.mean(axis=-1, keepdims=True)
    v = ((g - m) ** 2).mean(axis=-1, keepdims=True)
    return ((g - m) / np.sqrt(v + 1e-5) * w + b) @ W


def chain_traffic(fuse: bool, shape=CHAIN) -> dict:
    from .. import api
    from ..inductor.codegen.spyre import compile_graph
    rows, features, outputs = shape
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((rows, features)).astype(np.float32),
            rng.standard_normal(features).astype(np.float32),
            rng.standard_normal(features).astype(np.float32),
            rng.standard_normal((features, outputs)).astype(np.float32))
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs, fuse=fuse))
        return compiled[-1]

    api.reset()
    out = api.compile(lambda *a: _chain(*a), backend=backend)(*args)
    ref = _chain(*args)
    report = compiled[-1].report
    return {"fused": fuse, "dram_bytes": report.dram_bytes, "cycles": report.total_cycles,
            "programs": len(compiled[-1].program.device_steps),
            "max_error": float(np.abs(out - ref).max() / np.abs(ref).max())}


def main() -> dict:
    rows = {"matmul": [matmul_utilization(db) for db in (True, False)],
            "chain": [chain_traffic(fuse) for fuse in (True, False)]}
    m, n, k = MATMUL
    print(f"Spyre: {m}x{n}x{k} fp16 matmul (cycle model only)")
    print(f"  {'double buffer':<14} {'cycles':>12} {'matrix util':>12}  bottleneck")
    for r in rows["matmul"]:
        print(f"  {str(r['double_buffer']):<14} {r['cycles']:>12} "
              f"{r['matrix_utilization']:>12.1%}  {r['bottleneck']}")
    print(f"Spyre: GELU -> layer norm -> matmul, {'x'.join(map(str, CHAIN))}")
    print(f"  {'fused':<6} {'programs':>8} {'DRAM bytes':>12} {'cycles':>10} {'rel err':>9}")
    for r in rows["chain"]:
        print(f"  {str(r['fused']):<6} {r['programs']:>8} {r['dram_bytes']:>12} "
              f"{r['cycles']:>10} {r['max_error']:>9.1e}")
    fused, unfused = rows["chain"]
    print(f"  fusion moves {unfused['dram_bytes'] / fused['dram_bytes']:.2f}x fewer bytes, "
          f"{unfused['cycles'] / fused['cycles']:.2f}x fewer cycles")
    return rows
