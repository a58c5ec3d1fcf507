"""The caching allocator behind large compiled graphs' arrays (inductor/codegen/cpp/allocator.py).

Arrays a large graph returns come from NumPy's memory-handler API backed by
minicompile's cache: they must own their data, be freed into the cache and
reused from it, stay intact while alive (no two live arrays share a block),
and leave every other allocation in the process to NumPy's own handler.
"""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile import config
from minicompile.inductor import codecache
from minicompile.inductor.codegen.cpp import allocator as cpp_allocator, runtime as cpp_runtime

get_handler_name = np._core.multiarray.get_handler_name

pytestmark = pytest.mark.skipif(cpp_allocator.handler() is None, reason="no C++ compiler for the runtime")

BIG = (1 << 19,)  # 2 MiB of float32: above MIN_CACHED_BYTES


def adam_like(p, g, m):
    m2 = 0.9 * m + 0.1 * g
    return p - 0.01 * m2, m2


def test_outputs_of_a_large_graph_come_from_the_cache_and_own_their_data():
    f = mc.compile(adam_like)
    rng = np.random.default_rng(0)
    p, g, m = (rng.standard_normal(BIG, dtype=np.float32) for _ in range(3))
    out_p, out_m = f(p, g, m)
    want_p, want_m = adam_like(p, g, m)
    np.testing.assert_array_equal(out_p, want_p)
    np.testing.assert_array_equal(out_m, want_m)
    for out in (out_p, out_m):
        assert get_handler_name(out) == "minicompile_cache"
        assert out.flags.owndata and out.base is None
    assert get_handler_name() != "minicompile_cache"  # restored after the call
    assert get_handler_name(np.empty(BIG)) != "minicompile_cache"


def test_large_blocks_start_half_a_page_in():
    """Away from NumPy's own large arrays (16 bytes past a page): a kernel
    reading one of those and writing an output a little past it modulo 4096
    stalls on 4K aliasing (the allocator's kDataOffset, in codegen/cpp/runtime.py)."""
    f = mc.compile(adam_like)
    rng = np.random.default_rng(3)
    p, g, m = (rng.standard_normal(BIG, dtype=np.float32) for _ in range(3))
    for _ in range(2):  # fresh mappings, then blocks from the cache
        outs = f(p, g, m)
        assert [o.ctypes.data % 4096 for o in outs] == [2048, 2048]
        del outs


def test_freed_outputs_are_reused_without_new_mappings():
    f = mc.compile(adam_like)
    rng = np.random.default_rng(1)
    p, g, m = (rng.standard_normal(BIG, dtype=np.float32) for _ in range(3))
    f(p, g, m)  # warm: the two blocks are now in the cache
    gc.collect()
    before = cpp_allocator.stats()
    for _ in range(5):
        out_p, out_m = f(p, g, m)
        np.testing.assert_array_equal(out_m, adam_like(p, g, m)[1])
        del out_p, out_m
    after = cpp_allocator.stats()
    assert after["misses"] == before["misses"]
    assert after["hits"] - before["hits"] >= 10


def test_kept_outputs_are_never_handed_out_again():
    f = mc.compile(adam_like)
    rng = np.random.default_rng(2)
    p, g, m = (rng.standard_normal(BIG, dtype=np.float32) for _ in range(3))
    kept = [f(p, g, m * np.float32(i)) for i in range(4)]
    for i, (out_p, out_m) in enumerate(kept):
        want_p, want_m = adam_like(p, g, m * np.float32(i))
        np.testing.assert_array_equal(out_p, want_p)
        np.testing.assert_array_equal(out_m, want_m)
    addresses = {a.ctypes.data for pair in kept for a in pair}
    assert len(addresses) == 8


def test_small_graphs_do_not_change_the_allocator():
    f = mc.compile(lambda x: x * 2 + 1)
    out = f(np.ones(16, np.float32))
    assert get_handler_name(out) != "minicompile_cache"


def test_handler_is_restored_when_the_call_raises():
    def boom():
        np.empty(BIG)
        raise ValueError("inside")

    wrapped = cpp_allocator.allocating_from_cache(boom)
    with pytest.raises(ValueError, match="inside"):
        wrapped()
    assert get_handler_name() != "minicompile_cache"


def test_other_threads_keep_numpys_allocator():
    seen = []
    started, release = threading.Event(), threading.Event()

    def inside():
        started.set()
        release.wait(10)
        return np.empty(BIG)

    def other():
        started.wait(10)
        seen.append(get_handler_name(np.empty(BIG)))
        release.set()

    t = threading.Thread(target=other)
    t.start()
    mine = cpp_allocator.allocating_from_cache(inside)()
    t.join()
    assert get_handler_name(mine) == "minicompile_cache"
    assert seen and seen[0] != "minicompile_cache"


def test_zeros_are_zero_even_from_a_reused_block():
    dirty = cpp_allocator.allocating_from_cache(lambda: np.full(BIG, 7.0, np.float32))()
    del dirty  # back into the cache, full of sevens
    zeros = cpp_allocator.allocating_from_cache(lambda: np.zeros(BIG, np.float32))()
    assert get_handler_name(zeros) == "minicompile_cache"
    assert not zeros.any()


def test_resize_reallocates_and_keeps_the_data():
    a = cpp_allocator.allocating_from_cache(lambda: np.arange(BIG[0], dtype=np.float32))()
    a.resize(BIG[0] * 3, refcheck=False)  # realloc through the handler the array remembers
    np.testing.assert_array_equal(a[:BIG[0]], np.arange(BIG[0], dtype=np.float32))
    a.resize(10, refcheck=False)
    np.testing.assert_array_equal(a, np.arange(10, dtype=np.float32))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3 << 20), st.booleans()), min_size=1, max_size=24))
def test_live_arrays_never_share_memory(steps):
    """Allocate and free in a random order; every live array keeps its own contents."""
    live: list[tuple[np.ndarray, int]] = []
    allocate = cpp_allocator.allocating_from_cache(lambda n: np.empty(n, np.uint8))
    for i, (nbytes, free_one) in enumerate(steps):
        a = allocate(nbytes)
        a.fill(i % 251)
        live.append((a, i % 251))
        if free_one and len(live) > 1:
            live.pop(nbytes % len(live))
    for a, value in live:
        assert (a == value).all()


def test_cache_limit_and_empty_cache():
    h = cpp_allocator.handler()
    old = config.allocator_cache_bytes
    try:
        config.allocator_cache_bytes = 3 << 20  # room for one 2 MiB block
        h.configure()
        arrays = [cpp_allocator.allocating_from_cache(lambda: np.empty(BIG, np.float32))() for _ in range(3)]
        del arrays
        assert cpp_allocator.stats()["cached_bytes"] <= 3 << 20
        mc.empty_cache()
        assert cpp_allocator.stats() | {"hits": 0, "misses": 0} == {
            "cached_blocks": 0, "cached_bytes": 0, "hits": 0, "misses": 0}
    finally:
        config.allocator_cache_bytes = old
        h.configure()


def test_without_a_compiler_graphs_allocate_as_numpy_does(monkeypatch):
    def no_compiler():
        raise codecache.CompilerNotFound("no C++ compiler (test)")

    monkeypatch.setattr(cpp_allocator, "_handler", False)
    monkeypatch.setattr(cpp_runtime, "library", no_compiler)
    assert cpp_allocator.handler() is None
    call = lambda: np.empty(BIG)  # noqa: E731
    assert cpp_allocator.allocating_from_cache(call) is call
