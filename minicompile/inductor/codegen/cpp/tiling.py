"""Tiled loops for transposes: which two loops of a pointwise kernel to block, and the tiles.

In:  a pointwise :class:`~...scheduler.Kernel`, the layout of its buffers, and
     the :class:`~.kernel.KernelWriter` writing it.
Out: :func:`transpose_axes` — the loop a big load is contiguous along and the
     loop the stores are contiguous along, when these differ (or None) — and
     :func:`write_tiled`, the kernel walking the two in tiles
     (:func:`tile_sizes` elements each way).

``out = x.T + 1.0`` stores along ``x1`` but reads ``x`` along ``x0``: a plain
loop nest walks one of the two arrays with a stride of a whole row, so each
element costs a cache line (and a power-of-two row length maps the lines of a
column onto the same cache sets).  In tiles of ``T x S`` elements (``T``
along the load's loop), each of the ``S`` rows of ``x`` a tile reads is a run
of whole cache lines, and the ``S`` stores of each tile row are one vector
whose cache line the next tile along completes while it is still in L1.  The
innermost loop still runs along the stores, so it stays ``omp simd``.  The
decision reads only the index expressions (a load's offset has coefficient 1
on one loop and a non-unit stride on the store's loop), never op names: a transpose, a permutation of a
3-D array or a strided view of one look the same.  A symbolic size or stride
(dynamic shapes) is fine: the tile loops bound themselves with ``min``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....ir.symbolic import size_hint
from ... import loop_ir as L
from ...lowering import data_loads
from ...scheduler import Buffer, Kernel

if TYPE_CHECKING:
    from .kernel import KernelWriter

# Bytes of a tile along the load's loop and along the store's loop (the best
# of the sizes measured, tutorial 09).  Four cache lines per row read keep the
# hardware prefetcher streaming; one vector of stores per tile row keeps the
# inner loop a single simd iteration, and a tile (8 + 64 lines) stays in L1
# however a power-of-two row length aliases its lines.
TILE_LOAD_BYTES = 256
TILE_STORE_BYTES = 32
# A load smaller than this many elements is not worth tiling for (it fits in cache).
MIN_TILED_NUMEL = 1 << 12


def tile_sizes(kernel: Kernel, buffers: dict[str, Buffer]) -> tuple[int, int]:
    """Elements per tile along the load's loop and along the store's loop."""
    itemsize = max(buffers[s.buffer].dtype.itemsize for s in kernel.pointwise)
    return max(TILE_LOAD_BYTES // itemsize, 1), max(TILE_STORE_BYTES // itemsize, 1)


def _stride(offset: L.Expr, var: L.Var) -> int | None:
    """The stride of ``var`` in ``offset`` (a symbolic stride counts as large),
    0 when it is absent, None when it enters through a division or modulo."""
    for atom, c in offset.terms:
        if atom == var:
            return c
        if isinstance(atom, L.Scaled) and atom.atom == var:
            return 1 << 30  # a run-time row length: a large stride
    return None if var in offset.free_vars() else 0


def transpose_axes(kernel: Kernel, buffers: dict[str, Buffer], out_vars: list[L.Var]) -> tuple[L.Var, L.Var] | None:
    """(load loop, store loop) to tile, or None.

    The store loop is the innermost output loop, along which every store is
    contiguous.  The load loop is another output loop along which a big load
    is contiguous while it strides along the store loop; of several such
    loads the largest decides."""
    if kernel.reductions or kernel.row_pointwise or len(out_vars) < 2 or not kernel.pointwise:
        return None
    s = out_vars[-1]
    identity = L.loop_index("x", kernel.ranges)
    if not all(_stride(L.linearize(identity, buffers[st.buffer].strides), s) == 1 for st in kernel.pointwise):
        return None
    best, best_size = None, MIN_TILED_NUMEL - 1
    for store in kernel.pointwise:
        for ld in data_loads(store.body):
            offset = L.linearize(ld.index, buffers[ld.buffer].strides)
            along_s = _stride(offset, s)
            if along_s is None or abs(along_s) <= 1:
                continue  # contiguous (or broadcast) along the stores already
            size = size_hint(buffers[ld.buffer].numel)
            for t in out_vars[:-1]:
                if _stride(offset, t) == 1 and size > best_size:
                    best, best_size = t, size
    if best is None or min(size_hint(best.size), size_hint(s.size)) < 2:
        return None
    return best, s


def write_tiled(w: KernelWriter, out_vars: list[L.Var], axes: tuple[L.Var, L.Var], big: bool) -> None:
    """The kernel in tiles over ``axes`` = (``t``, ``s``), the loop the load
    reads along and the loop the stores write along: the other output loops
    and the tile loops outside (one OpenMP team over all of them), then ``t``,
    then ``s`` innermost, contiguous for the stores."""
    t, s = axes
    sizes = dict(zip((t.name, s.name), tile_sizes(w.kernel, w.buffers)))
    outer = [v for v in out_vars if v not in axes]
    if big:
        w.line(w.parallel(f" collapse({len(outer) + 2})"))
    w.open_loops(outer, {})
    for v in axes:
        w.open_block(f"for (int64_t {v.name}_t = 0; {v.name}_t < {v.size}; {v.name}_t += {sizes[v.name]})")
    for v in axes:
        if v is s:
            w.line("#pragma omp simd")
        end = f"{v.name}_t + {sizes[v.name]}"
        w.open_block(f"for (int64_t {v.name} = {v.name}_t; {v.name} < ({end} < {v.size} ? {end} : {v.size}); "
                     f"++{v.name})")
    w.store_pointwise()
    w.close_loops(len(outer) + 4)
