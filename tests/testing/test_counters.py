"""CompileCounter, no_recompiles and max_graph_breaks."""
from __future__ import annotations

import numpy as np
import pytest

import minicompile as mc
from minicompile.testing import CompileCounter, max_graph_breaks, no_recompiles


def test_compile_counter_counts_graphs_and_ops_and_runs_them():
    counter = CompileCounter()
    f = mc.compile(lambda a: np.sin(a) * 2 + 1, backend=counter)
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(f(x), np.sin(x) * 2 + 1)
    f(x)  # a cache hit compiles nothing
    assert (counter.frame_count, counter.op_count) == (1, 3)
    f(np.ones((2, 2)))
    assert counter.frame_count == 2 and len(counter.graphs) == 2
    counter.clear()
    assert repr(counter) == "CompileCounter(frame_count=0, op_count=0)"


def test_compile_counter_sees_each_graph_of_a_graph_break():
    def f(a):
        b = a + 1
        print("between")
        return b * 2

    counter = CompileCounter()
    mc.compile(f, backend=counter)(np.ones(3))
    assert counter.frame_count == 2 and counter.op_count == 2


def test_no_recompiles_passes_on_cache_hits_and_names_the_failing_guard():
    f = mc.compile(lambda a: a * 2, backend="eager")
    f(np.ones(3))
    with no_recompiles():
        f(np.ones(3))
        f(np.zeros(3))
    with pytest.raises(AssertionError, match=r"(?s)1 recompile.*<lambda>: L\['a'\].dtype"):
        with no_recompiles():
            f(np.ones(3, np.int32))


def test_max_graph_breaks_lists_each_break_with_its_line():
    def f(a):
        print("break")
        return a + 1

    with max_graph_breaks(1) as record:
        mc.compile(f, backend="eager")(np.ones(2))
    assert len(record.graph_breaks) == 1
    with pytest.raises(AssertionError, match=r"1 graph break\(s\), at most 0 allowed:\n  .*f: .*print.*\n.*test_counters.py:\d+"):
        with max_graph_breaks(0):
            mc.compile(f, backend="eager")(np.ones(2))
    with max_graph_breaks(0):
        mc.compile(lambda a: a + 1, backend="eager")(np.ones(2))
