"""make bench's compile times: what the cold and the disk-cache columns count.

A clock that moves only when told to (no wall-clock timing): the compiled
code's run moves it by a large step, so a compile time that held the run would
show it.  The cold pass must run the C++ compiler once; the pass "from the disk
cache" must load that library from disk and compile nothing.
"""
import time

import numpy as np

import minicompile as mc
from minicompile.benchmarks import suite
from minicompile.inductor import codecache
from minicompile.inductor.codegen.cpp import runtime as cpp_runtime
from minicompile.inductor.compiled import CompiledGraph

RUN_SECONDS = 1000.0  # what one run of the compiled code costs on the fake clock


def workload(x, w):
    return np.tanh(x @ w + 1.0).sum(axis=-1)


def test_compile_times_leave_out_the_run_and_a_cache_hit_compiles_nothing(monkeypatch):
    clock = [0.0]

    def perf_counter():
        clock[0] += 1e-6  # every read moves a little: compiling takes some time
        return clock[0]

    run = CompiledGraph.__call__

    def slow_run(self, *inputs):
        clock[0] += RUN_SECONDS
        return run(self, *inputs)

    cpp_runtime.gemm_address()  # the runtime: built and bound once per process (else counted here when run alone)
    events = []
    compile_cxx, try_load = codecache._compile, codecache._try_load

    def counted_compile(*args):
        events.append("c++ compiler")
        return compile_cxx(*args)

    def counted_load(*args):
        events.append("loaded from disk")
        return try_load(*args)

    monkeypatch.setattr(time, "perf_counter", perf_counter)
    monkeypatch.setattr(CompiledGraph, "__call__", slow_run)
    monkeypatch.setattr(codecache, "_compile", counted_compile)
    monkeypatch.setattr(codecache, "_try_load", counted_load)
    mc.reset()
    rng = np.random.default_rng(0)
    inputs = (rng.standard_normal((8, 16), dtype=np.float32), rng.standard_normal((16, 32), dtype=np.float32))

    times = suite.compile_times(workload, inputs)

    assert events == ["c++ compiler", "loaded from disk"]
    assert times.first_call_cold_s >= RUN_SECONDS and times.first_call_cached_s >= RUN_SECONDS
    assert 0 < times.cold_s < RUN_SECONDS and 0 < times.cached_s < RUN_SECONDS
    np.testing.assert_allclose(times.compiled(*inputs), workload(*inputs), rtol=1e-5)
