"""np.concatenate on the card: DMA in, DMA out, no arithmetic.

In:  a ``concatenate`` :class:`~...loop_ir.Extern` of the schedule (inputs that are
     buffers or views of buffers), and a :class:`SpyreConfig`.
Out: a :class:`~.loops.DeviceStep`.

The card has no DRAM-to-DRAM copy: each piece passes through a core's
scratchpad.  Seen as 2-D, the output is ``outer x width`` (the axes before the
joined one, and the rest flattened), and input ``i`` is the column band
``[offset_i, offset_i + width_i)`` of it.  The bands are cut into tiles dealt to
the cores round-robin; a core loads tile s + 1 while it stores tile s.  An
input that is a view (``x[:, 3:]``, ``x.T``) is read by DMA gathers.
"""
from __future__ import annotations

import math

import numpy as np

from ....spyre.device import DTYPES, SpyreConfig
from ....spyre.isa import Allocator, DmaGather, DmaLoad, DmaStore, DmaWait, Program, Tile
from ... import loop_ir as L
from ...scheduler import Schedule
from .gather import Walk, view_of
from .loops import MARGIN_BYTES, MIN_TILE_COLS, DeviceStep
from .tiles import Unmappable, storage_format


def plan_concatenate(ext: L.Extern, schedule: Schedule, cfg: SpyreConfig) -> DeviceStep:
    pieces, axis = ext.args[0], ext.args[1]
    if axis is None or not all(isinstance(p, L.BufferRef) for p in pieces):
        raise Unmappable("concatenate of flattened arrays or of non-array pieces")
    shape = tuple(ext.shape)
    axis = axis % len(shape)
    outer, width = math.prod(shape[:axis]), math.prod(shape[axis:])
    fmt = storage_format(ext.dtype)
    if outer * width == 0:
        raise Unmappable("zero elements: an empty result, nothing for the card to compute")
    step = DeviceStep(ext.name, Program(cfg))
    out = step.dram(ext.name, (outer, width), "output", fmt)
    bands, offset = [], 0  # (DRAM name, walk or None, column offset, band width)
    for piece in pieces:
        found = _band(step, schedule, piece.name, axis, outer, ext.dtype, fmt)
        if found is None:  # an empty piece adds no columns (and would make a tile 0 wide)
            continue
        dram, walk, band = found
        bands.append((dram, walk, offset, band))
        offset += band
    itemsize = DTYPES[fmt].itemsize
    budget = (cfg.scratchpad_usable_bytes - min(MARGIN_BYTES, cfg.scratchpad_usable_bytes // 8)) // 2
    tiles = []
    for n, (_, _, _, band) in enumerate(bands):
        tc = min(band, max(MIN_TILE_COLS, budget // itemsize // MIN_TILE_COLS * MIN_TILE_COLS))
        tr = max(1, min(outer, budget // (itemsize * tc), -(-outer // cfg.cores)))
        tiles += [(n, r0, c0, min(tr, outer - r0), min(tc, band - c0))
                  for r0 in range(0, outer, tr) for c0 in range(0, band, tc)]
    rows = max(t[3] for t in tiles)
    cols = max(t[4] for t in tiles)
    for core in range(cfg.cores):
        mine = tiles[core::cfg.cores]
        if mine:
            _emit_core(step.program, core, mine, bands, out, fmt, rows, cols)
    step.plan = (f"{ext.name}: {len(pieces)} pieces into {outer}x{width}, {len(tiles)} tiles "
                 f"over {min(len(tiles), cfg.cores)} cores")
    return step


def _band(step: DeviceStep, schedule: Schedule, name: str, axis: int, outer: int,
          dtype: np.dtype, fmt: str):
    """Where input ``name`` is read from: (DRAM tensor, gather walk or None, band width);
    None for a piece of zero elements, which has nothing to move."""
    if name in schedule.buffers:
        buf = schedule.buffers[name]
        if buf.dtype != dtype:
            raise Unmappable(f"concatenate casts {buf.dtype} to {dtype}")
        band = math.prod(buf.shape[axis:])
        if band == 0:
            return None
        return step.dram(name, (outer, band), "input", fmt), None, band
    base, shape, offset = view_of(schedule, name)
    if base.dtype != dtype:
        raise Unmappable(f"concatenate casts {base.dtype} to {dtype}")
    if math.prod(shape[axis:]) == 0:
        return None
    index = L.loop_index("x", shape)
    row = L.linearize(index[:axis], L.contiguous_strides(shape[:axis]))
    col = L.linearize(index[axis:], L.contiguous_strides(shape[axis:]))
    band = math.prod(shape[axis:])
    walk = Walk.of(offset, row, col, outer, band)
    return step.dram(base.name, (1, max(base.numel, 1)), "input", fmt), walk, band


def _emit_core(program: Program, core: int, tiles, bands, out: str, fmt: str, rows: int,
               cols: int) -> None:
    alloc = Allocator(program, core)
    buffers = [alloc(f"copy{c}", (rows, cols), fmt).name for c in (0, 1)]
    emit = lambda *i: program.emit(core, *i)  # noqa: E731

    def load(s: int) -> None:
        n, r0, c0, r, c = tiles[s]
        dram, walk, _, _ = bands[n]
        buffer = buffers[s % 2]
        if walk is None:
            emit(DmaLoad(Tile(buffer, r, c), dram, r0, c0, f"ld{s}"))
            return
        for d in walk.descriptors(r0, c0, r, c):
            emit(DmaGather(Tile(buffer, d.rows, d.cols, d.i0, d.j0), dram, d.offset,
                           d.row_stride, d.col_stride, f"ld{s}"))

    load(0)
    for s, (n, r0, c0, r, c) in enumerate(tiles):
        if s + 1 < len(tiles):
            load(s + 1)
        emit(DmaWait(f"ld{s}"),
             DmaStore(Tile(buffers[s % 2], r, c), out, r0, bands[n][2] + c0, "st"))
    emit(DmaWait("st"))
