"""check_gradients: right gradients pass, on the tape and compiled; a wrong rule is caught."""
from __future__ import annotations

import numpy as np
import pytest

from minicompile.ir import passes
from minicompile.testing import check_gradients


def model(w, x):
    return np.tanh(x @ w).mean(axis=0)


def test_right_gradients_pass_first_and_second_order():
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    check_gradients(model, w, x, order=2)
    check_gradients(model, w, x, backend="aot_eager")


def cos_to_sin(graph, example_inputs):
    """A backend with a planted bug that only the backward graph meets: cos runs as sin."""
    return passes.rewrite(graph, lambda g, node, outputs: g.call("sin", *node.args)
                          if node.op.name == "cos" else None)


def test_a_wrong_backward_is_caught_with_both_numbers():
    x = np.linspace(0.1, 1.0, 4)
    check_gradients(np.sin, x, backend="aot_eager")
    with pytest.raises(AssertionError, match="compiled with backend .*cos_to_sin.*mc.grad gives .* central differences"):
        check_gradients(np.sin, x, backend=cos_to_sin)


def test_order_must_be_one_or_two():
    with pytest.raises(ValueError):
        check_gradients(model, np.ones((3, 2)), np.ones((4, 3)), order=3)
