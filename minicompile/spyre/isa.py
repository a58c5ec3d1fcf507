"""The instruction set of one Spyre-like core, and the Program that holds them.

In:  what a planner or code generator decides: DRAM tensors, scratchpad
     buffers per core, and for each core a list of instructions.
Out: :class:`Program`, a plain printable object that the simulator checks
     and runs.

Every instruction is a small frozen dataclass that prints as one line of
assembly. Operands on the core are :class:`Tile` s: a rectangle of a 2-D
scratchpad buffer. Data reaches the scratchpad only by DMA (from DRAM) or
over the ring (from another core); compute units never see DRAM.

Units and what runs on them (a core issues in order, units run in parallel):

=========  =======================================================
dma        DmaLoad, DmaStore, DmaGather (tagged; DmaWait blocks issue)
ring       RingSend, RingBroadcast    (RingRecv blocks issue)
matrix     Matmul                     (fp16 x fp16 -> fp32 accumulators)
vector     VectorUnary, VectorBinary, VectorSelect, VectorReduce, Retile
sequencer  DmaWait, RingRecv, Barrier
=========  =======================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .device import DTYPES, SpyreConfig

ALIGN = 128  # buffers start on a transfer unit, so no DMA ever splits one


# -- operands and declarations ----------------------------------------------------

@dataclass(frozen=True)
class Tile:
    """rows x cols elements of a 2-D scratchpad buffer, from (row0, col0)."""
    buffer: str
    rows: int
    cols: int
    row0: int = 0
    col0: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def __str__(self) -> str:
        if self.row0 == 0 and self.col0 == 0:
            return f"{self.buffer}[{self.rows}x{self.cols}]"
        return (f"{self.buffer}[{self.row0}:{self.row0 + self.rows},"
                f"{self.col0}:{self.col0 + self.cols}]")


@dataclass(frozen=True)
class DramTensor:
    """A 2-D row-major tensor in off-chip memory; kind is input, output or scratch."""
    name: str
    shape: tuple[int, int]
    dtype: str
    kind: str = "input"
    address: int = 0

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * DTYPES[self.dtype].itemsize

    def __str__(self) -> str:
        return (f"dram {self.kind:6} {self.name}: {self.dtype}{list(self.shape)} "
                f"@ {self.address:#x}")


@dataclass(frozen=True)
class Buffer:
    """A 2-D scratchpad allocation on one core, fixed by the planner."""
    name: str
    offset: int
    shape: tuple[int, int]
    dtype: str

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * DTYPES[self.dtype].itemsize

    @property
    def end(self) -> int:
        return self.offset + self.nbytes

    def __str__(self) -> str:
        return (f"spad {self.name}: {self.dtype}{list(self.shape)} "
                f"@ {self.offset:#x}..{self.end:#x} ({self.nbytes} B)")


# -- instructions --------------------------------------------------------------------

@dataclass(frozen=True)
class DmaLoad:
    """Copy dst.shape elements of DRAM tensor src at (row0, col0) into dst.

    A strided transfer: one burst per row, each rounded up to 128-byte units."""
    dst: Tile
    src: str
    row0: int
    col0: int
    tag: str
    unit = "dma"

    def __str__(self) -> str:
        return (f"dma.load  {self.dst} <- {self.src}[{self.row0}:{self.row0 + self.dst.rows},"
                f"{self.col0}:{self.col0 + self.dst.cols}]  tag={self.tag}")


@dataclass(frozen=True)
class DmaGather:
    """A strided DMA: dst[i, j] = flat(src)[offset + i * row_stride + j * col_stride].

    The descriptor form of a DMA engine: any affine 2-D walk over the tensor's
    row-major elements (a transpose, a strided slice, a reversed axis, a
    broadcast with stride 0). Each row of dst is one burst when col_stride is 1;
    otherwise every 128-byte unit the row touches is moved whole."""
    dst: Tile
    src: str
    offset: int
    row_stride: int
    col_stride: int
    tag: str
    unit = "dma"

    def flat_indices(self) -> np.ndarray:
        """The flat element index of the tensor each element of dst comes from."""
        i = np.arange(self.dst.rows, dtype=np.int64)[:, None]
        j = np.arange(self.dst.cols, dtype=np.int64)[None, :]
        return self.offset + i * self.row_stride + j * self.col_stride

    def __str__(self) -> str:
        return (f"dma.gather {self.dst} <- {self.src}.flat[{self.offset} + "
                f"{self.row_stride}*i + {self.col_stride}*j]  tag={self.tag}")


@dataclass(frozen=True)
class DmaStore:
    """Copy src into DRAM tensor dst at (row0, col0)."""
    src: Tile
    dst: str
    row0: int
    col0: int
    tag: str
    unit = "dma"

    def __str__(self) -> str:
        return (f"dma.store {self.dst}[{self.row0}:{self.row0 + self.src.rows},"
                f"{self.col0}:{self.col0 + self.src.cols}] <- {self.src}  tag={self.tag}")


@dataclass(frozen=True)
class DmaWait:
    """Block issue until every DMA with this tag has landed."""
    tag: str
    unit = "sequencer"

    def __str__(self) -> str:
        return f"dma.wait  {self.tag}"


@dataclass(frozen=True)
class RingSend:
    """Send src to core `to` over the shorter way round the ring."""
    src: Tile
    to: int
    tag: str
    unit = "ring"

    def __str__(self) -> str:
        return f"ring.send {self.src} -> core {self.to}  tag={self.tag}"


@dataclass(frozen=True)
class RingBroadcast:
    """Send src to each core in `to`; each link carries the data once."""
    src: Tile
    to: tuple[int, ...]
    tag: str
    unit = "ring"

    def __str__(self) -> str:
        return f"ring.bcast {self.src} -> cores {list(self.to)}  tag={self.tag}"


@dataclass(frozen=True)
class RingRecv:
    """Block issue until the message `tag` from core `src` has arrived into dst."""
    dst: Tile
    src: int
    tag: str
    unit = "sequencer"

    def __str__(self) -> str:
        return f"ring.recv {self.dst} <- core {self.src}  tag={self.tag}"


@dataclass(frozen=True)
class Matmul:
    """out (fp32) = a (fp16) @ b (fp16), or out += a @ b when accumulate."""
    out: Tile
    a: Tile
    b: Tile
    accumulate: bool = False
    unit = "matrix"

    def __str__(self) -> str:
        op = "+=" if self.accumulate else "="
        return f"mm        {self.out} {op} {self.a} @ {self.b}"


# Elementwise operations of the vector unit: name -> is it transcendental
# (several passes through the function unit, costed transcendental_factor x).
UNARY_OPS: dict[str, bool] = {
    "copy": False, "cast": False, "neg": False, "abs": False, "relu": False, "floor": False,
    "square": False, "reciprocal": True, "sqrt": True, "rsqrt": True,
    "exp": True, "log": True, "tanh": True, "sigmoid": True, "gelu": True,
}
BINARY_OPS: dict[str, bool] = {
    "add": False, "sub": False, "mul": False, "max": False, "min": False, "div": True,
    "lt": False, "le": False, "gt": False, "ge": False, "eq": False, "ne": False,
}
# Comparisons write a mask: 1 where the relation holds, 0 elsewhere, in out's dtype.
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
REDUCE_OPS = ("sum", "max", "min")
RETILE_OPS = ("transpose", "reshape")


@dataclass(frozen=True)
class VectorUnary:
    """out = op(a), computed in fp32 and stored in out's dtype ("cast" converts)."""
    op: str
    out: Tile
    a: Tile
    transcendental: bool | None = None  # None: from UNARY_OPS
    unit = "vector"

    def __post_init__(self):
        if self.transcendental is None:
            object.__setattr__(self, "transcendental", UNARY_OPS.get(self.op, False))

    def __str__(self) -> str:
        return f"v.{self.op:7} {self.out} <- {self.a}"


