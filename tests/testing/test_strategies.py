"""minicompile.testing.arrays and check: the layouts drawn, and the reproducer of a failure."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, seed, settings

from minicompile.ir import passes
from minicompile.testing import arrays, check
from minicompile.testing.strategies import _RECIPES, array_literal


def add_to_subtract(graph, example_inputs):
    return passes.rewrite(graph, lambda g, node, outputs: g.call("subtract", *node.args)
                          if node.op.name == "add" else None)


def scaled_sum(x, y):
    return np.tanh(x) * 2 + y.sum(axis=-1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(arrays(dtypes=[np.float32, np.int8, np.bool_]))
def test_arrays_rebuild_from_their_recipe(x):
    source = _RECIPES.pop(id(x))[1]
    again = eval(source.split("  #")[0], {"np": np})
    assert again.dtype == x.dtype and again.shape == x.shape and again.strides == x.strides
    assert again.flags.writeable == x.flags.writeable
    np.testing.assert_array_equal(again, x)


def test_every_layout_is_drawn():
    seen = set()

    @seed(0)
    @settings(max_examples=150, deadline=None, database=None)
    @given(arrays(dtypes=[np.float64], shapes=[(3, 4), (), (0, 2)]))
    def draw(x):
        _RECIPES.pop(id(x))
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
