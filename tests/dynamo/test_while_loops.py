"""``while`` loops on Python numbers as one loop node (dynamo/while_loops.py).

Hypothesis writes bodies from test_loops' table of statements (pointwise and
reduction ops on two carried arrays, in-place slice stores, buffer rotation, a
carried float) under two headers: a counter (``while k < n: ...; k += 1``) and
a float clock (``while t < limit: ...; t += 0.25``), and compares every backend
with NumPy: results, kinds of result and every argument after the call.  The
loop node must be in the graph, and the graph must not grow with the count.
"""
from __future__ import annotations

import re
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import minicompile as mc
from test_loops import BACKENDS, FELL_BACK, SETTINGS, STATEMENTS, build, check, loops_as_nodes, writes_then_rebinds

pytestmark = pytest.mark.capture

HEADERS = {
    "counter": ("t, k = 0.5, 0", "while k < n:", "k += 1"),
    "clock": ("t, k = 0.5, 0", "while t < 0.5 + n * 0.25:", "t += 0.25"),
}


def while_program(header: str, statements: list[str]) -> str:
    before, condition, step = HEADERS[header]
    # the clock's body must not move t itself: its statements on t use another float
    body = [re.sub(r"\bt\b", "w", s) if header == "clock" else s for s in statements]
    inner = textwrap.indent("\n".join(["i = k", *body, step]), " " * 8)
    return (f"def f(u, v, n):\n    {before}\n    w = 0.5\n    while {condition[6:-1]}:\n{inner}\n"
            "    return u, v, t, k, w\n")


def loop_sizes(fn, dtype) -> list:
    sizes = []
    for n in (5, 40):
        mc.reset()
        graphs = mc.explain(fn)(np.ones(9, dtype), np.ones(9, dtype), n).graphs
        sizes.append((graphs[0].op_count(), "loop" in [x.op.name for x in graphs[0].calls]) if graphs else None)
    return sizes


@SETTINGS
@given(st.sampled_from(sorted(HEADERS)), st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=3),
       st.sampled_from([np.float32, np.float64]))
def test_random_while_loops(header, statements, dtype):
    source = while_program(header, statements)
    note(source)
    fn = build(source)
    with loops_as_nodes():
        sizes = loop_sizes(fn, dtype)
        if sizes[0] is not None and not writes_then_rebinds(statements):
            assert sizes[0] == sizes[1] and sizes[0][1], sizes  # one loop node, whatever the count
        for backend in BACKENDS:
            mc.reset()
            compiled = mc.compile(fn, backend=backend)
            for n in (0, 1, 2, 30, 7):
                check(fn, compiled, n, dtype)


def on_array_values(u, tol):
    err = 1.0
    while err > tol:  # data-dependent: the loop unrolls, the branch breaks the graph
        u = 0.5 * u
        err = np.abs(u).max()
    return u, err


def until_break(u):
    k = 0
    while True:
        u = u + k
        k += 1
        if k == 30:
            break
    return u, k


def past_int64(u):
    k = 1
    while k < 10 ** 30:  # Python's ints are exact past int64: the loop unrolls
        k *= 1000
        u = u + 1.0
    return u, k


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [(on_array_values, (np.ones(4), 1e-3)), (until_break, (np.ones(4),)),
                                      (past_int64, (np.ones(4),))], ids=lambda v: getattr(v, "__name__", ""))
def test_while_loops_that_are_not_one_node_stay_right(fn, args, backend):
    got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = mc.compile(fn, backend=backend)(*got_args)
    want = fn(*args)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        if type(w) is int:
            assert g == w
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_a_counted_while_loop_is_one_node_on_every_python():
    def relax(u, n):
        k = 0
        while k < n:
            u = 0.5 * u + 0.25 * (np.roll(u, 1) + np.roll(u, -1))
            k += 1
        return u, k

    graph = mc.explain(relax)(np.linspace(0, 1, 32), 500).graphs[0]
    assert [n.op.name for n in graph.calls].count("loop") == 1 and graph.op_count() < 10
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)
        got = mc.compile(relax, backend="cpp")(np.linspace(0, 1, 32), 500)
    want = relax(np.linspace(0, 1, 32), 500)
    assert got[1] == want[1] and type(got[1]) is int
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
