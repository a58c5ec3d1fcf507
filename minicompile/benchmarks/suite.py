"""``make bench``: eager NumPy vs minicompile (and torch.compile when installed), one table.

For each workload it reports median times, the ratio minicompile/NumPy, the
number of generated kernels, compile time cold and from the disk cache, and
for memory-bound workloads the achieved bandwidth against a measured copy.
Results also go to a JSON file.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from typing import Any

import numpy as np

import minicompile as mc
from minicompile import config

from .timing import format_seconds, median_seconds
from .workloads import WORKLOADS, torch_versions


def copy_bandwidth(nbytes: int = 1 << 26) -> float:
    """Bytes/s of ``np.copyto`` on a large buffer: the memory roof we compare against."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    t = median_seconds(np.copyto, dst, src, budget_s=0.5)
    return 2 * nbytes / t


def compile_times(fn, inputs: tuple) -> tuple[float, float, Any]:
    """(cold compile seconds, seconds from the disk cache, compiled function)."""
    saved = config.cache_dir
    with tempfile.TemporaryDirectory(prefix="minicompile-bench-") as tmp:
        config.cache_dir = type(saved)(tmp)
        try:
            compiled = mc.compile(fn)
            start = time.perf_counter()
            compiled(*inputs)
            cold = time.perf_counter() - start
            from minicompile.inductor import codecache

            codecache.clear_memory_cache()
            warm_fn = mc.compile(fn)
            start = time.perf_counter()
            warm_fn(*inputs)
            warm = time.perf_counter() - start
        finally:
            config.cache_dir = saved
    return cold, warm, warm_fn


def main(json_path: str = "bench.json", quick: bool = False) -> int:
    torch_fns = torch_versions()
    roof = copy_bandwidth()
    print(f"minicompile bench on {platform.machine()}, {os.cpu_count()} cores; "
          f"copy bandwidth {roof / 1e9:.1f} GB/s; torch: {'yes' if torch_fns else 'not installed'}")
    header = (f"{'workload':<16}{'numpy':>10}{'minicompile':>13}{'mc/np':>8}{'speedup':>9}"
              f"{'kernels':>9}{'cold':>9}{'cached':>9}{'%roof':>7}")
    if torch_fns:
        header += f"{'torch.compile':>15}{'mc/tc':>8}"
    print(header)
    rows = []
    for w in WORKLOADS:
        inputs = w.make_inputs(quick)
        budget = 0.2 if quick else 1.0
        cold, warm, compiled = compile_times(w.fn, inputs)
        np.testing.assert_allclose(compiled(*inputs), w.fn(*inputs), rtol=1e-4, atol=1e-4)
        t_np = median_seconds(w.fn, *inputs, budget_s=budget)
        t_mc = median_seconds(compiled, *inputs, budget_s=budget)
        kernels = len(getattr(compiled.cache[0].compiled, "kernels", []))
        frac = w.bytes_moved(inputs) / t_mc / roof if w.memory_bound else None
        row: dict[str, Any] = dict(workload=w.name, numpy_s=t_np, minicompile_s=t_mc,
                                   ratio=t_mc / t_np, kernels=kernels, compile_cold_s=cold,
                                   compile_cached_s=warm, fraction_of_copy_bandwidth=frac)
        line = (f"{w.name:<16}{format_seconds(t_np):>10}{format_seconds(t_mc):>13}"
                f"{t_mc / t_np:>8.3f}{t_np / t_mc:>8.2f}x{kernels:>9}"
                f"{format_seconds(cold):>9}{format_seconds(warm):>9}"
                f"{(f'{100 * frac:.0f}%' if frac else '-'):>7}")
        if torch_fns:
            import torch

            tc = torch.compile(torch_fns[w.name])
            t_inputs = [torch.from_numpy(a) for a in inputs]
            t_tc = median_seconds(tc, *t_inputs, budget_s=budget)
            row.update(torch_compile_s=t_tc, ratio_vs_torch_compile=t_mc / t_tc)
            line += f"{format_seconds(t_tc):>15}{t_mc / t_tc:>8.3f}"
        print(line)
        rows.append(row)
    with open(json_path, "w") as f:
        json.dump({"copy_bandwidth_Bps": roof, "quick": quick, "results": rows}, f, indent=2)
    print(f"results written to {json_path}")
    return 0
