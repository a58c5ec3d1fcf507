"""Timing on the GPU for ``make bench-gpu``: device time, host time and wall time per call.

In:  CuPy (``cp``), a callable and its arguments.
Out: milliseconds per call.  Device time is taken with CUDA events around many
     back-to-back calls, never around one call followed by a sync: that also
     counts the host's Python time before the launch, which flatters whichever
     engine has less of it.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def device_ms(cp: Any, fn: Callable, *args: Any, calls: int = 50, rounds: int = 5) -> float:
    """Device milliseconds per call: CUDA events around ``calls`` back-to-back calls
    (the host enqueues ahead of the device, so its Python time overlaps the
    kernels instead of adding to them), the median over ``rounds``.  A workload
    whose host time per call exceeds its device time reads as its host time: the
    device waits for the host, which is what a user of that workload sees."""
    for _ in range(3):
        fn(*args)
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(rounds):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn(*args)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / calls)
    return statistics.median(times)


def host_ms(cp: Any, fn: Callable, *args: Any, calls: int = 20) -> float:
    """Host milliseconds per call: the wall time of ``calls`` calls without waiting
    for the device (guards, wrapper, launches), after the device has caught up."""
    for _ in range(3):
        fn(*args)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    elapsed = time.perf_counter() - start
    cp.cuda.Device().synchronize()
    return elapsed * 1e3 / calls


def wall_ms(cp: Any, fn: Callable, *args: Any, calls: int = 2000) -> float:
    """Wall milliseconds per call over many back-to-back calls, device included."""
    for _ in range(50):
        fn(*args)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - start) * 1e3 / calls
