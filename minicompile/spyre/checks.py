"""Static checks: what can be refused by reading a Program, before running it.

In:  a :class:`~.isa.Program`.
Out: nothing, or a :class:`~.errors.SpyreError` subclass naming the core,
     the instruction and the address; plus, per core, the scratchpad
     high-water mark of the buffers the program uses.

Checked here: every operand names a scratchpad buffer of its core (a DRAM
name is refused: compute units cannot reach DRAM), tiles and DRAM regions lie
inside what they index, shapes and dtypes agree, and buffers fit the usable
scratchpad without sharing bytes while both are live. A buffer is live from
the first to the last instruction that touches it, so a planner may reuse an
address for a buffer whose life starts after another's ends.

What needs execution order (reads of unwritten bytes, DMA races, ring
deadlocks) is checked by the simulator as it runs.
"""
from __future__ import annotations

from .device import DTYPES
from .errors import (OperandLocationError, ProgramError, ScratchpadOverflowError,
                     ScratchpadOverlapError, span)
from .isa import (BINARY_OPS, REDUCE_OPS, RETILE_OPS, UNARY_OPS, Barrier, DmaGather, DmaLoad,
                  DmaStore, DmaWait, Matmul, Program, Retile, RingBroadcast, RingRecv,
                  RingSend, Tile, VectorBinary, VectorReduce, VectorSelect, VectorUnary, reads,
                  writes)

MATMUL_INPUTS = ("fp16", "fp8", "int8", "int4")


def validate(program: Program) -> list[int]:
    """Refuse a malformed or over-allocated program; return per-core high-water marks."""
    for name, tensor in program.dram.items():
        if tensor.dtype not in DTYPES:
            raise ProgramError(None, None, None, f"DRAM tensor {name!r} has unknown dtype "
                               f"{tensor.dtype!r}; the card knows {sorted(DTYPES)}")
    return [_check_core(program, c) for c in range(len(program.cores))]


def _check_core(program: Program, core: int) -> int:
    buffers = program.buffers[core]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, ins in enumerate(program.cores[core]):
        def fail(cls, detail):
            raise cls(core, i, ins, detail)

        for tile in reads(ins) + writes(ins):
            _check_tile(program, core, tile, fail)
            first.setdefault(tile.buffer, i)
            last[tile.buffer] = i
        _check_instruction(program, core, ins, fail)
    _check_allocation(program, core, first, last)
    return max((buffers[b].end for b in first), default=0)


def _check_tile(program: Program, core: int, tile: Tile, fail) -> None:
    if tile.buffer in program.dram and tile.buffer not in program.buffers[core]:
        fail(OperandLocationError, f"operand {tile} is DRAM tensor {tile.buffer!r} at "
             f"DRAM address {program.dram[tile.buffer].address:#x}; the units of a core "
             "only read its scratchpad — DMA it in first")
    buf = program.buffers[core].get(tile.buffer)
    if buf is None:
        fail(ProgramError, f"no scratchpad buffer {tile.buffer!r} is declared on this core")
    if (min(tile.rows, tile.cols, tile.row0, tile.col0) < 0
            or tile.row0 + tile.rows > buf.shape[0] or tile.col0 + tile.cols > buf.shape[1]):
        fail(ProgramError, f"tile {tile} lies outside buffer {buf.name} {list(buf.shape)} "
             f"at {span(buf.offset, buf.end)}")


def _dtype(program: Program, core: int, tile: Tile) -> str:
    return program.buffers[core][tile.buffer].dtype


