"""Property tests: the polyfilled NumPy functions and the new ops against eager NumPy.

Hypothesis draws shapes (0-d, empty and size-1 axes included), dtypes, axes
(negative and out of range), index arguments (ints, lists, slices, masks) and
options; each call runs through NumPy and through ``mc.compile`` (the graph
interpreter: ``backend="eager"``) and must agree on value, dtype, shape and
kind of result, or raise NumPy's exception type; where NumPy answers, the
capture has no graph break.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from dynamo_testing import assert_same

pytestmark = [pytest.mark.capture, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:minicompile:UserWarning")]

EXAMPLES = settings(max_examples=30, deadline=None)

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def arrays(draw, shape=shapes, dtypes=DTYPES, special=False):
    """An array of a drawn shape and dtype with small values (and inf, nan, 0 when ``special``)."""
    shape, dtype = draw(shape), np.dtype(draw(st.sampled_from(dtypes)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = rng.integers(-4, 5, shape) if dtype.kind in "iub" else rng.standard_normal(shape) * 3
    if special and dtype.kind == "f" and values.size:
        values.flat[rng.integers(0, values.size, 2)] = rng.choice([np.inf, -np.inf, np.nan, 0.0], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(values).astype(dtype)


def axes(ndim: int, none: bool = True):
    options = st.integers(-ndim - 1, ndim) if ndim else st.integers(-1, 0)
    return st.none() | options if none else options


def agree(fn, *args) -> None:
    """fn compiled equals fn eagerly (or raises the same exception type), with no break."""
    mc.reset()
    try:
        with np.errstate(all="ignore"):
            expected = fn(*args)
    except Exception as error:
        with pytest.raises(type(error)):
            mc.compile(fn, backend="eager")(*args)
        return
    with np.errstate(all="ignore"):
        assert_same(mc.compile(fn, backend="eager")(*args), expected)
        explanation = mc.explain(fn)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons


@EXAMPLES
@given(data=st.data(), a=arrays(special=True))
def test_elementwise(data, a):
    b = data.draw(arrays(shape=st.just(a.shape[-1:]), special=True))
    agree(lambda x: (np.sinc(x), np.angle(x, deg=True), np.isreal(x), np.iscomplex(x)), a)
    agree(lambda x, y: (np.isneginf(x), np.isposinf(x * y)), a, b)
    agree(lambda x, y: (np.array_equal(x, y), np.array_equal(x, x, equal_nan=True), np.array_equiv(x, y),
                        np.allclose(x, y), np.allclose(x, x, equal_nan=True)), a, b)


@EXAMPLES
@given(data=st.data(), a=arrays(shape=nonempty_shapes), n=st.integers(1, 3))
def test_select(data, a, n):
    conds = [data.draw(arrays(shape=st.sampled_from([a.shape, a.shape[1:], ()]), dtypes=[np.float64])) > 0
             for _ in range(n)]
    choices = [data.draw(st.integers(-3, 300) | st.floats(-2, 2) | arrays(shape=st.sampled_from([a.shape, ()])))
               for _ in range(n)]
    default = data.draw(st.integers(-1, 1) | st.floats(-1, 1) | st.just(a))
    agree(lambda x: np.select([c & (x != 0) for c in conds], choices, default), a)


index_args = st.integers(-5, 5) | st.lists(st.integers(-4, 4), max_size=4) | \
    st.builds(slice, st.none() | st.integers(-4, 4), st.none() | st.integers(-4, 4), st.sampled_from([None, 1, 2, -1]))


@EXAMPLES
@given(data=st.data(), a=arrays())
def test_delete_and_insert(data, a):
    axis = data.draw(axes(a.ndim))
    obj = data.draw(index_args | st.lists(st.booleans(), min_size=a.shape[axis] if a.ndim and axis is not None
                                          and -a.ndim <= axis < a.ndim else 0, max_size=4))
    values = data.draw(st.integers(0, 9) | st.floats(-2, 2) | st.lists(st.integers(0, 9), min_size=1, max_size=3))
    agree(lambda x: np.delete(x, obj, axis=axis), a)
    agree(lambda x: np.insert(x, obj, values, axis=axis), a)
    agree(lambda x: np.append(x, x, axis=axis), a)


@EXAMPLES
@given(data=st.data(), a=arrays(shape=nonempty_shapes), returned=st.booleans(), keepdims=st.booleans())
def test_average(data, a, returned, keepdims):
    axis = data.draw(axes(a.ndim) | st.just(tuple(range(a.ndim))))
    weights = data.draw(st.none() | st.just("full") | st.just("axis"))
    if weights == "full":
        weights = np.abs(a.astype(np.float64)) + 0.5
    elif weights == "axis":
        weights = np.arange(1.0, 1 + a.shape[axis if isinstance(axis, int) and -a.ndim <= axis < a.ndim else 0])
    agree(lambda x: np.average(x, axis=axis, weights=weights, returned=returned, keepdims=keepdims), a)


@EXAMPLES
@given(data=st.data(), m=arrays(shape=st.lists(st.integers(0, 4), min_size=1, max_size=2).map(tuple),
                                dtypes=[np.float64, np.float32, np.int32, np.bool_]),
       rowvar=st.booleans(), bias=st.booleans(), ddof=st.none() | st.integers(0, 2))
def test_cov_and_corrcoef(data, m, rowvar, bias, ddof):
    y = data.draw(st.none() | st.just(m[::-1].copy()))
    agree(lambda x: np.cov(x, y, rowvar=rowvar, bias=bias, ddof=ddof), m)
    agree(lambda x: np.corrcoef(x, y, rowvar=rowvar), m)
    if m.ndim == 2:
        w = np.arange(m.shape[1 if rowvar else 0], dtype=float)
        agree(lambda x: np.cov(x, rowvar=rowvar, aweights=w + 1, fweights=w.astype(int), ddof=ddof), m)


@EXAMPLES
@given(n=st.integers(-1, 5), k=st.integers(-3, 3), m=st.none() | st.integers(0, 5))
def test_triangle_indices(n, k, m):
    agree(lambda: (np.tril_indices(n, k, m), np.triu_indices(n, k, m)))
    if n >= 0 and m is not None:
        agree(lambda a: (np.tril_indices_from(a, k), np.triu_indices_from(a, -k)), np.zeros((n, m)))


@EXAMPLES
@given(data=st.data(), a=arrays())
def test_partition(data, a):
    axis = data.draw(axes(a.ndim))
    kth = data.draw(st.integers(-4, 4) | st.lists(st.integers(-3, 3), min_size=1, max_size=3))
    agree(lambda x: (np.partition(x, kth, axis=axis), np.argpartition(x, kth, axis=axis)), a)


@EXAMPLES
@given(x=arrays(shape=st.integers(0, 4).map(lambda n: (n,))), n=st.none() | st.integers(0, 5), increasing=st.booleans())
def test_vander(x, n, increasing):
    agree(lambda v: np.vander(v, n, increasing), x)


@EXAMPLES
@given(data=st.data(), a=arrays(dtypes=[np.int8, np.int32, np.float32, np.float64, np.bool_]))
def test_ediff1d(data, a):
    edge = st.none() | st.integers(-3, 3) | st.floats(-2, 2) | st.lists(st.integers(0, 5), max_size=3)
    to_begin, to_end = data.draw(edge), data.draw(edge)
    agree(lambda x: np.ediff1d(x, to_end=to_end, to_begin=to_begin), a)


@EXAMPLES
@given(data=st.data(), y=arrays(shape=nonempty_shapes), dx=st.floats(0.1, 2))
def test_trapezoid(data, y, dx):
    axis = data.draw(axes(y.ndim, none=False))
    n = y.shape[axis] if -y.ndim <= axis < y.ndim else 1
    x = data.draw(st.none() | st.just(np.cumsum(np.ones(n))) | st.just(np.cumsum(np.ones(y.shape), axis=-1)))
    agree(lambda v: np.trapezoid(v, x, dx=dx, axis=axis), y)


@EXAMPLES
@given(start=st.floats(-3, 3) | st.just(np.array([1.0, -2.0])), stop=st.floats(-3, 3), num=st.integers(0, 5),
       endpoint=st.booleans(), base=st.sampled_from([10.0, 2, 0.5]))
def test_logspace_and_geomspace(start, stop, num, endpoint, base):
    agree(lambda: np.logspace(start, stop, num, endpoint, base))
    agree(lambda s: np.logspace(s, stop, num, endpoint, base, axis=-1), np.asarray(start, dtype=np.float32))
    agree(lambda s: np.geomspace(s, stop, num, endpoint), np.asarray(start))
    agree(lambda: np.geomspace(start, stop, num, endpoint, dtype=np.float32))


@EXAMPLES
@given(data=st.data(), x=arrays(dtypes=[np.float64, np.int32, np.float32], special=True), right=st.booleans())
def test_digitize(data, x, right):
    bins = np.asarray(data.draw(st.lists(st.integers(-4, 4), max_size=4)), dtype=float)
    order = data.draw(st.sampled_from(["up", "down", "any"]))
    bins = np.sort(bins) if order == "up" else np.sort(bins)[::-1].copy() if order == "down" else bins
    agree(lambda v, b: np.digitize(v, b, right), x, bins)
    as_list = bins.tolist()
    agree(lambda v: np.digitize(v, as_list, right), x)


@EXAMPLES
@given(data=st.data(), a=arrays(special=True, dtypes=[np.float64, np.float32, np.int32]), method=st.sampled_from(
    ["linear", "nearest", "lower", "midpoint"]))
def test_nanpercentile(data, a, method):
    axis = data.draw(axes(a.ndim))
    q = data.draw(st.floats(0, 1) | st.lists(st.floats(0, 1), min_size=1, max_size=3))
    percents = np.multiply(q, 100).tolist()
    agree(lambda x: (np.nanquantile(x, q, axis=axis, method=method),
                     np.nanpercentile(x, percents, axis=axis, method=method)), a)


@EXAMPLES
@given(data=st.data(), a=arrays(), k=st.integers(-3, 3))
def test_split_and_layout(data, a, k):
    sections = data.draw(st.integers(1, 3) | st.lists(st.integers(-3, 3), max_size=3))
    agree(lambda x: np.hsplit(x, sections), a)
    agree(lambda x: np.vsplit(x, sections), a)
    agree(lambda x: np.dsplit(x, sections), a)
    agree(lambda x: (np.fliplr(x), np.flipud(x)), a)
    agree(lambda x: np.diagflat(x, k), a)
    agree(lambda x: (np.indices(x.shape), np.indices(x.shape, sparse=True)), a)
