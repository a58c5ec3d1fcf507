"""Subscripts at the loop's index in a loop node's body: ``x[i]``, ``out[i] = ...``,
``x[i - 1, 1:]``, ``x[:4, i % 4]``.

In eager code ``i`` is a Python int, so ``x[i]`` is a *view*: a write through it
reaches ``x``, and a write to ``x`` shows through it.  In the body the index is a
0-d node, and the graph indexes with it as an integer array; capture keeps such a
key a view of ``x`` (functionalization.position_view).  Before, the key reached
the graph as an integer-array key whose result is a copy, so ``row = x[i, :];
row += 1`` silently left ``x`` unchanged, and ``x[i]`` alone unrolled the loop.

Hypothesis writes bodies from a table of such statements (reads, stores, writes
through a row, a write to the array a row views, a row kept after the loop, a
local computed from the index kept after it) and compares every backend with
NumPy: results, kinds of result, every argument after the call and whether a
kept row still views its array.
"""
from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import minicompile as mc
from test_loops import BACKENDS, FELL_BACK, SETTINGS, build, loops_as_nodes, writes_then_rebinds

pytestmark = pytest.mark.capture

POSITION_STATEMENTS = [
    "u = u * 0.9 + x[i]",
    "out[i] = x[i] * 2.0 + u",
    "x[i] += 0.5 * x[i - 1]",  # i - 1 is -1 in the first iteration: the last row
    "r = x[i + 1]\nr *= 0.5",  # a write through the row reaches x
    "r = x[i]\nx[i, 0] = u[0]\nu = u + r",  # the write to x shows through the row
    "x[i, 1:] = x[i - 1, :-1] - u[:-1]",
    "u = u + x[:4, i % 4]",
    "out[i + 1, i % 4] = u.sum()",
    "j = i + 1\nu[j % 4] += 1.0",
    "r = out[i]",
]


def position_program(statements: list[str]) -> str:
    body = textwrap.indent("\n".join(statements), " " * 8)
    return (f"def f(x, out, n):\n    u, r, j = np.zeros(4), x[0], -1\n    for i in range(n):\n{body}\n"
            "    return u, r, j\n")


def arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    return rng.standard_normal((n + 4, 4)), rng.standard_normal((n + 4, 4))


def agree(fn, compiled, n: int) -> None:
    """``compiled(x, out, n)`` against NumPy: results, kinds, the arguments after the
    call, and whether the row kept after the loop views ``x`` or ``out``."""
    got_args, want_args = arrays(n), arrays(n)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)  # a crash in compiled code fails
        got = compiled(*got_args, n)
    want = fn(*want_args, n)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for g, w in zip(got_args, want_args):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for k in range(2):
        assert np.shares_memory(got[1], got_args[k]) == np.shares_memory(want[1], want_args[k])


@SETTINGS
@given(st.lists(st.sampled_from(POSITION_STATEMENTS), min_size=1, max_size=4), st.integers(1, 30))
def test_random_loops_with_subscripts_at_the_index(statements, n):
    source = position_program(statements)
    note(source)
    fn = build(source)
    with loops_as_nodes():
        sizes = []
        for m in (n, 3 * n + 5):  # one loop node: the graph does not grow with the count
            mc.reset()
            sizes.append(mc.explain(fn)(*arrays(m), m).graphs[0].op_count())
        assert sizes[0] == sizes[1] or writes_then_rebinds(statements)  # (u written, then rebound: unrolls)
        for backend in BACKENDS:
            mc.reset()
            compiled = mc.compile(fn, backend=backend)
            for m in (n, n + 1, 3):  # a second and third count: sizes and count become symbols
                agree(fn, compiled, m)


def rows_written_through(x):
    for i in range(x.shape[0]):
        row = x[i, :]
        row += 1
    return x


def row_read_after_a_write(x):
    for i in range(x.shape[0]):
        r = x[i, :]
        x[i, 0] = 5.0
        x[i, :] = r * 2
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [rows_written_through, row_read_after_a_write], ids=lambda f: f.__name__)
def test_a_row_at_the_index_is_a_view(fn, backend):
    """The two programs that were silently wrong: the row at the loop's index was a copy."""
    got, want = np.zeros((20, 3)), np.zeros((20, 3))
    mc.compile(fn, backend=backend)(got)
    fn(want)
    np.testing.assert_array_equal(got, want)
    assert "loop" in [node.op.name for node in mc.explain(fn)(np.zeros((20, 3))).graphs[0].calls]


def out_of_bounds(x, out):
    for i in range(out.shape[0]):
        out[i] = x[i + 5] * 2
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_index_out_of_bounds_raises_numpys_error_after_numpys_writes(backend):
    got, want = (np.arange(20.0), np.zeros(18)), (np.arange(20.0), np.zeros(18))
    with pytest.raises(IndexError, match="index 20 is out of bounds for axis 0 with size 20"):
        out_of_bounds(*want)
    with pytest.raises(IndexError, match="index 20 is out of bounds for axis 0 with size 20"):
        mc.compile(out_of_bounds, backend=backend)(*got)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
