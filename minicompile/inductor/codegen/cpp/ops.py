"""C++ for each NumPy op and dtype, and the headers that define the helpers it names.

In:  loop-IR ops, dtypes and index expressions.
Out: C++ text — :data:`CPP_OPS` (a template per op and dtype kind),
     :func:`vector_math` (our vectorizable exp/log/tanh), :func:`ctype`,
     :func:`literal`, :func:`render_index` — and :data:`INCLUDE_DIR`, where
     the hand-written C++ lies (``include/*.h``): :data:`HEADERS` are the
     headers every translation unit includes, for the ``mc_*`` functions the
     templates call.  The kernel writer (:mod:`.kernel`) puts them together.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ... import loop_ir as L

# The hand-written C++, included by absolute path (codecache hashes the headers' contents too).
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
# NumPy's division, remainder, power and NaN-propagating maximum/minimum; our
# exp/log/tanh in float32 and float64; the reductions' helpers.  NumPy's complex
# arithmetic (COMPLEX_HEADER) only where a kernel computes on complex values.
HEADERS = ("mc_numpy_ops.h", "mc_math_f32.h", "mc_reductions.h", "mc_math_f64.h")
COMPLEX_HEADER = "mc_complex.h"


def includes(headers: list[str] | tuple[str, ...]) -> str:
    """The ``#include`` lines of ``headers`` (names of files in INCLUDE_DIR)."""
    return "\n".join(f'#include "{INCLUDE_DIR / h}"' for h in headers)


# Where NumPy's PyArrayObject keeps its data pointer: right after the object
# header (reference count and type).  Each kernel gets an ``<name>_obj`` entry
# taking the arrays themselves, so the Python wrapper need not ask each array
# for its address (the wrapper checks this offset once before using it).
ARRAY_DATA_OFFSET = 16

CTYPES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t",
    np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
    np.dtype(np.uint32): "uint32_t", np.dtype(np.uint64): "uint64_t",
    np.dtype(np.float16): "_Float16",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
    np.dtype(np.complex64): "mc_c64", np.dtype(np.complex128): "mc_c128",  # mc_complex.h
}
HALF = np.dtype(np.float16)
# A bool array is read as bytes into an int: GCC does not vectorize a loop
# that loads C++ ``bool`` next to float math.  NumPy bools are 0 or 1, so the
# value is the same.
BOOL = np.dtype(np.bool_)

# Transcendentals of our own that vectorize (mc_math_f32.h, mc_math_f64.h):
# the C library's are scalar calls.  float16 computes in float.
FLOAT32_MATH: dict[str, str] = {
    "exp": "mc_exp_f32({0})",
    "log": "mc_log_f32({0})",
    "tanh": "mc_tanh_f32({0})",
}
FLOAT64_MATH: dict[str, str] = {
    "exp": "mc_exp_f64({0})",
    "log": "mc_log_f64({0})",
    "tanh": "mc_tanh_f64({0})",
}
FLOAT32_KIND = (np.dtype(np.float32), np.dtype(np.float16))


def vector_math(op: str, loop_dtype: np.dtype) -> str | None:
    """The template of our vectorizable ``op`` for a loop of ``loop_dtype``, if there is one."""
    if loop_dtype in FLOAT32_KIND:
        return FLOAT32_MATH.get(op)
    return FLOAT64_MATH.get(op) if loop_dtype == np.float64 else None


# float16 loops that differ from float32/float64 ones beyond precision.
HALF_OPS: dict[str, str] = {
    "maximum": "mc_maximum_half({0}, {1})",
    "minimum": "mc_minimum_half({0}, {1})",
}


def _by_kind(**templates: str) -> dict[str, str]:
    """``_by_kind(iu="...")`` -> ``{"i": "...", "u": "..."}``; "c" is complex (mc_complex.h)."""
    return {k: t for kinds, t in templates.items() for k in kinds}


