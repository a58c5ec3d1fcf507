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
from pathlib import Path

import numpy as np
import pytest

import minicompile as mc
from device_results import check_batch_on_device, with_known_divergences


def _opinfo():
    spec = importlib.util.spec_from_file_location("opinfo", Path(__file__).parent / "test_opinfo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["opinfo"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


OPINFO = _opinfo()
BATCHES = with_known_divergences(OPINFO.CPP_BATCHES)


@pytest.mark.parametrize("batch", BATCHES, ids=[b.id for b in OPINFO.CPP_BATCHES])
def test_opinfo_on_cupy_double_matches_cupy_eager(batch, fake_cupy):
    check_batch_on_device(batch, fake_cupy.module, "eager", OPINFO, fallback_fails=True)


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
