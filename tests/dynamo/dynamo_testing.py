"""One comparison for the capture tests: compiled must equal eager NumPy.

Same Python type; sequences, dicts and plain objects (by ``__dict__``) compared
member by member; arrays and NumPy scalars by dtype, shape and value (floats
within a per-dtype tolerance, NaN equal to NaN; ints and bools exactly); any
other value by ``==`` (NaN equal to NaN).
"""
from __future__ import annotations

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
