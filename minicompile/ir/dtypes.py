"""The dtypes minicompile understands, their short names, and NumPy 2 promotion.

Promotion follows NEP 50: an array or a NumPy scalar has a *strong* dtype, a
Python ``int``/``float``/``complex`` is *weak* and takes the array's kind-compatible dtype
(``float32_array * 2.0`` stays float32, ``float32_array * np.float64(2)`` does not;
``float32_array * 1j`` is complex64, ``int8_array * 1j`` complex128).
NumPy itself implements these rules in ``ufunc.resolve_dtypes`` and
``np.result_type``; we ask it instead of re-deriving them, and describe every
operand the way NEP 50 sees it (:func:`operand_dtype`).
"""
from __future__ import annotations

import numpy as np

SHORT_NAMES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "b8",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
SUPPORTED = frozenset(SHORT_NAMES)


class UnsupportedDtype(TypeError):
    """A dtype outside :data:`SUPPORTED` (object, strings, datetimes, long double)."""


def check_supported(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED:
        raise UnsupportedDtype(
            f"dtype {dtype} is not supported (minicompile handles bool, integer, "
            f"float16/32/64 and complex64/128 arrays)"
        )
    return dtype


def is_complex(dtype: object) -> bool:
    """A complex64/complex128 dtype (anything ``np.dtype`` takes)."""
    return np.dtype(dtype).kind == "c"


def short_name(dtype: np.dtype) -> str:
    return SHORT_NAMES.get(np.dtype(dtype), str(dtype))


WEAK_TYPES = (int, float, complex)


def is_weak_scalar(value: object) -> bool:
    """Python int/float/complex: weak under NEP 50.  ``bool`` is excluded: it is strong."""
    return isinstance(value, WEAK_TYPES) and not isinstance(value, bool)


def operand_dtype(value: object) -> np.dtype | type:
    """How NEP 50 sees one operand: a dtype (strong) or a Python type (weak).

    ``value`` is anything with a ``.dtype`` (arrays, NumPy scalars, tensor metas)
    or a Python scalar.  The result is what ``ufunc.resolve_dtypes`` accepts.
    """
    if hasattr(value, "dtype"):
        return np.dtype(value.dtype)
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    if isinstance(value, WEAK_TYPES):
        return type(value)
    raise UnsupportedDtype(f"operand {value!r} of type {type(value).__name__} has no NumPy dtype")


def check_weak_int_fits(value: object, dtype: np.dtype) -> None:
    """NumPy 2 refuses a Python int that the array's integer dtype cannot hold."""
    if is_weak_scalar(value) and isinstance(value, int) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype}")


def result_type(*operands: object) -> np.dtype:
    """``np.result_type`` over arrays, metas and scalars, with weak Python scalars."""
    described = []
    for op in operands:
        dt = operand_dtype(op)
        # np.result_type takes weak scalars as values, strong ones as dtypes.
        described.append(op if isinstance(dt, type) else dt)
    return np.result_type(*described)
