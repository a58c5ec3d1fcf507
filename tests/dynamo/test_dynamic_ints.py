"""Automatic dynamic for int arguments: an int whose value changes becomes a size symbol.

A Python int argument is guarded by value on the first capture (``L['n'] == 3``).
When a call misses only because that value changed (possibly with array sizes),
the next capture reads the int as a size symbol (``2 <= s0  # s0 = L['n']``),
handed to the compiled graph as a size input.  Any use other than size
arithmetic and shapes pins it to its value, as before; 0 and 1 stay specialized.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

RNG = np.random.default_rng(11)
VALUES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


def rand(*shape):
    return RNG.standard_normal(shape)


def head(x, n):
    return x[:n] * 2


def rows(x, n):
    return x.reshape(-1, n).sum(1)


def zeros_plus(x, n):
    return np.zeros((n, 4)) + x[:n]


def head_and_tail(x, n):
    return x[:n].sum(axis=0), x[n:] + 1.0


# (program, its inputs for a value of n)
PROGRAMS = {
    "slice": (head, lambda n: (rand(16), n)),
    "reshape": (rows, lambda n: (rand(3, n), n)),
    "zeros": (zeros_plus, lambda n: (rand(12, 4), n)),
    "slice_both_sides": (head_and_tail, lambda n: (rand(14, 3), n)),
}


def guards_of(compiled, i):
    return str(compiled.cache[i].capture.guards)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ten_values_of_an_int_compile_at_most_twice(name, backend):
    fn, make = PROGRAMS[name]
    compiled = mc.compile(fn, backend=backend)
    for n in VALUES:
        args = make(n)
        assert_same(compiled(*args), fn(*args), f"{name} at n={n}")
    assert len(compiled.cache) == 2
    assert "L['n'] == 2" in guards_of(compiled, 0)  # the first capture is static
    assert "L['n'] == 2" not in guards_of(compiled, 1)


def test_the_int_is_a_size_symbol_with_relation_guards():
    compiled = mc.compile(head, backend="eager")
    x = rand(16)
    for n in (3, 5, 7):
        compiled(x, n)
    guards = guards_of(compiled, 1)
    assert "type(L['n']) is" in guards
    assert "2 <= s0  # s0 = L['n']" in guards
    assert "s0 <= 16  # s0 = L['n']" in guards  # the slice stops inside x
    graph = compiled.cache[1].capture.graph
    assert graph.is_dynamic and 'n: "i8[s0]"' in graph.python_code("head")
    assert_same(compiled(x, 20), head(x, 20))  # past the end: another entry, still right
    assert len(compiled.cache) == 3


def test_cpp_kernels_take_the_int_as_a_size_argument():
    def f(x, n):
        return np.ones((n, 4)) * x + 1.0

    compiled = mc.compile(f, backend="cpp")
    for n in VALUES:
        x = rand(4)
        assert_same(compiled(x, n), f(x, n))
    assert len(compiled.cache) == 2
    # One compile for every value: the kernels take s0, read off the size input.
    entry = compiled.cache[1].compiled
    assert "int64_t s0" in entry.kernel_source and "s0 = n.shape[0]" in entry.wrapper_source


def test_dynamic_true_makes_ints_symbolic_from_the_start_and_false_never():
    eager_always = mc.compile(head, backend="eager", dynamic=True)
    never = mc.compile(head, backend="eager", dynamic=False)
    x = rand(16)
    for n in (3, 4, 5):
        assert_same(eager_always(x, n), head(x, n))
        assert_same(never(x, n), head(x, n))
    assert len(eager_always.cache) == 1 and "2 <= s1  # s1 = L['n']" in guards_of(eager_always, 0)
    assert len(never.cache) == 3


def test_an_int_changing_with_an_array_size_shares_its_symbol():
    compiled = mc.compile(rows, backend="eager")
    for n in VALUES:
        x = rand(3, n)
        assert_same(compiled(x, n), rows(x, n))
    assert len(compiled.cache) == 2
    assert "L['n'] == s0  # same size" in guards_of(compiled, 1)  # s0 = L['x'].shape[1]
    # A call where they differ is still right.
    x = rand(3, 8)
    assert_same(compiled(x.reshape(6, 4), 4), rows(x.reshape(6, 4), 4))


def called_with_ints(f, values=(2, 3, 4, 3)):
    """``f`` compiled (eager) and called with each int, checked against NumPy each time."""
    compiled = mc.compile(f, backend="eager")
    for n in values:
        x = rand(3)
        assert_same(compiled(x, n), f(x, n))
    return compiled


def test_a_loop_over_the_int_counts_symbolically():
    def f(x, n):
        for i in range(n):
            x = x + i
        return x

    compiled = called_with_ints(f)
    # The first value is guarded (its short loop unrolled); then one loop node counts s0 times.
    assert len(compiled.cache) == 2
    graph = compiled.cache[1].capture.graph
    assert graph.is_dynamic and any(node.op.name == "loop" for node in graph.calls)


def test_a_loop_over_the_int_stays_specialized_where_it_unrolls():
    def f(x, n):
        for i in range(n):
            if i % 2:  # a branch on the index: the loop unrolls, which pins n
                x = x + i
        return x

    compiled = called_with_ints(f)
    assert len(compiled.cache) == 3  # one per value seen
    assert "L['n'] == 4" in guards_of(compiled, 2)


def test_the_int_used_as_an_array_scalar_stays_specialized():
    def f(x, n):
        return x * n

    compiled = mc.compile(f, backend="eager")
    for n in (2, 3, 4, 3):
        x = rand(3)
        assert_same(compiled(x, n), f(x, n))
    assert len(compiled.cache) == 3
    assert not any(e.capture.graph.is_dynamic for e in compiled.cache)


def test_the_int_as_a_size_and_a_value_is_pinned_but_right():
    def f(x, n):
        return x[:n] * n

    compiled = mc.compile(f, backend="eager")
    for n in (2, 3, 4, 3):
        x = rand(8)
        assert_same(compiled(x, n), f(x, n))
    assert len(compiled.cache) == 3


@pytest.mark.parametrize("special", [0, 1])
def test_zero_and_one_stay_specialized(special):
    compiled = mc.compile(head, backend="eager")
    x = rand(16)
    for n in (3, 5, special, 7):
        assert_same(compiled(x, n), head(x, n))
    assert len(compiled.cache) == 3
    assert f"L['n'] == {special}" in guards_of(compiled, 2)
    assert not compiled.cache[2].capture.graph.is_dynamic


def test_other_changes_keep_the_int_static():
    compiled = mc.compile(head, backend="eager")
    compiled(rand(16), 3)
    compiled(rand(16).astype(np.float32), 4)  # the dtype changed too
    assert "L['n'] == 4" in guards_of(compiled, 1)
    assert not compiled.cache[1].capture.graph.is_dynamic


def test_bools_and_floats_stay_values():
    def f(x, a):
        return x * a

    compiled = mc.compile(f, backend="eager")
    for a in (True, False, 2.5, 3.5):
        x = rand(3)
        assert_same(compiled(x, a), f(x, a))
    assert not any(e.capture.graph.is_dynamic for e in compiled.cache)


# Python uses of an int that is a size: arithmetic and comparisons keep the
# symbol; anything else sees its value (guarded).
INT_USES = {
    "str": lambda x, n: (x[:n] * 2, str(n)),
    "dict_key": lambda x, n: x[:n] * {n: 2}.get(4, 5),
    "float": lambda x, n: x[:n] * float(n),
    "branch": lambda x, n: x[:n].sum() if n > 5 else x[:n] * 2,
    "arithmetic": lambda x, n: x[: 2 * n - 1] + 1,
    "returned": lambda x, n: (x[:n], n + 1),
    "math": lambda x, n: x[: math.isqrt(n)] * 2,
    "tuple_shape": lambda x, n: np.ones((2, n)) * x[:n],
    "modulo": lambda x, n: x[: n % 3 + 1] * 2,
    "index": lambda x, n: x[n] * 2,
    "index_and_slice": lambda x, n: x[n] + x[:n],
    "negative_stop": lambda x, n: x[:-n] + 1,
    "start": lambda x, n: x[n:] * 2,
    "negative_start": lambda x, n: x[-n:] * 2,
    "step": lambda x, n: x[::n] * 2,
    "square": lambda x, n: x[:n, None] * x[None, :n],
    "arange": lambda x, n: np.arange(n) + x[:n],
}


@pytest.mark.parametrize("use", sorted(INT_USES))
def test_python_uses_of_an_int_size_equal_eager(use):
    fn = INT_USES[use]
    compiled = mc.compile(fn, backend="eager")
    for n in (3, 4, 6, 7, 4, 2, 9):
        x = rand(20)
        assert_same(compiled(x, n), fn(x, n), f"{use} at n={n}")
    assert all(e.capture.graph is not None for e in compiled.cache)  # compiled, not run eagerly


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(PROGRAMS)), backend=st.sampled_from(["eager", "cpp"]),
       values=st.lists(st.integers(0, 11), min_size=2, max_size=10))
def test_random_value_sequences_equal_eager(name, backend, values):
    fn, make = PROGRAMS[name]
    compiled = mc.compile(fn, backend=backend)
    for n in values:
        if name == "reshape" and n == 0:
            continue  # NumPy cannot infer -1 for an empty array
        args = make(n)
        assert_same(compiled(*args), fn(*args), f"{name} at n={n}")
    # Static, symbolic, and at most one entry for each of 0 and 1 (and n past x's end).
    assert len(compiled.cache) <= 5


def test_recompile_log_names_the_int(capsys):
    from minicompile.logs import set_logs

    compiled = mc.compile(head, backend="eager")
    set_logs("recompiles")
    try:
        for x, n in ((rand(5, 3), 2), (rand(6, 3), 3), (rand(7, 3), 4)):
            assert_same(compiled(x, n), head(x, n))
    finally:
        set_logs("")
    err = capsys.readouterr().err
    assert "next capture makes symbolic L['n'], L['x'].shape[0]" in err
    assert len(compiled.cache) == 2
