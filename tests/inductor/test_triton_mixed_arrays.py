"""The triton backend given CuPy and NumPy arrays at once, on the CPU with CuPy's stand-in.

No kernel takes both kinds of array, so such a graph runs op by op, each op on
the arrays it is given, as the NumPy code does eagerly: arrays of one kind
combine and stay of their kind, and an op mixing the two raises CuPy's own
TypeError at the user's line, as eagerly.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402


def separate(gpu, host):
    return gpu * 2.0 + 1.0, np.sqrt(host) + 1.0


def mixing(gpu, host):
    return gpu + host


def test_arrays_of_each_kind_combine_among_themselves(fake_cupy):
    cp = fake_cupy.module
    gpu, host = cp.asarray(np.arange(4.0)), np.arange(3.0)
    fn = mc.compile(separate, backend="triton")
    got, expected = fn(gpu, host), separate(gpu, host)
    assert type(got[0]) is type(expected[0]) is cp.ndarray and type(got[1]) is np.ndarray
    np.testing.assert_array_equal(fake_cupy.peek(got[0]), fake_cupy.peek(expected[0]))
    np.testing.assert_array_equal(got[1], expected[1])
    assert "op by op" in fn.cache[0].compiled.schedule


def test_an_op_mixing_them_raises_cupys_error(fake_cupy):
    cp = fake_cupy.module
    gpu, host = cp.asarray(np.arange(3.0)), np.arange(3.0)
    with pytest.raises(TypeError) as eager:
        mixing(gpu, host)
    with pytest.raises(TypeError) as compiled:
        mc.compile(mixing, backend="triton")(gpu, host)
    assert str(compiled.value) == str(eager.value)
