"""Spyre backend numbers: what double buffering and fusion buy on the simulated card.

In:  nothing (fixed workloads, fixed seeds).
Out: :func:`main` prints two tables and returns their rows as a dict:

* a 4096 x 4096 x 4096 fp16 matmul timed by the cycle model alone
  (``functional=False``: no arithmetic runs), matrix-unit utilization with and
  without double-buffered DMA;
* a GELU -> layer norm -> matmul chain compiled with ``backend="spyre"``,
  fused (the schedule's kernels, epilogues on the core) and unfused (every
  op's result stored to DRAM and read back), DRAM bytes and cycles of each;
* coverage: one small program per op kind, how many of its steps ran on the
  card and how many fell back to the host (and why);
* steps merged into one program against one program per step (cycles), and a
  reduction over axis 0 (a transposed read) against the bytes it must move.
"""
from __future__ import annotations

import numpy as np

from ..spyre.simulator import simulate

MATMUL = (4096, 4096, 4096)
CHAIN = (256, 256, 256)  # rows, features, outputs


def matmul_utilization(double_buffer: bool, shape=MATMUL) -> dict:
    from ..inductor.codegen.spyre.matmul import matmul_cycles_program
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
    from ..inductor.codegen.spyre.compile import compile_graph
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


def _compiled(fn, args, **options):
    from .. import api
    from ..inductor.codegen.spyre.compile import compile_graph
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs, **options))
        return compiled[-1]

    api.reset()
    out = api.compile(lambda *a: fn(*a), backend=backend)(*args)
    return compiled[-1], out


def _coverage_programs() -> dict:
    rng = np.random.default_rng(0)
    x = (rng.integers(-64, 64, (96, 80)) / 16).astype(np.float32)
    i32 = rng.integers(-1000, 1000, (96, 80)).astype(np.int32)
    u8 = rng.integers(0, 256, (96, 80)).astype(np.uint8)

    def softmax(v):
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return {
        "compare + where": (lambda x: np.where(x > 0, x, 0.1 * x), (x,)),
        "masks (& | ~)": (lambda x: (x > 0) & ~(x < 1), (x,)),
        "int32 arithmetic": (lambda a: np.maximum(a * 3 - 7, a), (i32,)),
        "int8 wraparound": (lambda a: a.astype(np.int8) * 3, (i32,)),
        "uint8 image": (lambda a: np.maximum(a, 16).astype(np.float32) / 255, (u8,)),
        "mask count (int64)": (lambda x: (x > 0).sum(axis=0), (x,)),
        "transposed read": (lambda x: x.T * 2, (x,)),
        "sum over axis 0": (lambda x: x.sum(axis=0), (x,)),
        "softmax over axis 0": (lambda x: softmax(x.T).T, (x,)),
        "row of 300k": (softmax, (rng.standard_normal((2, 300_000)).astype(np.float32),)),
        "concatenate (rotary)": (lambda x: np.concatenate([-x[:, 40:], x[:, :40]], axis=-1), (x,)),
        "x @ W.T": (lambda x: x @ x[:64].T, (x,)),
        "batched matmul": (lambda a, b: a @ b, (rng.standard_normal((8, 64, 96)).astype(np.float32),
                                               rng.standard_normal((8, 96, 32)).astype(np.float32))),
        "int16 // 3, % 3": (lambda a: (a.astype(np.int16) // 3, a.astype(np.int16) % 3), (i32,)),
        "int64 add (host)": (lambda a: a + 1, (i32.astype(np.int64),)),
        "int32 // 3 (host)": (lambda a: a // 3, (i32,)),
        "int32 sum (host)": (lambda a: a.sum(axis=1), (i32,)),
    }


def coverage() -> list[dict]:
    """For each op kind: device programs, host steps and the host's reasons."""
    from ..inductor.codegen.spyre.compile import HostStep
    rows = []
    for name, (fn, args) in _coverage_programs().items():
        compiled, _ = _compiled(fn, args)
        host = [s for s in compiled.program.steps if isinstance(s, HostStep)]
        rows.append({"kind": name, "device_programs": len(compiled.program.device_steps),
                     "host_steps": len(host), "why": "; ".join(s.reason for s in host)})
    return rows


def merged_programs() -> list[dict]:
    """Cycles of one program per step against the steps merged into one program."""
    rng = np.random.default_rng(0)
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    workloads = {
        "matmul chain 64x256x256x64": (lambda x, a, b: np.maximum(x @ a, 0) @ b,
                                       (r(64, 256), r(256, 256), r(256, 64))),
        "three independent kernels": (lambda x, y, z: (np.exp(x).sum(axis=1), y.T * 2, z @ y),
                                      (r(1024, 256), r(256, 512), r(64, 256))),
    }
    rows = []
    for name, (fn, args) in workloads.items():
        cycles = {m: _compiled(fn, args, merge=m)[0].report.total_cycles for m in (False, True)}
        rows.append({"workload": name, "separate_cycles": cycles[False],
                     "merged_cycles": cycles[True]})
    return rows


def transposed_reduction(shape=(4096, 256)) -> dict:
    """x.sum(axis=0): the reduced axis must reach the vector lanes; DRAM bytes read
    against the array's own size (an element-wise strided read would move 64x)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    compiled, _ = _compiled(lambda x: x.sum(axis=0), (x,))
    report = compiled.report
    return {"shape": shape, "cycles": report.total_cycles, "dram_bytes_read": report.dram_bytes_read,
            "fp16_bytes": x.size * 2, "bottleneck": report.bottleneck}


def main() -> dict:
    rows = {"matmul": [matmul_utilization(db) for db in (True, False)],
            "chain": [chain_traffic(fuse) for fuse in (True, False)],
            "coverage": coverage(), "merged": merged_programs(),
            "transposed_reduction": transposed_reduction()}
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
    print("Spyre: which op kinds run on the card")
    print(f"  {'kind':<22} {'programs':>8} {'host steps':>10}  why on the host")
    for r in rows["coverage"]:
        print(f"  {r['kind']:<22} {r['device_programs']:>8} {r['host_steps']:>10}  {r['why']}")
    print("Spyre: one program per step vs steps merged into one program")
    print(f"  {'workload':<28} {'separate':>10} {'merged':>10} {'speed-up':>9}")
    for r in rows["merged"]:
        print(f"  {r['workload']:<28} {r['separate_cycles']:>10} {r['merged_cycles']:>10} "
              f"{r['separate_cycles'] / r['merged_cycles']:>8.2f}x")
    t = rows["transposed_reduction"]
    print(f"Spyre: x.sum(axis=0) of {t['shape'][0]}x{t['shape'][1]}: {t['cycles']} cycles "
          f"({t['bottleneck']}), DRAM read {t['dram_bytes_read']} B for {t['fp16_bytes']} B of data "
          f"({t['dram_bytes_read'] / t['fp16_bytes']:.2f}x)")
    return rows
