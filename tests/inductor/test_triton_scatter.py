"""``np.add.at``/``np.subtract.at`` as Triton kernels: a copy, then ``tl.atomic_add``.

Hypothesis draws index patterns with repeats (every repeat must add), negative
indices, index arrays broadcast against each other, and values broadcast or
given as a Python number; the oracle is NumPy's ``ufunc.at``.  Integer results
must be exact; float ones equal NumPy's up to the order of the adds, which
Triton's interpreter keeps and the GPU does not (tests/inductor/test_triton_gpu.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402

DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _schedule(fn) -> str:
    return fn.cache[0].compiled.schedule


def embedding_grad(table, tokens, g):
    grad = np.zeros_like(table)
    np.add.at(grad, tokens, g)
    return grad


def test_an_embedding_gradient_is_a_copy_and_an_atomic_scatter():
    table = np.zeros((50, 8), np.float32)
    tokens = np.array([[3, 0, 49], [-1, 3, 3]])  # 3 three times, -1 is 49 again
    g = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    fn = mc.compile(embedding_grad, backend="triton")
    np.testing.assert_allclose(fn(table, tokens, g), embedding_grad(table, tokens, g), rtol=1e-6)
    assert "template scatter-add [2, 3, 8] updates into [50, 8]" in _schedule(fn)
    assert "extern" not in _schedule(fn), _schedule(fn)
    assert "tl.atomic_add" in fn.cache[0].compiled.kernel_source


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_add_at_and_subtract_at_match_numpy(data):
    dtype = np.dtype(data.draw(st.sampled_from(DTYPES)))
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    keys = data.draw(st.integers(1, rank))
    key_shape = tuple(data.draw(st.lists(st.integers(1, 4), max_size=2)))
    index = []
    for axis in range(keys):  # each index array broadcasts against key_shape (sizes 1 kept)
        own = tuple(n if data.draw(st.booleans()) else 1 for n in key_shape)
        index.append(np.array(data.draw(st.lists(st.integers(-shape[axis], shape[axis] - 1),
                                                 min_size=int(np.prod(own)), max_size=int(np.prod(own)))),
                              np.int64).reshape(own))
    key_shape = np.broadcast_shapes(*(i.shape for i in index))  # a size every array took as 1 is 1
    domain = key_shape + shape[keys:]
    value_kind = data.draw(st.sampled_from(["full", "broadcast", "number"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if value_kind == "number":
        b = data.draw(st.integers(-9, 9))
    else:
        b_shape = domain if value_kind == "full" else domain[len(domain) // 2:]
        b = (rng.standard_normal(b_shape) * 10).astype(dtype)
    ufunc = data.draw(st.sampled_from([np.add, np.subtract]))
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    key = tuple(index) if keys > 1 or data.draw(st.booleans()) else index[0]

    def f(a, key, b):
        out = a * 1
        ufunc.at(out, key, b)
        return out

    fn = mc.compile(f, backend="triton")
    # The oracle takes b broadcast in full: NumPy 2.4's ufunc.at reads past the end of a
    # b of fewer dimensions than a 2-D index array (its indexed fast path walks b as if
    # it had one value per update), so with b as it is NumPy's answer is garbage.
    got, expected = fn(a, key, b), f(a, key, np.broadcast_to(b, domain) if np.ndim(b) else b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, expected)
    if key_shape:  # a 0-d index array is a scalar key: NumPy's ufunc.at does it
        assert "template scatter-add" in _schedule(fn), _schedule(fn)


def test_an_update_computed_by_a_row_kernel_is_stored_for_the_scatter():
    """The updates are a softmax's output, computed by a row kernel: the scatter
    reads them, so the row kernel must store them (not keep them in registers)."""
    def f(x, idx):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        out = np.zeros((5, x.shape[1]), x.dtype)
        np.add.at(out, idx, e / e.sum(axis=1, keepdims=True))
        return out

    x = np.random.default_rng(3).standard_normal((6, 16)).astype(np.float32)
    idx = np.array([0, 4, 4, 1, 0, 4])
    fn = mc.compile(f, backend="triton")
    np.testing.assert_allclose(fn(x, idx), f(x, idx), rtol=1e-6, atol=1e-6)
    assert "template scatter-add" in _schedule(fn)


def test_an_index_out_of_range_raises_numpys_error():
    fn = mc.compile(embedding_grad, backend="triton")
    table, g = np.zeros((4, 2), np.float32), np.ones((2, 2), np.float32)
    with pytest.raises(IndexError, match="out of bounds"):
        fn(table, np.array([1, 4]), g)


def test_what_atomics_cannot_add_stays_numpys_ufunc_at():
    def f(a, idx, b):
        out = a.copy()
        np.add.at(out, idx, b)
        return out

    cases = [(np.zeros(5, np.int8), np.array([1, 1]), np.int8(3)),            # no 8-bit atomics
             (np.zeros((3, 4), np.float32), (np.array([0, 0]), slice(1, 3)), np.float32(1)),  # a slice in the key
             (np.zeros(5, np.float32), np.array([2, 2]), np.ones(2))]          # float64 updates into float32
    for a, idx, b in cases:
        fn = mc.compile(f, backend="triton")
        np.testing.assert_array_equal(fn(a, idx, b), f(a, idx, b))
        assert "scatter-add" not in _schedule(fn)
