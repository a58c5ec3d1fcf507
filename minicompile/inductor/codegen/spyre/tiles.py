"""Loop-IR values as vector instructions over one tile of a Spyre core's scratchpad.

In:  a loop-IR value (the body of a scheduled store) and, for each ``Load`` in
     it, the scratchpad tile that holds that operand on the core.
Out: vector instructions (``v.add``, ``v.exp``, ``v.gt``, ``v.select``, ...)
     appended to the core's program, and the tile or Python scalar holding
     the result.

Every kernel the Spyre backend maps is seen as a 2-D iteration space, rows x
cols: a pointwise kernel's leading loops flattened into rows and its last loop
as cols; a row kernel's output elements as rows and its reduced loops as cols.
:func:`classify` says how a load reads that space, from its index expression
alone:

=========  ===============================  =============================
kind       flat offset read                 tile on the core
=========  ===============================  =============================
full       ``row * cols + col``             rows x cols of the tile
row        ``col``      (broadcast down)    1 x cols  (a bias, a weight)
col        ``row``      (broadcast across)  rows x 1  (a per-row mean)
scalar     a constant                       1 x 1
=========  ===============================  =============================

Anything else (a transpose, a strided slice) raises :class:`Unmappable` here
and is read by DMA descriptors instead (:mod:`.gather`).  Float values
are computed in fp32 on the vector unit whatever their storage type (the
card's rule); int8/16/32 and uint8/16 values in their own format, wrapping as
NumPy does; booleans are 0/1 int8 masks written by comparisons and read by
``v.select`` (``np.where``).  A shared sub-expression is computed once per
tile (one temporary buffer per distinct value), which is what keeps a fused
chain on the core.
"""
from __future__ import annotations

import math

import numpy as np

from ....spyre.isa import Allocator, Tile, VectorBinary, VectorSelect, VectorUnary
from ... import loop_ir as L


class Unmappable(Exception):
    """This kernel has no Spyre mapping yet (the message says why); it runs on the host."""


UNARY: dict[str, str] = {
    "negative": "neg", "absolute": "abs", "exp": "exp", "log": "log", "tanh": "tanh",
    "sqrt": "sqrt", "square": "square", "positive": "copy",
}
BINARY: dict[str, str] = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
    "maximum": "max", "minimum": "min",
    "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    "equal": "eq", "not_equal": "ne",
}
# Logic on masks (0/1 values): and = a * b, or = max(a, b), xor = a != b; NumPy's
# add of two bool arrays is or (True + True is True), so it must not make a 2.
MASK_BINARY: dict[str, str] = {"bitwise_and": "mul", "bitwise_or": "max", "bitwise_xor": "ne",
                               "logical_and": "mul", "logical_or": "max", "logical_xor": "ne",
                               "add": "max", "multiply": "mul"}
COMMUTATIVE = {"add", "mul", "max", "min", "eq", "ne"}
# a < b is b > a: a comparison swaps its operands by mirroring the relation.
MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "max": np.maximum, "min": np.minimum, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
# x ** k for a constant k, as unary instructions (k = 3: x * x^2, see _power).
POWERS: dict[float, str] = {1.0: "copy", 2.0: "square", 0.5: "sqrt", -1.0: "reciprocal"}
# Integer formats of the vector unit (see SpyreConfig.vector_lanes); bool is a 0/1 mask.
INTEGER_FORMATS = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16",
                   np.dtype(np.int32): "int32", np.dtype(np.uint8): "uint8",
                   np.dtype(np.uint16): "uint16", np.dtype(bool): "int8"}

Shape = tuple[bool, bool]  # (spans the tile's rows, spans its cols)
Scalar = float | int        # a value known at compile time: float for floats, int otherwise


