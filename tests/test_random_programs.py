"""Random programs over the op-info table: 3-15 NumPy calls, compiled vs NumPy.

The programs are ``minicompile.testing.random_programs.programs()``'s pure ones:
straight-line calls from the op table — ufuncs, reductions with random axes and
keepdims, scans, shape and layout ops, products, indexing-free gathers, sorts —
over inputs of random shapes (0-d, size-0 and size-1 dimensions included),
dtypes and layouts::

    def f(a, b):
        v0 = np.cumsum(a, axis=-1)
        v1 = np.maximum(v0, b)
        v2 = np.flip(v1, 0)
        return v2, np.sum(v1, axis=(0,), keepdims=True)

Every candidate statement is evaluated with NumPy while the program is drawn,
so the generator knows each value's shape and dtype and keeps only statements
NumPy accepts (errors are the op table's business, in tests/ir/test_opinfo.py).
The program must then give NumPy's answer through ``mc.compile(f, backend=B)``
for B in ("eager", "cpp"): same Python types, dtypes, shapes and values (exact
for bools and integers; floats within a tolerance scaled by the largest finite
magnitude, since a chain of ops compounds rounding differences).  It must also
be captured whole: one graph, no graph break.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import minicompile as mc
from minicompile.testing import random_programs
from minicompile.testing.random_programs import Program
from minicompile.testing.statements import quietly

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TOLERANCE = {  # float dtype -> (rtol, atol relative to the largest finite magnitude)
    np.dtype(np.float16): (2e-2, 2e-2),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-9, 1e-11),
}


def programs():
    """Pure programs of 3 to 15 op-table calls."""
    return random_programs.programs(max_statements=15)


def assert_matches(actual: Any, expected: Any) -> None:
    assert type(actual) is type(expected), f"type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, tuple):
        for a, e in zip(actual, expected):
            assert_matches(a, e)
        return
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "f":
        rtol, atol = TOLERANCE[expected.dtype]
        finite = np.abs(expected[np.isfinite(expected)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def check_program(program: Program, backend: str) -> None:
    note(repr(program))
    fn = program.function()
    expected = quietly(fn, *program.arguments())
    explanation = mc.explain(fn)(*program.arguments())
    assert explanation.break_reasons == [], explanation.break_reasons
    compiled = mc.compile(fn, backend=backend)
    args = program.arguments()
    before = [a.copy() for a in args]
    assert_matches(quietly(compiled, *args), expected)
    for a, b in zip(args, before):  # inputs are never written
        np.testing.assert_array_equal(a, b)


SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))


@settings(max_examples=150, **SETTINGS)
@given(programs())
def test_random_programs_eager_backend(program):
    check_program(program, "eager")


@settings(max_examples=50, **SETTINGS)
@given(programs())
def test_random_programs_cpp_backend(program):
    check_program(program, "cpp")
