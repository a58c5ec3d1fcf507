"""Training the decoder compiled gives eager NumPy's loss curve, step by step.

Float64 for the 50-step curve: in float32 the two curves start within a few
ulps, but SGD on this model amplifies rounding differences (a different but
equally valid summation order) by orders of magnitude over 50 steps, for the
eager tape against itself under another op order too (``aot_eager``).  In
float64 that noise stays far below the tolerance, so a wrong gradient is what
the check would catch.  The float32 curve is compared over its first steps.
"""
import numpy as np

from minicompile.examples import decoder_block

TINY = decoder_block.Config(vocab=16, dim=16, heads=2, layers=1, hidden=32, seq=8)


def relative_gap(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.max(np.abs(a - b) / np.abs(b))


def test_decoder_loss_curve_equals_eager_over_50_steps():
    eager = decoder_block.train(TINY, steps=50, lr=0.1, dtype=np.float64)
    compiled = decoder_block.train(TINY, steps=50, lr=0.1, dtype=np.float64, compiled=True, backend="cpp")
    assert eager[-1] < 0.25 * eager[0]  # it does learn
    assert relative_gap(compiled, eager) < 1e-5


def test_decoder_float32_loss_curve_starts_equal_to_eager():
    eager = decoder_block.train(TINY, steps=10, lr=0.1)
    compiled = decoder_block.train(TINY, steps=10, lr=0.1, compiled=True, backend="cpp")
    assert relative_gap(compiled, eager) < 1e-5
