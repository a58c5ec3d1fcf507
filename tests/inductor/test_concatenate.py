"""``np.concatenate`` as a kernel (inductor/lowering.py ``lower_concatenate``).

Each element is read from the piece whose span of the axis holds it, by nested
masked reads, so the pieces' producers fuse into the concatenation (the
rotary embedding's ``concatenate([x1 * cos - x2 * sin, ...])``).  Hypothesis
draws 1–4 pieces, empty ones among them, of mixed dtypes, along any axis, on
every backend, against NumPy: values, dtype, shape, and no NumPy call left.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc

try:
    import triton  # noqa: F401
    BACKENDS = ["eager", "cpp", "triton"]  # triton in its interpreter (conftest)
except ImportError:
    BACKENDS = ["eager", "cpp"]


def schedule_of(compiled) -> str:
    return getattr(compiled.cache[0].compiled, "schedule", "")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.integers(0, 2),
       st.lists(st.sampled_from([np.float32, np.float64, np.int32]), min_size=4, max_size=4),
       st.sampled_from(BACKENDS))
def test_concatenate_matches_numpy_and_calls_no_numpy(widths, axis, dtypes, backend):
    rng = np.random.default_rng(len(widths))
    shape = [3, 2, 5]
    pieces = []
    for width, dtype in zip(widths, dtypes):
        shape[axis] = width
        pieces.append((rng.standard_normal(shape) * 4).astype(dtype))

    def fn(*xs):
        return np.concatenate([x * 2 for x in xs], axis=axis - 3) + 1

    compiled = mc.compile(fn, backend=backend)
    got, want = compiled(*pieces), fn(*pieces)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    externs = [line for line in schedule_of(compiled).splitlines() if line.startswith("extern")]
    assert not externs, schedule_of(compiled)


@pytest.mark.parametrize("backend", ["cpp", "triton"] if "triton" in BACKENDS else ["cpp"])
def test_the_pieces_producers_fuse_into_the_concatenation(backend):
    def rotate(x, cos, sin):
        x1, x2 = x[..., :4], x[..., 4:]
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    rng = np.random.default_rng(0)
    x, cos, sin = rng.standard_normal((6, 8)), rng.standard_normal(4), rng.standard_normal(4)
    compiled = mc.compile(rotate, backend=backend)
    np.testing.assert_allclose(compiled(x, cos, sin), rotate(x, cos, sin), rtol=1e-12)
    assert len(compiled.cache[0].compiled.kernels) == 1, schedule_of(compiled)
