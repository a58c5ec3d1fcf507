"""Row fusion for Triton: consecutive kernels over the same rows become one persistent kernel.

In:  a :class:`~...scheduler.Schedule`.  Softmax schedules as four kernels —
     row max, ``exp(x - max)`` over the matrix, row sum, the division — because
     a pointwise kernel over ``[R, C]`` cannot join a reduction over ``[R, 1]``
     in a loop nest: the reduction's result is only ready after its loop.
Out: :func:`fuse_rows` returns a schedule in which each such run of kernels is
     one :class:`RowGroup` step, and :func:`row_kernel` writes its source.

In a persistent Triton kernel the whole row is one ``[XBLOCK, RBLOCK]`` tile
in registers, so the order problem disappears: reduce the tile (the row max),
compute the next tile from it (``exp(x - max)``), reduce that, divide — all
without leaving the program.  The pass fuses kernels that share rows:

* a reduction over the last axis, ``[*rows, 1]`` (or ``[*rows]``) x ``[C]``;
* a pointwise kernel over ``[*rows, C]``, whose last loop variable becomes the
  tile's column ``r0``;

as long as every read of a value produced inside the group is of the same row
and column (then it is forwarded from registers), and ``C`` fits one block.
A buffer is still stored when something outside the group needs it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace


from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...lowering import data_loads
from . import kernel as tg, ops
from ...scheduler import Buffer, Kernel, Schedule


@dataclass
class RowGroup:
    """Kernels computed row by row in one persistent kernel; ``stores`` are the
    buffers written to memory (the others live only in registers)."""

    kernels: list[Kernel]
    rows: tuple[int, ...]
    cols: int
    stores: list[str] = field(default_factory=list)

    @property
    def origins(self) -> list[str]:
        return [o for k in self.kernels for o in k.origins]


def _shape(kernel: Kernel) -> tuple[tuple[int, ...], int] | None:
    """(rows, columns) of a kernel that walks rows, or None."""
    if kernel.reductions:
        if len(kernel.reduction_ranges) != 1:
            return None
        ranges = kernel.ranges[:-1] if kernel.ranges[-1:] == (1,) else kernel.ranges
        return ranges, kernel.reduction_ranges[0]
    if kernel.ranges:
        return kernel.ranges[:-1], kernel.ranges[-1]
    return None


def _column_map(kernel: Kernel) -> dict[L.Var, L.Expr]:
    """A pointwise kernel's last loop variable is the tile's column ``r0``."""
    if kernel.reductions:
        return {}
    n = kernel.ranges[-1]
    return {L.Var(f"x{len(kernel.ranges) - 1}", n): L.Expr({L.Var("r0", n): 1})}


def _bodies(kernel: Kernel) -> list[L.Value]:
    mapping = _column_map(kernel)
    return [L.substitute(s.body, mapping) if mapping else s.body for s in kernel.stores]


def _produced_at(kernel: Kernel) -> dict[str, tuple]:
    """Each buffer the kernel writes, and the index at which it is held per row."""
    if kernel.reductions:
        identity = L.loop_index("x", kernel.ranges)
        return {s.buffer: identity for s in kernel.stores}
    mapping = _column_map(kernel)
    identity = tuple(i.subs(mapping) for i in L.loop_index("x", kernel.ranges))
    return {s.buffer: identity for s in kernel.stores}


def step_reads(step) -> set[str]:
    """The buffers any step of a Triton schedule reads (row groups included)."""
    from .matmul import _reads as reads  # one definition of "what a step reads"

    if isinstance(step, RowGroup):
        return {b for k in step.kernels for b in reads(k)}
    return reads(step)


def fuse_rows(schedule: Schedule) -> Schedule:
    """Group runs of row-compatible kernels into :class:`RowGroup` steps."""
    steps = schedule.steps
    out: list = []
    i = 0
    while i < len(steps):
        group = _grow(steps, i)
        if len(group) < 2 or not any(k.reductions for k in group):
            out.append(steps[i])
            i += 1
            continue
        rows, cols = _shape(group[0])
        out.append(RowGroup(group, rows, cols))
        i += len(group)
    fused = replace(schedule, steps=out)
    for step, live in zip(out, fused.live_after(step_reads)):
        if isinstance(step, RowGroup):
            step.stores = [s.buffer for k in step.kernels for s in k.stores if s.buffer in live]
    return fused


def _grow(steps: list, start: int) -> list[Kernel]:
    first = steps[start]
    if not isinstance(first, Kernel) or _shape(first) is None:
        return []
    rows, cols = _shape(first)
    if is_symbolic(cols):
        return []  # a row of symbolic length: its reductions take the looped form
    if cols < 2 or cols > tg.PERSISTENT_MAX or 0 in rows:
        return []
    group: list[Kernel] = []
    held: dict[str, tuple] = {}
    for step in steps[start:]:
        if not isinstance(step, Kernel) or _shape(step) != (rows, cols):
            break
        loads = [ld for body in _bodies(step) for ld in data_loads(body)]
        if any(ld.buffer in held and ld.index != held[ld.buffer] for ld in loads):
            break  # reads another row or column of a value in registers
        group.append(step)
        held.update(_produced_at(step))
    return group


def row_kernel(group: RowGroup, name: str, buffers: dict[str, Buffer]) -> tg.TritonKernel:
    """One persistent kernel: each group member in order on the ``[XBLOCK, RBLOCK]`` tile."""
    written = {s.buffer for k in group.kernels for s in k.stores}
    w = tg.ValueWriter(buffers, set(group.stores), frozenset(written - set(group.stores)))
    xnumel = math.prod(group.rows)
    numels = [b.numel for b in buffers.values()]
    big = is_symbolic(numels) or max(numels) >= 2**31
    w.line(f"xnumel = {xnumel}")
    w.line(f"rnumel = {group.cols}")
    w.line(f"xindex = {'tl.program_id(0).to(tl.int64)' if big else 'tl.program_id(0)'} * XBLOCK"
           " + tl.arange(0, XBLOCK)[:, None]")
    w.line("xmask = xindex < xnumel")
    tg.index_vars(w, "x", group.rows, "xindex")
    w.line("rindex = tl.arange(0, RBLOCK)[None, :]")
    w.line("rmask = rindex < rnumel")
    w.line("r0 = rindex")
    for kernel in group.kernels:
        w.line(f"# {', '.join(kernel.origins)}")
        if kernel.reductions:
            _reduce(w, kernel, group)
        else:
            mapping = _column_map(kernel)
            index = tuple(i.subs(mapping) for i in L.loop_index("x", kernel.ranges))
            w.mask = "xmask & rmask"
            for store in kernel.pointwise:
                _keep(w, store.buffer, index, L.substitute(store.body, mapping), "[XBLOCK, RBLOCK]")
            w.mask = "xmask"
    header, params = tg.signature(name, w, list(group.stores), ["XBLOCK", "RBLOCK"])
    rblock = tg.next_power_of_2(group.cols)
    warps = 4 if rblock <= 1024 else (8 if rblock <= 2048 else 16)
    xblock = max(1, min(tg.next_power_of_2(xnumel), 1024 // rblock))
    configs = [dict(XBLOCK=xblock, RBLOCK=rblock, num_warps=warps)]
    configs += [dict(XBLOCK=xb, RBLOCK=rblock, num_warps=nw) for xb in (1, 2, 4) for nw in (4, 8, 16)
                if xb * rblock <= 8192 and xb <= tg.next_power_of_2(xnumel) and (xb, nw) != (xblock, warps)]
    return tg.TritonKernel(name, "persistent", params, ("flat", xnumel, "XBLOCK"), configs,
                           "\n".join([header] + w.lines), list(group.stores))


def _keep(w: tg.ValueWriter, buffer: str, index: tuple, value, shape: str) -> None:
    """Hold ``value`` for later members; stored only if it is needed outside (``w.kept``)."""
    w.store(buffer, index, value, shape, "xmask & rmask" if shape.endswith("RBLOCK]") else "xmask")


def _reduce(w: tg.ValueWriter, kernel: Kernel, group: RowGroup) -> None:
    identity = L.loop_index("x", kernel.ranges)
    w.mask = "xmask & rmask"
    for store in kernel.reductions:
        red = store.reduction
        acc = ops.accumulator_dtype(red)
        init = ops.init_value(red.reduction_type, acc)
        src = ops.F32 if store.body.dtype == ops.HALF else store.body.dtype
        tile = w.tmp("v")
        w.line(f"{tile} = tl.where(xmask & rmask, {w.cast(w.compute(store.body), src, acc)}, {init})")
        if red.is_arg:
            w.mask = "xmask"
            _keep(w, store.buffer, identity, tg.arg_final(w, red, tile, tg.arg_index(w)), "[XBLOCK, 1]")
            w.mask = "xmask & rmask"
            continue
        final = ops.REDUCTION_FINAL[red.reduction_type].format(v=tile)
        if red.reduction_type in ("max", "min") and acc.kind == "f":
            final = f"{final} + _nan_of({tile}, 1)"
        result = w.tmp("red")
        w.line(f"{result} = ({final})[:, None]")
        tg.finish_reduction(w, red, acc, result, group.cols, tree=True)
        w.mask = "xmask"
        _keep(w, store.buffer, identity, result, "[XBLOCK, 1]")
        w.mask = "xmask & rmask"
    w.mask = "xmask"
    for store in kernel.pointwise:
        _keep(w, store.buffer, identity, store.body, "[XBLOCK, 1]")
