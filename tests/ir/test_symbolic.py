"""Symbolic sizes: the Sym arithmetic, its decisions and guards, and shape rules over symbols.

Every symbolic shape rule is checked against NumPy: the rule's shape, evaluated
for concrete sizes that satisfy the guards it recorded, must be the shape NumPy
gives for arrays of those sizes.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicompile import ir
from minicompile.ir import passes
from minicompile.ir.symbolic import ShapeEnv, Sym, SymbolicUnsupported, substitute


def env_with(*hints: int) -> tuple[ShapeEnv, list[Sym]]:
    env = ShapeEnv()
    return env, [env.create_symbol(h, f"L['x{i}'].shape[0]") for i, h in enumerate(hints)]


def guard_texts(env: ShapeEnv) -> list[str]:
    return [text for _, text, _, _ in env.relation_guards()]


def test_arithmetic_stays_symbolic_and_prints_as_python():
    env, (a, b) = env_with(8, 5)
    assert str(a * 16 + 3) == "16*s0 + 3"
    assert str(a * b - a) == "s0*s1 - s0"
    assert str((a * 4) // 2) == "2*s0"
    assert (a - a) == 0 and isinstance(a - a, int)
    assert guard_texts(env) == []


def test_static_decisions_need_no_guard():
    env, (a, b) = env_with(8, 5)
    # Symbols are >= 2: these hold for every size a symbol can take.
    assert a != 1 and a != 0 and a >= 2 and a * 4 >= 8 and a == a and a * b > a
    assert not (a < 2)
    assert guard_texts(env) == []


def test_undecided_relations_become_guards_read_by_the_example():
    env, (a, b) = env_with(8, 8)
    assert a == b
    assert a >= 5
    assert not (a > 100)
    assert guard_texts(env) == ["s0 == s1", "s0 >= 5", "s0 <= 100"]
    assert a == b and guard_texts(env) == ["s0 == s1", "s0 >= 5", "s0 <= 100"]  # remembered


def test_plain_int_specializes_with_a_guard():
    env, (a,) = env_with(6)
    assert list(range(a)) == list(range(6))
    assert guard_texts(env) == ["s0 == 6"]


def test_division_is_exact_under_a_divisibility_guard():
    env, (a,) = env_with(6)
    half = a // 2
    assert str(half) == "s0//2" and half.hint == 3
    assert guard_texts(env) == ["(s0) % 2 == 0"]
    assert substitute((half, a), {"s0": 10}) == (5, 10)


def test_frozen_environment_refuses_to_guess():
    env, (a, b) = env_with(8, 8)
    env.mode = "frozen"
    assert a != 1  # static answers are still fine
    assert not (a == b) and a != b  # equality now means "provably equal"
    with pytest.raises(SymbolicUnsupported):
        _ = a < b
    with pytest.raises(SymbolicUnsupported):
        int(a)
    assert env.guards == []


def test_guard_check_reads_the_frame():
    env, (a, b) = env_with(8, 3)
    assert a > b
    (check, text, syms, _), = env.relation_guards()
    assert text == "s0 >= s1 + 1" and syms == ("s0", "s1")
    assert check == "L['x0'].shape[0] >= L['x1'].shape[0] + 1"
    L = {"x0": np.zeros(4), "x1": np.zeros(3)}
    assert eval(check, {"L": L}) and not eval(check, {"L": {"x0": np.zeros(3), "x1": np.zeros(3)}})


# ---------------------------------------------------------------------------
# Shape rules over symbols, checked against NumPy for many sizes
# ---------------------------------------------------------------------------

PROGRAMS = {
    "broadcast": lambda g, x, y: g.call("add", x, y),
    "where": lambda g, x, y: g.call("where", g.call("greater", x, 0.0), x, y),
    "sum_axis1": lambda g, x, y: g.call("sum", x, axis=1),
    "mean_keepdims": lambda g, x, y: g.call("mean", x, axis=0, keepdims=True),
    "reshape_flat": lambda g, x, y: g.call("reshape", x, (-1,)),
    "reshape_back": lambda g, x, y: g.call("reshape", g.call("reshape", x, (-1,)), (-1, 3)),
    "transpose": lambda g, x, y: g.call("transpose", x),
    "slice_tail": lambda g, x, y: g.call("getitem", x, (slice(1, None),)),
    "slice_step": lambda g, x, y: g.call("getitem", x, (slice(None, None, 2),)),
    "slice_negative": lambda g, x, y: g.call("getitem", x, (slice(-2, None),)),
    "index_last": lambda g, x, y: g.call("getitem", x, (-1,)),
    "matmul": lambda g, x, y: g.call("matmul", g.call("transpose", x), x),
    "outer_rows": lambda g, x, y: g.call("matmul", x, g.call("transpose", x)),
    "einsum": lambda g, x, y: g.call("einsum", "ij,j->i", (x, y)),
    "einsum_implicit": lambda g, x, y: g.call("einsum", "ij,kj", (x, x)),
    "concatenate": lambda g, x, y: g.call("concatenate", (x, x, x), axis=0),
    "concatenate_cols": lambda g, x, y: g.call("concatenate", (x, x), axis=1),
    "stack": lambda g, x, y: g.call("stack", (x, x), axis=1),
    "pad_cols": lambda g, x, y: g.call("pad", x, ((0, 0), (1, 2))),
    "pad_all": lambda g, x, y: g.call("pad", x, 1, "constant", 7.0),
    "pad_edge": lambda g, x, y: g.call("pad", x, (2, 1), "edge"),
    "windows_cols": lambda g, x, y: g.call("sliding_window_view", x, (2,), axis=1),
    "windows_rows": lambda g, x, y: g.call("sliding_window_view", x, 2, axis=0),
    "windows_all": lambda g, x, y: g.call("sliding_window_view", x, (2, 3)),
    "conv_windows": lambda g, x, y: g.call("getitem", g.call("sliding_window_view", g.call(
        "pad", x, ((0, 0), (1, 1))), (3,), axis=(1,)), (slice(None), slice(None, None, 2))),
    "embedding": lambda g, x, y: g.call("getitem", y, (g.call("astype", x, np.int64),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@settings(max_examples=15, deadline=None)
@given(hint=st.integers(2, 9), sizes=st.lists(st.integers(2, 12), min_size=1, max_size=4))
def test_symbolic_shape_rules_agree_with_numpy(name, hint, sizes):
    env = ShapeEnv()
    s0 = env.create_symbol(hint, "L['x'].shape[0]")
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((s0, 3), np.float64))
    y = g.placeholder("y", ir.TensorMeta((3,), np.float64))
    out = PROGRAMS[name](g, x, y)
    g.output([out])
    env.mode = "frozen"
    rels = [rel for rel, _ in env.guards]
    for n in [hint] + sizes:
        if not all(rel.holds({"s0": n}) for rel in rels):
            continue  # this size would miss the cache entry
        xs, ys = np.random.rand(n, 3), np.random.rand(3)
        (result,) = g(xs, ys)
        assert substitute(out.meta.shape, {"s0": n}) == np.shape(result)
        concrete = passes.specialize(g, {"s0": n})
        np.testing.assert_array_equal(concrete(xs, ys)[0], result)


def test_broadcasting_two_symbols_guards_their_equality():
    env, (a, b) = env_with(5, 5)
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((a,), np.float32))
    y = g.placeholder("y", ir.TensorMeta((b,), np.float32))
    assert g.call("add", x, y).meta.shape == (a,)
    assert guard_texts(env) == ["s0 == s1"]


def test_broadcast_mismatch_raises_like_numpy():
    env, (a,) = env_with(5)
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((a,), np.float32))
    y = g.placeholder("y", ir.TensorMeta((4,), np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        g.call("add", x, y)
    assert guard_texts(env) == ["s0 != 4"]


def test_pad_and_windows_keep_the_batch_axis_symbolic():
    # A convolution written with np.pad and sliding_window_view: only the batch varies.
    env, (n,) = env_with(4)
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((n, 8, 8, 3), np.float32))
    padded = g.call("pad", x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = g.call("sliding_window_view", padded, (3, 3), axis=(1, 2))
    strided = g.call("getitem", windows, (slice(None), slice(None, None, 2), slice(None, None, 2)))
    assert padded.meta.shape == (n, 10, 10, 3) and windows.meta.shape == (n, 8, 8, 3, 3, 3)
    assert strided.meta.shape == (n, 4, 4, 3, 3, 3) and strided.meta.dtype == np.float32
    assert guard_texts(env) == []


def test_windows_larger_than_a_symbolic_axis_guard_or_raise_like_numpy():
    env, (a,) = env_with(5)
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((a, 2), np.float32))
    assert g.call("sliding_window_view", x, (4,), axis=0).meta.shape == (a - 3, 2, 4)
    assert guard_texts(env) == ["s0 >= 4"]
    with pytest.raises(ValueError, match="window shape cannot be larger"):
        g.call("sliding_window_view", x, (3,), axis=1)
    with pytest.raises(ValueError):
        g.call("pad", x, ((1, 1), (1, 1), (1, 1)))  # more pairs than axes: NumPy's error


def test_a_rule_without_symbolic_support_specializes():
    # np.tile's rule asks NumPy on ghost arrays: the size becomes a plain int, guarded.
    env, (a,) = env_with(4)
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((a,), np.float32))
    assert g.call("tile", x, (2,)).meta.shape == (8,)
    assert guard_texts(env) == ["s0 == 4"]


def test_graph_prints_symbols_and_runs_for_other_sizes():
    env, (a,) = env_with(4)
    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((a, 2), np.float32))
    r = g.call("reshape", x, (-1,))
    g.output([g.call("exp", r)])
    env.mode = "frozen"
    assert 'x: "f32[s0, 2]"' in g.python_code() and "(2*s0,)" in g.python_code()
    assert g.is_dynamic and g.bind_symbols([np.zeros((7, 2))]) == {"s0": 7}
    xs = np.random.rand(7, 2).astype(np.float32)
    np.testing.assert_array_equal(g(xs)[0], np.exp(xs.reshape(-1)))
