"""Ops one level below capture: graphs built directly, and the reference implementations.

Each test builds a graph with ``Graph.call`` (or calls an op's reference
implementation) and compares it with NumPy, through the graph interpreter and
the cpp backend: indexing keys capture does not spell, creation from
constants, several results, writes into arguments, and the index parser
against NumPy on random keys.  The op-info table (test_opinfo.py) covers the
same ops through capture.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicompile import ir
from minicompile.ir import Graph, TensorMeta, indexing
from minicompile.testing import assert_close
from minicompile.testing.opinfo import TOLERANCE

pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:minicompile:UserWarning"),
]

# ---------------------------------------------------------------------------
# One level down: graphs built directly, for ops capture does not reach yet
# ---------------------------------------------------------------------------


def graph_results(build: Callable, inputs: list[np.ndarray]) -> tuple[tuple, tuple]:
    """Build a graph over ``inputs`` with ``build(g, *placeholders) -> nodes``,
    then run it through the graph interpreter and through the cpp backend."""
    from minicompile.inductor import compile_graph

    g = Graph()
    ph = [g.placeholder(f"in{i}", TensorMeta(x.shape, x.dtype)) for i, x in enumerate(inputs)]
    outs = build(g, *ph)
    g.output(list(outs) if isinstance(outs, (list, tuple)) else [outs])
    with np.errstate(all="ignore"):
        return g(*inputs), compile_graph(g, list(inputs))(*inputs)


def check_graph(build: Callable, inputs: list[np.ndarray], expected: Any) -> None:
    expected = tuple(expected) if isinstance(expected, (list, tuple)) else (expected,)
    for backend, results in zip(("eager", "cpp"), graph_results(build, inputs)):
        assert len(results) == len(expected)
        for got, want in zip(results, expected):
            # The backend may hand back a NumPy scalar or a 0-d array; capture
            # decides the Python type from the op (see test_scalar_results).
            assert_close(np.asarray(got), np.asarray(want), backend, tolerances=TOLERANCE)


X = np.arange(60.0).reshape(3, 4, 5)[:, ::-1]  # negatively strided
IDX = np.array([2, 0, -1])
MASK = np.array([True, False, True])

# (key builder over the index-array placeholders, NumPy key, arrays in the key)
GETITEM_KEYS = [
    (1,), (-1,), (slice(1, None),), (slice(None, None, -1),), (slice(None, None, 2), 1),
    (None,), (Ellipsis, None), (Ellipsis, 0), (1, Ellipsis, slice(None, None, -2)),
    (slice(-2, -10, -1),), (slice(5, 1),), ((0, 2),), ((0, 2), slice(1, None)),
    (slice(None), (0, 1), (1, 0)), (0, slice(None), (0, 1)), ((True, False, True),),
    (True,), (np.int64(2), None, -3), (),
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=map(repr, GETITEM_KEYS))
def test_getitem_basic_and_constant_advanced(key):
    # A tuple inside the key is an index array, for NumPy and for the op alike.
    check_graph(lambda g, x: g.call("getitem", x, key), [X], X[key])
    canonical = indexing.canonical_key(key, X.shape)
    assert indexing.result_shape(canonical, X.shape) == X[key].shape
    assert indexing.canonical_key(canonical, X.shape) == canonical  # canonical is a fixed point


def test_getitem_with_index_arrays_from_the_graph():
    check_graph(lambda g, x, i: g.call("getitem", x, (i,)), [X, IDX], X[IDX])
    check_graph(lambda g, x, i: g.call("getitem", x, (slice(None), i, i)), [X, IDX], X[:, IDX, IDX])
    check_graph(lambda g, x, i: g.call("getitem", x, (i, Ellipsis, i)), [X, IDX], X[IDX, ..., IDX])
    check_graph(lambda g, x, i: g.call("getitem", x, (1, None, i)), [X, IDX], X[1, None, IDX])
    g = Graph()
    x, m = g.placeholder("x", TensorMeta(X.shape, X.dtype)), g.placeholder("m", TensorMeta((3,), np.dtype(bool)))
    with pytest.raises(ir.ops.DataDependent):
        g.call("getitem", x, m)  # x[mask]: its length is the number of True values


@pytest.mark.parametrize("key, error", [
    ((3,), IndexError), ((0, 0, 0, 0), IndexError), ((1.0,), IndexError), ((Ellipsis, Ellipsis), IndexError),
    (((True, False),), IndexError), (((0, 5),), IndexError), (((0, 1), (0, 1, 1)), IndexError),
    ((slice(None, None, 0),), ValueError), (("a",), IndexError),
])
def test_getitem_errors_match_numpy(key, error):
    with pytest.raises(error):
        X[key]
    g = Graph()
    with pytest.raises(error):
        g.call("getitem", g.placeholder("x", TensorMeta(X.shape, X.dtype)), key)


SETITEM_CASES = [
    ((1,), 7.0), ((slice(None, None, -1), 0), np.arange(5.0)), ((Ellipsis, None), -1),
    (((0, 2),), np.ones((2, 4, 5))), ((slice(None), (0, 1), (1, 0)), np.ones((3, 1))),
    (((True, False, True),), 3), ((0, slice(1, 3)), np.ones((1, 1, 2, 5), np.float32)),
]


@pytest.mark.parametrize("key, value", SETITEM_CASES, ids=[repr(k) for k, _ in SETITEM_CASES])
def test_setitem_is_functional(key, value):
    expected = X.copy()
    expected[key] = value
    before = X.copy()
    if isinstance(value, np.ndarray):  # array values are graph inputs
        check_graph(lambda g, x, v: g.call("setitem", x, key, v), [X, value], expected)
    else:
        check_graph(lambda g, x: g.call("setitem", x, key, value), [X], expected)
    np.testing.assert_array_equal(X, before)  # the input is not written to


def test_setitem_with_a_mask_from_the_graph_is_where():
    x = np.linspace(-1, 1, 6)
    g_value = np.float32(5)
    expected = x.copy()
    expected[x > 0] = g_value
    check_graph(lambda g, a: g.call("setitem", a, (g.call("greater", a, 0),), g_value), [x], expected)
    check_graph(lambda g, a, v: g.call("setitem", a, g.call("greater", a, 0), v), [x, np.array([2.0])],
                np.where(x > 0, 2.0, x))
    g = Graph()
    a = g.placeholder("a", TensorMeta((6,), np.dtype(np.float64)))
    with pytest.raises(ir.ops.DataDependent):  # x[mask] = array: the count must match
        g.call("setitem", a, g.call("greater", a, 0), g.placeholder("v", TensorMeta((3,), a.dtype)))


@pytest.mark.parametrize("key, value, error", [
    ((slice(None),), np.ones(7), ValueError), ((0,), 300, OverflowError), ((0,), float("nan"), ValueError),
    ((9,), 1, IndexError),
])
def test_setitem_errors_match_numpy(key, value, error):
    x = np.zeros((3, 5), np.int8)
    with pytest.raises(error):
        x.copy()[key] = value
    g = Graph()
    with pytest.raises(error):
        g.call("setitem", g.placeholder("x", TensorMeta(x.shape, x.dtype)), key, value)


@pytest.mark.parametrize("fn, sections, axis", [
    (np.split, 2, 0), (np.split, [1, 3], -1), (np.array_split, 3, 1), (np.array_split, [-2, 10], 2),
    (np.split, 0, 0), (np.split, 5, 1), (np.split, 2, 3),
])
def test_split_is_one_getitem_per_piece(fn, sections, axis):
    from minicompile.dynamo.variables.numpy_calls import SPLITS

    x = np.arange(48.0).reshape(2, 4, 6)
    try:
        expected = fn(x, sections, axis=axis)
    except Exception as e:
        with pytest.raises(type(e)):
            ir.ops.split_keys(x.shape, sections, axis, equal=SPLITS[fn])
        return
    keys = ir.ops.split_keys(x.shape, sections, axis, equal=SPLITS[fn])
    check_graph(lambda g, a: [g.call("getitem", a, k) for k in keys], [x], expected)


CREATIONS = [
    ("zeros", ((2, 3),), {}), ("zeros", (4,), {"dtype": np.int8}), ("ones", ((0, 2),), {"dtype": bool}),
    ("empty", ((2, 2),), {}), ("full", ((2,), 7), {}), ("full", ((), 2.5), {"dtype": np.float32}),
    ("arange", (5,), {}), ("arange", (1, 2, 0.25), {}), ("arange", (3,), {"dtype": np.uint8}),
    ("linspace", (0, 1, 5), {}), ("linspace", (0, 1), {"num": 4, "endpoint": False, "dtype": np.float32}),
    ("eye", (3,), {}), ("eye", (2, 4), {"k": -1, "dtype": np.int16}), ("tri", (3, 2), {}),
    ("asarray", ([[1, 2], [3, 4]],), {}), ("asarray", ((1.5, 2),), {"dtype": np.float16}),
]


@pytest.mark.parametrize("name, args, kwargs", CREATIONS, ids=[f"{c[0]}{c[1]}" for c in CREATIONS])
def test_creation_nodes_have_no_inputs(name, args, kwargs):
    g = Graph()
    node = g.call(name, *args, **kwargs)
    assert node.inputs == []
    # np.empty's contents are undefined; minicompile's are zeros.
    numpy_name = {"empty": "zeros"}.get(name, name)
    check_graph(lambda g: g.call(name, *args, **kwargs), [], getattr(np, numpy_name)(*args, **kwargs))


@pytest.mark.parametrize("call, error", [
    (lambda g: g.call("zeros", (-1, 2)), ValueError),
    (lambda g: g.call("zeros", (2,), dtype=np.clongdouble), ir.UnsupportedDtype),
    (lambda g: g.call("ones", 3, dtype=object), ir.UnsupportedDtype),
    (lambda g: g.call("full", 3, "a"), ir.UnsupportedDtype),
    (lambda g: g.call("arange", np.datetime64("2020-01-01"), np.datetime64("2020-01-03")), ir.UnsupportedDtype),
    (lambda g: g.call("asarray", [np.clongdouble(1j), 2]), ir.UnsupportedDtype),
    (lambda g: g.call("arange", g.placeholder("n", TensorMeta((), np.dtype(int)))), ir.ops.DataDependent),
])
def test_creation_errors(call, error):
    with pytest.raises(error):
        call(Graph())


def test_writes_into_arguments_are_functional():
    a = np.zeros(5)
    idx = np.array([0, 1, 1, 4])
    expected = a.copy()
    np.add.at(expected, idx, 1.5)
    check_graph(lambda g, x, i: g.call("add_at", x, i, 1.5), [a, idx], expected)

    dst, src, mask = np.zeros((2, 3), np.float32), np.arange(3.0), np.array([True, False, True])
    expected = dst.copy()
    np.copyto(expected, src, where=mask)
    check_graph(lambda g, d, s, m: g.call("copyto", d, s, where=m), [dst, src, mask], expected)
    # ufunc(..., out=o, where=m) == copyto(o, ufunc(...), where=m): the loop, then a same_kind cast
    o, x = np.full(3, -1, np.int64), np.full(3, 100, np.int8)
    expected = o.copy()
    np.add(x, x, out=expected, where=mask)
    check_graph(lambda g, o_, x_, m: g.call("copyto", o_, g.call("add", x_, x_), where=m),
                [o, x, mask], expected)
    with pytest.raises(TypeError):  # float into int: not same_kind
        Graph().call("copyto", Graph().placeholder("d", TensorMeta((3,), np.dtype(np.int32))), 1.5)

    arr, ind = np.arange(12.0).reshape(3, 4), np.array([[1], [0], [3]])
    expected = arr.copy()
    np.put_along_axis(expected, ind, -1.0, axis=1)
    check_graph(lambda g, x, i: g.call("put_along_axis", x, i, -1.0, 1), [arr, ind], expected)


@pytest.mark.parametrize("code, scalar", [
    ("x[0, 1]", True), ("x[0, ...]", False), ("x[(0, 1)]", True), ("np.sum(x)", True),
    ("np.take(x, 3)", True), ("np.tensordot(x, x, 2)", False), ("np.squeeze(x[:1, :1])", False),
    ("np.linalg.norm(x)", True), ("np.cumsum(x)[0]", True), ("np.dot(x[0], x[0])", True),
])
def test_scalar_results(code, scalar):
    """``OpDef.result_is_scalar`` says what NumPy returns for a 0-d result."""
    x = np.arange(6.0).reshape(2, 3)
    assert isinstance(eval(code, {"np": np, "x": x}), np.generic) == scalar


def test_scalar_rule_of_getitem():
    getitem = ir.get_op("getitem")
    meta = TensorMeta((2, 3), np.dtype(np.float64))
    assert getitem.result_is_scalar({"a": meta, "key": indexing.canonical_key((0, 1), meta.shape)})
    assert not getitem.result_is_scalar({"a": meta, "key": indexing.canonical_key((0, 1, ...), meta.shape)})


# ---------------------------------------------------------------------------
# Index keys: the parser agrees with NumPy on random keys
# ---------------------------------------------------------------------------


_ints = st.integers(-5, 5)
_slices = st.builds(slice, st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
                    st.sampled_from([None, 1, 2, 3, -1, -2]))
_entries = st.one_of(
    _ints, _slices, st.none(), st.just(Ellipsis), st.booleans(),
    st.lists(_ints, max_size=3).map(tuple),
    st.lists(st.booleans(), min_size=0, max_size=4).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), key=st.lists(_entries, max_size=4).map(tuple))
def test_index_parser_agrees_with_numpy(shape, key):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    try:
        expected = x[key]
    except Exception as e:
        with pytest.raises(type(e)):
            canonical = indexing.canonical_key(key, shape)
            indexing.result_shape(canonical, shape)
        return
    canonical = indexing.canonical_key(key, shape)
    assert indexing.result_shape(canonical, shape) == np.shape(expected)
    np.testing.assert_array_equal(x[canonical], expected)  # same meaning
    assert indexing.gives_scalar(canonical, shape) == isinstance(expected, np.generic) or np.ndim(expected) > 0



@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), cols=st.sampled_from([(), (1,), (3,), (2, 3)]), n=st.integers(0, 12),
       ufunc=st.sampled_from([np.add, np.subtract, np.multiply, np.maximum, np.minimum]),
       dtype=st.sampled_from([np.float32, np.float64, np.int32]), value_shape=st.sampled_from(["full", "row", "scalar"]),
       as_tuple=st.booleans(), seed=st.integers(0, 2**16))
def test_ufunc_at_over_rows_equals_numpy_bit_for_bit(rows, cols, n, ufunc, dtype, value_shape, as_tuple, seed):
    """``np.<ufunc>.at(a, idx, b)`` selecting rows of ``a`` runs as updates of
    the flat array (pointwise._rows_at): same result, repeated and negative
    indices and broadcast values included."""
    from minicompile.ir.ops.registry import get_op

    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((rows,) + cols) * 10).astype(dtype)
    idx = rng.integers(-rows, rows, size=(n,) if seed % 2 else (n // 2 + 1, 2))
    full = idx.shape + cols
    b = {"full": rng.standard_normal(full), "row": rng.standard_normal(cols), "scalar": 2.5}[value_shape]
    b = np.asarray(b * 10).astype(dtype)
    expected = a.copy()
    ufunc.at(expected, (idx,) if as_tuple else idx, b)
    got = get_op(f"{ufunc.__name__}_at").impl(a, (idx,) if as_tuple else idx, b)
    assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True)
    assert not np.shares_memory(got, a)


def test_ufunc_at_over_rows_keeps_numpys_errors():
    from minicompile.ir.ops.registry import get_op

    with pytest.raises(IndexError):
        get_op("add_at").impl(np.zeros((3, 2)), np.array([0, 3]), 1.0)
    with pytest.raises(ValueError):
        get_op("add_at").impl(np.zeros((3, 2)), np.array([0, 1]), np.ones((3, 2)))
