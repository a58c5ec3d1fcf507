"""Knobs that change how minicompile compiles; read once, changeable at run time.

In:  the environment, when minicompile is first imported.
Out: one module attribute per setting (``minicompile.config.recompile_limit``,
     ...), which code reads at the moment it needs it, so assigning one at run
     time takes effect; and :data:`SETTINGS`, the table of every environment
     variable minicompile reads, with its ``config`` field, default and meaning.

The table is the one list of settings: ``python -m minicompile --help`` prints
it, the README's "Settings" section shows it (a test keeps the two equal), and
a test fails when code reads an environment variable the table does not name.
Flags are ``0`` or ``1`` in the environment and ``False``/``True`` in ``config``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# minicompile's version (``minicompile.__version__``); here so that any module
# can name it without importing the package that imports that module.
__version__ = "0.1.0"


@dataclass(frozen=True)
class Setting:
    """One setting as a user meets it: the environment variable that sets it,
    the ``minicompile.config`` field holding it at run time (None: the
    environment alone), its default as the user would write it, and what it does."""

    env: str
    field: str | None
    default: str
    meaning: str


SETTINGS: dict[str, Setting] = {}  # by environment variable, in the order shown


def _setting(field: str, env: str, default: Any, meaning: str,
             parse: Callable[[str], Any] = int, shown: str | None = None) -> Any:
    """Enter a ``config`` field in the table; its value is ``$env`` parsed, or
    ``default`` when the variable is unset or empty."""
    SETTINGS[env] = Setting(env, field, str(default) if shown is None else shown, meaning)
    raw = os.environ.get(env)
    return parse(raw) if raw else default


def _flag(field: str, env: str, default: bool, meaning: str) -> bool:
    return _setting(field, env, default, meaning, parse=lambda raw: bool(int(raw)), shown=str(int(default)))


def _environment(env: str, default: str, meaning: str) -> None:
    """Enter a variable read where it is used (no ``config`` field)."""
    SETTINGS[env] = Setting(env, None, default, meaning)


cache_dir: Path = _setting(
    "cache_dir", "MINICOMPILE_CACHE_DIR", Path.home() / ".cache" / "minicompile",
    "Where compiled code is kept between processes: C++ shared libraries, named by a hash of "
    "their source, flags, compiler and CPU, and Triton kernels with their autotuning results. "
    "A process that cannot write it compiles C++ into a temporary directory of its own, "
    "removed at exit, and warns once. `make clean-cache` deletes it.",
    parse=Path, shown="~/.cache/minicompile")

runtime_dir: Path = _setting(
    "runtime_dir", "MINICOMPILE_RUNTIME_DIR", cache_dir / "runtime",
    "Where the C++ runtime library (code every graph's kernels share: the generated GEMM, the attention kernel) is "
    "kept; apart from cache_dir, so that an empty cache_dir (a cold compile, timed) still finds "
    "the runtime built once. `python -m minicompile runtime` builds it ahead of first use.",
    parse=Path, shown="cache_dir/runtime")

cxx: str | None = _setting(
    "cxx", "CXX", None,
    "The C++ compiler of the cpp backend. One that is not found or does not run is passed over "
    "with a warning naming it and the compiler used instead; with no compiler at all, graphs "
    "run through NumPy, with one warning.",
    parse=str, shown="the first of g++, c++, clang++ on PATH")

recompile_limit: int = _setting(
    "recompile_limit", "MINICOMPILE_RECOMPILE_LIMIT", 8,
    "Cache entries (one per distinct set of guards) a compiled function collects; past it the "
    "function runs eagerly, with one warning. A backend that compiles once per shape compiles "
    "as many shapes of one graph, then runs new shapes through NumPy. TorchDynamo's default "
    "is 8 too.")

loop_unroll_limit: int = _setting(
    "loop_unroll_limit", "MINICOMPILE_LOOP_UNROLL_LIMIT", 16,
    "A counted loop (for i in range(n)) of more iterations becomes one loop node holding its "
    "body, traced once, when the body allows it; shorter loops unroll, which lets their "
    "kernels fuse across iterations.")

attention_template: bool = _flag(
    "attention_template", "MINICOMPILE_ATTENTION_TEMPLATE", True,
    "Triton and C++ backends: softmax attention written as NumPy ops (q @ k.T, scaled, masked, softmax, "
    "@ v) runs as one flash-attention kernel; 0 keeps the ops as they are (two matmuls and the softmax's "
    "kernels).")


def _precision(raw: str) -> str:
    if raw not in ("ieee", "tf32x3"):
        raise ValueError(f"MINICOMPILE_MATMUL_PRECISION={raw!r}: use ieee or tf32x3")
    return raw


matmul_precision: str = _setting(
    "matmul_precision", "MINICOMPILE_MATMUL_PRECISION", "tf32x3",
    "Triton backend: how the matmul template multiplies float32 tiles. tf32x3: each operand split into "
    "two TF32 parts and three tensor-core products summed, float32's accuracy (a tile with an inf or NaN "
    "is computed again as ieee); ieee: exact float32 products on the CUDA cores, as NumPy and cuBLAS, "
    "slower on large products.",
    parse=_precision)

strict: bool = _flag(
    "strict", "MINICOMPILE_STRICT", False,
    "1: minicompile's own internal errors raise, instead of running the function eagerly with "
    "a warning. The test suite turns it on.")

num_threads: int = _setting(
    "num_threads", "MINICOMPILE_NUM_THREADS", 0,
    "OpenMP threads of the generated C++ kernels; 0: OpenMP's default (OMP_NUM_THREADS, else "
    "one per core).")

cpp_matmul_epilogues: bool = _flag(
    "cpp_matmul_epilogues", "MINICOMPILE_CPP_MATMUL_EPILOGUES", True,
    "1: the pointwise work after a generated float32 matmul (a bias, an activation, a residual "
    "add) runs on each finished tile of the product, instead of as a kernel of its own that "
    "reads the product back from memory.")

cpp_streaming_stores: bool = _flag(
    "cpp_streaming_stores", "MINICOMPILE_CPP_STREAMING_STORES", True,
    "1: C++ kernels that store more than the cache holds write with streaming (non-temporal) "
    "stores, which skip reading each line before writing it.")

cpp_interleave: bool = _flag(
    "cpp_interleave", "MINICOMPILE_CPP_INTERLEAVE", True,
    "1: C++ loops that evaluate exp, log or tanh are written several vectors at a time, "
    "interleaved statement by statement, so that their long chains of dependent instructions "
    "overlap.")

keep_intermediates: bool = _flag(
    "keep_intermediates", "MINICOMPILE_KEEP_INTERMEDIATES", True,
    "1: a compiled graph keeps the arrays of its intermediate buffers from one call to the next "
    "(one set per calling thread) instead of allocating them afresh, which costs a page fault "
    "per page on every call; its peak intermediate bytes stay allocated.")

cached_allocator: bool = _flag(
    "cached_allocator", "MINICOMPILE_CACHED_ALLOCATOR", True,
    "1: the arrays a large compiled graph returns (and NumPy's results inside it) are allocated "
    "through minicompile's caching allocator, which keeps a freed array's block for the next "
    "array of about its size instead of returning it to the system.")

allocator_cache_bytes: int = _setting(
    "allocator_cache_bytes", "MINICOMPILE_ALLOCATOR_CACHE_BYTES", 1 << 30,
    "The most bytes of freed blocks the caching allocator keeps (the oldest go first); "
    "minicompile.empty_cache() returns them all.", shown="1073741824 (1 GiB)")

triton_compile_workers: int = _setting(
    "triton_compile_workers", "MINICOMPILE_TRITON_COMPILE_WORKERS", -1,
    "Processes that compile a graph's Triton kernels (every config autotuning will try) in "
    "parallel before its first call on the GPU; -1: one per CPU, at most 16; 0: in this "
    "process, one kernel at a time.")

_environment(
    "MINICOMPILE_LOGS", "unset",
    "Artifacts printed to stderr as they are made, comma-separated: graph, guards, recompiles, "
    "graph_breaks, bytecode, loops, decomp, patterns, aot, partition, schedule, output_code, cudagraphs, spyre, or "
    "all; +internals keeps minicompile's own frames in tracebacks. "
    "minicompile.logs.set_logs(...) changes them at run time.")

_environment(
    "GOMP_SPINCOUNT", "10000",
    "OpenMP's (libgomp's) own: how long idle threads spin. Unless it or OMP_WAIT_POLICY is set, "
    "minicompile sets it to this before its first C++ kernel loads: a short spin keeps "
    "back-to-back kernels cheap, then frees the cores for NumPy and BLAS.")

_environment(
    "OMP_WAIT_POLICY", "unset",
    "OpenMP's own; when it is set, minicompile leaves GOMP_SPINCOUNT alone.")

_environment(
    "TRITON_INTERPRET", "unset",
    "Triton's own switch to its CPU interpreter. minicompile sets it while it loads kernels "
    "(1 for NumPy arrays, 0 for CuPy arrays) and restores it after: the arrays choose.")

_environment(
    "PYTHONPATH", "unset",
    "Passed on to the processes that compile Triton kernels, after the directory minicompile "
    "is imported from.")
