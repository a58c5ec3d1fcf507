"""``make bench``: eager NumPy vs minicompile vs PyTorch eager and torch.compile, one table.

In:  the workloads of :mod:`.workloads` (NumPy functions, their inputs, and
     the same math written for torch).
Out: a table on stdout and the same numbers as JSON.

Everything runs in one process on the same inputs: median times after
warm-up, the ratios minicompile/NumPy and minicompile/torch.compile, the
number of generated kernels, compile time cold (empty disk cache) and from
the disk cache (a fresh compile whose library is already on disk) — the time
spent compiling, without the run that follows (:func:`compile_times`), the peak
bytes of intermediates, and for memory-bound workloads the bandwidth reached
(bytes of inputs and outputs over time) as a fraction of a measured copy
with as many threads as the kernels use.

Bandwidth is not every memory-bound workload's limit: one that evaluates a
transcendental function per element may be bound by the arithmetic.  So each
also runs on the first 1/``IN_CACHE_SHARE`` of its inputs' rows, a working
set the caches hold, and ``%in-cache`` is that time, scaled up to the full
size, over the full run's: near 100% the full run is as fast per byte as with
its data in cache (more bandwidth would not help; the arithmetic is the
limit), far below it the kernel waits on memory.  The small run's fixed
cost per call (guards, the wrapper, starting the thread team: a few
microseconds against layer norm's 60) makes the figure read a little high.

The copy that is the roof moves the workload's own bytes: it reads a buffer
the size of the inputs and writes one the size of the outputs, again and
again as the workload runs.  A working set that fits the last-level cache
(a 16 MB softmax input in a 32 MB L3) is then partly served from it for the
copy too, so the fraction stays an honest one (against a copy far larger
than the caches, fused kernels showed more than 100%).  The copy is the
faster of ``memcpy`` and a loop of streaming (non-temporal) stores.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from typing import Any, NamedTuple

import numpy as np

import minicompile as mc
from minicompile import config

from .timing import format_seconds, run_times
from .workloads import WORKLOADS, torch_versions

COPY_SOURCE = r"""
#include <cstdint>
#include <cstring>
// The bandwidth roof: a parallel copy, each thread one contiguous chunk of
// 64-byte lines; src is read cyclically when dst is the larger.
static inline void mc_chunk(int64_t n, int64_t* lo, int64_t* hi) {
    int64_t t = omp_get_thread_num(), k = omp_get_num_threads();
    *lo = n * t / k / 64 * 64;
    *hi = t + 1 == k ? n : n * (t + 1) / k / 64 * 64;
}
extern "C" void bench_copy(const char* __restrict src, int64_t n_src, char* __restrict dst, int64_t n) {
    #pragma omp parallel
    {
        int64_t lo, hi;
        mc_chunk(n, &lo, &hi);
        for (int64_t at = lo; at < hi;) {
            int64_t from = at % n_src, len = hi - at < n_src - from ? hi - at : n_src - from;
            std::memcpy(dst + at, src + from, len);
            at += len;
        }
    }
}
// The same with streaming stores: the written lines bypass the caches and
// need no read for ownership (x86 only; elsewhere this is the memcpy again).
#if defined(__SSE2__)
#include <immintrin.h>
static inline void mc_stream(const char* src, char* dst, int64_t len) {
    while (len > 0 && ((uintptr_t)dst & 15)) { *dst++ = *src++; --len; }
    for (; len >= 16; len -= 16, src += 16, dst += 16)
        _mm_stream_si128((__m128i*)dst, _mm_loadu_si128((const __m128i*)src));
    std::memcpy(dst, src, len);
}
#else
static inline void mc_stream(const char* src, char* dst, int64_t len) { std::memcpy(dst, src, len); }
#endif
extern "C" void bench_copy_streaming(const char* __restrict src, int64_t n_src, char* __restrict dst, int64_t n) {
    #pragma omp parallel
    {
        int64_t lo, hi;
        mc_chunk(n, &lo, &hi);
        for (int64_t at = lo; at < hi;) {
            int64_t from = at % n_src, len = hi - at < n_src - from ? hi - at : n_src - from;
            mc_stream(src + from, dst + at, len);
            at += len;
        }
    }
    #if defined(__SSE2__)
    _mm_sfence();
    #endif
}
"""


def copy_bandwidth(read_bytes: int = 1 << 28, write_bytes: int | None = None,
                   budget_s: float = 1.0) -> tuple[float, str]:
    """Bytes/s (read + write) of a parallel copy from a ``read_bytes`` buffer
    into a ``write_bytes`` one (default: the same size), run repeatedly on the
    same buffers: the faster of memcpy and streaming stores, each by its
    fastest run (a roof: what the copy can do, not what a loaded machine let
    it do)."""
    import ctypes

    from minicompile.inductor import codecache

    write_bytes = read_bytes if write_bytes is None else write_bytes
    n_src, n_dst = max(read_bytes // 4, 16), max(write_bytes // 4, 16)
    src = np.ones(n_src, np.float32)
    dst = np.zeros(n_dst, np.float32)
    moved = src.nbytes + dst.nbytes
    try:
        lib, _, _ = codecache.load("#include <omp.h>\n" + COPY_SOURCE)
    except Exception:  # no compiler: NumPy's single-threaded copy
        copy = (lambda: np.copyto(dst, np.resize(src, n_dst))) if n_src != n_dst else (lambda: np.copyto(dst, src))
        return moved / run_times(copy, budget_s=budget_s)[1], "np.copyto"
    best, how = 0.0, ""
    for name, label in (("bench_copy", "OpenMP memcpy"), ("bench_copy_streaming", "OpenMP streaming stores")):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
        args = (src.ctypes.data, src.nbytes, dst.ctypes.data, dst.nbytes)
        rate = moved / run_times(fn, *args, budget_s=budget_s / 2)[1]
        if rate > best:
            best, how = rate, label
    return best, how


IN_CACHE_SHARE = 16  # softmax over 4096 x 1024 float32: 256 rows, 2 MB in and out


def in_cache_seconds(fn, inputs: tuple, budget_s: float) -> float:
    """Median time of ``fn`` compiled on the first 1/IN_CACHE_SHARE of each
    input's rows (a working set the caches hold), times the ratio of the full
    inputs' bytes to theirs."""
    small = tuple(np.ascontiguousarray(a[: max(len(a) // IN_CACHE_SHARE, 1)]) for a in inputs)
    compiled = mc.compile(fn)
    median, _ = run_times(compiled, *small, budget_s=budget_s)
    return median * sum(a.nbytes for a in inputs) / sum(a.nbytes for a in small)


class CompileTimes(NamedTuple):
    cold_s: float  # compiling with an empty disk cache (the C++ compiler runs)
    cached_s: float  # compiling again in a fresh state whose library is on disk
    first_call_cold_s: float  # the first call with an empty disk cache: compile and one run
    first_call_cached_s: float  # the same from the disk cache
    compiled: Any  # the function compiled from the disk cache


def compile_times(fn, inputs: tuple) -> CompileTimes:
    """Compile time of ``fn`` cold and from the disk cache.

    Compile time is what a miss costs before the compiled code runs (capture,
    guards, backend: ``OptimizedFunction.compile_seconds``).  The first call's
    wall time also holds one run of the workload — for a large matmul that is
    most of it — so it is kept apart, in ``first_call_*``.  "From the disk
    cache" is a new compiled function in a process that has forgotten the
    libraries it loaded: every stage runs again, only the C++ compiler is
    replaced by loading its library from disk.
    """
    from minicompile.inductor import codecache

    saved = config.cache_dir
    with tempfile.TemporaryDirectory(prefix="minicompile-bench-") as tmp:
        config.cache_dir = type(saved)(tmp)
        try:
            codecache.clear_memory_cache()
            cold_fn = mc.compile(fn)
            start = time.perf_counter()
            cold_fn(*inputs)
            first_cold = time.perf_counter() - start
            codecache.clear_memory_cache()
            warm_fn = mc.compile(fn)
            start = time.perf_counter()
            warm_fn(*inputs)
            first_warm = time.perf_counter() - start
        finally:
            config.cache_dir = saved
    return CompileTimes(cold_fn.compile_seconds, warm_fn.compile_seconds, first_cold, first_warm, warm_fn)


def _compiled_graph(fn) -> Any:
    entries = getattr(fn, "cache", None) or []
    return getattr(entries[0], "compiled", None) if entries else None


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _header(roof: float, how: str, torch_fns) -> str:
    lines = [f"minicompile bench: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}, "
             f"OpenMP threads {config.num_threads or 'default'}"]
    blas = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    if blas:
        lines.append("environment (may slow NumPy's BLAS): " + ", ".join(f"{k}={v}" for k, v in sorted(blas.items())))
    lines.append(f"copy bandwidth ({how}, read+write, far above the caches): {roof / 1e9:.1f} GB/s; "
                 "%copyBW is against a copy of each workload's own bytes")
    if torch_fns:
        import torch

        lines.append(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    else:
        lines.append("torch: not installed (pip install torch==2.13.0 to compare)")
    return "\n".join(lines)


def _time_torch(name: str, torch_fns, inputs: tuple, budget: float) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    t_inputs = [torch.from_numpy(np.ascontiguousarray(a)) for a in inputs]
    fn = torch_fns[name]
    with torch.no_grad():
        out["torch_eager_s"], out["torch_eager_best_s"] = run_times(fn, *t_inputs, budget_s=budget)
        try:
            compiled = torch.compile(fn)
            start = time.perf_counter()
            compiled(*t_inputs)
            out["torch_compile_cold_s"] = time.perf_counter() - start
            out["torch_compile_s"], out["torch_compile_best_s"] = run_times(compiled, *t_inputs, budget_s=budget)
        except Exception as why:  # report, never abort the suite
            out["torch_compile_error"] = f"{type(why).__name__}: {why}"[:200]
    return out


COLUMNS = [("workload", 15), ("numpy", 10), ("mc", 10), ("mc/np", 7), ("torch", 10), ("t.compile", 10),
           ("mc/tc", 7), ("best mc/tc", 11), ("kernels", 8), ("cold", 9), ("cached", 9), ("peak MB", 8), ("%copyBW", 8),
           ("%in-cache", 10)]


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "time":
        return format_seconds(value)
    if kind == "ratio":
        return f"{value:.2f}"
    if kind == "pct":
        return f"{100 * value:.0f}%"
    return str(value)


def main(json_path: str = "bench.json", quick: bool = False) -> int:
    torch_fns = torch_versions()
    roof, how = copy_bandwidth(1 << 26 if quick else 1 << 28)
    print(_header(roof, how, torch_fns))
    print("".join(f"{name:>{width}}" if i else f"{name:<{width}}" for i, (name, width) in enumerate(COLUMNS)))
    rows = []
    budget = 0.3 if quick else 1.5
    for w in WORKLOADS:
        inputs = w.make_inputs(quick)
        times = compile_times(w.fn, inputs)
        cold, warm, compiled = times.cold_s, times.cached_s, times.compiled
        expected = _as_tuple(w.fn(*inputs))
        got = _as_tuple(compiled(*inputs))
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=2e-3, atol=2e-3)
        t_np, best_np = run_times(w.fn, *inputs, budget_s=budget)
        t_mc, best_mc = run_times(compiled, *inputs, budget_s=budget)
        cg = _compiled_graph(compiled)
        # Loop kernels, and matmuls or attentions generated as C++ functions of their own.
        kernel_names = list(getattr(cg, "kernels", [])) + list(getattr(cg, "extern_kernels", []))
        kernels = len(kernel_names)
        moved = w.bytes_moved(inputs, expected)
        frac = best_frac = workload_roof = in_cache = None
        if w.memory_bound:
            read = sum(np.asarray(a).nbytes for a in inputs)
            workload_roof, _ = copy_bandwidth(read, moved - read, budget_s=budget)
            frac = moved / t_mc / workload_roof
            best_frac = moved / best_mc / workload_roof
            in_cache = in_cache_seconds(w.fn, inputs, budget)
        row: dict[str, Any] = dict(
            workload=w.name, numpy_s=t_np, minicompile_s=t_mc, ratio_vs_numpy=t_mc / t_np, kernels=kernels,
            numpy_best_s=best_np, minicompile_best_s=best_mc,
            kernel_goal=w.kernel_goal, kernel_names=kernel_names,
            compile_cold_s=cold, compile_cached_s=warm, first_call_cold_s=times.first_call_cold_s,
            first_call_cached_s=times.first_call_cached_s, bytes_moved=moved,
            peak_intermediate_bytes=getattr(cg, "peak_intermediate_bytes", None),
            fraction_of_copy_bandwidth=frac, fraction_of_copy_bandwidth_best_run=best_frac,
            copy_roof_Bps=workload_roof, in_cache_s=in_cache,
            in_cache_fraction=None if in_cache is None else in_cache / t_mc)
        if torch_fns:
            row.update(_time_torch(w.name, torch_fns, inputs, budget))
            if "torch_compile_s" in row:
                row["ratio_vs_torch_compile"] = t_mc / row["torch_compile_s"]
                row["torch_compile_speedup_over_numpy"] = t_np / row["torch_compile_s"]
        row["speedup_over_numpy"] = t_np / t_mc
        rows.append(row)
        peak = row["peak_intermediate_bytes"]
        cells = [w.name, _fmt(t_np, "time"), _fmt(t_mc, "time"), _fmt(t_mc / t_np, "ratio"),
                 _fmt(row.get("torch_eager_s"), "time"), _fmt(row.get("torch_compile_s"), "time"),
                 _fmt(row.get("ratio_vs_torch_compile"), "ratio"),
                 _fmt(best_mc / row["torch_compile_best_s"] if "torch_compile_best_s" in row else None, "ratio"),
                 f"{kernels}" + (f"/{w.kernel_goal}" if w.kernel_goal else ""),
                 _fmt(cold, "time"), _fmt(warm, "time"),
                 "-" if peak is None else f"{peak / 2**20:.1f}", _fmt(frac, "pct"),
                 _fmt(row["in_cache_fraction"], "pct")]
        print("".join(f"{c:>{width}}" if i else f"{c:<{width}}" for i, (c, (_, width)) in enumerate(zip(cells, COLUMNS))),
              flush=True)
    tiny = next((r for r in rows if r["workload"] == "tiny"), None)
    if tiny:
        per_call = f"numpy {tiny['numpy_s'] * 1e6:.2f} us, minicompile {tiny['minicompile_s'] * 1e6:.2f} us"
        if "torch_compile_s" in tiny:
            per_call += f", torch.compile {tiny['torch_compile_s'] * 1e6:.2f} us"
        print(f"per-call overhead (x + 1.0 on 8 float32): {per_call}")
    print("mc/np, mc/tc: ratios of median times (below 1: minicompile is faster); best mc/tc: of the fastest "
          "runs; kernels: generated (loop kernels, GEMMs and attentions with an entry of their own)/goal; "
          "cold/cached: compile time (capture, guards, backend; not the first run, which the JSON "
          "adds in first_call_*) with an empty / a warm disk cache; %copyBW: (inputs+outputs bytes)/time "
          "over that of a copy reading as many bytes as the inputs and writing as many as the outputs; "
          f"%in-cache: the time of 1/{IN_CACHE_SHARE} of the rows (in cache), scaled up, over the full run's "
          "(near 100%: bound by arithmetic, not memory)")
    from ..profiler.overhead import main as profiler_overhead
    from .models import main as model_rows
    from .dynamic_shapes import main as dynamic_shape_rows
    from .spyre import main as spyre_rows
    from .loops import main as loop_rows
    from .training import main as training_rows

    training = training_rows(quick)
    print()
    models = None if quick else model_rows(with_torch=torch_fns is not None)
    print()
    spyre = spyre_rows()
    print()
    loops = loop_rows(quick)
    print()
    dynamic_shape_rows(quick)
    print()
    profiler_overhead()
    with open(json_path, "w") as f:
        json.dump({"copy_bandwidth_Bps": roof, "copy_method": how, "quick": quick, "results": rows,
                   "training": training, "models": models, "spyre": spyre, "loops": loops}, f, indent=2, default=str)
    print(f"results written to {json_path}")
    return 0