def compute_format(dtype: np.dtype) -> str:
    """The card format a value of this NumPy dtype is computed in on the vector unit."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return "fp32"
    if dtype not in INTEGER_FORMATS:
        raise Unmappable(f"{dtype} data: the card computes floats, int8/16/32, uint8/16 "
                         "and masks (no 64-bit integers, no uint32)")
    return INTEGER_FORMATS[dtype]


# Integers whose // and % by a constant are exact through fp32 (|a| < 2^24).
EXACT_IN_FP32 = {np.dtype(t) for t in (np.int8, np.int16, np.uint8, np.uint16)}
INT32_MAX = 2**31 - 1
# |value| bounds of the integer formats NumPy widens to int64 (bool: 0 or 1).
NARROW_BOUNDS = {np.dtype(bool): 1, np.dtype(np.int8): 2**7, np.dtype(np.int16): 2**15,
                 np.dtype(np.int32): 2**31, np.dtype(np.uint8): 2**8 - 1,
                 np.dtype(np.uint16): 2**16 - 1}


def int64_bound(v: L.Value) -> int | None:
    """A bound on |v| for an int64 value built from narrower integers, or None.

    NumPy computes in int64 where it widens bools and small integers (a sum
    of a mask, ``mask != 0`` on a widened mask); when every value such an
    expression can take fits 32 bits, the card computes it exactly in int32
    and the host widens the result (the documented conversion for int64)."""
    match v:
        case L.Cast(value=inner):
            return NARROW_BOUNDS.get(np.dtype(inner.dtype))
        case L.Constant(value=c):
            return abs(int(c))
        case L.Op(name="where", args=(_, a, b)) | L.Op(name="maximum" | "minimum", args=(a, b)):
            bounds = (int64_bound(a), int64_bound(b))
            return None if None in bounds else max(bounds)
        case L.Op(name="negative" | "absolute" | "positive", args=(a,)):
            return int64_bound(a)
        case L.Op(name="add" | "subtract" | "multiply", args=(a, b)):
            bounds = (int64_bound(a), int64_bound(b))
            if None in bounds:
                return None
            return bounds[0] * bounds[1] if v.name == "multiply" else bounds[0] + bounds[1]
    return None


def storage_format(dtype: np.dtype) -> str:
    """The card format a buffer of this NumPy dtype has in DRAM (floats as fp16)."""
    return "fp16" if np.dtype(dtype).kind == "f" else compute_format(dtype)


def is_scalar(value) -> bool:
    return not isinstance(value, tuple)


def _as_scalar(value, dtype: np.dtype) -> Scalar:
    """A folded value as the vector unit would hold it: fp32 floats (fp16 for float16
    values), wrapped integers."""
    if np.dtype(dtype).kind == "f":  # a float16 value rounded as value_format stores it
        with np.errstate(over="ignore"):
            return float(np.float16(value) if np.dtype(dtype) == np.float16 else np.float32(value))
    return int(np.asarray(value).astype(np.int64).astype(dtype))


def classify(index: tuple[L.Expr, ...], shape: tuple[int, ...], row: L.Expr, col: L.Expr,
             cols: int) -> tuple[str, tuple[int, int], int]:
    """(kind, 2-D DRAM view of the buffer, column of a scalar) for a load or store."""
    offset = L.linearize(index, L.contiguous_strides(shape))
    numel = max(math.prod(shape), 1)
    if offset == row * cols + col and numel % cols == 0:
        return "full", (numel // cols, cols), 0
    if offset == col:
        return "row", (1, numel), 0
    if offset == row:
        return "col", (numel, 1), 0
    if offset.is_const:
        return "scalar", (1, numel), offset.const
    raise Unmappable(f"reads its operand at {', '.join(map(str, index))}, not a row, "
                     "column or broadcast of the tile")


SHAPE_OF_KIND: dict[str, Shape] = {"full": (True, True), "strided": (True, True),
                                   "row": (False, True),
                                   "col": (True, False), "scalar": (False, False)}


class TileEmitter:
    """Emits one core's vector instructions for values over tiles of at most
    ``tr`` x ``tc`` elements; temporaries are fp32 buffers named ``t0, t1, ...``
    in the order values are first met, the same on every tile."""

    def __init__(self, program, core: int, alloc: Allocator, tr: int, tc: int):
        self.program, self.core, self.alloc = program, core, alloc
        self.tr, self.tc = tr, tc
        self.temps: dict[object, str] = {}
        self.extent = (tr, tc)

    def begin(self, rows: int, cols: int, bound: dict[L.Load, tuple[Tile, Shape]]) -> None:
        """Start a tile of rows x cols; ``bound`` maps each load of an input to its tile."""
        self.extent, self.bound, self.memo = (rows, cols), bound, {}
        self.computed: dict[str, tuple[Tile, Shape] | Scalar] = {}

    def define(self, buffer: str, result) -> None:
        """``buffer`` was computed on this tile: its readers use the result in place."""
        self.computed[buffer] = result

    def tile(self, key: object, shape: Shape, fmt: str = "fp32") -> Tile:
        if key not in self.temps:
            name = f"t{len(self.temps)}"
            self.alloc(name, (self.tr if shape[0] else 1, self.tc if shape[1] else 1), fmt)
            self.temps[key] = name
        return Tile(self.temps[key], self.extent[0] if shape[0] else 1,
                    self.extent[1] if shape[1] else 1)

    def emit(self, *instructions) -> None:
        self.program.emit(self.core, *instructions)

    # -- values ---------------------------------------------------------------------------
    def value(self, v: L.Value) -> tuple[Tile, Shape] | Scalar:
        if v not in self.memo:
            self.memo[v] = self._value(v)
        return self.memo[v]

    def _value(self, v: L.Value):
        if np.dtype(v.dtype) == np.int64:  # exact in int32 when its values fit
            bound = int64_bound(v)
            if bound is None or bound > INT32_MAX:
                raise Unmappable(f"int64 data ({v}): the card has no 64-bit integers, and "
                                 "this value may not fit 32 bits")
        else:
            compute_format(v.dtype)  # refuses what the vector unit cannot hold
        match v:
            case L.Constant(value=c):
                if np.dtype(v.dtype).kind == "f" and np.isfinite(c) \
                        and not np.isfinite(np.float32(np.float16(c) if v.dtype == np.float16 else c)):
                    # 1e40 is inf in fp32: x * 1e40 would be NaN where x is 0, NumPy's 0
                    raise Unmappable(f"the constant {c!r} is beyond fp32's range")
                return _as_scalar(c, v.dtype)
            case L.Load(buffer=b):
                if b in self.computed:
                    return self.computed[b]
                if v not in self.bound:
                    raise Unmappable(f"no tile holds {v}")
                return self.bound[v]
            case L.Cast(value=inner):
                return self._cast(v, self.value(inner), np.dtype(inner.dtype), np.dtype(v.dtype))
            case L.Op(name="where", args=(c, a, b)):
                return self._select(v, self.value(c), self.value(a), self.value(b))
            case L.Op(name="power", args=(base, L.Constant(value=k))):
                return self._power(v, self.value(base), float(k))
            case L.Op(name="floor_divide" | "remainder", args=(a, L.Constant(value=d))) \
                    if np.dtype(v.dtype) in EXACT_IN_FP32 and int(d) != 0:
                return self._divide(v, self.value(a), int(d))
            case L.Op(name=name, args=(a,)) if name in UNARY:
                return self._unary(v, UNARY[name], self.value(a), v.dtype)
            case L.Op(name="logical_not", args=(a,)):  # not x is x == 0
                return self._binary(v, "eq", self.value(a), 0, v.dtype)
            case L.Op(name="invert", args=(a,)) if v.dtype == bool:
                return self._binary(v, "eq", self.value(a), 0, v.dtype)
            case L.Op(name=name, args=(a, b)) if name in MASK_BINARY and v.dtype == bool:
                return self._binary(v, MASK_BINARY[name], self.value(a), self.value(b), v.dtype)
            case L.Op(name=name, args=(a, b)) if name in BINARY:
                return self._binary(v, BINARY[name], self.value(a), self.value(b), v.dtype)
        raise Unmappable(f"no vector instruction for {getattr(v, 'name', type(v).__name__)} "
                         f"on {v.dtype}")

    def _cast(self, key: L.Cast, a, src: np.dtype, dst: np.dtype):
        if src.kind == "f" and dst.kind == "f":
            if dst != np.float16 or src == np.float16:
                return a  # the vector unit computes in fp32 either way
            if is_scalar(a):
                return _as_scalar(a, dst)
            tile, shape = a  # narrowed to float16: rounded as NumPy's astype rounds
            out = self.tile(key, shape, value_format(dst))
            self.emit(VectorUnary("copy", out, tile))
            return out, shape
        if dst == bool:  # x.astype(bool) is x != 0
            return self._binary(key, "ne", a, 0.0 if src.kind == "f" else 0, dst)
        if src.kind == "f":
            raise Unmappable(f"cast from {src} to {dst}: truncating the card's fp16 "
                             "copy of the data may differ from NumPy's")
        if is_scalar(a):
            return _as_scalar(a, dst)
        tile, shape = a
        out = self.tile(key, shape, value_format(dst))
        self.emit(VectorUnary("cast", out, tile))  # widens, wraps or converts to fp32
        return out, shape

    def _unary(self, key, op: str, a, dtype: np.dtype):
        if is_scalar(a):
            from ....spyre.simulator import UNARY_NUMPY  # the card's own definition of op
            with np.errstate(all="ignore"):
                domain = np.float32 if isinstance(a, float) else np.int64
                return _as_scalar(UNARY_NUMPY[op](domain(a)), dtype)
        tile, shape = a
        out = self.tile(key, shape, value_format(dtype))
        self.emit(VectorUnary(op, out, tile))
        return out, shape

    def _power(self, key: L.Op, a, k: float):
        if k == 3.0:
            square = self._unary(("square", key), "square", a, key.dtype)
            return self._binary(key, "mul", square, a, key.dtype)
        if k not in POWERS:
            raise Unmappable(f"power with exponent {k}")
        return self._unary(key, POWERS[k], a, key.dtype)

    def _binary(self, key, op: str, a, b, dtype: np.dtype):
        if is_scalar(a) and is_scalar(b):
            domain = np.float32 if isinstance(a, float) or isinstance(b, float) else np.int64
            with np.errstate(all="ignore"):
                return _as_scalar(FOLD[op](domain(a), domain(b)), dtype)
        if is_scalar(a) or (not is_scalar(b) and _covers(b[1], a[1]) and b[1] != a[1]):
            # The instruction broadcasts only its second operand: put the wider first.
            if op in MIRROR:
                return self._binary(key, MIRROR[op], b, a, dtype)
            if op in COMMUTATIVE:
                return self._binary(key, op, b, a, dtype)
            if op == "sub":  # a - b = (-b) + a
                neg = self._unary(("neg", key), "neg", b, dtype)
                return self._binary(key, "add", neg, a, dtype)
            if op == "div":  # a / b = (1/b) * a
                rcp = self._unary(("rcp", key), "reciprocal", b, dtype)
                return self._binary(key, "mul", rcp, a, dtype)
        tile, shape = a
        if not is_scalar(b) and not _covers(shape, b[1]):
            raise Unmappable("both operands broadcast (a row against a column)")
        out = self.tile(key, shape, value_format(dtype))
        self.emit(VectorBinary(op, out, tile, b if is_scalar(b) else b[0]))
        return out, shape

    def _divide(self, key: L.Op, a, d: int):
        """a // d or a % d by a constant, with no integer divider: in fp32, where
        floor(a / d) is exact for |a| < 2^24 (the rounding of a / d stays closer than
        1/d to it), then a % d = a - d * floor(a / d); NumPy's signs (floor, the
        divisor's sign) come out of the formulas."""
        if is_scalar(a):
            fold = np.floor_divide if key.name == "floor_divide" else np.remainder
            return _as_scalar(fold(np.int64(a), np.int64(d)), key.dtype)
        tile, shape = a
        real = self.tile(("real", key), shape)
        quotient = self.tile(("quotient", key), shape)
        self.emit(VectorUnary("cast", real, tile),
                  VectorBinary("div", quotient, real, float(d)),
                  VectorUnary("floor", quotient, quotient))
        if key.name == "remainder":
            self.emit(VectorBinary("mul", quotient, quotient, float(d)),
                      VectorBinary("sub", quotient, real, quotient))
        if d == -1 and key.name == "floor_divide":  # min // -1 overflows: wrap via int32
            wide = self.tile(("wide", key), shape, "int32")
            self.emit(VectorUnary("cast", wide, quotient))
            quotient = wide
        out = self.tile(key, shape, value_format(key.dtype))
        self.emit(VectorUnary("cast", out, quotient))
        return out, shape

    def _select(self, key, c, a, b):
        """np.where(c, a, b): one select instruction over the widest operand's shape."""
        if is_scalar(c):
            return a if c else b
        if is_scalar(a) and is_scalar(b) and a == b:
            return a
        shapes = [v[1] for v in (c, a, b) if not is_scalar(v)]
        shape = (any(s[0] for s in shapes), any(s[1] for s in shapes))
        out = self.tile(key, shape, value_format(key.dtype))
        operand = lambda v: v if is_scalar(v) else v[0]  # noqa: E731
        self.emit(VectorSelect(out, c[0], operand(a), operand(b)))
        return out, shape


def value_format(dtype: np.dtype) -> str:
    """A computed value's format; an int64 value got here only if it fits int32.  A
    float16 value is stored as fp16: NumPy rounds each float16 op's result to
    float16 (300 * 300 is inf there), so the card rounds it on the same store."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return "fp16"
    return "int32" if dtype == np.int64 else compute_format(dtype)


def _covers(wide: Shape, narrow: Shape) -> bool:
    return all(w or not n for w, n in zip(wide, narrow))
