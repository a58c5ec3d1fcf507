"""A backend's declared float precision: its rounding is not a wrong result, its bugs still are."""
from __future__ import annotations

import numpy as np
import pytest

from minicompile.ir import passes
from minicompile.testing import assert_same, check_backend
from minicompile.testing.compare import backend_precision


def _through_fp16(value):
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f":
        with np.errstate(over="ignore"):
            return value.astype(np.float16).astype(value.dtype)
    return value


def fp16_backend(declared: bool, bug: bool = False):
    """A toy backend that holds every float as fp16, as the Spyre card's DRAM does
    (``bug``: np.add runs as np.subtract); ``declared``: it says so."""
    def half(graph, example_inputs):
        if bug:
            graph = passes.rewrite(graph, lambda g, node, outputs: g.call("subtract", *node.args)
                                   if node.op.name == "add" else None)
        return lambda *inputs: tuple(_through_fp16(v) for v in graph(*(_through_fp16(x) for x in inputs)))
    if declared:
        half.precision = np.float16
    return half


def scaled(x, y):
    return np.exp(x) * 3 + y


X = np.random.default_rng(0).standard_normal((4, 5))
Y = np.linspace(-1, 1, 5).astype(np.float32)


def test_each_backend_declares_its_precision():
    assert backend_precision("spyre") == np.float16
    assert backend_precision("cpp") is None and backend_precision("auto") is None
    assert backend_precision(fp16_backend(True)) == np.float16 and backend_precision(fp16_backend(False)) is None


def test_fp16_rounding_is_wrong_unless_declared():
    with pytest.raises(AssertionError, match=r"max rel error 0.00\d+ \(rtol=2e-05"):  # float32's (y)
        assert_same(scaled, X, Y, backend=fp16_backend(False))
    assert_same(scaled, X, Y, backend=fp16_backend(True))


def test_a_bug_is_still_found_at_fp16_precision():
    with pytest.raises(AssertionError, match=r"computed in float16") as info:
        assert_same(scaled, X, Y, backend=fp16_backend(True, bug=True))
    assert "result:" in str(info.value)


def test_beyond_fp16_range_the_infinity_is_right_and_only_it():
    def negated(graph, example_inputs):
        run = fp16_backend(True)(graph, example_inputs)
        return lambda *inputs: tuple(-v for v in run(*inputs))
    negated.precision = np.float16

    big = np.array([1.0, -2.0, 3.0])
    assert_same(lambda x: x * 1e5, big, backend=fp16_backend(True))  # +-inf in fp16
    with pytest.raises(AssertionError, match="3 of 3 elements differ"):  # the other infinity is wrong
        assert_same(lambda x: x * 1e5, big, backend=negated)


def test_spyre_over_a_slice_of_the_op_table():
    """fp16 rounding passes; np.ediff1d and np.geomspace, which once raised in the
    planner (an empty concatenate piece), compile; integers stay exact."""
    report = check_backend("spyre", ops=["add", "mean", "ediff1d", "logspace"])
    assert report.precision == np.float16 and "compared at float16 precision" in str(report)
    assert not report.wrong and not report.raised, report.table()
    assert report.status("ediff1d", np.float32)["pass"] == 3
