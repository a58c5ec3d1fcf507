"""Compiled equals eager on device arrays: the comparison both op-info runs on
CuPy arrays use (CuPy's test double on the CPU, and the GPU), and the results
known to differ from CuPy eager.

In:  a compiled result and CuPy eager's, nested tuples of arrays; ``asnumpy``
     copies a device array to the host for the values.
Out: :func:`check_batch_on_device` runs an op-info batch both ways and
     compares; :func:`assert_same_on_device` raises AssertionError at the first
     difference in kind of result, dtype, shape or value;
     :func:`with_known_divergences` marks the batches listed below.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import minicompile as mc

# Batches of the op-info table where the compiled result differs from CuPy
# eager in kind (never in value), with why.  Capture computes a result that
# depends on no value at trace time, and eager NumPy's answer there is a NumPy
# scalar or a Python bool; CuPy answers with a 0-d device array.
KNOWN_DIVERGENCES = {
    "isreal|np.isreal(a)": "isreal of a 0-d real array is the constant np.True_ (CuPy: a 0-d device array)",
    "isreal|np.iscomplex(a)": "iscomplex of a 0-d real array is the constant np.False_",
    "isreal|np.isreal(a.sum())": "a.sum() is a NumPy scalar for capture (CuPy: a 0-d device array)",
    "isreal|np.iscomplex(a.sum())": "a.sum() is a NumPy scalar for capture (CuPy: a 0-d device array)",
    "isreal|np.isscalar(a.sum())": "np.isscalar of a sum is True for capture; CuPy's sum is a 0-d array",
    "isreal|np.isscalar(np.allclose(a, a))": "np.isscalar of allclose's bool is True for capture",
    "array_equal|np.array_equal(a, b)": "arrays of different shapes: the constant False (CuPy: a 0-d array)",
    "array_equal|(np.array_equal(a, b), np.allclose(a, a))": "arrays of different shapes: the constant False",
}


def assert_same_on_device(actual: Any, expected: Any, where: str, asnumpy: Callable[[Any], np.ndarray],
                          tolerance: dict) -> None:
    """``actual`` is ``expected``: the same type at every level, then dtype, shape
    and values (within ten times ``tolerance[dtype]`` for floats: CuPy's kernels
    round differently from NumPy's loops)."""
    assert type(actual) is type(expected), \
        f"{where}: {type(actual).__module__}.{type(actual).__name__} != " \
        f"{type(expected).__module__}.{type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_on_device(a, e, f"{where}[{i}]", asnumpy, tolerance)
        return
    if not hasattr(expected, "dtype"):  # a Python value
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
        return
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        f"{where}: {actual.dtype}{actual.shape} != {expected.dtype}{expected.shape}"
    a, e = asnumpy(actual), asnumpy(expected)
    if e.dtype in tolerance:
        rtol, atol = tolerance[e.dtype]
        np.testing.assert_allclose(a, e, rtol=10 * rtol, atol=10 * atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(a, e, err_msg=where)


def with_known_divergences(batches: list) -> list:
    """The batches as pytest parameters, those of KNOWN_DIVERGENCES strictly expected to fail."""
    return [pytest.param(b, marks=pytest.mark.xfail(reason=KNOWN_DIVERGENCES[b.id], strict=True))
            if b.id in KNOWN_DIVERGENCES else b for b in batches]


def check_batch_on_device(batch: Any, cp: Any, backend: str, opinfo: Any, fallback_fails: bool = False) -> None:
    """One op-info batch on ``cp``'s arrays: CuPy eager (a refusal skips the test:
    CuPy lacks what NumPy has), then compiled with ``backend``, compared.
    ``fallback_fails``: the compiled call running as Python instead is a failure."""
    fn, args = batch.function(), [cp.asarray(a) for a in batch.args()]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = fn(*args)
        except Exception as why:
            pytest.skip(f"CuPy eager raises {type(why).__name__}: {why}")
        if fallback_fails:
            warnings.filterwarnings("error", message="minicompile")
        actual = mc.compile(fn, backend=backend)(*args)
    if batch.code in opinfo.UNDEFINED_VALUES:
        actual, expected = (tuple(cp.zeros_like(v) for v in r) for r in (actual, expected))
    assert_same_on_device(actual, expected, batch.source(), cp.asnumpy, opinfo.TOLERANCE)
