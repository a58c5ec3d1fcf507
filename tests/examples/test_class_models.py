"""The class-based example models compile as objects (``mc.compile(model)``), whole,
and equal eager NumPy on the eager and cpp backends."""
from __future__ import annotations

import numpy as np
import pytest

import minicompile as mc
from minicompile.examples import class_models as cm

pytestmark = pytest.mark.capture


def models():
    x = cm.example_batch()
    cell = cm.LSTMCell(64, 32)
    return {
        "mlp": (cm.MLP(cm.MLPConfig()), (x,)),
        "mlp_gelu": (cm.MLP(cm.MLPConfig(sizes=(64, 32, 8), activation="gelu")), (x,)),
        "residual_block": (cm.ResidualBlock(64, 128), (x,)),
        "lstm_cell": (cell, (x, cell.zero_state(len(x)))),
    }


def assert_close(got, expected):
    assert type(got) is type(expected)
    if isinstance(expected, tuple):
        for g, e in zip(got, expected):
            assert_close(g, e)
        return
    assert got.dtype == expected.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(models()))
def test_model_is_one_graph(name):
    model, args = models()[name]
    explanation = mc.explain(model)(*args)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, str(explanation)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
@pytest.mark.parametrize("name", list(models()))
def test_model_matches_eager(name, backend):
    model, args = models()[name]
    assert_close(mc.compile(model, backend=backend)(*args), model(*args))


def test_lstm_steps_feed_their_state_back():
    cell = cm.LSTMCell(16, 8)
    step = mc.compile(cell, backend="cpp")
    xs = np.random.default_rng(3).standard_normal((5, 4, 16), dtype=np.float32)
    state, expected = cell.zero_state(4), cell.zero_state(4)
    for x in xs:
        state, expected = step(x, state), cell(x, expected)
        assert_close(state, expected)
    assert isinstance(state, cm.LSTMState) and len(step.cache) == 1


def test_new_weights_of_the_same_shape_reuse_the_compiled_model():
    model, (x,) = models()["residual_block"]
    compiled = mc.compile(model, backend="cpp")
    compiled(x)
    model.fc1.weight = model.fc1.weight * 0.5  # as an optimizer step would
    model.norm.gamma[:] = 2.0
    assert_close(compiled(x), model(x))
    assert len(compiled.cache) == 1
