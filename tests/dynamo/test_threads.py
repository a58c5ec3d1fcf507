"""One compiled function called from several threads at once.

A compiled call must keep Python's semantics under threads: each call's own
effects, none lost, none doubled.  Replaying ``log.append(t)`` as an append
gives that (a rewrite of the whole list would drop the appends other threads
made meanwhile); and cache misses that happen together must compile under
one lock, so the cache never passes the recompile limit.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Callable

import numpy as np
import pytest

import minicompile as mc
from minicompile import config

pytestmark = pytest.mark.capture

THREADS = 4
CALLS = 300


def run_in_threads(body: Callable[[int], None]) -> None:
    """``body(t)`` in THREADS threads released together; re-raises the first error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def thread(t: int) -> None:
        barrier.wait()
        try:
            body(t)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=thread, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


LOG: list = []


def append_and_double(x, t):
    LOG.append(t)
    return x * 2


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_every_threads_appends_land(backend):
    LOG.clear()
    compiled = mc.compile(append_and_double, backend=backend)
    x = np.arange(4.0)
    wrong: list = []

    def body(t: int) -> None:
        for _ in range(CALLS):
            result = compiled(x, t)
            if not np.array_equal(result, x * 2):
                wrong.append(result)

    run_in_threads(body)
    assert not wrong
    assert len(LOG) == THREADS * CALLS
    assert Counter(LOG) == {t: CALLS for t in range(THREADS)}
    assert len(compiled.cache) <= THREADS  # one entry per value of t at most, no recompile storm


def record_and_scale(x, seen, key, t):
    seen[key] = t
    return x * (t + 1)


@pytest.mark.filterwarnings("ignore:.*recompile limit")
@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_every_threads_dict_stores_land(backend):
    """A store of a key no other call writes, from every thread: a key is passed as
    an argument each call, so these calls also race through guard failures,
    recompiles and the recompile limit's eager fallback."""
    compiled = mc.compile(record_and_scale, backend=backend)
    seen: dict = {}
    x = np.arange(3.0)
    wrong: list = []

    def body(t: int) -> None:
        for i in range(CALLS):
            result = compiled(x, seen, f"{t}:{i}", t)
            if not np.array_equal(result, x * (t + 1)):
                wrong.append(result)

    run_in_threads(body)
    assert not wrong
    assert seen == {f"{t}:{i}": t for t in range(THREADS) for i in range(CALLS)}


def scale(x, n):
    return x * n


def test_concurrent_misses_stay_within_the_recompile_limit(monkeypatch):
    monkeypatch.setattr(config, "recompile_limit", 2)
    compiled = mc.compile(scale, backend="eager")
    x = np.ones(3)

    def body(t: int) -> None:
        for i in range(5):  # a new float each call: every call misses
            n = 1.5 + 10 * t + i
            np.testing.assert_array_equal(compiled(x, n), x * n)

    with pytest.warns(UserWarning, match="recompile limit"):
        run_in_threads(body)
    assert len(compiled.cache) == 2


def test_threads_missing_together_compile_one_entry():
    compiled = mc.compile(scale, backend="eager")
    x = np.ones(3)
    run_in_threads(lambda t: np.testing.assert_array_equal(compiled(x, 2.5), x * 2.5))
    assert len(compiled.cache) == 1
