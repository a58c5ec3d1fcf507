"""Functionalization: in-place updates, views and aliasing arguments, compiled as NumPy runs them.

Each case is a small function that writes into arrays — through a view, an
argument passed twice, overlapping views of one base, a view and its base,
arrays in containers — and a maker of fresh, identically aliased arguments.
Compiled on every backend, called twice (the capture, then the cached
entry), it must leave NumPy's result *and* NumPy's arguments, bit for bit:
values, dtypes, which arguments were written, and whether the result is an
argument or a view of one.  The writes must be captured whole (no graph
break) where the case says so, and errors NumPy raises must be NumPy's, with
the arguments as NumPy leaves them.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import minicompile as mc
from test_found_wrong_results import (add_out_then_add, add_then_multiply, matmul_then_column_write,
                                      set_then_add, write_then_write_through_a_view)

pytestmark = pytest.mark.capture

try:
    import triton  # noqa: F401
    HAVE_TRITON = True
except ImportError:
    HAVE_TRITON = False

BACKENDS = ["eager", "aot_eager", "cpp", pytest.param("triton", marks=pytest.mark.skipif(
    not HAVE_TRITON, reason="triton is not installed"))]


@dataclass
class Case:
    fn: Callable
    make: Callable[[], tuple]
    whole: bool = True  # captured as one graph, no break

    @property
    def id(self) -> str:
        return self.fn.__name__


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a == b


def arrays_in(value: Any) -> list:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in arrays_in(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in arrays_in(v)]
    return []


def aliasing(result: Any, args: tuple) -> list[tuple[bool, bool]]:
    """For each returned array and each argument array, and each earlier returned
    array: (is it, shares memory)."""
    results = arrays_in(result)
    return [(r is a, bool(np.shares_memory(r, a))) for i, r in enumerate(results)
            for a in arrays_in(args) + results[:i]]


def run(fn: Callable, args: tuple) -> tuple[Any, type | None]:
    try:
        return fn(*args), None
    except Exception as e:  # compared with eager's
        return str(e), type(e)


def check(case: Case, backend: str) -> None:
    compiled = mc.compile(case.fn, backend=backend)
    for call in ("first call", "cached call"):
        eager_args, compiled_args = case.make(), case.make()
        expected, expected_error = run(case.fn, eager_args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            actual, actual_error = run(compiled, compiled_args)
        where = f"{case.id} on {backend}, {call}"
        assert actual_error is expected_error, f"{where}: raised {actual_error} ({actual}), eager {expected_error}"
        assert same(list(compiled_args), list(eager_args)), f"{where}: arguments {compiled_args} != {eager_args}"
        if expected_error is None:
            assert same(actual, expected), f"{where}: result {actual!r} != {expected!r}"
            assert aliasing(actual, compiled_args) == aliasing(expected, eager_args), f"{where}: aliasing"
        assert len(compiled.cache) == 1, f"{where}: recompiled ({compiled.why_miss})"


# -- the cases -------------------------------------------------------------------------------

def overlapping_views(x, y):
    x += 1
    return x + y, y * 2


def view_and_its_base(b, v):
    v[:] = 0
    return b.sum(), v + b[:3]


def transposed_view_and_its_base(b, t):
    t[0] += 10
    b[1] *= 2
    return t.copy(), b + 0


def view_read_after_base_write(x):
    v = x[1:]
    x[0] = 5
    w = v * 2
    v[0] = -1
    return w, x.copy()


def writes_through_transpose_and_reshape(x):
    y = x.T
    y[0, 1] = 7
    r = x.reshape(-1)
    r[0] = 3
    return x * 1


def view_of_a_local_written(x):
    y = x * 2
    v = y[::2]
    v += 1
    return y


def returns_the_argument(x):
    x *= 3
    return x


def returns_a_view_of_the_argument(x):
    return x[1:]


def returns_a_view_and_its_base(x):
    y = x + 1
    return y, y[::-1]


def calls_that_hand_back_their_input(x):
    # NumPy returns the array itself from each of these: v, w and the rest are
    # one object, written or not.
    v = x[1:]
    w = np.squeeze(v)
    x += 1
    return v, w, np.real(w), np.atleast_1d(v), np.atleast_2d(x[None]), x.squeeze()


def write_through_broadcast_to(x, b):
    view = np.broadcast_to(b, x.shape)
    view[0] = 1.0
    return x


def cast_that_numpy_refuses(x):
    x[0] = 7
    x += 1.5
    return x


def boolean_and_integer_keys(x):
    x[x > 2] = 0
    x[[0, 0, 1]] += 1
    return x


def arrays_in_a_dict(d):
    d["w"] -= 0.1 * d["g"]
    return d["w"].sum()


def arrays_in_a_list(lst):
    lst[0] += 1
    lst[1][0] = 9
    return lst[0] + lst[1]


def fill_sort_copyto_at(x):
    x.fill(3)
    x[1] = 1
    x.sort()
    np.copyto(x[:1], 7)
    np.add.at(x, [0, 0], 1)
    return x


def asarray_array_flatten(x):
    y = np.asarray(x)
    y += 1
    z = np.array(x)
    z += 5
    f = x.flatten()
    f[0] = 9
    return x, z, f


def array_copies_what_asarray_returns(x):
    # np.array(x) is a new array even when nothing writes it (it once came back as x itself)
    return np.array(x), np.array(x[1:]), np.array(x, dtype=x.dtype), np.asarray(x[1:])


def zero_d_view_and_scalar(x):
    v = x[0, ...]
    v += 1
    s = x[1]
    s += 1
    return x, s


def reshape_of_unknown_layout_written(x):
    t = x.T * 2
    r = t.reshape(-1)
    r[0] = 100
    return t


def in_place_on_both_sides_of_breaks(x):
    print("before")
    x += 1
    print("between")
    x[0] = 0
    return x.sum()


def view_written_after_a_break(x):
    v = x[1:]
    print("break")
    v[0] = -1.0
    return x * 2


def read_only_argument(x):
    x += 1
    return x


def shifted_assignment(x):
    x[1:] += x[:-1]
    return x


def column_and_row_views(x):
    a = x[:, 0]
    b = x[0, :]
    a[...] = -1
    return b.copy(), x


def same_array(n=3):
    def make():
        a = np.full(n, 2.0)
        return a, a
    return make


def read_only(shape):
    def make():
        a = np.ones(shape)
        a.flags.writeable = False
        return (a,)
    return make


def base_and(view):
    def make():
        b = np.arange(6.0).reshape(2, 3)
        return b, view(b)
    return make


CASES = [
    Case(write_then_write_through_a_view, lambda: (np.ones((3, 4)), np.zeros((3, 4)))),
    Case(matmul_then_column_write, lambda: (np.ones((3, 2)), np.full((2, 4), 0.5), np.zeros((3, 4)))),
    Case(add_then_multiply, same_array()),
    Case(set_then_add, same_array()),
    Case(add_out_then_add, same_array()),
    Case(overlapping_views, lambda: (lambda b: (b[:5], b[1:]))(np.arange(6.0))),
    Case(view_and_its_base, lambda: (lambda b: (b, b[::2]))(np.arange(6.0))),
    Case(transposed_view_and_its_base, base_and(lambda b: b.T)),
    Case(view_read_after_base_write, lambda: (np.arange(4.0),)),
    Case(writes_through_transpose_and_reshape, lambda: (np.arange(6.0).reshape(2, 3),)),
    Case(view_of_a_local_written, lambda: (np.arange(6.0),)),
    Case(returns_the_argument, lambda: (np.arange(3.0),)),
    Case(returns_a_view_of_the_argument, lambda: (np.arange(3.0),)),
    Case(returns_a_view_and_its_base, lambda: (np.arange(3.0),)),
    Case(calls_that_hand_back_their_input, lambda: (np.arange(4.0),)),
    Case(write_through_broadcast_to, lambda: (np.ones((2, 3)), np.ones(3)), whole=False),
    Case(cast_that_numpy_refuses, lambda: (np.arange(3),), whole=False),
    Case(boolean_and_integer_keys, lambda: (np.arange(5.0),)),
    Case(arrays_in_a_dict, lambda: ({"w": np.ones(3), "g": np.arange(3.0)},)),
    Case(arrays_in_a_list, lambda: ([np.ones(3), np.zeros(3)],)),
    Case(fill_sort_copyto_at, lambda: (np.array([3.0, 1.0, 2.0]),)),
    Case(asarray_array_flatten, lambda: (np.arange(3.0),)),
    Case(array_copies_what_asarray_returns, lambda: (np.arange(3.0),)),
    Case(zero_d_view_and_scalar, lambda: (np.arange(3.0),)),
    Case(reshape_of_unknown_layout_written, lambda: (np.arange(6.0).reshape(2, 3),), whole=False),
    Case(in_place_on_both_sides_of_breaks, lambda: (np.arange(3.0),), whole=False),
    Case(view_written_after_a_break, lambda: (np.arange(4.0),), whole=False),
    Case(read_only_argument, read_only(3), whole=False),
    Case(shifted_assignment, lambda: (np.arange(5.0),)),
    Case(column_and_row_views, lambda: (np.arange(9.0).reshape(3, 3),)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_writes_leave_numpys_result_and_arguments(case, backend, capsys):
    check(case, backend)


@pytest.mark.parametrize("case", [c for c in CASES if c.whole], ids=lambda c: c.id)
def test_writes_through_views_and_aliases_need_no_graph_break(case):
    explained = mc.explain(case.fn)(*case.make())
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count <= 1


def test_aliasing_that_changes_between_calls_recompiles():
    compiled = mc.compile(add_then_multiply, backend="eager")
    for make in (lambda: (np.full(3, 2.0), np.full(3, 2.0)), same_array(), lambda: (np.full(3, 2.0), np.ones(3))):
        eager, mine = make(), make()
        assert same(compiled(*mine), add_then_multiply(*eager))
        assert same(list(mine), list(eager))
    assert len(compiled.cache) == 2  # distinct arrays, then one array twice


def test_overlapping_arguments_are_guarded_as_views_of_one_base():
    compiled = mc.compile(overlapping_views, backend="eager")
    b = np.arange(6.0)
    compiled(b[:5], b[1:])
    guards = str(compiled.cache[0].capture.guards)
    assert "L['y'].base is L['x'].base" in guards and "___offset(L['y'], L['x'].base) == 1" in guards
    # Other offsets into the same base: a new entry, and NumPy's answer.
    c, e = np.arange(6.0), np.arange(6.0)
    assert same(compiled(c[1:], c[:5]), overlapping_views(e[1:], e[:5])) and same(c, e)
    assert len(compiled.cache) == 2


def test_written_argument_is_guarded_writable():
    compiled = mc.compile(read_only_argument, backend="eager")
    compiled(np.ones(3))
    with pytest.raises(ValueError, match="read-only"):
        compiled(*read_only(3)())
    assert len(compiled.cache) == 2


def test_write_back_is_one_assignment_per_written_argument():
    compiled = mc.compile(write_then_write_through_a_view, backend="eager")
    compiled(np.ones((3, 4)), np.zeros((3, 4)))
    source = compiled.cache[0].capture.break_plan.source
    assert source.count("L['out'][...] = ") == 1 and "L['a'][...]" not in source


def test_dynamic_shapes_keep_writes_and_views():
    def f(x, n):
        x[:n] += 1
        return x[n:]

    compiled = mc.compile(f, backend="eager", dynamic=True)
    for size, n in ((6, 2), (9, 4), (12, 3)):
        mine, eager = np.arange(float(size)), np.arange(float(size))
        r = compiled(mine, n)
        assert same(r, f(eager, n)) and same(mine, eager) and np.shares_memory(r, mine)
    assert len(compiled.cache) == 1


def test_distinct_arrays_stay_distinct_objects_after_a_break():
    def f(x):
        y = np.zeros(3)
        z = np.zeros(3)
        print("break")
        y += 1
        return y, z, x

    y, z, x = mc.compile(f, backend="cpp")(np.ones(3))
    assert not np.shares_memory(y, z) and list(z) == [0, 0, 0]
