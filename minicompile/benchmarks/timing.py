"""Timing the way the benchmarks report it: median of repeated runs after warm-up."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def median_seconds(fn: Callable[..., Any], *args: Any, warmup: int = 3, min_runs: int = 5,
                   budget_s: float = 1.0) -> float:
    """Median wall time of ``fn(*args)``: at least ``min_runs`` runs, about ``budget_s`` in all."""
    return run_times(fn, *args, warmup=warmup, min_runs=min_runs, budget_s=budget_s)[0]


def run_times(fn: Callable[..., Any], *args: Any, warmup: int = 3, min_runs: int = 5,
              budget_s: float = 1.0) -> tuple[float, float]:
    """(median, fastest) wall time of ``fn(*args)``; on a busy machine the
    fastest run shows what the code can do, the median what it did."""
    for _ in range(warmup):
        fn(*args)
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < min_runs or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
        if len(times) >= 10_000:
            break
    return statistics.median(times), min(times)


def format_seconds(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