@dataclass(frozen=True)
class VectorBinary:
    """out = a op b; b may be a Tile with one row or one column (broadcast) or a scalar."""
    op: str
    out: Tile
    a: Tile
    b: Tile | float
    transcendental: bool | None = None  # None: from BINARY_OPS
    unit = "vector"

    def __post_init__(self):
        if self.transcendental is None:
            object.__setattr__(self, "transcendental", BINARY_OPS.get(self.op, False))

    def __str__(self) -> str:
        return f"v.{self.op:7} {self.out} <- {self.a}, {self.b}"


@dataclass(frozen=True)
class VectorSelect:
    """out = a where mask is non-zero, else b (np.where); a and b may be tiles
    or scalars, and any tile may be one row or one column (broadcast)."""
    out: Tile
    mask: Tile
    a: Tile | float
    b: Tile | float
    unit = "vector"
    transcendental = False

    def __str__(self) -> str:
        return f"v.select  {self.out} <- {self.mask} ? {self.a} : {self.b}"


@dataclass(frozen=True)
class VectorReduce:
    """out = op(a) along axis (0: one row out, 1: one column out), in fp32."""
    op: str
    out: Tile
    a: Tile
    axis: int
    unit = "vector"

    def __str__(self) -> str:
        return f"v.r{self.op:6} {self.out} <- {self.a}  axis={self.axis}"


@dataclass(frozen=True)
class Retile:
    """Copy a into out re-arranged: "transpose" (r x c -> c x r) or "reshape"
    (same elements, row-major order, new shape)."""
    op: str
    out: Tile
    a: Tile
    unit = "vector"

    def __str__(self) -> str:
        return f"retile.{self.op} {self.out} <- {self.a}"


