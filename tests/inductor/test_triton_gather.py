"""Gathers in generated Triton kernels: ``table[tokens]``, ``x[:, idx]``, ``np.take``, ``np.take_along_axis``.

An index read from memory is a position of the loop IR (``loop_ir.Indirect``);
the kernel loads the index, counts a negative one from the end and reads the
table there, fused with what computes the index and what consumes the values
(an embedding lookup and the add after it are one kernel).  Out-of-range
indices raise NumPy's IndexError here, in Triton's interpreter (its
``device_assert``); the same kernels on the GPU wrap them, as CuPy does.
Backends that write no gathers (C++) call NumPy for them.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402


def _schedule(fn) -> str:
    return fn.cache[0].compiled.schedule


def embed_add(table, tokens, pos):
    return table[tokens] + pos


def test_an_embedding_lookup_is_one_kernel_with_its_consumer():
    table = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    tokens = np.array([[3, 0, 49], [-1, 7, 7]])
    pos = np.ones((3, 8), np.float32)
    fn = mc.compile(embed_add, backend="triton")
    np.testing.assert_array_equal(fn(table, tokens, pos), embed_add(table, tokens, pos))
    compiled = fn.cache[0].compiled
    assert len(compiled.kernels) == 1 and "extern" not in _schedule(fn), _schedule(fn)
    assert "tl.device_assert" in compiled.kernel_source


def test_cpp_calls_numpy_for_a_gather():
    table, tokens, pos = np.ones((5, 2)), np.array([4, -5]), np.zeros(2)
    fn = mc.compile(embed_add, backend="cpp")
    np.testing.assert_array_equal(fn(table, tokens, pos), embed_add(table, tokens, pos))
    assert "extern getitem" in _schedule(fn) and "a gather" in _schedule(fn)


@pytest.mark.parametrize("backend", ["triton", "cpp", "eager"])
def test_an_index_out_of_range_raises_numpys_error_and_leaves_the_arguments_as_numpy_does(backend):
    def f(table, idx, out):
        out += 1.0
        out[:] = table[idx]

    eager_out, out = np.zeros((2, 2)), np.zeros((2, 2))
    table = np.arange(6.0).reshape(3, 2)
    with pytest.raises(IndexError):
        f(table, np.array([0, 3]), eager_out)
    with pytest.raises(IndexError):
        mc.compile(f, backend=backend)(table, np.array([0, 3]), out)
    np.testing.assert_array_equal(out, eager_out)  # the first statement's update, as NumPy made it
    with pytest.raises(IndexError):
        mc.compile(lambda t, i: np.take(t, i), backend=backend)(table, np.array([-7]))


def gather_program(draw):
    """A table, a key with one to two index arrays (repeats, negatives,
    broadcasting) between slices, and whether to add a bias after the gather."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=min(2, ndim), unique=True))
    b_shape = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    key, arrays = [], []
    for d in range(ndim):
        if d in axes:
            # Each index array broadcasts to b_shape: some of its axes are 1.
            own = tuple(1 if draw(st.booleans()) else n for n in b_shape[len(b_shape) - draw(
                st.integers(0, len(b_shape))):])
            values = draw(st.lists(st.integers(-shape[d], shape[d] - 1), min_size=int(np.prod(own)),
                                   max_size=int(np.prod(own))))
            arrays.append(np.array(values, dtype=draw(st.sampled_from([np.int64, np.int32, np.int16]))).reshape(own))
            key.append(f"i{len(arrays) - 1}")
        else:
            start = draw(st.integers(0, shape[d] - 1))
            key.append(draw(st.sampled_from([":", f"{start}:", "::-1", f"{start}::2"])))
    return shape, key, arrays


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_gathers_match_numpy(data):
    shape, key, arrays = gather_program(data.draw)
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32]))
    table = np.arange(np.prod(shape), dtype=dtype).reshape(shape) * 3 - 7
    names = ", ".join(f"i{k}" for k in range(len(arrays)))
    source = f"def f(t, {names}):\n    return t[{', '.join(key)}] * 2 + 1\n"
    namespace = {"np": np}
    exec(source, namespace)
    fn = namespace["f"]
    expected = fn(table, *arrays)
    got = mc.compile(fn, backend="triton")(table, *arrays)
    assert got.dtype == expected.dtype and got.shape == expected.shape, source
    np.testing.assert_array_equal(got, expected, err_msg=source)


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_in_every_mode(mode, axis):
    def f(x, i):
        return np.take(x, i, axis=axis, mode=mode) * 2.0

    x = np.arange(12.0).reshape(3, 4)
    i = np.array([[0, -1], [2, 2]]) if mode == "raise" else np.array([[0, -9], [7, 13]])
    fn = mc.compile(f, backend="triton")
    np.testing.assert_array_equal(fn(x, i), f(x, i))
    assert "extern take" not in _schedule(fn)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis_with_broadcasting(axis):
    def f(x, i):
        return np.take_along_axis(x, i, axis=axis) + 1

    rng = np.random.default_rng(axis + 5)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    shape = [4, 5]
    shape[axis] = 3
    shape[1 - (axis % 2)] = 1  # broadcast along the other axis
    i = rng.integers(-x.shape[axis], x.shape[axis], shape)
    fn = mc.compile(f, backend="triton")
    np.testing.assert_array_equal(fn(x, i), f(x, i))
    assert "extern" not in _schedule(fn)


def test_argsort_then_take_along_axis_a_sort_by_key():
    def f(keys, values):
        order = np.argsort(keys, axis=-1)
        return np.take_along_axis(values, order, axis=-1) * 0.5

    keys, values = np.random.default_rng(3).standard_normal((2, 2, 6, 7))
    np.testing.assert_array_equal(mc.compile(f, backend="triton")(keys, values), f(keys, values))


def test_a_gather_over_a_dynamic_batch_calls_numpy_and_the_rest_keeps_its_symbols():
    fn = mc.compile(embed_add, backend="triton")
    table = np.arange(40.0, dtype=np.float32).reshape(10, 4)
    for batch in (2, 3, 5, 7):
        tokens = np.arange(batch * 3).reshape(batch, 3) % 10
        pos = np.ones((3, 4), np.float32)
        np.testing.assert_array_equal(fn(table, tokens, pos), embed_add(table, tokens, pos))
    assert len(fn.cache) == 2
    dynamic = fn.cache[-1].compiled
    assert dynamic.graph.is_dynamic and "a gather over symbolic sizes" in dynamic.schedule
    assert any(k.sizes for k in dynamic.module.kernels.values())  # the add takes the batch as an argument
