"""Values no one reads outside their kernel get no buffer: no store, no allocation.

A softmax's row max and row sum, a layer norm's mean and variance are read
only by the passes of their own kernel over the same row: each backend keeps
them in registers (``Schedule.never_stored``).  A value that is a graph
output, an argument updated in place, or read by a later kernel or extern call
keeps its buffer.  Each program runs on every backend and must equal NumPy.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import minicompile as mc

BACKENDS = ["cpp", "triton", "spyre"]
# float32 (sums in another order than NumPy's); the card computes in fp16
TOLERANCE = {"cpp": dict(rtol=1e-4, atol=1e-5), "triton": dict(rtol=1e-4, atol=1e-5),
             "spyre": dict(rtol=3e-2, atol=3e-2)}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def row_norm(x):
    return np.sqrt((x * x).sum(axis=1)) + 1.0  # the sum: read only by its own epilogue


def matmul_epilogue(x, w):
    h = np.tanh(x @ w)  # read twice, by the same element of the same kernel
    return h * 2.0 + h * h


def softmax_and_max(x):
    m = x.max(axis=-1, keepdims=True)  # an output: stored
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True), m


def tanh_of_sum_into_matmul(x, w):
    s = x.sum(axis=1)  # read only by the tanh at its element: no buffer
    return np.tanh(s)[None, :] @ w  # the tanh is an extern's input: stored


def center_in_place(x):
    x -= x.max(axis=1, keepdims=True)  # written back to the caller's array
    return (x * x).sum()


def column_then_rows(x):
    m = x.max(axis=0)  # read by the next kernel, over other loops: stored
    return np.exp(x - m).sum(axis=1)


# program -> (the buffers it must not have, the buffers it must keep)
PROGRAMS = {
    softmax: ({"max", "sum"}, set()),
    layer_norm: (set(), set()),  # its names depend on the backend's decompositions: counted below
    row_norm: ({"sum"}, set()),
    matmul_epilogue: ({"tanh"}, set()),
    softmax_and_max: ({"sum"}, {"max"}),
    tanh_of_sum_into_matmul: ({"sum"}, {"tanh"}),
    center_in_place: ({"max"}, {"subtract"}),
    column_then_rows: (set(), {"max"}),
}


def _inputs(fn):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 40)).astype(np.float32)
    if fn in (matmul_epilogue,):
        return [x, rng.standard_normal((40, 24)).astype(np.float32)]
    if fn is tanh_of_sum_into_matmul:
        return [x, rng.standard_normal((16, 8)).astype(np.float32)]
    return [x]


def _buffers(compiled) -> set[str]:
    """The buffers the compiled graph writes to memory."""
    if hasattr(compiled, "program"):  # Spyre: what each program stores to DRAM, and host steps
        steps = compiled.program.steps
        return {b for s in steps for b in (s.outputs.values() if hasattr(s, "outputs") else s.buffers)}
    allocated = set(re.findall(r"^\s+buf_(\w+?)(?:_\d+)? = ", compiled.wrapper_source, re.M))
    stored = set(re.findall(r"\bout_(\w+)", compiled.kernel_source))
    return allocated | stored


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", list(PROGRAMS), ids=lambda f: f.__name__)
def test_values_read_only_in_their_kernel_have_no_buffer(backend, fn):
    if backend == "triton":
        pytest.importorskip("triton")
    mc.reset()
    compiled_fn = mc.compile(fn, backend=backend)
    args = _inputs(fn)
    eager_args = [a.copy() for a in args]
    got = compiled_fn(*args)
    expected = fn(*eager_args)
    for g, e in zip(got if isinstance(got, tuple) else [got], expected if isinstance(expected, tuple) else [expected]):
        np.testing.assert_allclose(g, e, **TOLERANCE[backend])
        assert np.asarray(g).dtype == np.asarray(e).dtype and np.shape(g) == np.shape(e)
    for a, e in zip(args, eager_args):  # the same effect on the arguments
        np.testing.assert_allclose(a, e, **TOLERANCE[backend])
    compiled = compiled_fn.cache[0].compiled
    buffers = _buffers(compiled)
    dead, kept = PROGRAMS[fn]
    assert not dead & buffers, f"{backend}: {sorted(dead & buffers)} stored though nothing reads them"
    assert kept <= buffers, f"{backend}: {sorted(kept - buffers)} not stored though read outside"


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [softmax, layer_norm, row_norm], ids=lambda f: f.__name__)
def test_a_row_kernel_allocates_its_output_only(backend, fn):
    if backend == "triton":
        pytest.importorskip("triton")
    compiled_fn = mc.compile(fn, backend=backend)
    x = _inputs(fn)[0]
    np.testing.assert_allclose(compiled_fn(x), fn(x), **TOLERANCE[backend])
    wrapper = compiled_fn.cache[0].compiled.wrapper_source
    assert len(re.findall(r"= _(?:empty|kept)\(", wrapper)) == 1, wrapper
