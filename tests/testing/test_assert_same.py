"""minicompile.testing.assert_same and assert_close: what they accept, what they catch, what they say."""
from __future__ import annotations

import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest

import minicompile as mc
from minicompile.ir import passes
from minicompile.testing import TOLERANCE, assert_close, assert_same, copy_args
from minicompile.testing.compare import _aliasing


def add_to_subtract(graph, example_inputs):
    """A planted bug: every np.add runs as np.subtract."""
    return passes.rewrite(graph, lambda g, node, outputs: g.call("subtract", *node.args)
                          if node.op.name == "add" else None)


def nested(x, y):
    x += 1
    return x.sum(), {"h": np.tanh(x) * y, "v": [y[::-1], 3]}


def test_a_right_function_passes_and_returns_the_compiled_result():
    x, y = np.arange(6.0).reshape(2, 3), np.ones(3, np.float32)
    result = assert_same(nested, x, y, backend="eager")
    assert type(result[0]) is np.float64 and result[1]["v"][1] == 3
    assert x[0, 0] == 0.0  # the caller's arrays are not touched: each side gets a copy


def test_the_message_says_where_how_much_which_backend_and_the_graph():
    x, y = np.arange(6.0).reshape(2, 3), np.ones(3, np.float32)
    with pytest.raises(AssertionError) as info:
        assert_same(nested, x, y, backend=add_to_subtract)
    text = str(info.value)
    assert "backend 'add_to_subtract'" in text
    assert "result[0]:" in text and "result[1]['h']:" in text and "result[1]['v']" not in text
    assert "argument x (after the call)" in text and "argument y" not in text
    assert "first at index (0, 0): compiled np.float64(-1.0), NumPy np.float64(1.0)" in text
    assert "max abs error 2" in text
    assert "Captured graphs (mc.explain):" in text and "np.add(x, 1)" in text


def test_python_types_at_every_level():
    Pair = namedtuple("Pair", "a b")
    x = np.ones(3)
    assert_close(Pair(x, [1, 2.0]), Pair(x.copy(), [1, 2.0]))
    cases = [
        (np.float64(1.0), np.array(1.0), "numpy.float64"),  # NumPy scalar against 0-d array
        (True, np.True_, "bool"),                             # Python bool against np.bool_
        ((x,), [x], "tuple"),
        (1, 1.0, "int"),
    ]
    for actual, expected, said in cases:
        with pytest.raises(AssertionError, match=said):
            assert_close(actual, expected)
    with pytest.raises(AssertionError, match=r"result\[1\]\['k'\]: compiled gives dtype float32, NumPy float64"):
        assert_close([0, {"k": x.astype(np.float32)}], [0, {"k": x}])
    with pytest.raises(AssertionError, match="shape"):
        assert_close(x[:2], x)


def test_tolerance_per_dtype_and_nan_equal_to_nan():
    rtol, _ = TOLERANCE[np.dtype(np.float32)]
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert_close(a * np.float32(1 + rtol / 4), a)
    with pytest.raises(AssertionError, match="max rel error"):
        assert_close(a * np.float32(1 + rtol * 4), a)
    with pytest.raises(AssertionError, match="differ in NaN"):
        assert_close(np.array([np.nan, 1.0]), np.array([1.0, 1.0]))
    with pytest.raises(AssertionError, match="max abs error 1"):
        assert_close(np.array([1, 2]), np.array([1, 3]))  # integers: exact


def test_eager_raising_means_compiled_must_raise_the_same_type():
    def index(a):
        return a[5]

    assert_same(index, np.ones(3), backend="eager")

    def raises_only_compiled(graph, example_inputs):
        raise NotImplementedError("refused")

    with pytest.raises(AssertionError, match="compiled raised RuntimeError.*NumPy raised nothing"):
        assert_same(lambda a: a + 1, np.ones(3), backend=raises_only_compiled)


def test_writes_through_aliased_and_strided_arguments_are_compared():
    def f(a, b):
        a += 1  # b views the same elements, reversed: NumPy sees the write through b
        return b * 2

    base = np.arange(8.0)
    assert_same(f, base[::2], base[-2::-2], backend="eager")
    with pytest.raises(AssertionError, match="argument a"):
        assert_same(f, base[::2], base[-2::-2], backend=add_to_subtract)


def test_copies_keep_layout_flags_and_sharing():
    base = np.arange(12.0).reshape(3, 4)
    args = [base, base.T, base[::-1, 1::2], np.broadcast_to(base[0], (2, 4)), {"k": base[1]}, np.ones((0, 3))]
    copies = copy_args(args)
    for a, c in zip(args[:4], copies[:4]):
        assert c.strides == a.strides and c.flags.writeable == a.flags.writeable and not np.shares_memory(a, c)
        np.testing.assert_array_equal(c, a)
    assert np.shares_memory(copies[0], copies[1]) and np.shares_memory(copies[0], copies[4]["k"])
    copies[0][1, 0] = -1
    assert copies[4]["k"][0] == -1 and base[1, 0] == 4.0
    assert copies[5].shape == (0, 3)


def test_an_already_compiled_function_is_compared_with_its_original():
    f = mc.compile(lambda a: a * 3, backend="eager")
    assert_same(f, np.arange(3), backend="eager")


def test_importing_needs_neither_pytest_nor_hypothesis():
    code = ("import sys; sys.modules['pytest'] = None; sys.modules['hypothesis'] = None\n"
            "import minicompile.testing as t; t.assert_same(lambda a: a + 1, __import__('numpy').ones(2), "
            "backend='eager'); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_a_result_that_is_an_argument_must_stay_one():
    def scale(x):
        x *= 2
        return x, x[::2]

    assert_same(scale, np.arange(4.0), backend="cpp")

    # (Capture rebuilds such a result from the caller's array after writing it
    # back, so no backend can break this; the comparison itself is checked here.)
    x_eager, x_compiled = np.arange(4.0), np.arange(4.0)
    found = []
    _aliasing((x_compiled.copy(), x_compiled[::2]), (x_eager, x_eager[::2]),
              [("argument x", x_compiled)], [("argument x", x_eager)], found)
    assert found == ["result[0]: is argument x: compiled False, NumPy True"]


def test_generators_compare_their_items():
    def gen(x):
        return (v * 2 for v in x)

    assert_same(gen, np.arange(3.0), backend="eager")
