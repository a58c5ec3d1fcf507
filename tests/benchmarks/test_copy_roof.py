"""The copy behind make bench's %copyBW: it must really copy, cyclically when the destination is larger."""
import ctypes

import numpy as np
import pytest

from minicompile.benchmarks.suite import COPY_SOURCE, copy_bandwidth
from minicompile.inductor import codecache


@pytest.mark.parametrize("name", ["bench_copy", "bench_copy_streaming"])
@pytest.mark.parametrize("n_src, n_dst", [(1000, 1000), (1000, 2500), (4099, 3001), (1 << 18, 3 << 17)])
def test_copies_write_every_byte_of_the_destination(name, n_src, n_dst):
    lib, _, _ = codecache.load("#include <omp.h>\n" + COPY_SOURCE)
    fn = getattr(lib, name)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    src = (np.arange(n_src) % 251).astype(np.uint8)
    dst = np.full(n_dst + 64, 255, np.uint8)[1:n_dst + 1]  # unaligned, with guard bytes around it
    fn(src.ctypes.data, n_src, dst.ctypes.data, n_dst)
    np.testing.assert_array_equal(dst, np.resize(src, n_dst))
    assert dst.base[0] == 255 and (dst.base[n_dst + 1:] == 255).all()


def test_roof_of_a_workload_sized_copy():
    rate, how = copy_bandwidth(1 << 20, 1 << 19, budget_s=0.05)
    assert rate > 0 and how in ("OpenMP memcpy", "OpenMP streaming stores", "np.copyto")


def test_in_cache_time_runs_the_first_rows_and_scales_by_bytes(monkeypatch):
    """%in-cache: the workload compiled and timed on 1/IN_CACHE_SHARE of each
    input's rows, the time scaled by the full inputs' bytes over the slice's."""
    from minicompile.benchmarks import suite

    seen = []

    def fake_run_times(fn, *args, budget_s):
        seen.append([a.shape for a in args])
        np.testing.assert_array_equal(fn(*args), args[0].sum(axis=1) + args[1])  # the compiled function
        return 1.0, 0.5

    monkeypatch.setattr(suite, "run_times", fake_run_times)
    x, y = np.arange(4096 * 8, dtype=np.float32).reshape(4096, 8), np.ones(4096, np.float32)
    t = suite.in_cache_seconds(lambda x, y: x.sum(axis=1) + y, (x, y), budget_s=0.01)
    rows = 4096 // suite.IN_CACHE_SHARE
    assert seen == [[(rows, 8), (rows,)]]
    assert t == suite.IN_CACHE_SHARE
