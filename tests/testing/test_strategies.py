"""minicompile.testing's strategies and check: the layouts, aliasing groups and shape
sequences drawn, the bugs they find, and the reproducer of a failure."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, seed, settings

import minicompile as mc
from minicompile.ir import passes
from minicompile.testing import aliasing_groups, arrays, check, shape_sequences
from minicompile.testing.strategies import _RECIPES, ALIASING, Calls, _forget, _sources, array_literal


def add_to_subtract(graph, example_inputs):
    return passes.rewrite(graph, lambda g, node, outputs: g.call("subtract", *node.args)
                          if node.op.name == "add" else None)


def scaled_sum(x, y):
    return np.tanh(x) * 2 + y.sum(axis=-1, keepdims=True)


def rebuilt(values):
    """The drawn ``values`` again, from the sources a reproducer shows."""
    setup, exprs = _sources(values)
    namespace = {"np": np}
    exec("\n".join(setup), namespace)
    _forget(values)
    return [eval(e.split("  #")[0], namespace) for e in exprs]


@settings(max_examples=60, deadline=None)
@given(arrays(dtypes=[np.float32, np.int8, np.bool_]))
def test_arrays_rebuild_from_their_recipe(x):
    (again,) = rebuilt([x])
    assert again.dtype == x.dtype and again.shape == x.shape and again.strides == x.strides
    assert again.flags.writeable == x.flags.writeable
    np.testing.assert_array_equal(again, x)


def test_every_layout_is_drawn():
    seen = set()

    @seed(0)
    @settings(max_examples=150, deadline=None, database=None)
    @given(arrays(dtypes=[np.float64], shapes=[(3, 4), (), (0, 2)]))
    def draw(x):
        _forget(x)
        seen.add("0-d" if x.ndim == 0 else "empty" if x.size == 0 else
                 "F" if x.flags.f_contiguous and not x.flags.c_contiguous else
                 "broadcast" if not x.flags.writeable else
                 "negative" if any(s < 0 for s in x.strides) else
                 "strided" if not x.flags.c_contiguous else "C")

    draw()
    assert seen == {"C", "F", "strided", "negative", "broadcast", "0-d", "empty"}


def test_literals_keep_nan_infinity_and_dtype():
    x = np.array([[np.nan, -np.inf], [1.5, np.inf]], np.float16)
    again = eval(array_literal(x), {"np": np})
    assert again.dtype == np.float16
    np.testing.assert_array_equal(again, x)


def test_check_passes_a_right_function_on_eager_and_cpp():
    check(scaled_sum, arrays(dtypes=[np.float32]), arrays(dtypes=[np.float64]), max_examples=8, seed=1)


def test_check_fails_with_a_reproducer_that_reproduces():
    with pytest.raises(AssertionError) as info:
        check(scaled_sum, arrays(dtypes=[np.float32]), arrays(dtypes=[np.float64], layouts=["strided"]),
              backends=(add_to_subtract,), max_examples=30, seed=0)
    text = str(info.value)
    assert "backend 'add_to_subtract'" in text and "Reproducer:" in text
    reproducer = text.split("Reproducer:\n")[1]
    assert "from test_strategies import scaled_sum" in reproducer
    assert "assert_same(scaled_sum, x0, x1, backend=add_to_subtract)" in reproducer
    namespace = {"scaled_sum": scaled_sum, "add_to_subtract": add_to_subtract}
    body = "\n".join(line for line in reproducer.splitlines() if not line.startswith("from test_strategies"))
    with pytest.raises(AssertionError, match="differs from eager NumPy"):
        exec(body, namespace)


# ---------------------------------------------------------------------------
# Aliasing groups
# ---------------------------------------------------------------------------


def test_every_aliasing_kind_is_drawn_and_rebuilt_sharing_its_base():
    seen = set()

    @seed(0)
    @settings(max_examples=120, deadline=None, database=None)
    @given(aliasing_groups(3, dtypes=[np.float64, np.int32], shapes=[(3, 3), (4,), ()]))
    def draw(group):
        kind = _RECIPES[id(group[0])].note
        seen.add(kind)
        assert len({a.shape for a in group}) == 1 and len({a.dtype for a in group}) == 1
        # One buffer: interleaved members share no element, every other kind does.
        assert all(np.may_share_memory(group[0], a) for a in group) or group[0].size == 0
        assert all(np.shares_memory(group[0], a) for a in group) != (kind == "interleaved") or group[0].size == 0
        again = rebuilt(list(group))
        assert all(np.may_share_memory(again[0], a) for a in again) or group[0].size == 0
        for a, b in zip(again, group):
            assert a.strides == b.strides
            np.testing.assert_array_equal(a, b)

    draw()
    assert seen == set(ALIASING)


def stale_reads(graph, example_inputs):
    """A toy backend with a planted aliasing bug: a view (``as_strided``, which
    capture re-derives every aliasing argument with after a write) is taken of
    the input as it was passed in, never of its updated value."""
    def rewrite(g, node, outputs):
        if node.op.name != "as_strided":
            return None
        source = node.args[0]
        while source.kind == "call":  # back to the input the value was computed from
            source = source.args[0]
        return g.call("as_strided", source, *node.args[1:]) if source is not node.args[0] else None
    return passes.rewrite(graph, rewrite)


def shift_and_scale(a, b):
    a += 1  # b may view the same elements: it must see this write
    return b * 2


def test_an_aliasing_bug_is_found_by_aliasing_groups_only():
    check(shift_and_scale, arrays(dtypes=[np.float64]), arrays(dtypes=[np.float64]),
          backends=(stale_reads,), max_examples=30, seed=0)  # separate arrays: the bug never shows
    with pytest.raises(AssertionError) as info:
        check(shift_and_scale, aliasing_groups(2, dtypes=[np.float64]), backends=(stale_reads,),
              max_examples=30, seed=0)
    text = str(info.value)
    reproducer = text.split("Reproducer:\n")[1]
    assert "g0 = np.array(" in reproducer and "x0 = g0" in reproducer and "x1 = g0" in reproducer
    namespace = {"shift_and_scale": shift_and_scale, "stale_reads": stale_reads}
    body = "\n".join(line for line in reproducer.splitlines() if not line.startswith("from test_strategies"))
    with pytest.raises(AssertionError, match="differs from eager NumPy"):
        exec(body, namespace)
    check(shift_and_scale, aliasing_groups(2), max_examples=6, seed=0)  # eager and cpp get it right


# ---------------------------------------------------------------------------
# Shape sequences
# ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(shape_sequences((3, 4), (4,), (3, 1, 0), dtypes=[np.float32, np.int8], min_calls=2, max_calls=4))
def test_shape_sequences_change_a_size_everywhere_it_appears(calls):
    try:
        assert isinstance(calls, Calls) and 2 <= len(calls) <= 4
        assert [a.shape for a in calls[0]] == [(3, 4), (4,), (3, 1, 0)]
        for call in calls[1:]:
            (m, n), (n2,), (m2, one, zero) = (a.shape for a in call)
            assert n == n2 and m == m2 and (one, zero) == (1, 0)  # sizes 0 and 1 never change
            assert (m, n) != (3, 4) and 2 <= min(m, n) and max(m, n) <= 8
            assert [a.dtype for a in call] == [a.dtype for a in calls[0]]
    finally:
        _forget(calls)


def first_call_sizes(graph, example_inputs):
    """A toy backend with a planted dynamic-shape bug: it reads only as many elements
    as the inputs of the call that compiled it had."""
    sizes = [np.shape(x) for x in example_inputs]
    return lambda *inputs: graph(*(x[tuple(slice(0, n) for n in s)] if np.ndim(x) else x
                                   for x, s in zip(inputs, sizes)))


def row_norms(x, w):
    return np.sqrt((x * w) ** 2).sum(axis=-1)


def test_a_dynamic_shape_bug_is_found_by_shape_sequences():
    one_call = arrays(dtypes=[np.float64], shapes=[(3, 4)])
    check(row_norms, one_call, one_call, backends=(first_call_sizes,), max_examples=10, seed=0)
    with pytest.raises(AssertionError) as info:
        check(row_norms, shape_sequences((3, 4), (4,), dtypes=[np.float64], min_calls=4),
              backends=(first_call_sizes,), max_examples=100, seed=0)
    text = str(info.value)
    assert any(f"call {k} of" in text for k in (2, 3, 4))
    reproducer = text.split("Reproducer:\n")[1]
    assert "compiled = mc.compile(row_norms, backend=first_call_sizes, dynamic=None)" in reproducer
    assert reproducer.count("assert_same(compiled, x0, x1)") >= 3
    check(row_norms, shape_sequences((3, 4), (4,), dtypes=[np.float32]), max_examples=4, seed=0)


def test_a_shape_sequence_recompiles_once_with_symbolic_sizes():
    calls = []

    def counting(graph, example_inputs):
        calls.append(graph.is_dynamic)
        return graph

    @seed(3)
    @settings(max_examples=5, deadline=None, database=None)
    @given(shape_sequences((3, 4), (4,), dtypes=[np.float64], layouts=["C"], min_calls=4, max_calls=4))
    def run(sequence):
        calls.clear()
        compiled = mc.compile(row_norms, backend=counting)
        for call in sequence:
            compiled(*call)
        _forget(sequence)
        # The first sizes compile a static graph; the first change, one with symbols, used
        # after -- unless that call had two equal sizes, which share one symbol (duck
        # sizing, as TorchDynamo's), and a later call parts them: one more symbolic compile.
        assert calls[0] is False and all(calls[1:]) and 1 <= len(calls[1:]) <= 2

    run()
