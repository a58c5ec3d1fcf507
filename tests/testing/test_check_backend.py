"""check_backend: a planted bug is reported wrong; the built-in backends are never wrong."""
from __future__ import annotations

import numpy as np
import pytest

from minicompile.ir import passes
from minicompile.testing import check_backend

# A slice of the op table: pointwise, reductions, layout, products, indexing
# (the cpp backend compiles C++ for each code form: a shorter slice).
OPS = {"eager": ["add", "multiply", "sum", "max", "transpose", "matmul", "where", "getitem", "cumsum"],
       "cpp": ["add", "sum", "matmul"]}


def add_to_subtract(graph, example_inputs):
    """A toy custom backend with a planted bug: np.add runs as np.subtract."""
    return passes.rewrite(graph, lambda g, node, outputs: g.call("subtract", *node.args)
                          if node.op.name == "add" else None)


def test_the_planted_bug_is_reported_wrong_per_op_and_dtype():
    report = check_backend(add_to_subtract, ops=["add", "sum"])
    assert report.wrong and {r.op for r in report.wrong} == {"add"}
    assert report.status("add", np.float64)["wrong"] >= 1 and report.status("sum", np.float64)["wrong"] == 0
    assert report.status("add", np.bool_)["raised"] >= 1  # NumPy refuses subtract on bools
    table = str(report)
    assert table.startswith("backend 'add_to_subtract':") and "<- WRONG" in table
    assert "wrong: add float64: np.add(a, 2)" in table and "max abs error 4" in table


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_built_in_backends_are_never_wrong(backend):
    report = check_backend(backend, ops=OPS[backend])
    assert not report.wrong and not report.raised, report.table()
    assert len({r.op for r in report.passed}) == len(OPS[backend])


def test_a_backend_that_raises_is_reported_raised():
    def refuses_matmul(graph, example_inputs):
        if any(n.op.name == "matmul" for n in graph.calls):
            raise NotImplementedError("no matmul here")
        return graph

    report = check_backend(refuses_matmul, ops=["matmul", "negative"], dtypes=[np.float32])
    assert {r.op for r in report.raised} == {"matmul"} and not report.wrong
    assert "NotImplementedError: no matmul here" in report.raised[0].detail
    assert {r.dtype for r in report.results} == {"float32"}


def test_an_unknown_op_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="no op-info samples for \\['nope'\\]"):
        check_backend("eager", ops=["nope"])
