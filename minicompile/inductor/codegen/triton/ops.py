"""The Triton backend's op table: how each loop-IR op, dtype and reduction is written in Triton.

In:  a loop-IR op name and the dtype kind of its loop inputs, a reduction type,
     a dtype, a constant.
Out: Triton expression templates (:data:`TRITON_OPS`, :data:`HALF_OPS`,
     :data:`FLOAT64_OPS`), reduction identities and combiners, the module
     prelude of ``@triton.jit`` helpers every generated module starts with
     (:data:`PRELUDE`), literals, and :func:`unsupported_node` — the backend's
     answer to the scheduler's "can you generate this node?": a node whose ops
     have no exact form here becomes an Extern.  The kernel writers
     (:mod:`.kernel`, :mod:`.matmul`, :mod:`.rows`) read these tables.
"""
from __future__ import annotations

import math

import numpy as np

from ... import loop_ir as L
from ...lowering import MASKED_OPS

TL_TYPES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "tl.int1",
    np.dtype(np.int8): "tl.int8", np.dtype(np.int16): "tl.int16",
    np.dtype(np.int32): "tl.int32", np.dtype(np.int64): "tl.int64",
    np.dtype(np.uint8): "tl.uint8", np.dtype(np.uint16): "tl.uint16",
    np.dtype(np.uint32): "tl.uint32", np.dtype(np.uint64): "tl.uint64",
    np.dtype(np.float16): "tl.float16",
    np.dtype(np.float32): "tl.float32", np.dtype(np.float64): "tl.float64",
}
HALF = np.dtype(np.float16)
F32 = np.dtype(np.float32)
# Results of these dtypes are what Triton's own type rules already give for
# same-typed operands (a Python literal takes its tensor operand's type); any
# other result (float16 computed in float32, int8 promoted) is cast after the op.
NATURAL = {np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)}
# Integer powers up to this exponent are unrolled into multiplications.
MAX_UNROLLED_POWER = 8


def _by_kind(**templates: str) -> dict[str, str]:
    """``_by_kind(iu="...")`` -> ``{"i": "...", "u": "..."}``."""
    return {k: t for kinds, t in templates.items() for k in kinds}


# One Triton expression per op and dtype kind of its loop inputs; operands are
# already in their compute dtype (float16 -> float32).  A kind missing here is
# not generated: the node runs as an Extern (see ``unsupported``).
TRITON_OPS: dict[str, dict[str, str]] = {
    "add": _by_kind(b="{0} | {1}", iuf="{0} + {1}"),
    "subtract": _by_kind(iuf="{0} - {1}"),
    "multiply": _by_kind(b="{0} & {1}", iuf="{0} * {1}"),
    "divide": _by_kind(f="tl.div_rn({0}, {1})"),  # '/' is approximate on the GPU
    "square": _by_kind(iuf="{0} * {0}"),
    # Triton may negate as 0 - x, which makes -(+0.0) +0.0: a float's sign bit is flipped.
    "negative": _by_kind(iu="-{0}", f=f"({{0}}.to(tl.int32, bitcast=True) ^ {-2 ** 31}).to(tl.float32, bitcast=True)"),
    "positive": _by_kind(biuf="{0}"),
    "absolute": _by_kind(b="{0}", i="tl.where({0} < 0, -{0}, {0})", u="{0}", f="tl.abs({0})"),
    # np.maximum/np.minimum: a NaN on either side wins.
    "maximum": _by_kind(b="{0} | {1}", iu="tl.maximum({0}, {1})",
                        f="tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})"),  # ties: NumPy keeps the second
    "minimum": _by_kind(b="{0} & {1}", iu="tl.minimum({0}, {1})",
                        f="tl.where(({0} < {1}) | ({0} != {0}), {0}, {1})"),
    "less": _by_kind(biuf="{0} < {1}"),
    "less_equal": _by_kind(biuf="{0} <= {1}"),
    "greater": _by_kind(biuf="{0} > {1}"),
    "greater_equal": _by_kind(biuf="{0} >= {1}"),
    "equal": _by_kind(biuf="{0} == {1}"),
    "not_equal": _by_kind(biuf="{0} != {1}"),
    "logical_not": _by_kind(biuf="{0} == 0"),
    "bitwise_and": _by_kind(biu="{0} & {1}"),
    "bitwise_or": _by_kind(biu="{0} | {1}"),
    "bitwise_xor": _by_kind(biu="{0} ^ {1}"),
    "invert": _by_kind(b="{0} == 0", iu="~{0}"),
    "exp": _by_kind(f="tl.exp({0})"),
    "log": _by_kind(f="tl.log({0})"),
    "tanh": _by_kind(f="_tanh({0})"),  # libdevice is absent in the interpreter
    "sqrt": _by_kind(f="tl.sqrt_rn({0})"),
    "sin": _by_kind(f="tl.sin({0})"),
    "cos": _by_kind(f="tl.cos({0})"),
    "where": _by_kind(biuf="tl.where({0}, {1}, {2})"),
}