# Scalar C++ for each lowered op, by the dtype kind of its loop inputs.  The
# kinds listed here are exactly lowering.POINTWISE_KINDS (checked in tests).
CPP_OPS: dict[str, dict[str, str]] = {
    "add": _by_kind(b="{0} || {1}", iuf="{0} + {1}", c="mc_cadd({0}, {1})"),
    "subtract": _by_kind(iuf="{0} - {1}", c="mc_csub({0}, {1})"),
    "multiply": _by_kind(b="{0} && {1}", iuf="{0} * {1}", c="mc_cmul({0}, {1})"),
    "divide": _by_kind(f="{0} / {1}", c="mc_cdiv({0}, {1})"),
    "floor_divide": _by_kind(iu="mc_floordiv_int({0}, {1})", f="mc_floordiv_float({0}, {1})"),
    "remainder": _by_kind(iu="mc_remainder_int({0}, {1})", f="mc_remainder_float({0}, {1})"),
    "power": _by_kind(iu="mc_ipow({0}, (int64_t){1})", f="std::pow({0}, {1})"),
    "square": _by_kind(iuf="{0} * {0}", c="mc_csquare({0})"),
    "negative": _by_kind(iuf="-{0}", c="mc_cneg({0})"),
    "positive": _by_kind(biufc="{0}"),
    "conjugate": _by_kind(iuf="{0}", c="mc_cconj({0})"),
    "absolute": _by_kind(b="{0}", i="({0} < 0 ? -{0} : {0})", u="{0}", f="std::fabs({0})", c="mc_cabs({0})"),
    "real": _by_kind(c="{0}.re"),
    "imag": _by_kind(c="{0}.im"),
    "maximum": _by_kind(b="{0} || {1}", iu="({0} >= {1} ? {0} : {1})", f="mc_maximum({0}, {1})"),
    "minimum": _by_kind(b="{0} && {1}", iu="({0} <= {1} ? {0} : {1})", f="mc_minimum({0}, {1})"),
    "less": _by_kind(biuf="{0} < {1}"),
    "less_equal": _by_kind(biuf="{0} <= {1}"),
    "greater": _by_kind(biuf="{0} > {1}"),
    "greater_equal": _by_kind(biuf="{0} >= {1}"),
    "equal": _by_kind(biuf="{0} == {1}", c="mc_ceq({0}, {1})"),
    "not_equal": _by_kind(biuf="{0} != {1}", c="mc_cne({0}, {1})"),
    "logical_not": _by_kind(biuf="!{0}"),
    "bitwise_and": _by_kind(biu="{0} & {1}"),
    "bitwise_or": _by_kind(biu="{0} | {1}"),
    "bitwise_xor": _by_kind(biu="{0} ^ {1}"),
    "invert": _by_kind(b="!{0}", iu="~{0}"),
    "exp": _by_kind(f="std::exp({0})"),
    "log": _by_kind(f="std::log({0})"),
    "tanh": _by_kind(f="std::tanh({0})"),
    "sqrt": _by_kind(f="std::sqrt({0})"),
    "sin": _by_kind(f="std::sin({0})"),
    "cos": _by_kind(f="std::cos({0})"),
    "where": _by_kind(biufc="{0} ? {1} : {2}"),
}


def op_template(name: str, loop_dtype: np.dtype) -> str:
    """The C++ template of op ``name`` over loop inputs of ``loop_dtype``."""
    template = vector_math(name, loop_dtype)
    template = HALF_OPS.get(name, template) if loop_dtype == HALF else template
    return template or CPP_OPS[name][loop_dtype.kind]


def ctype(dtype: np.dtype) -> str:
    return CTYPES[np.dtype(dtype)]


def cast(expr: str, dtype: np.dtype) -> str:
    """``expr`` converted to ``dtype``: a C cast, or for a complex dtype the
    helper of mc_complex.h (its struct has no constructors to cast with)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return f"mc_to_c{dtype.itemsize * 8}({expr})"
    return f"({ctype(dtype)})({expr})"


def input_ctype(dtype: np.dtype) -> str:
    return "uint8_t" if np.dtype(dtype) == BOOL else ctype(dtype)


def temp_ctype(load: L.Load) -> str:
    return "int32_t" if load.dtype == BOOL else ctype(load.dtype)


def literal(value: object, dtype: np.dtype) -> str:
    """A C++ literal of exactly ``value`` in ``dtype`` (hex floats: no rounding)."""
    dtype = np.dtype(dtype)
    t = ctype(dtype)
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        z = complex(value)
        return f"{t}{{{literal(z.real, part)}, {literal(z.imag, part)}}}"
    if dtype.kind == "b":
        return "true" if value else "false"
    if dtype.kind == "f":
        v = float(value)
        if math.isnan(v):
            return f"(({t})NAN)"
        if math.isinf(v):
            return f"(({t}){'-' if v < 0 else ''}INFINITY)"
        suffix = "" if dtype == np.float64 else "f"
        return f"(({t}){v.hex()}{suffix})"
    v = int(value)
    if dtype.kind == "u":
        return f"(({t}){v}ULL)"
    if v == -(1 << 63):
        return f"(({t})(-9223372036854775807LL - 1))"
    return f"(({t}){v}LL)"


def render_index(expr: L.Expr) -> str:
    """An index expression as C++ over int64_t loop variables (all operands >= 0)."""

    def atom(a: L.Atom) -> str:
        if isinstance(a, L.Var):
            return a.name
        op = "/" if isinstance(a, L.FloorDiv) else "%"
        return f"(({render_index(a.base)}) {op} {a.divisor})"  # the base may be a sum

    return expr.render(atom)