@dataclass(frozen=True)
class Barrier:
    """Wait until this core's issued work has finished and every core that has a
    program (a non-empty instruction list) has arrived at its matching barrier."""
    name: str = ""
    unit = "sequencer"

    def __str__(self) -> str:
        return f"barrier   {self.name}".rstrip()


Instruction = (DmaLoad | DmaGather | DmaStore | DmaWait | RingSend | RingBroadcast | RingRecv
               | Matmul | VectorUnary | VectorBinary | VectorSelect | VectorReduce | Retile
               | Barrier)


def reads(ins: Instruction) -> tuple[Tile, ...]:
    """The scratchpad tiles an instruction reads."""
    match ins:
        case DmaStore(src=t) | RingSend(src=t) | RingBroadcast(src=t):
            return (t,)
        case Matmul(out=o, a=a, b=b, accumulate=acc):
            return (a, b, o) if acc else (a, b)
        case VectorBinary(a=a, b=Tile() as b):
            return (a, b)
        case VectorSelect(mask=m, a=a, b=b):
            return (m,) + tuple(t for t in (a, b) if isinstance(t, Tile))
        case VectorUnary(a=a) | VectorBinary(a=a) | VectorReduce(a=a) | Retile(a=a):
            return (a,)
    return ()


def writes(ins: Instruction) -> tuple[Tile, ...]:
    """The scratchpad tiles an instruction writes."""
    match ins:
        case DmaLoad(dst=t) | DmaGather(dst=t) | RingRecv(dst=t):
            return (t,)
        case Matmul(out=t) | VectorUnary(out=t) | VectorBinary(out=t) | VectorSelect(out=t) \
                | VectorReduce(out=t) | Retile(out=t):
            return (t,)
    return ()


# -- the program -------------------------------------------------------------------------

@dataclass
class Program:
    """Everything the card runs: DRAM tensors, per-core buffers and instructions."""
    config: SpyreConfig = field(default_factory=SpyreConfig)
    dram: dict[str, DramTensor] = field(default_factory=dict)
    buffers: list[dict[str, Buffer]] = field(default_factory=list)
    cores: list[list[Instruction]] = field(default_factory=list)

    def __post_init__(self):
        n = self.config.cores
        self.buffers = self.buffers or [{} for _ in range(n)]
        self.cores = self.cores or [[] for _ in range(n)]

    # building -------------------------------------------------------------------------
    def declare(self, name: str, shape: tuple[int, int], dtype: str = "fp16",
                kind: str = "input") -> DramTensor:
        """Declare a DRAM tensor; addresses are assigned in declaration order."""
        address = sum(-(-t.nbytes // ALIGN) * ALIGN for t in self.dram.values())
        tensor = DramTensor(name, tuple(shape), dtype, kind, address)
        self.dram[name] = tensor
        return tensor

    def buffer(self, core: int, name: str, offset: int, shape: tuple[int, int],
               dtype: str = "fp16") -> Buffer:
        """Place a scratchpad buffer on core at a fixed offset."""
        buf = Buffer(name, offset, tuple(shape), dtype)
        self.buffers[core][name] = buf
        return buf

    def emit(self, core: int, *instructions: Instruction) -> None:
        self.cores[core].extend(instructions)

    # reading ---------------------------------------------------------------------------
    @property
    def inputs(self) -> list[str]:
        return [n for n, t in self.dram.items() if t.kind == "input"]

    @property
    def outputs(self) -> list[str]:
        return [n for n, t in self.dram.items() if t.kind == "output"]

    def core_listing(self, core: int) -> str:
        lines = [f"core {core}:"]
        lines += [f"  {buf}" for buf in self.buffers[core].values()]
        lines += [f"  {i:4}  {ins}" for i, ins in enumerate(self.cores[core])]
        return "\n".join(lines)

    def __str__(self) -> str:
        head = [str(t) for t in self.dram.values()]
        busy = [c for c in range(len(self.cores)) if self.cores[c]]
        return "\n".join(head + [self.core_listing(c) for c in busy])


class Allocator:
    """A bump allocator for one core's scratchpad, aligned to transfer units.

    Planners use it to place buffers without arithmetic; it does not check
    capacity (the simulator does, and says which instruction overflowed)."""

    def __init__(self, program: Program, core: int):
        self.program, self.core, self.top = program, core, 0

    def __call__(self, name: str, shape: tuple[int, int], dtype: str = "fp16") -> Buffer:
        buf = self.program.buffer(self.core, name, self.top, shape, dtype)
        self.top += -(-buf.nbytes // ALIGN) * ALIGN
        return buf
