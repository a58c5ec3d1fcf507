"""Side effects of compiled functions called from several threads at once.

In: compiled functions whose only Python side effects are operations CPython
makes atomic (``list.append``, a dict setitem of a key no other call writes),
called 300 times from each of 4 threads on one shared list or dict.  Out: the
list or dict holds exactly what eager execution would leave — 1200 entries,
300 per thread — and every call returned its own correct array.

Concurrent first calls trace and compile at the same time, and the shared list
changes between calls, so these calls also race through guard failures,
recompiles and the recompile limit's eager fallback: an entry lost or doubled
by any of them shows as a count off by one.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Callable

import numpy as np
import pytest

import minicompile as mc

pytestmark = pytest.mark.filterwarnings("ignore:.*recompile limit")

THREADS = 4
CALLS = 300


def log_and_add(x, log, t):
    log.append(t)
    return x + t


def record_and_scale(x, seen, key, t):
    seen[key] = t
    return x * (t + 1)


def run_threads(body: Callable[[int], None]) -> list[BaseException]:
    """Runs ``body(t)`` in THREADS threads started together; the exceptions they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def thread(t: int) -> None:
        start.wait()
        try:
            body(t)
        except BaseException as e:  # re-raised by the test, not lost with the thread
            errors.append(e)

    threads = [threading.Thread(target=thread, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_append_from_threads(backend: str):
    compiled = mc.compile(log_and_add, backend=backend)
    log: list[int] = []
    x = np.arange(4.0)

    def body(t: int) -> None:
        for _ in range(CALLS):
            result = compiled(x, log, t)
            np.testing.assert_array_equal(result, x + t)

    errors = run_threads(body)
    assert not errors, errors[0]
    assert len(log) == THREADS * CALLS
    assert Counter(log) == {t: CALLS for t in range(THREADS)}
    np.testing.assert_array_equal(x, np.arange(4.0))


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_setitem_of_distinct_keys_from_threads(backend: str):
    compiled = mc.compile(record_and_scale, backend=backend)
    seen: dict[str, int] = {}
    x = np.arange(3.0)

    def body(t: int) -> None:
        for i in range(CALLS):
            result = compiled(x, seen, f"{t}:{i}", t)
            np.testing.assert_array_equal(result, x * (t + 1))

    errors = run_threads(body)
    assert not errors, errors[0]
    assert len(seen) == THREADS * CALLS
    assert seen == {f"{t}:{i}": t for t in range(THREADS) for i in range(CALLS)}