# Float64 has exact '/' and sqrt on the GPU; div_rn/sqrt_rn take float32 only.
HALF_OPS: dict[str, str] = {  # NumPy's float16 loops keep the first operand on a tie
    "maximum": "tl.where(({0} >= {1}) | ({0} != {0}), {0}, {1})",
    "minimum": "tl.where(({0} <= {1}) | ({0} != {0}), {0}, {1})",
}
FLOAT64_OPS: dict[str, str] = {"divide": "{0} / {1}", "sqrt": "tl.sqrt({0})",
                               "negative": f"({{0}}.to(tl.int64, bitcast=True) ^ {-2 ** 63}).to(tl.float64, bitcast=True)"}

PRELUDE = '''\
import triton
import triton.language as tl

NAN = tl.constexpr(float("nan"))
INF = tl.constexpr(float("inf"))


@triton.jit
def _tanh(x):
    # tanh|x| = (1 - e) / (1 + e) with e = exp(-2|x|) never overflows; below
    # 2^-7 that cancels, so the odd series takes over (as the C++ backend does).
    a = tl.abs(x)
    e = tl.exp(-2.0 * a)
    ratio = (1.0 - e) / (1.0 + e)
    # The series is odd in x itself, so tanh(-0.0) is -0.0.
    a2 = a * a
    series = x * (1.0 + a2 * (-0.3333333333333333 + a2 * (0.13333333333333333 - a2 * 0.05396825396825397)))
    return tl.where(a < 0.0078125, series, tl.where(x < 0, 0.0 - ratio, tl.where(x != x, x, ratio)))


# Combine functions of our own for tl.reduce: tl.sum/tl.max are @jit functions
# of Triton's standard library, which its interpreter can only call when Triton
# itself was imported with TRITON_INTERPRET=1; ours work either way.
@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def _minimum(a, b):
    return tl.minimum(a, b)


# argmax/argmin over (value, index) pairs.  tl.argmax compares with > and ==
# only, so where a NaN lands depends on the reduction tree; NumPy returns the
# first NaN, else the first extreme value.  These decide by value, NaN first,
# then by index, so any tree (and the looped form's lane-wise steps) agrees.
@triton.jit
def _argmax_pair(v1, i1, v2, i2):
    n1 = v1 != v1
    n2 = v2 != v2
    first = (i1 < i2) & ((v1 == v2) | (n1 & n2))
    win = (v1 > v2) | (n1 & (n2 == 0)) | first
    return tl.where(win, v1, v2), tl.where(win, i1, i2)


@triton.jit
def _argmin_pair(v1, i1, v2, i2):
    n1 = v1 != v1
    n2 = v2 != v2
    first = (i1 < i2) & ((v1 == v2) | (n1 & n2))
    win = (v1 < v2) | (n1 & (n2 == 0)) | first
    return tl.where(win, v1, v2), tl.where(win, i1, i2)


@triton.jit
def _nan_of(v, axis):
    # 0 for a row without NaN, NaN otherwise: added to a max/min it makes the
    # result NaN as np.max's is (a plain max may drop NaNs).
    return tl.reduce(tl.where(v != v, v, 0.0), axis, _add)
'''

