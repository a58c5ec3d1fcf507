"""NumPy functions captured whole: the polyfilled ones, the new ops, and those that must break.

Each function of the table runs eagerly and through ``mc.compile`` and must
give NumPy's values, dtypes, shapes and kinds of result with no graph break
(``mc.explain``), leaving its inputs as they were.  Then the cases around the
edges: results whose shape depends on values break with that reason at the
user's line; the Python bool of ``np.allclose`` stays a bool and breaks where
Python branches on it; NumPy's errors on array values are raised when the
graph runs; ``np.iinfo`` reached through another module; ``np.indices`` and
iteration over arrays.  Every polyfill, run as plain Python on real arrays, is
NumPy's function.
"""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import minicompile as mc
from dynamo_testing import assert_same
from minicompile.dynamo.polyfills import POLYFILLS

pytestmark = [pytest.mark.capture, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

RNG = np.random.default_rng(22)
X = RNG.standard_normal((3, 5))
V = np.linspace(-1.5, 2.0, 6)
W = RNG.random(5) + 0.5
I8 = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)

# name -> (function, arguments); every one must be captured as one graph with no break.
CAPTURED = {
    "sinc": (lambda a: np.sinc(a), (X,)),
    "angle": (lambda a: (np.angle(a), np.angle(a, deg=True)), (X,)),
    "isneginf": (lambda a: (np.isneginf(np.log(a)), np.isposinf(1 / a)), (V,)),
    "isreal": (lambda a: (np.isreal(a), np.iscomplex(a), np.isreal(a.sum()), np.iscomplex(a[0, 0])), (X,)),
    "isscalar": (lambda a: (np.isscalar(a), np.isscalar(a.sum()), np.isscalar(2.5), np.isscalar([1])), (X,)),
    "iinfo": (lambda a: a + np.iinfo(a.dtype).max // 2 + np.iinfo(np.int16).bits, (I8,)),
    "finfo": (lambda a: a * np.finfo(a.dtype).eps + np.finfo(np.float16).tiny, (X,)),
    "select": (lambda a: np.select([a > 0.5, a < -0.5], [a, -a], default=np.nan), (X,)),
    "array_equal": (lambda a, b: (np.array_equal(a, b), np.array_equal(a, a.T), np.array_equiv(a, a[0])), (X, X.copy())),
    "allclose": (lambda a, b: np.allclose(a, b + 1e-9), (X, X.copy())),
    "append": (lambda a: (np.append(a, [1.0, 2.0]), np.append(a, a[:1], axis=0)), (X,)),
    "delete": (lambda a: (np.delete(a, 1, axis=1), np.delete(a, [0, -1]), np.delete(a, slice(None, None, 2), -1)),
               (X,)),
    "insert": (lambda a: (np.insert(a, 1, 5.0, axis=1), np.insert(a, [0, 2, 2], [7.0, 8.0, 9.0]),
                          np.insert(a, [1], a[:, :1], axis=1)), (X,)),
    "digitize": (lambda a, b: (np.digitize(a, b), np.digitize(a, [1.0, 0.0, -1.0], right=True)), (X, np.sort(W))),
    "fliplr": (lambda a: (np.fliplr(a), np.flipud(a)), (X,)),
    "logspace": (lambda a: (np.logspace(0, 2, 5), np.logspace(a[0], 2, 3, base=2.0)), (X,)),
    "geomspace": (lambda a: (np.geomspace(1, 1000, 4), np.geomspace(a, 10, 3, axis=-1)), (W,)),
    "vander": (lambda a: (np.vander(a), np.vander(a, 3, increasing=True)), (V,)),
    "cov": (lambda a, w: (np.cov(a), np.cov(a, rowvar=False, bias=True), np.cov(a, aweights=w)), (X, W)),
    "corrcoef": (lambda a: (np.corrcoef(a), np.corrcoef(a[0], a[1])), (X,)),
    "ediff1d": (lambda a: (np.ediff1d(a), np.ediff1d(a, to_begin=-1, to_end=[7, 8])), (V,)),
    "average": (lambda a, w: (np.average(a, axis=-1), np.average(a, axis=1, weights=w, returned=True)), (X, W)),
    "diagflat": (lambda a: (np.diagflat(a), np.diagflat(a, -1)), (V,)),
    "trapezoid": (lambda a: (np.trapezoid(a), np.trapezoid(a, dx=0.5, axis=0), np.trapezoid(a, np.cumsum(W))), (X,)),
    "tril_indices": (lambda a: (np.tril_indices(4), np.triu_indices(3, 1, 5), np.tril_indices_from(a, -1),
                                np.triu_indices_from(a)), (X,)),
    "split": (lambda a: (np.hsplit(a, [2]), np.vsplit(a, 3), np.dsplit(a[None], [1])), (X,)),
    "partition": (lambda a: (np.partition(a, 2), np.argpartition(a, 1, axis=0), a.argpartition(-1)), (X,)),
    "nanpercentile": (lambda a: (np.nanpercentile(np.log(a), 30), np.nanquantile(a, [0.25, 0.5], axis=1)), (X,)),
    "indices": (lambda a: (np.indices(a.shape), np.indices((2, 3), dtype=np.int8, sparse=True)), (X,)),
}


@pytest.mark.parametrize("name", CAPTURED)
@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_captured_with_no_graph_break(name, backend):
    fn, args = CAPTURED[name]
    before = [a.copy() for a in args]
    explanation = mc.explain(fn)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert_same(mc.compile(fn, backend=backend)(*args), fn(*args), name)
    for arg, was in zip(args, before):
        np.testing.assert_array_equal(arg, was)  # nothing written into the inputs


def test_delete_and_insert_keep_the_graph_small():
    """A few removed or inserted places: slices of the array joined by one concatenate
    (no index list as long as the axis); many: one take, or NumPy's writes."""
    long = np.arange(1000.0)

    def few(a):
        return np.delete(a, 500), np.insert(a, [3, 900], [-1.0, -2.0])

    def many(a):
        return np.delete(a[:40], slice(None, None, 2)), np.insert(a[:40], list(range(0, 40, 2)), 0.5)

    (graph,) = mc.explain(few)(long).graphs
    assert "take" not in graph.python_code() and len(graph.python_code()) < 1500  # no 1000-long index list
    for fn in (few, many):
        assert mc.explain(fn)(long).graph_break_count == 0
        assert_same(mc.compile(fn, backend="cpp")(long), fn(long))


def _line_of(fn) -> int:
    return fn.__code__.co_firstlineno + 1


def _shape_from_values(a, i):
    return np.extract(a > 0, a), np.unique(a), np.trim_zeros(a[0]), a.nonzero(), np.delete(a, i), np.insert(a, i, 0)


@pytest.mark.parametrize("code, reason", [
    ("np.extract(a > 0, a)", "np.extract: the result holds one element per true value of the condition"),
    ("np.unique(a)", "np.unique: the result holds one element per distinct value"),
    ("np.trim_zeros(a[0])", "np.trim_zeros: the result holds the elements between the leading and trailing"),
    ("a.nonzero()", "ndarray.nonzero(): the result holds one index per nonzero element"),
    ("np.bincount(i)", "np.bincount: the result holds one bin per value up to the largest"),
    ("np.delete(a, i)", "np.delete with the indices in an array: the result's shape depends on their values"),
    ("np.insert(a, i, 0.0)", "np.insert with the indices in an array: the result's shape depends on their values"),
])
def test_shapes_from_values_break_at_the_users_line(code, reason):
    namespace = {"np": np}
    exec(compile(f"def f(a, i):\n    y = a * 2\n    return {code}\n", "<user code>", "exec"), namespace)
    f, args = namespace["f"], (X, np.array([1, 2]))
    explanation = mc.explain(f)(*args)
    (why,) = explanation.break_reasons
    assert why.reason.startswith(reason), why.reason
    assert (why.filename, why.lineno) == ("<user code>", 3)
    assert_same(mc.compile(f)(*args), f(*args))


# -- a Python bool computed from arrays ---------------------------------------------------------

def test_allclose_and_array_equal_return_python_bools():
    def f(a, b):
        return np.allclose(a, b), [np.array_equal(a, b)], {"equiv": np.array_equiv(a, b[0])}

    for b in (X.copy(), X + 1):
        got = mc.compile(f)(X, b)
        assert_same(got, f(X, b))
        assert type(got[0]) is bool and type(got[1][0]) is bool
    assert mc.explain(f)(X, X).graph_break_count == 0


def test_python_bool_of_arrays_breaks_where_python_uses_it():
    def branch(a, b):
        if np.allclose(a, b):
            return a + 1
        return a - 1

    def arithmetic(a, b):
        return np.array_equal(a, b) + 1, np.allclose(a, b) is True, isinstance(np.allclose(a, b), bool)

    for fn in (branch, arithmetic):
        for b in (X, X + 1):
            assert_same(mc.compile(fn)(X, b), fn(X, b), fn.__name__)
    (why,) = mc.explain(branch)(X, X).break_reasons
    assert "branch on a Python bool computed from arrays" in why.reason
    assert why.lineno == _line_of(branch)
    assert type(mc.compile(arithmetic)(X, X)[0]) is int  # True + 1 is the int 2, as in Python


def test_a_numpy_bool_scalar_is_np_true_or_np_false_by_its_value():
    """NumPy's bool scalars are the two objects np.True_ and np.False_: ``is`` between
    one computed from arrays and either asks for its value (it was taken as False)."""
    def f(a):
        return (a.sum() > 0) is np.True_, (a[0] > 9) is np.False_, (a > 0).all() is not np.True_

    for sign in (1, -1):
        assert_same(mc.compile(f, backend="eager")(X * sign), f(X * sign), "is")


def test_answers_known_while_tracing_are_constants():
    def f(a, b):
        return (np.array_equal(a, b), np.allclose([1.0, 2.0], [1.0, 2.0 + 1e-9]), np.iscomplex(1 + 2j),
                np.isreal(2.5), np.isscalar(a.shape[0]))

    explanation = mc.explain(f)(X, X.T)
    assert explanation.graph_break_count == 0 and explanation.op_count == 0
    assert_same(mc.compile(f)(X, X.T), f(X, X.T))


# -- NumPy's errors on array values: raised when the graph runs ------------------------------------

@pytest.mark.parametrize("fn, good, bad, error", [
    (lambda a, w: np.average(a, axis=1, weights=w), W, W - W, ZeroDivisionError),
    (lambda a, w: np.cov(a, aweights=w), W, W - 1, ValueError),
    (lambda a, w: np.cov(a, fweights=w), np.arange(5.0), W, TypeError),
    (lambda a, w: np.geomspace(w, 10, 3), W, W - W[0], ValueError),
    (lambda a, w: np.digitize(a, w), np.sort(W), W, ValueError),
])
def test_errors_on_array_values_are_raised_when_the_graph_runs(fn, good, bad, error):
    compiled = mc.compile(fn, backend="cpp")
    assert_same(compiled(X, good), fn(X, good))
    assert mc.explain(fn)(X, good).graph_break_count == 0
    with pytest.raises(error):
        fn(X, bad)
    with pytest.raises(error):
        compiled(X, bad)


def test_cov_writes_into_float_fweights_as_numpy_does():
    def f(a, fweights):
        return np.cov(a, fweights=fweights, aweights=W)

    for make in (lambda: np.arange(5.0), lambda: np.arange(5)):  # float64: NumPy multiplies into it
        eager_weights, compiled_weights = make(), make()
        assert_same(mc.compile(f, backend="cpp")(X, compiled_weights), f(X, eager_weights))
        assert_same(compiled_weights, eager_weights)


def test_checks_are_ops_of_the_graph():
    def f(a, w):
        return np.average(a, axis=1, weights=w)

    (graph,) = mc.explain(f)(X, W).graphs
    assert "check" in {n.op.name for n in graph.calls}


# -- np.iinfo and friends: folded at trace time ---------------------------------------------------

def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    return module


HELPERS = _module("numpy_functions_helpers", """
import numpy as np
from numpy import finfo, iinfo


def clamp_to(x, dtype):
    return np.clip(x, iinfo(dtype).min, iinfo(dtype).max).astype(dtype)


def nudge(x):
    return x + finfo(x.dtype).eps
""")


def test_iinfo_as_a_global_of_another_module():
    def f(x):
        return HELPERS.clamp_to(x * 100, np.int8), HELPERS.nudge(x), x + HELPERS.np.iinfo(np.int16).max

    explanation = mc.explain(f)(X)
    assert explanation.graph_break_count == 0
    assert_same(mc.compile(f)(X), f(X))
    for x in (X.astype(np.float32), X.astype(np.float16)):  # a new dtype: a new, guarded answer
        assert_same(mc.compile(f)(x), f(x))


def test_iinfo_of_an_array_is_numpys_error():
    def f(x):
        return np.iinfo(x)

    with pytest.raises(ValueError):
        mc.compile(f)(I8)


# -- np.indices, and iterating over arrays ------------------------------------------------------

def test_indices_unpacked_and_written_through_views():
    def f(a):
        rows, cols = np.indices(a.shape)
        rows[0] = -1  # rows is a view of the grid
        grid = np.indices(a.shape)
        view = grid[1, :, ::-1]
        view += 10
        return rows * a + cols, grid

    explanation = mc.explain(f)(X)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert_same(mc.compile(f)(X), f(X))


def test_iterating_over_an_array_unrolls_its_rows():
    def f(a):
        total = 0.0
        for row in a:
            total = total + row.max()
        first, *rest = a[0]
        return total, first, rest

    assert mc.explain(f)(X).graph_break_count == 0
    assert_same(mc.compile(f)(X), f(X))

    def zero_d(a):
        return [v for v in a.sum()]

    with pytest.raises(TypeError):
        mc.compile(zero_d)(X)


# -- dynamic shapes: the polyfills trace for symbolic sizes too ----------------------------------

def test_polyfills_under_dynamic_shapes():
    def f(a):
        return np.fliplr(a), np.average(a, axis=0), np.cov(a), np.select([a > 0], [a]), np.append(a, a)

    compiled = mc.compile(f, dynamic=True)
    for n in (3, 4, 6):
        x = RNG.standard_normal((n, 5))
        assert_same(compiled(x), f(x))


# -- each polyfill is NumPy's function --------------------------------------------------------------

@pytest.mark.parametrize("name", CAPTURED)
def test_polyfills_run_eagerly_are_numpys_functions(name, monkeypatch):
    """The table's functions with NumPy's functions replaced by their polyfills,
    run on real arrays: NumPy's own answers."""
    fn, args = CAPTURED[name]
    expected = fn(*args)
    for numpy_function, polyfill in POLYFILLS.items():
        monkeypatch.setattr(np, numpy_function.__name__, polyfill)
    assert_same(fn(*args), expected, name)
