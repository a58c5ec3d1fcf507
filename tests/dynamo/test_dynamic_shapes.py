"""Dynamic shapes in capture: automatic dynamic sizes, dynamic=True/False, guards as relations.

The eager backend runs the captured (symbolic) graph through NumPy, so these
tests are about capture alone; tests/inductor/test_dynamic_codegen.py runs the
same programs through the C++ kernels.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.logs import set_logs
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# -- programs, each run for many batch sizes -----------------------------------------


def pointwise(x, b):
    return np.tanh(x) * b + 1.0


def reduction(x, b):
    return (x * b).sum(axis=1), x.max(axis=0), x.mean(axis=1, keepdims=True)


def reshape(x, b):
    n = x.shape[0]
    flat = (x + b).reshape(-1)
    return flat * 2, flat.reshape(n, -1)[1:], x.reshape(n, 2, -1).sum(axis=-1)


def matmul(x, b):
    h = np.maximum(x @ np.outer(b, b), 0.0)
    return h, x.T @ x, np.einsum("ij,j->i", x, b)


def slicing(x, b):
    return x[::2] + b, x[-1], x[1:-1].sum(axis=0), np.where(x > 0, x, b)


def joining(x, b):
    return np.concatenate([x, x * 2], axis=0), np.stack([x, -x]).sum(axis=0)


PROGRAMS = [pointwise, reduction, reshape, matmul, slicing, joining]


def run_sizes(fn, sizes, width=4, dynamic=None, backend="eager"):
    compiled = mc.compile(fn, backend=backend, dynamic=dynamic)
    b = rand(width)
    for n in sizes:
        x = rand(n, width)
        assert_same(compiled(x, b), fn(x, b), f"{fn.__name__} at batch {n}")
    return compiled


SIZES = [3, 5, 8, 2, 17, 4, 9, 33, 6, 12, 7, 64, 10, 11, 13, 100, 15, 16, 20, 31]


@pytest.mark.parametrize("fn", [f for f in PROGRAMS if f is not slicing], ids=lambda f: f.__name__)
def test_twenty_batch_sizes_compile_at_most_twice(fn):
    compiled = run_sizes(fn, SIZES)
    assert len(compiled.cache) <= 2, [str(e.capture.guards) for e in compiled.cache]


def test_strided_slices_need_one_entry_per_parity():
    # len(x[::2]) is (s0 + 1)//2: sizes stay polynomials, so the example's parity
    # is guarded and odd and even sizes get one entry each (plus the static one).
    compiled = run_sizes(slicing, [s for s in SIZES if s >= 3])
    assert len(compiled.cache) == 3
    guards = [str(e.capture.guards) for e in compiled.cache[1:]]
    assert any("(s0 + 1) % 2 == 0" in g for g in guards) and any("(s0) % 2 == 0" in g for g in guards)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(3, 40), min_size=3, max_size=12))
def test_random_size_sequences_equal_eager(fn, sizes):
    compiled = run_sizes(fn, sizes)
    # Static first; then one dynamic entry serves every later size (x[::2]
    # needs one per parity: its length is (s0 + 1)//2).
    assert len(compiled.cache) <= (3 if fn is slicing else 2)


def test_first_compile_is_static_and_the_second_symbolic():
    compiled = run_sizes(pointwise, [8])
    assert len(compiled.cache) == 1
    assert "f64[8, 4]" in str(compiled.cache[0].capture.graph)
    b = rand(4)
    for n in (9, 10, 11):
        x = rand(n, 4)
        assert_same(compiled(x, b), pointwise(x, b))
    assert len(compiled.cache) == 2
    graph = str(compiled.cache[1].capture.graph)
    assert 'x: "f64[s0, 4]"' in graph and 'b: "f64[4]"' in graph


def test_dynamic_true_is_symbolic_from_the_start():
    compiled = run_sizes(pointwise, [8, 9, 10], dynamic=True)
    assert len(compiled.cache) == 1
    assert 'x: "f64[s0, s1]"' in str(compiled.cache[0].capture.graph)


def test_dynamic_false_specializes_every_size():
    compiled = run_sizes(pointwise, [5, 6, 7], dynamic=False)
    assert len(compiled.cache) == 3
    assert all("s0" not in str(e.capture.graph) for e in compiled.cache)


@pytest.mark.parametrize("special", [0, 1])
def test_sizes_zero_and_one_stay_specialized(special):
    compiled = mc.compile(pointwise, backend="eager", dynamic=True)
    b = rand(4)
    x = rand(special, 4)
    assert_same(compiled(x, b), pointwise(x, b))
    assert f"f64[{special}, s0]" in str(compiled.cache[0].capture.graph)
    x = rand(6, 4)
    assert_same(compiled(x, b), pointwise(x, b))
    assert len(compiled.cache) == 2  # size 6 misses the size-0/1 entry


def test_equal_sizes_share_a_symbol_until_they_differ():
    def f(x, y):
        return x * 2, y + 1

    compiled = mc.compile(f, backend="eager", dynamic=True)
    x, y = rand(5), rand(5)
    assert_same(compiled(x, y), f(x, y))
    text = str(compiled.cache[0].capture.guards)
    assert "L['y'].shape[0] == s0  # same size" in text
    x, y = rand(5), rand(7)
    assert_same(compiled(x, y), f(x, y))
    assert len(compiled.cache) == 2
    assert 'y: "f64[s1]"' in str(compiled.cache[1].capture.graph)
    for n, m in [(3, 9), (9, 3), (4, 4)]:
        x, y = rand(n), rand(m)
        assert_same(compiled(x, y), f(x, y))
    assert len(compiled.cache) == 2


def test_broadcast_between_symbols_is_a_guarded_relation():
    def f(x, y):
        return x + y

    compiled = mc.compile(f, backend="eager", dynamic=True)
    compiled.dynamic.distinct |= {("L['x']", 0), ("L['y']", 0)}  # no duck sizing
    x, y = rand(6), rand(6)
    assert_same(compiled(x, y), f(x, y))
    guards = str(compiled.cache[0].capture.guards)
    assert "s0 == s1  # s0 = L['x'].shape[0], s1 = L['y'].shape[0]" in guards
    x, y = rand(9), rand(9)
    assert_same(compiled(x, y), f(x, y))
    assert len(compiled.cache) == 1
    with pytest.raises(ValueError, match="broadcast"):  # NumPy's own error, not a wrong result
        compiled(rand(9), rand(4))


def test_divisibility_guard_only_where_the_code_relies_on_it():
    def f(x):
        return x.reshape(-1, 2).sum(axis=1), x[::2]

    compiled = mc.compile(f, backend="eager", dynamic=True)
    x = rand(8)
    assert_same(compiled(x), f(x))
    guards = str(compiled.cache[0].capture.guards)
    assert "(s0) % 2 == 0" in guards
    x = rand(12)
    assert_same(compiled(x), f(x))
    assert len(compiled.cache) == 1
    g = mc.compile(pointwise, backend="eager", dynamic=True)
    g(rand(8, 4), rand(4))
    assert "%" not in str(g.cache[0].capture.guards)


def test_a_loop_over_a_size_stays_specialized():
    def f(x):
        total = x[0]
        for i in range(1, x.shape[0]):
            total = total + x[i]
        return total

    compiled = mc.compile(f, backend="eager")
    for n in (3, 4, 5, 4):
        x = rand(n, 2)
        assert_same(compiled(x), f(x))
    # The unrolled loop pins the size: one entry per size seen, never a wrong sum.
    assert len(compiled.cache) == 3
    assert "s0 == 5" in str(compiled.cache[-1].capture.guards)


def test_a_size_returned_to_python_is_its_value():
    def f(x):
        return x.shape[0] * 2, x + 1

    compiled = mc.compile(f, backend="eager", dynamic=True)
    for n in (3, 4):
        x = rand(n)
        assert_same(compiled(x), f(x))


def test_size_used_as_a_value_specializes():
    def f(x):
        return x * x.shape[0]

    compiled = mc.compile(f, backend="eager", dynamic=True)
    for n in (3, 4, 3):
        x = rand(n)
        assert_same(compiled(x), f(x))
    assert len(compiled.cache) == 2


def test_a_branch_on_a_size_is_a_guard():
    def f(x):
        if x.shape[0] > 10:
            return x.sum()
        return x * 2

    compiled = mc.compile(f, backend="eager", dynamic=True)
    for n in (4, 6, 20, 30, 5):
        x = rand(n)
        assert_same(compiled(x), f(x))
    assert len(compiled.cache) == 2
    assert "s0 <= 10  # s0 = L['x'].shape[0]  # line" in str(compiled.cache[0].capture.guards)
    assert "s0 >= 11" in str(compiled.cache[1].capture.guards)


def test_non_contiguous_input_stays_static():
    compiled = mc.compile(pointwise, backend="eager", dynamic=True)
    x, b = rand(4, 8)[:, ::2], rand(4)
    assert_same(compiled(x, b), pointwise(x, b))
    assert 'x: "f64[4, 4]"' in str(compiled.cache[0].capture.graph)


def test_guard_and_recompile_logs_read_as_relations(capsys):
    compiled = mc.compile(pointwise, backend="eager")
    b = rand(4)
    set_logs("guards,recompiles")
    try:
        for n in (8, 9, 10):
            compiled(rand(n, 4), b)
    finally:
        set_logs("")
    err = capsys.readouterr().err
    assert "sizes changed, next capture makes symbolic L['x'].shape[0]" in err
    assert "L['x'].shape[0] >= 2" in err  # the guard function itself


def test_explain_shows_symbolic_guards():
    out = mc.explain(mc.compile(pointwise, dynamic=True))(rand(8, 4), rand(4))
    text = str(out)
    assert "2 <= s0  # s0 = L['x'].shape[0]" in text
    assert 'x: "f64[s0, s1]"' in text


def test_size_change_with_another_change_does_not_go_dynamic():
    compiled = mc.compile(pointwise, backend="eager")
    compiled(rand(8, 4), rand(4))
    compiled(rand(9, 4, dtype=np.float32), rand(4))  # dtype changed too
    assert not compiled.dynamic.dims
    assert "s0" not in str(compiled.cache[-1].capture.graph)


def test_a_backend_that_needs_plain_sizes_gets_one_graph_per_shape():
    seen = []

    def needs_ints(graph, example_inputs):
        seen.append([tuple(p.meta.shape) for p in graph.placeholders])
        np.zeros(graph.placeholders[0].meta.shape)  # a plain int wanted: refused for a symbol
        return graph

    compiled = mc.compile(pointwise, backend=needs_ints, dynamic=True)
    for n in (3, 5, 3):
        x, b = rand(n, 4), rand(4)
        assert_same(compiled(x, b), pointwise(x, b))
    assert len(compiled.cache) == 1
    assert seen[1:] == [[(3, 4), (4,)], [(5, 4), (4,)]]  # after the symbolic attempt: per shape


def test_tensor_inputs_stay_static():
    def f(x, y):
        return (x * y).sum()

    compiled = mc.compile(f, backend="eager", dynamic=True)
    x, y = mc.Tensor(rand(4), requires_grad=True), rand(4)
    out = compiled(x, y)
    out.backward()
    np.testing.assert_allclose(x.grad, y)
    assert "s0" not in str(compiled.cache[0].capture.graph)


# Python code that reads a size: arithmetic and comparisons keep the symbol;
# anything else sees the example's value (guarded), never the symbol itself.
SIZE_USES = {
    "str": lambda x: (x * 2, str(x.shape[0])),
    "f_string": lambda x: (x * 2, f"n={x.shape[0]:>3}"),
    "dict_lookup": lambda x: x + {8: 1, 10: 2, 12: 3}.get(x.shape[0], 0),
    "dict_key": lambda x: x * {x.shape[0]: 2}.get(8, 5),
    "isinstance": lambda x: x * isinstance(x.shape[0], int),
    "type": lambda x: x * (type(x.shape[0]) is int),
    "float": lambda x: x * float(x.shape[0]),
    "true_divide": lambda x: x * (x.shape[0] / 3),
    "power": lambda x: x * (x.shape[0] ** 2),
    "divmod": lambda x: x * divmod(x.shape[0], 3)[1],
    "membership": lambda x: x * (x.shape[0] in (8, 12)),
    "list_index": lambda x: x * list(range(20))[x.shape[0]],
    "math_prod": lambda x: x * math.prod(x.shape),
    "shape_compare": lambda x: x * (1 if x.shape == (8,) else 2),
    "half_slice": lambda x: x[: x.shape[0] // 2] * 2,
    "float_equal": lambda x: x * (x.shape[0] == 8.0),
    "float_less": lambda x: x * (x.shape[0] < 9.5),
    "float_multiply": lambda x: x * (x.shape[0] * 0.5),
}


@pytest.mark.parametrize("use", sorted(SIZE_USES))
@pytest.mark.parametrize("dynamic", [True, None])
def test_python_uses_of_a_size_equal_eager(use, dynamic):
    fn = SIZE_USES[use]
    compiled = mc.compile(fn, backend="eager", dynamic=dynamic)
    for n in (8, 10, 12, 8, 10):
        x = rand(n)
        assert_same(compiled(x), fn(x), f"{use} at size {n}")


def test_creation_shapes_from_sizes_stay_symbolic():
    def f(x):
        z = np.zeros((x.shape[0], 4)) + x[:, None]
        return z, np.full((x.shape[0],), 2.0) * x, np.ones(x.shape[0] * 2).reshape(-1, 2) + 1

    compiled = run_sizes_1d(f, [3, 5, 8, 13, 100])
    assert len(compiled.cache) == 2
    assert "np.zeros((s0, 4))" in str(compiled.cache[1].capture.graph)


def test_fill_value_from_a_size_specializes():
    def f(x):
        return np.full(3, x.shape[0]) + x[:3]

    compiled = run_sizes_1d(f, [4, 5, 6], dynamic=True)
    assert len(compiled.cache) == 3  # the size is a value here: one entry per value


def run_sizes_1d(fn, sizes, dynamic=None):
    compiled = mc.compile(fn, backend="eager", dynamic=dynamic)
    for n in sizes:
        x = rand(n)
        assert_same(compiled(x), fn(x), f"size {n}")
    return compiled