# Reductions: the identity each masked-off lane holds, by (type, acc kind).
REDUCTION_INIT: dict[tuple[str, str], str] = {
    **{("sum", k): "0" for k in "iuf"}, **{("mean", k): "0" for k in "iuf"},
    **{("prod", k): "1" for k in "iuf"},
    ("max", "f"): "-INF", ("min", "f"): "INF",
}
# Partial accumulation inside a looped reduction.
REDUCTION_COMBINE: dict[str, str] = {
    "sum": "{acc} + {v}", "mean": "{acc} + {v}", "prod": "{acc} * {v}",
    # NaN sticks: once acc is NaN neither comparison replaces it.
    "max": "tl.where(({v} > {acc}) | ({v} != {v}), {v}, {acc})",
    "min": "tl.where(({v} < {acc}) | ({v} != {v}), {v}, {acc})",
}
# The final reduction of a tile along its row axis.
REDUCTION_FINAL: dict[str, str] = {
    "sum": "tl.reduce({v}, 1, _add)", "mean": "tl.reduce({v}, 1, _add)", "prod": "tl.reduce({v}, 1, _multiply)",
    "max": "tl.reduce({v}, 1, _maximum)", "min": "tl.reduce({v}, 1, _minimum)",
}


def triton_type(dtype: np.dtype) -> str:
    return TL_TYPES[np.dtype(dtype)]


def accumulator_dtype(red: L.Reduction) -> np.dtype:
    """Float16/float32 sums accumulate in float32 here: a block reduces as a tree
    (pairwise, like NumPy's sum), and float64 would halve GPU throughput.  Bools
    reduce as int8."""
    acc = red.acc_dtype
    if acc.kind == "f" and red.body.dtype in (HALF, F32) and red.reduction_type in ("sum", "mean", "prod"):
        return F32
    if acc.kind == "b":
        return np.dtype(np.int8)
    return acc


def init_value(rtype: str, dtype: np.dtype) -> str:
    rtype = rtype[3:] if rtype in L.ARG_REDUCTION_TYPES else rtype  # argmax starts from max's identity
    if (rtype, dtype.kind) in REDUCTION_INIT:
        return REDUCTION_INIT[(rtype, dtype.kind)]
    info = np.iinfo(dtype)
    return str(info.min if rtype == "max" else info.max)


def unsupported_node(node: L.Pointwise | L.Reduction) -> str | None:
    """Why a lowered node cannot be generated exactly in Triton, or None if it
    can (every reduction type can: its body decides)."""
    return unsupported(node.body)


def unsupported(value: L.Value) -> str | None:
    """Why ``value`` cannot be generated exactly in Triton, or None if it can."""
    for v in L.walk(value):
        if isinstance(v, L.Op) and v.name in MASKED_OPS:
            continue  # a masked select (the kernel writer's own form); its operands are walked
        if isinstance(v, L.Op):
            kind = v.args[-1].dtype.kind
            if v.name == "power" and kind in "iu":
                exp = v.args[1]
                if not isinstance(exp, L.Constant) or not 0 <= int(exp.value) <= MAX_UNROLLED_POWER:
                    return f"integer power by {exp}: only constant exponents up to {MAX_UNROLLED_POWER}"
            elif kind not in TRITON_OPS.get(v.name, {}):
                return f"no exact Triton form of {v.name} on {v.args[-1].dtype}"
        if v.dtype == np.dtype(np.uint64) and isinstance(v, L.Constant) and v.value >= 2**63:
            return "uint64 constant beyond int64"
    return None


def literal(value: object, dtype: np.dtype) -> str:
    """A constant as Triton source: a Python literal, except a negative zero,
    which is a typed block (see :func:`full`), as Triton may drop its sign."""
    dtype = np.dtype(dtype)
    if _negative_zero(value, dtype):
        return full("[]", value, dtype)
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "f":
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "-INF" if v < 0 else "INF"
        return repr(v)
    return repr(int(value))


def _negative_zero(value: object, dtype: np.dtype) -> bool:
    return dtype.kind == "f" and value == 0 and math.copysign(1.0, float(value)) < 0


def full(shape: str, value: object, dtype: np.dtype) -> str:
    """``tl.full(shape, value, dtype)``: a block (``shape`` ``[]``: a scalar) of one
    constant, typed, so Triton never computes with it as a Python float (float32)
    or int (int32).  A negative zero is built from its bits: Triton versions that
    make any zero ``tl.full`` from a null value would lose its sign."""
    dtype = np.dtype(dtype)
    if _negative_zero(value, dtype):
        bits = 8 * dtype.itemsize
        return f"tl.full({shape}, {-2 ** (bits - 1)}, tl.int{bits}).to({triton_type(dtype)}, bitcast=True)"
    return f"tl.full({shape}, {literal(value, dtype)}, {triton_type(dtype)})"

