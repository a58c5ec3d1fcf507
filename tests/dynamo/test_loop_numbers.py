"""Python ints a loop node's body changes (dynamo/loop_numbers.py): ``k += 1``,
``count = count * 2 % m``, ``prev = i``.

Each is a value the loop carries (int64 in the graph), whose arithmetic capture
also runs in Python for every iteration: every value must fit in int64, and
after the loop the local holds the last one as a Python int, as eager's does.
Before, any changing int unrolled the loop, and a local holding the index of the
iteration before (``prev = i`` at the end of the body, read at its start) was
silently read as its value before the loop in every iteration.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minicompile as mc
from test_loops import BACKENDS, FELL_BACK

pytestmark = pytest.mark.capture


def previous_index(x):
    prev = 0
    for i in range(20):
        x[i] += prev  # the index of the iteration before
        prev = i
    return x, prev


def counters(u, n):
    k, count = 0, 3
    for i in range(n):
        u = u * 0.5 + k
        k += 2
        count = count * 2 % 1000003
    steps = np.zeros(k)  # an int after the loop: a size
    return u, k, count, steps


def overflowing(u):
    k = 1
    for i in range(30):
        k = k * 1000  # past int64 after 7 iterations: Python's int is exact
        u = u + 1.0
    return u, k


def run(fn, backend, make):
    got_args, want_args = make(), make()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)
        got = mc.compile(fn, backend=backend)(*got_args)
    want = fn(*want_args)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-12)
        else:
            assert g == w
    for g, w in zip(got_args, want_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make, node", [
    (previous_index, lambda: (np.zeros(20),), True),
    (counters, lambda: (np.ones(3), 50), True),
    (overflowing, lambda: (np.ones(3),), False),
], ids=lambda v: getattr(v, "__name__", ""))
def test_ints_the_loop_changes(fn, make, node, backend):
    run(fn, backend, make)
    graph = mc.explain(fn)(*make()).graphs[0]
    assert ("loop" in [n.op.name for n in graph.calls]) == node  # an int past int64 unrolls


def test_an_int_counter_with_a_changing_trip_count_pins_the_count():
    """The ints are run at capture for a known count: a count that changes is guarded
    on its value instead of becoming a size symbol (still one loop node per count)."""
    compiled = mc.compile(counters, backend="eager")
    for n in (50, 60, 70):
        got, want = compiled(np.ones(3), n), counters(np.ones(3), n)
        assert got[1] == want[1] and got[2] == want[2]
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