def _check_instruction(program: Program, core: int, ins, fail) -> None:
    """Shape and dtype rules, one case per instruction kind."""
    match ins:
        case DmaLoad(dst=tile, src=name) | DmaStore(src=tile, dst=name):
            tensor = program.dram.get(name)
            if tensor is None:
                fail(ProgramError, f"no DRAM tensor {name!r} is declared")
            if (ins.row0 < 0 or ins.col0 < 0 or ins.row0 + tile.rows > tensor.shape[0]
                    or ins.col0 + tile.cols > tensor.shape[1]):
                fail(ProgramError, f"region lies outside DRAM tensor {name} "
                     f"{list(tensor.shape)} at {tensor.address:#x}")
            if tensor.dtype != _dtype(program, core, tile):
                fail(ProgramError, f"DMA moves bytes and does not convert: {name} is "
                     f"{tensor.dtype}, {tile.buffer} is {_dtype(program, core, tile)}")
        case DmaGather(dst=tile, src=name):
            tensor = program.dram.get(name)
            if tensor is None:
                fail(ProgramError, f"no DRAM tensor {name!r} is declared")
            first = ins.offset + min(0, (tile.rows - 1) * ins.row_stride) + \
                min(0, (tile.cols - 1) * ins.col_stride)
            last = ins.offset + max(0, (tile.rows - 1) * ins.row_stride) + \
                max(0, (tile.cols - 1) * ins.col_stride)
            numel = tensor.shape[0] * tensor.shape[1]
            if tile.rows * tile.cols and (first < 0 or last >= numel):
                fail(ProgramError, f"gather reads elements {first}..{last} of DRAM tensor "
                     f"{name} {list(tensor.shape)} ({numel} elements) at {tensor.address:#x}")
            if tensor.dtype != _dtype(program, core, tile):
                fail(ProgramError, f"DMA moves bytes and does not convert: {name} is "
                     f"{tensor.dtype}, {tile.buffer} is {_dtype(program, core, tile)}")
        case Matmul(out=o, a=a, b=b):
            if a.cols != b.rows or o.shape != (a.rows, b.cols):
                fail(ProgramError, f"shapes do not chain: {a.shape} @ {b.shape} -> {o.shape}")
            if _dtype(program, core, a) not in MATMUL_INPUTS or \
                    _dtype(program, core, a) != _dtype(program, core, b):
                fail(ProgramError, f"matrix unit inputs must share one of {MATMUL_INPUTS}")
            if _dtype(program, core, o) != "fp32":
                fail(ProgramError, "matrix unit accumulates into fp32 buffers only")
        case VectorUnary(op=op, out=o, a=a):
            if op not in UNARY_OPS:
                fail(ProgramError, f"unknown vector op {op!r}; known: {sorted(UNARY_OPS)}")
            _check_integer_op(program, core, ins, fail)
            if o.shape != a.shape:
                fail(ProgramError, f"shape {a.shape} -> {o.shape} changes")
        case VectorBinary(op=op, out=o, a=a, b=b):
            if op not in BINARY_OPS:
                fail(ProgramError, f"unknown vector op {op!r}; known: {sorted(BINARY_OPS)}")
            _check_integer_op(program, core, ins, fail)
            if o.shape != a.shape or (isinstance(b, Tile) and not all(
                    bd in (1, ad) for bd, ad in zip(b.shape, a.shape))):
                fail(ProgramError, f"shapes {a.shape}, {getattr(b, 'shape', ())} -> {o.shape}")
        case VectorSelect(out=o, mask=m, a=a, b=b):
            for operand in (m, a, b):
                if isinstance(operand, Tile) and not all(
                        d in (1, od) for d, od in zip(operand.shape, o.shape)):
                    fail(ProgramError, f"select operand {operand.shape} does not broadcast "
                         f"to {o.shape}")
            if DTYPES[_dtype(program, core, m)].numpy is None:
                fail(ProgramError, f"mask {m} must be a 0/1 tile of a simulated format")
        case VectorReduce(op=op, out=o, a=a, axis=axis):
            want = (1, a.cols) if axis == 0 else (a.rows, 1)
            if op not in REDUCE_OPS or o.shape != want:
                fail(ProgramError, f"reduce {op!r} of {a.shape} along {axis} gives {want}")
        case Retile(op=op, out=o, a=a):
            ok = (o.shape == a.shape[::-1] if op == "transpose"
                  else op == "reshape" and o.rows * o.cols == a.rows * a.cols)
            if op not in RETILE_OPS or not ok:
                fail(ProgramError, f"retile {op!r} cannot make {o.shape} from {a.shape}")
            if op == "reshape" and (a.shape != _buffer_shape(program, core, a)
                                    or o.shape != _buffer_shape(program, core, o)):
                fail(ProgramError, "reshape needs whole buffers (row-major order)")
        case RingSend(to=to) | RingBroadcast(to=to):
            targets = to if isinstance(to, tuple) else (to,)
            if any(t == core or not 0 <= t < len(program.cores) for t in targets):
                fail(ProgramError, f"ring target {to} is not another core")
        case RingRecv(src=src):
            if src == core or not 0 <= src < len(program.cores):
                fail(ProgramError, f"ring source {src} is not another core")
        case DmaWait() | Barrier():
            pass
        case _:
            fail(ProgramError, f"not an instruction of this card: {type(ins).__name__}")


def _check_integer_op(program: Program, core: int, ins, fail) -> None:
    """Integer data runs only through the simple ops: there is no integer divider or
    function unit (see SpyreConfig.vector_lanes)."""
    data = [t for t in (ins.a, getattr(ins, "b", None)) if isinstance(t, Tile)]
    if ins.transcendental and data and not any(
            _dtype(program, core, t).startswith("fp") for t in data) \
            and not isinstance(getattr(ins, "b", None), float):
        fail(ProgramError, f"v.{ins.op} on integer data: the vector unit has no integer "
             "divider or function unit; cast to fp32 first")


def _buffer_shape(program: Program, core: int, tile: Tile) -> tuple[int, int]:
    return program.buffers[core][tile.buffer].shape


def _check_allocation(program: Program, core: int, first: dict, last: dict) -> None:
    """Every used buffer fits, and no two live at once share an address."""
    usable = program.config.scratchpad_usable_bytes
    instructions = program.cores[core]
    used = sorted(first, key=first.get)
    for n, name in enumerate(used):
        buf = program.buffers[core][name]
        at = first[name]
        if buf.end > usable:
            raise ScratchpadOverflowError(
                core, at, instructions[at],
                f"buffer {name} at {span(buf.offset, buf.end)} reaches past the "
                f"{usable} bytes ({usable:#x}) of scratchpad the compiler may use")
        for other in used[:n]:
            o = program.buffers[core][other]
            live_together = last[other] >= at
            if live_together and buf.offset < o.end and o.offset < buf.end:
                raise ScratchpadOverlapError(
                    core, at, instructions[at],
                    f"buffer {name} at {span(buf.offset, buf.end)} overlaps live buffer "
                    f"{other} at {span(o.offset, o.end)} (live until instruction "
                    f"{last[other]})")
