"""Operand reads that are no row, column or broadcast of the tile -> strided DMA descriptors.

In:  a load's flat offset expression and the kernel's row and col index
     expressions (see :mod:`.tiles`): a transpose (``x.T``), a reduction
     over a non-last axis (the reduced axis is the tile's cols), a strided or
     reversed slice, a view of a reshape.
Out: :class:`Walk`, which for any tile (r0, c0, r, c) lists the
     :class:`~minicompile.spyre.isa.DmaGather` descriptors that fill it.

The offset is split into a part that depends only on the row's loop
variables and a part that depends only on the col's (``R(row) + C(col)``);
an offset that mixes them has no 2-D walk and stays :class:`Unmappable`.
Along the tile's rows R is piecewise affine: a run of rows with one stride
is one descriptor (a 2-D transpose is a single run; ``x.reshape(a, b, c)
.sum(axis=1)`` breaks a run every ``c`` rows).

A walk whose rows are closer in memory than its cols (``|row stride| <
|col stride|``, a transpose) is *transposed*: DMA fetches the tile as c x r,
each row of that a contiguous burst, and one ``retile.transpose`` on the core
turns it round, instead of moving a whole 128-byte unit per element.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import loop_ir as L, lowering
from .tiles import Unmappable

def view_of(schedule, name: str):
    """(base buffer, the view's shape, flat offset into the base over the view's loop
    variables ``x0, x1, ...``) for an Extern input that is a view (through any chain
    of views: ``x[0].T``, a reshape of a transpose) of a scheduled buffer."""
    nodes = {n.name: n for n in schedule.graph.nodes} if schedule.graph is not None else {}
    if name not in nodes:
        raise Unmappable(f"{name} is neither a buffer nor a view")
    shape = tuple(nodes[name].shape)
    load = L.Load(name, L.loop_index("x", shape), nodes[name].dtype)
    while load.buffer not in schedule.buffers:
        node = nodes.get(load.buffer)
        low = lowering.lower(node) if node is not None else None
        if not (isinstance(low, L.Pointwise) and low.is_view and isinstance(low.body, L.Load)):
            raise Unmappable(f"reads {load.buffer}, a view that is no plain index map")
        load = L.substitute(low.body, {v: i for v, i in zip(low.vars, load.index) if v.size != 1})
    base = schedule.buffers[load.buffer]
    return base, shape, L.linearize(load.index, L.contiguous_strides(base.shape))


# More descriptors than this for one tile: the walk is too irregular to be worth a DMA plan.
MAX_DESCRIPTORS = 256


@dataclass(frozen=True)
class Descriptor:
    """Tile rows [i0, i0 + rows) x cols [j0, j0 + cols) read from flat offset
    + i * row_stride + j * col_stride (i, j counted from the run's start)."""
    i0: int
    j0: int
    rows: int
    cols: int
    offset: int
    row_stride: int
    col_stride: int


def evaluate(e: L.Expr, env: dict[L.Var, np.ndarray]) -> np.ndarray:
    """An index expression's value for arrays of loop-variable values."""
    total = np.int64(e.const)
    for atom, c in e.terms:
        if isinstance(atom, L.Var):
            value = env[atom]
        elif isinstance(atom, L.FloorDiv):
            value = evaluate(atom.base, env) // atom.divisor
        else:
            value = evaluate(atom.base, env) % atom.divisor
        total = total + c * value
    return total


def _digits(linear: L.Expr, index: np.ndarray) -> dict[L.Var, np.ndarray]:
    """Each loop variable's value at the linearized positions ``index`` of ``linear``
    (``sum(stride * var)`` with contiguous strides)."""
    return {var: (index // stride) % var.size for var, stride in linear.terms}


def _runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """Split a sequence into maximal affine runs: (start, length, step)."""
    out, i, n = [], 0, len(values)
    while i < n:
        if i + 1 == n:
            out.append((i, 1, 0))
            break
        step, j = int(values[i + 1] - values[i]), i + 1
        while j + 1 < n and values[j + 1] - values[j] == step:
            j += 1
        out.append((i, j - i + 1, step))
        i = j + 1
    return out


@dataclass(frozen=True)
class Walk:
    """How one operand's elements are found for the tiles of a rows x cols space."""
    row_part: L.Expr
    col_part: L.Expr
    row: L.Expr
    col: L.Expr
    transposed: bool

    @staticmethod
    def of(offset: L.Expr, row: L.Expr, col: L.Expr, rows: int, cols: int) -> "Walk":
        row_vars = {v for v, _ in row.terms}
        col_vars = {v for v, _ in col.terms}
        row_terms, col_terms = {}, {}
        for atom, c in offset.terms:
            used = {atom} if isinstance(atom, L.Var) else atom.base.free_vars()
            if used <= row_vars:
                row_terms[atom] = c
            elif used <= col_vars:
                col_terms[atom] = c
            else:
                raise Unmappable(f"reads at offset {offset}, which mixes the tile's rows "
                                 "and cols in one index")
        walk = Walk(L.Expr(row_terms, offset.const), L.Expr(col_terms), row, col, False)
        rs = walk._values(walk.row_part, walk.row, 0, min(rows, 2))
        cs = walk._values(walk.col_part, walk.col, 0, min(cols, 2))
        rs = abs(int(rs[1] - rs[0])) if len(rs) > 1 else 0
        cs = abs(int(cs[1] - cs[0])) if len(cs) > 1 else 0
        transposed = 0 < rs < cs and cs != 1
        return Walk(walk.row_part, walk.col_part, row, col, transposed)

    @staticmethod
    def _values(part: L.Expr, linear: L.Expr, start: int, count: int) -> np.ndarray:
        index = np.arange(start, start + count, dtype=np.int64)
        return np.broadcast_to(evaluate(part, _digits(linear, index)), (count,))

    def descriptors(self, r0: int, c0: int, r: int, c: int) -> list[Descriptor]:
        rows = self._values(self.row_part, self.row, r0, r)
        cols = self._values(self.col_part, self.col, c0, c)
        row_runs, col_runs = _runs(rows), _runs(cols)
        if len(row_runs) * len(col_runs) > MAX_DESCRIPTORS:
            raise Unmappable(f"a {r}x{c} tile of this read needs "
                             f"{len(row_runs) * len(col_runs)} DMA descriptors")
        return [Descriptor(i0, j0, rl, cl, int(rows[i0] + cols[j0]), rstep, cstep)
                for i0, rl, rstep in row_runs for j0, cl, cstep in col_runs]
