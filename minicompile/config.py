"""Knobs that change how minicompile compiles; read once, changeable at run time.

Each setting can be overridden from the environment (``MINICOMPILE_<NAME>``) so a
test or a benchmark can flip it without touching code.
"""
from __future__ import annotations

import os
from pathlib import Path


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

# The C compiler used by the cpp backend; found on PATH when not set.
cxx: str | None = os.environ.get("CXX") or None

# OpenMP threads for generated C++ kernels (0 = OpenMP's default).
num_threads: int = _env_int("NUM_THREADS", 0)

# Raise minicompile's own internal errors instead of falling back to eager
# execution with a warning.  The test suite turns this on.
strict: bool = bool(_env_int("STRICT", 0))
