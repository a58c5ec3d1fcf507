"""The real and imaginary parts of an array, and writes through them.

In:  one array (``real``/``imag``), or an array and the new values of one of
     its parts (``real_scatter``/``imag_scatter``).
Out: registered :class:`OpDef` entries.

``z.real`` and ``z.imag`` of a complex array are *views* in NumPy: a float
array over every other float of ``z``'s memory, so ``z.imag += 1`` changes
``z``.  ``real`` and ``imag`` are therefore view ops; capture's
functionalization writes through them as through any view, and
``real_scatter``/``imag_scatter`` are their inverses: the base's new value when
its part takes ``src`` (``a.real[...] = src`` on a copy).  Of a real array,
``real`` is the array itself and ``imag`` a fresh read-only array of zeros:
capture handles those cases itself, the ops only compute the values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from .registry import TensorMeta, array_module, simple_op


def _real(val):
    return array_module(val).real(val)


def _imag(val):
    return array_module(val).imag(val)


def _part_dtype(dtype: np.dtype) -> np.dtype:
    """complex64 -> float32, complex128 -> float64; a real dtype is its own part."""
    return np.empty((), dtype).real.dtype


def _part_meta(val: TensorMeta) -> TensorMeta:
    return TensorMeta(val.shape, _part_dtype(val.dtype))


def _scatter(part: str):
    def impl(a, src):
        if not dt.is_complex(a.dtype):  # NumPy's x.real = v on a real x is x[...] = v: never this op
            raise TypeError(f"{part}_scatter: a {a.dtype} array has no {part} part to write")
        out = array_module(a).array(a, copy=True)
        setattr(out, part, src)  # NumPy's assignment to the part: casts src, broadcasts it
        return out

    def meta(a: TensorMeta, src: Any) -> TensorMeta:
        if not dt.is_complex(a.dtype):
            raise TypeError(f"{part}_scatter: {a} has no {part} part to write")
        return TensorMeta(a.shape, a.dtype)

    impl.__name__ = f"{part}_scatter"
    return impl, meta


simple_op("real", _real, "view", meta=_part_meta, scalar_result=False, array_api=True)
simple_op("imag", _imag, "view", meta=_part_meta, scalar_result=False, array_api=True)
for _part in ("real", "imag"):
    _impl, _meta = _scatter(_part)
    simple_op(_impl.__name__, _impl, "index", meta=_meta, array_api=True)
