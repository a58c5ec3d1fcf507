"""Scheduled loop kernels (pointwise and row reductions) -> Spyre programs.

In:  one :class:`~.scheduler.Kernel` of a :class:`~.scheduler.Schedule`, the
     buffers later steps still read (``live``), and a :class:`SpyreConfig`.
Out: a :class:`DeviceStep`: the :class:`~minicompile.spyre.isa.Program` and
     how its DRAM tensors map to the graph's buffers.  Raises
     :class:`~.spyre_tiles.Unmappable` when the kernel has no mapping yet.

The plan, in the order the card forces the decisions:

1. *Iteration space.*  The kernel is a rows x cols space (see
   :mod:`.spyre_tiles`).  A row kernel keeps whole rows on a core: its
   reductions, their epilogues and the final row pass (layer norm, softmax)
   all read the row from scratchpad, so nothing between the kernel's ops goes
   back to DRAM.  Only the buffers later steps read are stored.
2. *Tiling.*  A tile is ``tr`` x ``tc`` elements.  Its working set is every
   temporary (fp32, one per distinct value of the fused chain) plus two
   copies (double buffering) of every input and output tile (fp16); the tile
   is the largest that fits the scratchpad, and no larger than the rows
   divided over the cores, so that every core gets work.
3. *Work division.*  Tiles go to cores round-robin, output rows first:
   cores never need each other's data.  A row-shaped operand that every
   tile uses (a layer norm's weight) is loaded once by core 0 and sent to
   the others with one ring broadcast instead of once per core from DRAM.
4. *Data movement.*  Each core loads tile s+1 while it computes tile s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..spyre.device import SpyreConfig
from ..spyre.isa import (ALIGN, Allocator, DmaLoad, DmaStore, DmaWait, Program, Retile,
                         RingBroadcast, RingRecv, Tile, VectorBinary, VectorReduce, VectorUnary)
from . import loop_ir as L
from .scheduler import Kernel, Schedule, Store
from .spyre_tiles import SHAPE_OF_KIND, TileEmitter, Unmappable, classify

# Scratchpad kept free of the tile budget for small buffers and alignment
# (at most this many bytes, at most an eighth of it).
MARGIN_BYTES = 64 * 1024
# Narrowest column tile: one 128-byte transfer unit of fp16.
MIN_TILE_COLS = ALIGN // 2
REDUCE_OPS = ("sum", "max", "min", "mean")


@dataclass
class DeviceStep:
    """One program for the card and its boundary with the host."""
    name: str
    program: Program
    inputs: dict[str, tuple[str, tuple[int, int]]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # DRAM name -> graph buffer
    plan: str = ""

    def dram(self, buffer: str, view: tuple[int, int], kind: str) -> str:
        """The DRAM tensor holding ``buffer`` seen as ``view`` (declared on first use)."""
        table = self.inputs if kind == "input" else self.outputs
        for name, entry in table.items():
            if (entry if kind != "input" else entry[0]) == buffer and \
                    self.program.dram[name].shape == view:
                return name
        name = buffer if buffer not in self.program.dram else f"{buffer}_{view[0]}x{view[1]}"
        self.program.declare(name, view, "fp16", kind)
        table[name] = (buffer, view) if kind == "input" else buffer
        return name


@dataclass(frozen=True)
class Operand:
    """An input read by the kernel: where it lives in DRAM and how a tile reads it."""
    load: L.Load
    kind: str
    dram: str
    column: int  # of a scalar in its (1, numel) view


def space(kernel: Kernel) -> tuple[int, int, L.Expr, L.Expr]:
    """(rows, cols, row index expression, col index expression) of the kernel."""
    if kernel.reductions:
        red = kernel.reduction_ranges
        row = L.linearize(L.loop_index("x", kernel.ranges), L.contiguous_strides(kernel.ranges))
        col = L.linearize(L.loop_index("r", red), L.contiguous_strides(red))
        return math.prod(kernel.ranges), math.prod(red), row, col
    if not kernel.ranges:
        return 1, 1, L.Expr(), L.Expr()
    lead = kernel.ranges[:-1]
    index = L.loop_index("x", kernel.ranges)
    return math.prod(lead), kernel.ranges[-1], L.linearize(index[:-1], L.contiguous_strides(lead)), index[-1]


def store_kind(kernel: Kernel, store: Store, shape: tuple[int, ...], row, col, cols) -> str:
    if store.index is not None:
        kind = classify(store.index, shape, row, col, cols)[0]
        if kind != "full":
            raise Unmappable(f"row store {store.buffer} is not laid out as the row")
        return kind
    return "col" if kernel.reductions else "full"


def operands(bodies, written: set[str], schedule: Schedule, step: DeviceStep, row, col,
             cols) -> list[Operand]:
    out: dict[L.Load, Operand] = {}
    for body in bodies:
        for ld in L.loads(body):
            if ld.buffer in written or ld in out:
                continue
            kind, view, column = classify(ld.index, schedule.buffers[ld.buffer].shape, row, col, cols)
            out[ld] = Operand(ld, kind, step.dram(ld.buffer, view, "input"), column)
    return list(out.values())


def per_element_bytes(bodies, n_inputs: int, n_outputs: int) -> int:
    """Scratchpad bytes one element of a tile costs: fp32 temporaries, double-buffered fp16 I/O."""
    ops = {v for b in bodies for v in L.walk(b) if isinstance(v, L.Op)}
    return 4 * (2 * len(ops) + 2) + 4 * n_inputs + 4 * n_outputs


def operand_tile(op: Operand, buffer: str, r0: int, c0: int, r: int, c: int) -> tuple[Tile, int, int]:
    """The tile an operand fills for the tile at (r0, c0) of r x c, and its DRAM origin."""
    return {
        "full": (Tile(buffer, r, c), r0, c0),
        "row": (Tile(buffer, 1, c), 0, c0),
        "col": (Tile(buffer, r, 1), r0, 0),
        "scalar": (Tile(buffer, 1, 1), 0, op.column),
    }[op.kind]


def _buffer_shape(kind: str, tr: int, tc: int) -> tuple[int, int]:
    rows, cols = SHAPE_OF_KIND[kind]
    return (tr if rows else 1, tc if cols else 1)


def plan_loops(kernel: Kernel, schedule: Schedule, live: set[str], cfg: SpyreConfig) -> DeviceStep:
    step = DeviceStep(kernel.name, Program(cfg))
    rows, cols, row, col = space(kernel)
    for s in kernel.reductions:
        if s.reduction.reduction_type not in REDUCE_OPS:
            raise Unmappable(f"{s.reduction.reduction_type} reduction")
    if kernel.reductions and kernel.row_shape is None:
        raise Unmappable("reduction without a row space")
    written = kernel.buffers_written
    kinds = {s.buffer: store_kind(kernel, s, schedule.buffers[s.buffer].shape, row, col, cols)
             for s in kernel.stores}
    bodies = [s.body for s in kernel.stores]
    ins = operands(bodies, written, schedule, step, row, col, cols)
    outs = [s for s in kernel.stores if s.buffer in live]
    # A per-row result is stored as one row of DRAM (transposed on the core), so a
    # core's results leave in whole 128-byte units rather than one unit per value.
    views = {"full": (rows, cols), "col": (1, rows)}
    out_dram = {s.buffer: step.dram(s.buffer, views[kinds[s.buffer]], "output") for s in outs}
    per_elem = per_element_bytes(bodies, len(ins), len(outs))
    budget = cfg.scratchpad_usable_bytes - min(MARGIN_BYTES, cfg.scratchpad_usable_bytes // 8)
    if per_elem * cols <= budget:
        tc = cols
    elif kernel.reductions:
        raise Unmappable(f"a row of {cols} elements does not fit the scratchpad")
    else:
        tc = max(MIN_TILE_COLS, budget // per_elem // MIN_TILE_COLS * MIN_TILE_COLS)
    tr = max(1, min(rows, budget // (per_elem * tc), -(-rows // cfg.cores)))
    row_tiles = -(-rows // tr)
    if not kernel.reductions and row_tiles < cfg.cores and cols > MIN_TILE_COLS:
        # Too few rows to occupy every core: cut the columns too.
        want = -(-cols // -(-cfg.cores // row_tiles))
        tc = min(tc, -(-want // MIN_TILE_COLS) * MIN_TILE_COLS)
    tiles = [(r0, c0, min(tr, rows - r0), min(tc, cols - c0))
             for r0 in range(0, rows, tr) for c0 in range(0, cols, tc)]
    mine = [tiles[i::cfg.cores] for i in range(cfg.cores)]
    shared = [op for op in ins if op.kind in ("row", "scalar") and tc == cols]
    active = [c for c in range(cfg.cores) if mine[c]]
    for core in active:
        _emit_core(step, kernel, core, mine[core], ins, shared, active, outs, kinds, out_dram, tr, tc)
    step.plan = (f"{kernel.name}: {rows}x{cols} in tiles of {tr}x{tc} over {len(active)} cores"
                 + (f", {len(shared)} shared operand(s) broadcast over the ring" if shared and len(active) > 1 else ""))
    return step


def _emit_core(step, kernel, core, tiles, ins, shared, active, outs, kinds, out_dram, tr, tc):
    program = step.program
    alloc = Allocator(program, core)
    emit = lambda *i: program.emit(core, *i)  # noqa: E731
    names = {op.load: f"in{n}" for n, op in enumerate(ins)}
    resident = {op.load: alloc(names[op.load], _buffer_shape(op.kind, tr, tc)) for op in shared}
    streamed = [op for op in ins if op not in shared]
    buffers = {op.load: [alloc(f"{names[op.load]}_{c}", _buffer_shape(op.kind, tr, tc)) for c in (0, 1)]
               for op in streamed}
    out_shape = {"full": (tr, tc), "col": (1, tr)}
    out_bufs = {s.buffer: [alloc(f"out{n}_{c}", out_shape[kinds[s.buffer]]) for c in (0, 1)]
                for n, s in enumerate(outs)}
    emitter = TileEmitter(program, core, alloc, tr, tc)
    # Operands every tile reads: DRAM once, then the ring (core 0 sends, the rest receive).
    if shared:
        for op in shared:
            tile, r0, c0 = operand_tile(op, resident[op.load].name, 0, 0, 1, tc)
            if core == active[0]:
                emit(DmaLoad(tile, op.dram, r0, c0, "shared"))
            else:
                emit(RingRecv(tile, active[0], f"bcast_{names[op.load]}"))
        if core == active[0]:
            emit(DmaWait("shared"))
            for op in shared:
                if len(active) > 1:
                    tile = operand_tile(op, resident[op.load].name, 0, 0, 1, tc)[0]
                    emit(RingBroadcast(tile, tuple(active[1:]), f"bcast_{names[op.load]}"))

    def load(s: int) -> None:
        r0, c0, r, c = tiles[s]
        for op in streamed:
            tile, dr, dc = operand_tile(op, buffers[op.load][s % 2].name, r0, c0, r, c)
            emit(DmaLoad(tile, op.dram, dr, dc, f"ld{s}"))

    stored = False
    for s, (r0, c0, r, c) in enumerate(tiles):
        if s == 0:
            load(0)
        if s + 1 < len(tiles):
            load(s + 1)
        if streamed:
            emit(DmaWait(f"ld{s}"))
        bound = {op.load: (operand_tile(op, buffers[op.load][s % 2].name, r0, c0, r, c)[0],
                           SHAPE_OF_KIND[op.kind]) for op in streamed}
        bound.update({op.load: (operand_tile(op, resident[op.load].name, r0, c0, r, c)[0],
                                SHAPE_OF_KIND[op.kind]) for op in shared})
        emitter.begin(r, c, bound)
        _compute(kernel, emitter, c)
        for store in outs:
            result = emitter.computed[store.buffer]
            kind = kinds[store.buffer]
            want = (r, c) if kind == "full" else (r, 1)
            if isinstance(result, float) or result[0].shape != want:
                raise Unmappable(f"{store.buffer} is a broadcast value, not one per element")
            out = out_bufs[store.buffer][s % 2].name
            if kind == "col":
                out = Tile(out, 1, r)
                emit(Retile("transpose", out, result[0]), DmaStore(out, out_dram[store.buffer], 0, r0, "st"))
            else:
                out = Tile(out, r, c)
                emit(VectorUnary("cast", out, result[0]), DmaStore(out, out_dram[store.buffer], r0, c0, "st"))
            stored = True
    if stored:
        emit(DmaWait("st"))


def _compute(kernel: Kernel, emitter: TileEmitter, cols: int) -> None:
    """Every store of the kernel for the current tile: stage by stage, then the row pass."""
    stages = kernel.stages or [[]]
    for k, stage in enumerate(stages):
        for s in stage:
            emitter.define(s.buffer, _reduce(emitter, s, cols))
        for s in kernel.pointwise:
            if s.stage == k or not kernel.reductions:
                emitter.define(s.buffer, emitter.value(s.body))
    for s in kernel.row_pointwise:
        emitter.define(s.buffer, emitter.value(s.body))


def _reduce(emitter: TileEmitter, store: Store, cols: int):
    value = emitter.value(store.body)
    if isinstance(value, float) or value[0].shape != emitter.extent:
        raise Unmappable(f"reduction {store.buffer} of a broadcast value")
    tile, _ = value
    rtype = store.reduction.reduction_type
    out = emitter.tile(("reduce", store.buffer), (True, False))
    if rtype == "min":  # min x = -max(-x)
        neg = emitter.tile(("negate", store.buffer), (True, True))
        emitter.emit(VectorUnary("neg", neg, tile), VectorReduce("max", out, neg, axis=1),
                     VectorUnary("neg", out, out))
    else:
        emitter.emit(VectorReduce("max" if rtype == "max" else "sum", out, tile, axis=1))
    if rtype == "mean":
        emitter.emit(VectorBinary("mul", out, out, 1.0 / cols))
    return out, (True, False)
