"""Compiled training of the example MLP follows the eager loss curve step by step.

Float32 too, within 1e-5 relative — or, once the loss is tiny, within the
resolution of the loss itself.  Its cross-entropy is computed as NumPy code
writes it, ``shifted - log(sum(exp(shifted)))``: for a sample classified with
p = 1 - d the sum is 1 + d, rounded to a float32 step of 2**-23 near 1, so each
sample's loss moves in steps of about 1.2e-7 and the batch mean in steps of
1.2e-7 / 256.  By step 11 the mean loss is near 2e-5, where one sample's step
is 2e-5 relative: eager NumPy with its matmuls summed in another order
(``np.einsum`` instead of BLAS) differs from itself by that much.  Adam keeps
the weights themselves together (the float32 curves stay within 1e-7 most
steps), so two such steps are the absolute allowance.
"""
import numpy as np
import pytest

from minicompile.examples import mlp_train

BATCH = 256  # mlp_train.synthetic_data's n


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", ["aot_eager", "cpp"])
def test_loss_curve_matches_eager(backend, dtype):
    eager = mlp_train.train(steps=50, dtype=dtype)
    compiled = mlp_train.train(steps=50, compiled=True, backend=backend, dtype=dtype)
    loss_resolution = 2 * np.finfo(dtype).eps / BATCH
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=loss_resolution)
    assert compiled[-1] < 0.5 * compiled[0]  # it does learn
