"""Knobs that change how minicompile compiles; read once, changeable at run time.

Each setting can be overridden from the environment (``MINICOMPILE_<NAME>``) so a
test or a benchmark can flip it without touching code.
"""
from __future__ import annotations

import os
from pathlib import Path

# minicompile's version (``minicompile.__version__``); here so that any module
# can name it without importing the package that imports that module.
__version__ = "0.1.0"


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(f"MINICOMPILE_{name}")
    return int(raw) if raw else default


# How many cache entries (one per distinct set of guards) a function may collect
# before it gives up compiling and runs eagerly.  TorchDynamo's default is 8 too.
recompile_limit: int = _env_int("RECOMPILE_LIMIT", 8)

# Where compiled shared libraries are kept between processes, keyed by a hash of
# their source, flags and compiler.
cache_dir: Path = Path(
    os.environ.get("MINICOMPILE_CACHE_DIR", Path.home() / ".cache" / "minicompile")
)

# Where the C++ runtime library (code shared by every graph's kernels: the
# generated GEMM) is kept.  Separate from cache_dir, so that an empty cache_dir
# (a cold graph compile) still finds the runtime built once per machine.
runtime_dir: Path = Path(os.environ.get("MINICOMPILE_RUNTIME_DIR", cache_dir / "runtime"))

# The C compiler used by the cpp backend; found on PATH when not set.
cxx: str | None = os.environ.get("CXX") or None

# A counted loop (``for i in range(n)``) with more iterations than this becomes one
# loop node holding its body, traced once, when the body allows it; shorter ones
# unroll, which lets the body's kernels fuse across iterations.
loop_unroll_limit: int = _env_int("LOOP_UNROLL_LIMIT", 16)

# OpenMP threads for generated C++ kernels (0 = OpenMP's default).
num_threads: int = _env_int("NUM_THREADS", 0)

# Raise minicompile's own internal errors instead of falling back to eager
# execution with a warning.  The test suite turns this on.
strict: bool = bool(_env_int("STRICT", 0))

# Run the pointwise kernel after a generated float32 matmul on each finished
# tile of the product (its epilogue: a bias, an activation, a residual add)
# instead of as a kernel of its own that reads the product back from memory.
cpp_matmul_epilogues: bool = bool(_env_int("CPP_MATMUL_EPILOGUES", 1))

# Keep the arrays of a compiled graph's intermediate buffers from one call to
# the next (one set per thread) instead of allocating them afresh: large fresh
# arrays cost a page fault per page on every call.  Memory: the graph's peak
# intermediate bytes stay allocated per calling thread.
keep_intermediates: bool = bool(_env_int("KEEP_INTERMEDIATES", 1))

# Allocate the arrays a large compiled graph returns (and NumPy's results
# inside it) through minicompile's caching allocator: a freed array's block is
# kept and handed to the next array of about its size, instead of returned to
# the system and faulted in again page by page (see inductor/codegen/cpp/allocator.py).
cached_allocator: bool = bool(_env_int("CACHED_ALLOCATOR", 1))

# The most bytes of freed blocks the caching allocator keeps (oldest go first);
# ``minicompile.empty_cache()`` returns them all.
allocator_cache_bytes: int = _env_int("ALLOCATOR_CACHE_BYTES", 1 << 30)

# Kernels of the C++ backend that store more than the cache holds write their
# outputs with streaming (non-temporal) stores, which skip reading each line
# before writing it (see inductor/codegen/cpp/streaming.py).
cpp_streaming_stores: bool = bool(_env_int("CPP_STREAMING_STORES", 1))

# Pointwise loops that evaluate our vectorized exp, log or tanh are written as several
# vectors at a time, interleaved statement by statement, so that their long
# chains of dependent instructions overlap (see inductor/codegen/cpp/interleave.py).
cpp_interleave: bool = bool(_env_int("CPP_INTERLEAVE", 1))

# Processes that compile a graph's Triton kernels (every config autotuning will
# try) in parallel before its first call on the GPU; -1: one per CPU, at most 16;
# 0: compile in this process only, one kernel at a time (see
# inductor/codegen/triton/workers.py).
triton_compile_workers: int = _env_int("TRITON_COMPILE_WORKERS", -1)
