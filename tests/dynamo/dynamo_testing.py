"""One comparison for the capture tests: compiled must equal eager NumPy.

Same Python type; sequences, dicts and plain objects (by ``__dict__``) compared
member by member; arrays and NumPy scalars by dtype, shape and value (floats
within a per-dtype tolerance, NaN equal to NaN; ints and bools exactly); any
other value by ``==`` (NaN equal to NaN).
"""
from __future__ import annotations

import types
from typing import Any

import numpy as np

TOLERANCE = {  # dtype -> (rtol, atol)
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float32): (1e-6, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-12),
}


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def assert_same(actual: Any, expected: Any, where: str = "result") -> None:
    assert type(actual) is type(expected), (
        f"{where}: compiled gave {type(actual).__name__}, eager {type(expected).__name__}"
    )
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
        if expected.dtype in TOLERANCE:
            rtol, atol = TOLERANCE[expected.dtype]
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=where)
    elif hasattr(expected, "__dict__") and not isinstance(expected, type):
        assert_same(vars(actual), vars(expected), f"{where}.__dict__")
    else:
        assert actual == expected or (_is_nan(actual) and _is_nan(expected)), (
            f"{where}: {actual!r} != {expected!r}"
        )


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
