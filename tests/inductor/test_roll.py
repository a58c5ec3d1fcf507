"""``np.roll`` as a kernel (inductor/lowering.py ``lower_roll``): ``out[i] = x[(i - shift) mod n]``.

A 1-d array rolled without an axis is rolled along its only axis, so the
stencils people write with ``np.roll(u, 1)`` fuse into the loop's kernels
instead of calling NumPy (which also kept a loop body out of the C++ loop).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc

SHIFTS = st.one_of(st.integers(-12, 12), st.tuples(st.integers(-5, 5), st.integers(-5, 5)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 9), SHIFTS, st.sampled_from([None, 0, -1]), st.sampled_from(["cpp", "triton", "eager"]))
def test_roll_of_a_1d_array_matches_numpy(n, shift, axis, backend):
    if isinstance(shift, tuple) and axis is not None:
        axis = (axis, axis)  # a shift per axis entry: NumPy adds the shifts of one axis
    fn = lambda u: np.roll(u, shift, axis=axis) * 2.0 + 1.0  # noqa: E731
    u = np.arange(n, dtype=np.float64)
    got = mc.compile(fn, backend=backend)(u)
    np.testing.assert_array_equal(got, fn(u))


def test_a_1d_roll_without_an_axis_is_a_kernel_not_numpy():
    def stencil(u):
        return np.roll(u, 1) - 2 * u + np.roll(u, -1)

    compiled = mc.compile(stencil, backend="cpp")
    u = np.linspace(0.0, 1.0, 33) ** 2
    np.testing.assert_allclose(compiled(u), stencil(u))
    source = compiled.cache[0].compiled.kernel_source
    assert "np.roll" not in compiled.cache[0].compiled.wrapper_source and "kernel" in source
