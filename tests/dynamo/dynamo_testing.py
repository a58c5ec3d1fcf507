"""One comparison for the capture tests: compiled must equal eager NumPy.

``minicompile.testing.assert_close`` at capture's (tight) tolerances: same
Python type; sequences, dicts and plain objects (by ``__dict__``) compared
member by member; arrays and NumPy scalars by dtype, shape and value (floats
within a per-dtype tolerance, NaN equal to NaN; ints and bools exactly); any
other value by ``==``.
"""
from __future__ import annotations

import types
from typing import Any

import numpy as np

from minicompile.testing import assert_close

TOLERANCE = {  # dtype -> (rtol, atol)
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float32): (1e-6, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-12),
}


def assert_same(actual: Any, expected: Any, where: str = "result") -> None:
    """``minicompile.testing.assert_close`` at capture's tolerances."""
    assert_close(actual, expected, where, tolerances=TOLERANCE)


def run_against_eager(make_callable, make_args, backend: str, calls: int = 2, **options: Any) -> Any:
    """Compile a fresh ``make_callable()`` with ``backend`` and run it ``calls`` times
    beside another fresh one run eagerly, each on fresh ``make_args()``: the results,
    the arguments afterwards, and the callable's own state (a bound method's or a
    compiled object's attributes) must be the same.  Returns the compiled callable."""
    import minicompile as mc

    eager, compiled_target = make_callable(), make_callable()
    compiled = mc.compile(compiled_target, backend=backend, **options)
    for call in range(calls):
        eager_args, compiled_args = make_args(), make_args()
        expected = eager(*eager_args)
        got = compiled(*compiled_args)
        assert_same(got, expected, f"call {call}: result")
        assert_same(list(compiled_args), list(eager_args), f"call {call}: arguments afterwards")
        owner_got, owner_expected = (getattr(compiled_target, "__self__", compiled_target),
                                     getattr(eager, "__self__", eager))
        if isinstance(getattr(owner_expected, "__dict__", None), dict) \
                and not isinstance(owner_expected, (types.FunctionType, type)):
            assert_same(vars(owner_got), vars(owner_expected), f"call {call}: the object's state")
    return compiled
