"""Scheduled loop kernels (pointwise and row reductions) -> Spyre programs.

In:  one :class:`~...scheduler.Kernel` of a :class:`~...scheduler.Schedule`, the
     buffers later steps still read (``live``), and a :class:`SpyreConfig`.
Out: a :class:`DeviceStep`: the :class:`~minicompile.spyre.isa.Program` and
     how its DRAM tensors map to the graph's buffers.  Raises
     :class:`~.tiles.Unmappable` when the kernel has no mapping yet.

The plan, in the order the card forces the decisions:

1. *Iteration space.*  The kernel is a rows x cols space (see
   :mod:`.tiles`).  A row kernel keeps whole rows on a core: its
   reductions, their epilogues and the final row pass (layer norm, softmax)
   all read the row from scratchpad, so nothing between the kernel's ops goes
   back to DRAM.  Only the buffers later steps read are stored.  A row longer
   than the scratchpad holds is walked in chunks, once per pass (one pass per
   reduction stage, then the row pass): each chunk's partial reduction is
   folded into a per-row accumulator, and later passes read it from there.
2. *Tiling.*  A tile is ``tr`` x ``tc`` elements.  Its working set is every
   temporary (fp32, one per distinct value of the fused chain) plus two
   copies (double buffering) of every input and output tile (fp16); the tile
   is the largest that fits the scratchpad, and no larger than the rows
   divided over the cores, so that every core gets work.
3. *Work division.*  Tiles go to cores round-robin, output rows first:
   cores never need each other's data.  A row-shaped operand that every
   tile uses (a layer norm's weight) is loaded once by core 0 and sent to
   the others with one ring broadcast instead of once per core from DRAM.
4. *Data movement.*  Each core loads tile s+1 while it computes tile s.  An
   operand read through a transpose or a stride is fetched by DMA gathers
   (:mod:`.gather`); a transposed one lands turned round and is turned
   back by one ``retile.transpose``, and its tiles are then made whole
   128-byte units tall so each burst is a full unit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ....spyre.device import DTYPES, SpyreConfig
from ....spyre.isa import (ALIGN, Allocator, DmaGather, DmaLoad, DmaStore, DmaWait, Program,
                         Retile, RingBroadcast, RingRecv, Tile, VectorBinary, VectorReduce,
                         VectorUnary)
from ... import loop_ir as L
from ...scheduler import Kernel, Schedule, Store
from .gather import Walk
from .tiles import (INT32_MAX, SHAPE_OF_KIND, TileEmitter, Unmappable, classify,
                          int64_bound, is_scalar, storage_format, value_format)

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

    def dram(self, buffer: str, view: tuple[int, int], kind: str, fmt: str = "fp16") -> str:
        """The DRAM tensor holding ``buffer`` seen as ``view`` (declared on first use),
        stored in the card format ``fmt``."""
        table = self.inputs if kind == "input" else self.outputs
        for name, entry in table.items():
            if (entry if kind != "input" else entry[0]) == buffer and \
                    self.program.dram[name].shape == view:
                return name
        name = buffer if buffer not in self.program.dram else f"{buffer}_{view[0]}x{view[1]}"
        self.program.declare(name, view, fmt, kind)
        table[name] = (buffer, view) if kind == "input" else buffer
        return name


@dataclass(frozen=True)
class Operand:
    """An input read by the kernel: where it lives in DRAM and how a tile reads it."""
    load: L.Load
    kind: str
    dram: str
    column: int  # of a scalar in its (1, numel) view
    fmt: str = "fp16"  # its card format, in DRAM and in scratchpad
    walk: Walk | None = None  # kind "strided": the DMA descriptors of each tile

    @property
    def bytes_per_element(self) -> int:
        """Scratchpad bytes per tile element: two copies (double buffering), plus the
        turned-round copy of a transposed walk."""
        size = DTYPES[self.fmt].itemsize
        return size * (3 if self.walk is not None and self.walk.transposed else 2)


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


def store_kind(kernel: Kernel, store: Store, shape: tuple[int, ...], row, col, rows,
               cols) -> str:
    """full: the tile's own layout; col: one value per row; transposed: a row pass
    writing a reduction's axis back as rows (softmax over axis 0), turned round on
    the core and stored as a rectangle of the cols x rows view."""
    if store.index is None:
        return "col" if kernel.reductions else "full"
    if L.linearize(store.index, L.contiguous_strides(shape)) == col * rows + row:
        return "transposed"
    if classify(store.index, shape, row, col, cols)[0] != "full":
        raise Unmappable(f"row store {store.buffer} is not laid out as the row")
    return "full"


def operands(bodies, written: set[str], schedule: Schedule, step: DeviceStep, row, col,
             rows, cols) -> list[Operand]:
    out: dict[L.Load, Operand] = {}
    for body in bodies:
        for ld in L.loads(body):
            if ld.buffer in written or ld in out:
                continue
            buf = schedule.buffers[ld.buffer]
            fmt = storage_format(buf.dtype)
            try:
                kind, view, column = classify(ld.index, buf.shape, row, col, cols)
                out[ld] = Operand(ld, kind, step.dram(ld.buffer, view, "input", fmt), column, fmt)
            except Unmappable:
                offset = L.linearize(ld.index, L.contiguous_strides(buf.shape))
                walk = Walk.of(offset, row, col, rows, cols)
                dram = step.dram(ld.buffer, (1, max(buf.numel, 1)), "input", fmt)
                out[ld] = Operand(ld, "strided", dram, 0, fmt, walk)
    return list(out.values())


def output_format(store: Store, dtype: np.dtype, cols: int) -> str:
    """The DRAM format of a stored result; an int64 one is int32 when its values fit
    (see :func:`.tiles.int64_bound`), widened by the host."""
    if np.dtype(dtype) != np.int64:
        return storage_format(dtype)
    bound = int64_bound(store.body)
    if bound is not None and store.reduction is not None and \
            store.reduction.reduction_type == "sum":
        bound *= cols
    if bound is None or bound > INT32_MAX:
        raise Unmappable(f"int64 result {store.buffer}: the card has no 64-bit integers, "
                         "and its values may not fit 32 bits")
    return "int32"


def per_element_bytes(bodies, ins: list[Operand], out_formats: list[str]) -> int:
    """Scratchpad bytes one element of a tile costs: a temporary (fp32 at most) per op,
    the inputs' double-buffered copies, the outputs' double-buffered stores."""
    ops = {v for b in bodies for v in L.walk(b) if isinstance(v, (L.Op, L.Cast))}
    return (4 * (2 * len(ops) + 2) + sum(op.bytes_per_element for op in ins)
            + sum(2 * DTYPES[f].itemsize for f in out_formats))


def operand_tile(op: Operand, buffer: str, r0: int, c0: int, r: int, c: int) -> tuple[Tile, int, int]:
    """The tile an operand fills for the tile at (r0, c0) of r x c, and its DRAM origin."""
    return {
        "full": (Tile(buffer, r, c), r0, c0),
        "strided": (Tile(buffer, r, c), 0, 0),
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
    if rows * cols == 0:
        raise Unmappable("zero elements: an empty result, nothing for the card to compute")
    for s in kernel.reductions:
        if s.reduction.reduction_type not in REDUCE_OPS:
            raise Unmappable(f"{s.reduction.reduction_type} reduction")
    if kernel.reductions and kernel.row_shape is None:
        raise Unmappable("reduction without a row space")
    written = kernel.buffers_written
    kinds = {s.buffer: store_kind(kernel, s, schedule.buffers[s.buffer].shape, row, col, rows,
                                  cols)
             for s in kernel.stores}
    bodies = [s.body for s in kernel.stores]
    ins = operands(bodies, written, schedule, step, row, col, rows, cols)
    outs = [s for s in kernel.stores if s.buffer in live]
    # A per-row result is stored as one row of DRAM (transposed on the core), so a
    # core's results leave in whole 128-byte units rather than one unit per value.
    views = {"full": (rows, cols), "col": (1, rows), "transposed": (cols, rows)}
    out_fmt = {s.buffer: output_format(s, schedule.buffers[s.buffer].dtype, cols) for s in outs}
    out_dram = {s.buffer: step.dram(s.buffer, views[kinds[s.buffer]], "output", out_fmt[s.buffer])
                for s in outs}
    per_elem = per_element_bytes(bodies, ins, list(out_fmt.values()))
    budget = cfg.scratchpad_usable_bytes - min(MARGIN_BYTES, cfg.scratchpad_usable_bytes // 8)
    turned = [op for op in ins if op.walk is not None and op.walk.transposed]
    # A transposed read fetches tr elements per burst: make that whole 128-byte
    # units rather than a sliver of one per core (the DRAM port is shared, so
    # fewer, busier cores lose nothing when the kernel is memory-bound).
    unit = max((ALIGN // DTYPES[op.fmt].itemsize for op in turned), default=1)
    tall = min(rows, unit)  # rows a tile needs for whole bursts of a transposed read
    if per_elem * cols * tall <= budget:
        tc = cols
    else:  # a row kernel whose rows do not fit walks them in chunks, once per pass
        tc = max(MIN_TILE_COLS, budget // (per_elem * tall) // MIN_TILE_COLS * MIN_TILE_COLS)
    tr = max(1, min(rows, budget // (per_elem * tc), -(-rows // cfg.cores)))
    if turned and tr < rows:
        fit = budget // (per_elem * tc)
        tr = min(rows, max(tr, min(fit // unit * unit, -(-tr // unit) * unit)))
    row_tiles = -(-rows // tr)
    if not kernel.reductions and row_tiles < cfg.cores and cols > MIN_TILE_COLS:
        # Too few rows to occupy every core: cut the columns too.
        want = -(-cols // -(-cfg.cores // row_tiles))
        tc = min(tc, -(-want // MIN_TILE_COLS) * MIN_TILE_COLS)
    if kernel.reductions and tc < cols:
        # Whole rows stay on one core: each row tile visits its chunks once per pass.
        passes = len(kernel.stages) + (1 if kernel.row_pointwise else 0)
        row_tiles = [(r0, min(tr, rows - r0)) for r0 in range(0, rows, tr)]
        mine = [[(r0, c0, r, min(tc, cols - c0), p) for r0, r in row_tiles[i::cfg.cores]
                 for p in range(passes) for c0 in range(0, cols, tc)]
                for i in range(cfg.cores)]
    else:
        tiles = [(r0, c0, min(tr, rows - r0), min(tc, cols - c0), None)
                 for r0 in range(0, rows, tr) for c0 in range(0, cols, tc)]
        mine = [tiles[i::cfg.cores] for i in range(cfg.cores)]
    shared = [op for op in ins if op.kind in ("row", "scalar") and tc == cols]
    active = [c for c in range(cfg.cores) if mine[c]]
    for core in active:
        _emit_core(step, kernel, core, mine[core], ins, shared, active, outs, kinds, out_dram,
                   out_fmt, tr, tc, cols)
    step.plan = (f"{kernel.name}: {rows}x{cols} in tiles of {tr}x{tc} over {len(active)} cores"
                 + (f", rows in {-(-cols // tc)} chunks per pass" if tc < cols and
                    kernel.reductions else "")
                 + (f", {len(shared)} shared operand(s) broadcast over the ring" if shared and len(active) > 1 else ""))
    return step


def _emit_core(step, kernel, core, tiles, ins, shared, active, outs, kinds, out_dram, out_fmt,
               tr, tc, cols):
    """One core's program.  ``tiles`` are its visits (r0, c0, r, c, pass): pass None
    computes the whole kernel on the tile; pass p walks one chunk of a long row
    for the reductions of stage p (the last pass: the row pass), accumulating
    per-row results across the chunks."""
    program = step.program
    alloc = Allocator(program, core)
    emit = lambda *i: program.emit(core, *i)  # noqa: E731
    names = {op.load: f"in{n}" for n, op in enumerate(ins)}
    resident = {op.load: alloc(names[op.load], _buffer_shape(op.kind, tr, tc), op.fmt)
                for op in shared}
    streamed = [op for op in ins if op not in shared]
    turned = [op for op in streamed if op.walk is not None and op.walk.transposed]
    # A transposed walk lands as c x r (contiguous bursts) and is turned round on the core.
    buffers = {op.load: [alloc(f"{names[op.load]}_{c}", (tc, tr) if op in turned
                               else _buffer_shape(op.kind, tr, tc), op.fmt) for c in (0, 1)]
               for op in streamed}
    views = {op.load: alloc(f"{names[op.load]}_t", (tr, tc), op.fmt) for op in turned}
    out_shape = {"full": (tr, tc), "col": (1, tr), "transposed": (tc, tr)}
    out_bufs = {s.buffer: [alloc(f"out{n}_{c}", out_shape[kinds[s.buffer]], out_fmt[s.buffer])
                           for c in (0, 1)] for n, s in enumerate(outs)}
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

    needed = _pass_loads(kernel)

    def loaded(s: int) -> list[Operand]:
        phase = tiles[s][4]
        return [op for op in streamed if phase is None or op.load in needed[phase]]

    def load(s: int) -> None:
        r0, c0, r, c, _ = tiles[s]
        for op in loaded(s):
            buffer = buffers[op.load][s % 2].name
            if op.walk is None:
                tile, dr, dc = operand_tile(op, buffer, r0, c0, r, c)
                emit(DmaLoad(tile, op.dram, dr, dc, f"ld{s}"))
                continue
            for d in op.walk.descriptors(r0, c0, r, c):
                if op in turned:
                    emit(DmaGather(Tile(buffer, d.cols, d.rows, d.j0, d.i0), op.dram, d.offset,
                                   d.col_stride, d.row_stride, f"ld{s}"))
                else:
                    emit(DmaGather(Tile(buffer, d.rows, d.cols, d.i0, d.j0), op.dram, d.offset,
                                   d.row_stride, d.col_stride, f"ld{s}"))

    stored = False
    known: dict = {}  # per-row results of earlier passes over the current row tile
    for s, (r0, c0, r, c, phase) in enumerate(tiles):
        if s == 0:
            load(0)
        if s + 1 < len(tiles):
            load(s + 1)
        if streamed:
            emit(DmaWait(f"ld{s}"))
        here = loaded(s)
        for op in turned:
            if op in here:
                emit(Retile("transpose", Tile(views[op.load].name, r, c),
                            Tile(buffers[op.load][s % 2].name, c, r)))
        bound = {op.load: (operand_tile(op, (views if op in turned else
                                             {op.load: buffers[op.load][s % 2]})[op.load].name,
                                        r0, c0, r, c)[0],
                           SHAPE_OF_KIND[op.kind]) for op in here}
        bound.update({op.load: (operand_tile(op, resident[op.load].name, r0, c0, r, c)[0],
                                SHAPE_OF_KIND[op.kind]) for op in shared})
        emitter.begin(r, c, bound)
        if phase is None:
            _compute(kernel, emitter, c)
            storing = outs
        else:
            if phase == 0 and c0 == 0:
                known.clear()
            storing = _compute_pass(kernel, emitter, phase, c0, c, cols, known, outs, kinds)
        for store in storing:
            result = emitter.computed[store.buffer]
            kind = kinds[store.buffer]
            want = (r, 1) if kind == "col" else (r, c)
            if is_scalar(result) or result[0].shape != want:
                raise Unmappable(f"{store.buffer} is a broadcast value, not one per element")
            out = out_bufs[store.buffer][s % 2].name
            if kind == "col":
                out = Tile(out, 1, r)
                emit(Retile("transpose", out, result[0]), DmaStore(out, out_dram[store.buffer], 0, r0, "st"))
            elif kind == "transposed":
                out = Tile(out, c, r)
                emit(Retile("transpose", out, result[0]),
                     DmaStore(out, out_dram[store.buffer], c0, r0, "st"))
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


def _pass_loads(kernel: Kernel) -> list[set[L.Load]]:
    """The loads each pass of a chunked row kernel evaluates: stage p's reductions and
    per-row stores, then (last) the row pass."""
    bodies = [[s.body for s in stage] + [s.body for s in kernel.pointwise if s.stage == p]
              for p, stage in enumerate(kernel.stages)]
    bodies.append([s.body for s in kernel.row_pointwise])
    return [{ld for b in group for ld in L.loads(b)} for group in bodies]


def _compute_pass(kernel: Kernel, emitter: TileEmitter, phase: int, c0: int, c: int, cols: int,
                  known: dict, outs: list[Store], kinds: dict) -> list[Store]:
    """One chunk of one pass over long rows; returns the stores ready to leave."""
    for buffer, value in known.items():
        emitter.define(buffer, value)
    first, last = c0 == 0, c0 + c == cols
    if phase < len(kernel.stages):
        for s in kernel.stages[phase]:
            result = _reduce(emitter, s, cols, first, last)
            if last:
                known[s.buffer] = result
                emitter.define(s.buffer, result)
        if last:
            for s in kernel.pointwise:
                if s.stage == phase:
                    known[s.buffer] = emitter.value(s.body)
                    emitter.define(s.buffer, known[s.buffer])
        done = last and phase == len(kernel.stages) - 1 and not kernel.row_pointwise
        return [s for s in outs if done and kinds[s.buffer] == "col"]
    for s in kernel.row_pointwise:
        emitter.define(s.buffer, emitter.value(s.body))
    return [s for s in outs if kinds[s.buffer] != "col" or last]


COMBINE = {"sum": "add", "mean": "add", "max": "max", "min": "min"}


def _reduce(emitter: TileEmitter, store: Store, cols: int, first: bool = True,
            last: bool = True):
    """Reduce the tile's rows into the store's per-row accumulator; a chunk after the
    first reduces into a partial and folds it in (``first``/``last`` chunk of a row)."""
    value = emitter.value(store.body)
    if is_scalar(value) or value[0].shape != emitter.extent:
        raise Unmappable(f"reduction {store.buffer} of a broadcast value")
    tile, _ = value
    rtype = store.reduction.reduction_type
    if rtype in ("sum", "mean") and np.dtype(store.body.dtype).kind != "f":
        bound = int64_bound(store.body) if rtype == "sum" else None
        if bound is None or bound * cols > INT32_MAX:
            raise Unmappable(f"{rtype} of {store.body.dtype}: NumPy accumulates integers in "
                             "int64, and this sum may not fit 32 bits")
    # floats accumulate in fp32 (NumPy sums float16 in float32 too, rounding once at the end)
    fmt = "fp32" if np.dtype(store.reduction.dtype).kind == "f" else value_format(store.reduction.dtype)
    out = emitter.tile(("reduce", store.buffer), (True, False), fmt)
    part = out if first else emitter.tile(("partial", store.buffer), (True, False), fmt)
    emitter.emit(VectorReduce("sum" if rtype == "mean" else rtype, part, tile, axis=1))
    if not first:
        emitter.emit(VectorBinary(COMBINE[rtype], out, out, part))
    if last and rtype == "mean":
        emitter.emit(VectorBinary("mul", out, out, 1.0 / cols))
    if last and fmt != value_format(store.reduction.dtype):  # a float16 result: rounded once
        rounded = emitter.tile(("rounded", store.buffer), (True, False), value_format(store.reduction.dtype))
        emitter.emit(VectorUnary("copy", rounded, out))
        return rounded, (True, False)
    return out, (True, False)
