"""The whole op-info table on CuPy arrays, on the CPU: CuPy's test double
(tests/fake_cupy.py) through ``backend="eager"``, against CuPy eager.

The GPU module (tests/inductor/test_triton_gpu_programs.py) runs an eighth of
the table through Triton on real CuPy arrays; this one runs every batch on a
machine without a GPU, and finds what makes a graph on the device differ from
CuPy eager without any kernel: a keyword NumPy takes and CuPy lacks
(``take``'s ``mode``), a polyfill making a NumPy array where the NumPy
function it stands for would have dispatched to CuPy (``np.vander``,
``np.tril_indices_from``), a Python value where CuPy returns a 0-d array
(``np.allclose``).  Each batch must run compiled, with no fallback to Python
(a warning is an error here), and give CuPy eager's kind of result, dtype,
shape and values.
"""
from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minicompile as mc
from device_results import KNOWN_DIVERGENCES, assert_same_on_device


def _opinfo():
    spec = importlib.util.spec_from_file_location("opinfo", Path(__file__).parent / "test_opinfo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["opinfo"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


OPINFO = _opinfo()
BATCHES = [pytest.param(b, marks=pytest.mark.xfail(reason=KNOWN_DIVERGENCES[b.id], strict=True))
           if b.id in KNOWN_DIVERGENCES else b for b in OPINFO.CPP_BATCHES]


@pytest.mark.parametrize("batch", BATCHES, ids=[b.id for b in OPINFO.CPP_BATCHES])
def test_opinfo_on_cupy_double_matches_cupy_eager(batch, fake_cupy):
    cp = fake_cupy.module
    fn, args = batch.function(), [cp.asarray(a) for a in batch.args()]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = fn(*args)
        except Exception as why:  # CuPy refuses what NumPy accepts (a keyword CuPy lacks)
            pytest.skip(f"CuPy eager raises {type(why).__name__}: {why}")
        warnings.filterwarnings("error", message="minicompile")  # a fallback to Python fails
        actual = mc.compile(fn, backend="eager")(*args)
    if batch.code in OPINFO.UNDEFINED_VALUES:
        actual, expected = (tuple(cp.zeros_like(v) for v in r) for r in (actual, expected))
    assert_same_on_device(actual, expected, batch.source(), cp.asnumpy, OPINFO.TOLERANCE)


def test_the_double_refuses_keywords_cupy_lacks(fake_cupy):
    x = fake_cupy.module.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="unexpected keyword argument 'mode'"):
        np.take(x, 1, mode="raise")
    with pytest.raises(TypeError, match="unexpected keyword argument 'stable'"):
        x.argsort(stable=True)
    assert type(np.allclose(x, x)) is fake_cupy.ndarray  # CuPy's allclose: a 0-d array


def test_like_makes_the_array_in_that_arrays_module(fake_cupy):
    def f(x):
        return np.zeros(2, like=x), np.arange(3, like=x) + x[:3], np.asarray((1.0, 2.0), like=x)

    graph = mc.explain(f)(np.ones(4)).graphs[0].python_code()
    assert "np.zeros((2,), like=x)" in graph and "np.asarray((1.0, 2.0), like=x)" in graph
    for x in (np.ones(4), fake_cupy.module.asarray(np.ones(4))):
        got, want = mc.compile(f, backend="eager")(x), f(x)
        assert [type(v) for v in got] == [type(v) for v in want] == [type(x)] * 3
        assert all((fake_cupy.module.asnumpy(g) == fake_cupy.module.asnumpy(w)).all() for g, w in zip(got, want))
    assert [type(v) for v in mc.compile(f, backend="cpp")(np.ones(4))] == [np.ndarray] * 3
