"""Compiled training of the example MLP follows the eager loss curve step by step."""
import numpy as np
import pytest

from minicompile.examples import mlp_train


@pytest.mark.parametrize("backend", ["aot_eager", "cpp"])
def test_loss_curve_matches_eager(backend):
    eager = mlp_train.train(steps=50)
    compiled = mlp_train.train(steps=50, compiled=True, backend=backend)
    np.testing.assert_allclose(compiled, eager, rtol=1e-5)
    assert compiled[-1] < 0.5 * compiled[0]  # it does learn
