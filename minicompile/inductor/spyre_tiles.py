"""Loop-IR values as vector instructions over one tile of a Spyre core's scratchpad.

In:  a loop-IR value (the body of a scheduled store) and, for each ``Load`` in
     it, the scratchpad tile that holds that operand on the core.
Out: vector instructions (``v.add``, ``v.exp``, ...) appended to the core's
     program, and the tile (fp32) or Python float holding the result.

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

Anything else (a transpose, a strided slice) raises :class:`Unmappable`, and
the kernel runs on the host instead.  Values are computed in fp32 on the
vector unit whatever their storage type (the card's rule); a shared
sub-expression is computed once per tile (one temporary buffer per distinct
value), which is what keeps a fused chain on the core.
"""
from __future__ import annotations

import math

import numpy as np

from ..spyre.isa import Allocator, Tile, VectorBinary, VectorUnary
from . import loop_ir as L


class Unmappable(Exception):
    """This kernel has no Spyre mapping yet (the message says why); it runs on the host."""


UNARY: dict[str, str] = {
    "negative": "neg", "absolute": "abs", "exp": "exp", "log": "log", "tanh": "tanh",
    "sqrt": "sqrt", "square": "square", "positive": "copy",
}
BINARY: dict[str, str] = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
    "maximum": "max", "minimum": "min",
}
COMMUTATIVE = {"add", "mul", "max", "min"}
FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "max": np.maximum, "min": np.minimum}
# x ** k for a constant k, as unary instructions (k = 3: x * x^2, see _power).
POWERS: dict[float, str] = {1.0: "copy", 2.0: "square", 0.5: "sqrt", -1.0: "reciprocal"}

Shape = tuple[bool, bool]  # (spans the tile's rows, spans its cols)


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


SHAPE_OF_KIND: dict[str, Shape] = {"full": (True, True), "row": (False, True),
                                   "col": (True, False), "scalar": (False, False)}


def _is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind == "f"


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
        self.computed: dict[str, tuple[Tile, Shape] | float] = {}

    def define(self, buffer: str, result) -> None:
        """``buffer`` was computed on this tile: its readers use the result in place."""
        self.computed[buffer] = result

    def tile(self, key: object, shape: Shape) -> Tile:
        if key not in self.temps:
            name = f"t{len(self.temps)}"
            self.alloc(name, (self.tr if shape[0] else 1, self.tc if shape[1] else 1), "fp32")
            self.temps[key] = name
        return Tile(self.temps[key], self.extent[0] if shape[0] else 1,
                    self.extent[1] if shape[1] else 1)

    def emit(self, *instructions) -> None:
        self.program.emit(self.core, *instructions)

    # -- values ---------------------------------------------------------------------------
    def value(self, v: L.Value) -> tuple[Tile, Shape] | float:
        if v not in self.memo:
            self.memo[v] = self._value(v)
        return self.memo[v]

    def _value(self, v: L.Value):
        if not _is_float(v.dtype):
            raise Unmappable(f"{v} is {v.dtype}; the card computes floats only")
        match v:
            case L.Constant(value=c):
                return float(np.float32(c))
            case L.Load(buffer=b):
                if b in self.computed:
                    return self.computed[b]
                if v not in self.bound:
                    raise Unmappable(f"no tile holds {v}")
                return self.bound[v]
            case L.Cast(value=inner):
                if not _is_float(inner.dtype):
                    raise Unmappable(f"cast from {inner.dtype}")
                return self.value(inner)  # the vector unit computes in fp32 either way
            case L.Op(name="power", args=(base, L.Constant(value=k))):
                return self._power(v, self.value(base), float(k))
            case L.Op(name=name, args=(a,)) if name in UNARY:
                return self._unary(v, UNARY[name], self.value(a))
            case L.Op(name=name, args=(a, b)) if name in BINARY:
                return self._binary(v, BINARY[name], self.value(a), self.value(b))
        raise Unmappable(f"no vector instruction for {getattr(v, 'name', type(v).__name__)}")

    def _unary(self, key, op: str, a):
        if isinstance(a, float):
            from ..spyre.simulator import UNARY_NUMPY  # the card's own definition of op
            with np.errstate(all="ignore"):
                return float(np.float32(UNARY_NUMPY[op](np.float32(a))))
        tile, shape = a
        out = self.tile(key, shape)
        self.emit(VectorUnary(op, out, tile))
        return out, shape

    def _power(self, key, a, k: float):
        if k == 3.0:
            square = self._unary(("square", key), "square", a)
            return self._binary(key, "mul", square, a)
        if k not in POWERS:
            raise Unmappable(f"power with exponent {k}")
        return self._unary(key, POWERS[k], a)

    def _binary(self, key, op: str, a, b):
        if isinstance(a, float) and isinstance(b, float):
            with np.errstate(all="ignore"):
                return float(FOLD[op](np.float32(a), np.float32(b)))
        if isinstance(a, float) or (not isinstance(b, float) and _covers(b[1], a[1])
                                    and b[1] != a[1]):
            # The instruction broadcasts only its second operand: put the wider first.
            if op in COMMUTATIVE:
                return self._binary(key, op, b, a)
            if op == "sub":  # a - b = (-b) + a
                return self._binary(key, "add", self._unary(("neg", key), "neg", b), a)
            if op == "div":  # a / b = (1/b) * a
                return self._binary(key, "mul", self._unary(("rcp", key), "reciprocal", b), a)
        tile, shape = a
        if not isinstance(b, float) and not _covers(shape, b[1]):
            raise Unmappable("both operands broadcast (a row against a column)")
        out = self.tile(key, shape)
        self.emit(VectorBinary(op, out, tile, b if isinstance(b, float) else b[0]))
        return out, shape


def _covers(wide: Shape, narrow: Shape) -> bool:
    return all(w or not n for w, n in zip(wide, narrow))
