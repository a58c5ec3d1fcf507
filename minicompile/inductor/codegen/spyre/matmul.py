"""A matmul Extern, with the pointwise kernel that consumes it, -> one Spyre program.

In:  a ``matmul`` :class:`~...loop_ir.Extern` of the schedule (2-D operands, or
     batched: (batch..., M, K) @ (batch..., K, N), either side may be 2-D),
     optionally its *epilogue*: the pointwise kernel over the same M x N loops
     that reads the product at its own element (``relu(x @ W + b)``), the
     buffers later steps read, and a :class:`SpyreConfig`.
Out: a :class:`~.loops.DeviceStep`.

This generalizes :mod:`minicompile.spyre.matmul_plan` (same tiling model,
same work division: output tiles first, then K split over cores with the
partial sums tree-added over the ring) in two ways: operands are the graph's
buffers, and the epilogue runs on the fp32 accumulator tile before the one
store, so the product never makes a round trip through DRAM.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ....spyre.device import SpyreConfig
from ....spyre.isa import (Allocator, DmaGather, DmaLoad, DmaStore, DmaWait, Matmul, Program,
                         Retile, Tile, VectorUnary)
from ....spyre.matmul_plan import MatmulTiling, choose_tiling, tree_sum, working_set
from ... import loop_ir as L
from ...scheduler import Buffer, Kernel, Schedule
from .gather import Walk, view_of
from .loops import DeviceStep, operand_tile, operands, per_element_bytes
from .tiles import SHAPE_OF_KIND, TileEmitter, Unmappable, classify, is_scalar


def _rows_and_col(shape: tuple[int, ...]) -> tuple[L.Expr, L.Expr]:
    """A (batch..., M, N) product seen as (batch * M) x N: its row and col index."""
    index = L.loop_index("x", shape)
    return L.linearize(index[:-1], L.contiguous_strides(shape[:-1])), index[-1]


def epilogue_of(ext: L.Extern, kernel: Kernel) -> bool:
    """Whether ``kernel`` can run on the matmul's accumulator tiles."""
    if kernel.reductions or kernel.row_pointwise or kernel.ranges != tuple(ext.shape):
        return False
    if len(ext.shape) < 2:
        return False
    row, col = _rows_and_col(tuple(ext.shape))
    for store in kernel.stores:
        for ld in L.loads(store.body):
            if ld.buffer != ext.name:
                continue
            try:
                if classify(ld.index, tuple(ext.shape), row, col, ext.shape[-1])[0] != "full":
                    return False
            except Unmappable:  # the product read transposed: a kernel of its own
                return False
    return any(ld.buffer == ext.name for s in kernel.stores for ld in L.loads(s.body))


@dataclass(frozen=True)
class MatrixOperand:
    """A matmul input as the card reads it: the (batch..., rows, cols) array, either a
    plain row-major buffer (``offset`` None: one strided DmaLoad per tile) or a view
    of one (``x.T``, ``q.transpose(0, 2, 1)``, a slice, a reshape of a transpose):
    ``offset`` is the flat index into the viewed buffer over loop variables ``vars``
    (batch..., row, col), read by DMA gathers (:class:`.gather.Walk`); a view
    whose rows are closer in memory than its cols is fetched turned round, in whole
    bursts, and turned back by ``retile.transpose``."""
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    offset: L.Expr | None = None
    vars: tuple[L.Var, ...] = ()

    def walk(self, batch: int) -> Walk:
        digits = np.unravel_index(batch, self.shape[:-2]) if len(self.shape) > 2 else ()
        fixed = {v: L.Expr(None, int(d)) for v, d in zip(self.vars, digits)}
        row, col = (L.Expr({v: 1}) for v in self.vars[-2:])
        return Walk.of(self.offset.subs(fixed), row, col, *self.shape[-2:])

    @property
    def transposed(self) -> bool:
        return self.offset is not None and self.walk(0).transposed

    def fetch(self, dram: str, buffer: str, staging: str, batch: int, r0: int, c0: int,
              r: int, c: int, tag: str) -> list:
        """The DMA instructions that bring tile (r0, c0) of r x c of batch ``batch``."""
        if self.offset is None:
            first = batch * self.shape[-2] if len(self.shape) > 2 else 0
            return [DmaLoad(Tile(buffer, r, c), dram, first + r0, c0, tag)]
        turned = self.transposed
        out = []
        for d in self.walk(batch).descriptors(r0, c0, r, c):
            if turned:
                out.append(DmaGather(Tile(staging, d.cols, d.rows, d.j0, d.i0), dram, d.offset,
                                     d.col_stride, d.row_stride, tag))
            else:
                out.append(DmaGather(Tile(buffer, d.rows, d.cols, d.i0, d.j0), dram, d.offset,
                                     d.row_stride, d.col_stride, tag))
        return out


def matrix_operand(schedule: Schedule, name: str) -> MatrixOperand:
    """The matmul input ``name``: a buffer, or a view (through any chain of views) of one."""
    if name in schedule.buffers:
        buf = schedule.buffers[name]
        return MatrixOperand(name, tuple(buf.shape), buf.dtype)
    base, shape, offset = view_of(schedule, name)
    operand = MatrixOperand(base.name, shape, base.dtype, offset, L.loop_vars("x", shape))
    operand.walk(0)  # refuses an index that mixes rows and cols (raises Unmappable)
    return operand


def batch_shape(a, b) -> tuple[tuple[int, ...], bool, bool]:
    """The batch dimensions of a @ b, and whether a and b each have them.

    A batch dimension of one operand that the other lacks is allowed (the 2-D
    operand is shared by every batch); batch shapes that broadcast against
    each other (1 against n) are not planned."""
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise Unmappable(f"matmul of {len(a.shape)}-D by {len(b.shape)}-D arrays")
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    if ba and bb and ba != bb:
        raise Unmappable(f"matmul with broadcast batch dimensions {ba} and {bb}")
    return ba or bb, bool(ba), bool(bb)


def _tiling(M: int, N: int, K: int, cfg: SpyreConfig, per_elem: int,
            double_buffer: bool, turned: tuple[bool, bool] = (False, False)) -> MatmulTiling:
    """The planner's tiling, in a scratchpad shrunk until the epilogue's tiles (and the
    staging tiles of operands fetched turned round) fit too."""
    for share in (1, 2, 4, 8, 16, 32):
        small = dataclasses.replace(cfg, scratchpad_usable_bytes=cfg.scratchpad_usable_bytes // share)
        try:
            t = choose_tiling(M, N, K, small, "fp16", double_buffer, None)
        except ValueError:
            break
        staging = (2 if double_buffer else 1) * 2 * (turned[0] * t.tm * t.tk
                                                     + turned[1] * t.tk * t.tn)
        if working_set(t, "fp16", double_buffer) + per_elem * t.tm * t.tn + staging + 4096 \
                <= cfg.scratchpad_usable_bytes:
            return t
    raise Unmappable(f"no tiling of {M}x{N}x{K} with its epilogue fits the scratchpad")


def plan_matmul_step(ext: L.Extern, epilogue: Kernel | None, schedule: Schedule, live: set[str],
                     cfg: SpyreConfig, double_buffer: bool = True) -> DeviceStep:
    refs = [a for a in ext.args if isinstance(a, L.BufferRef)]
    if len(refs) != 2 or len(ext.args) != 2:
        raise Unmappable("matmul with arguments other than two arrays")
    a, b = (matrix_operand(schedule, r.name) for r in refs)
    batch, a_batched, b_batched = batch_shape(a, b)
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise Unmappable(f"matmul of {a.dtype} by {b.dtype}")
    (M, K), N = a.shape[-2:], b.shape[-1]
    batches = math.prod(batch)
    if batches * M * N * K == 0:
        raise Unmappable("zero elements: an empty product, nothing for the card to compute")
    name = ext.name + (f"+{epilogue.name}" if epilogue else "")
    step = DeviceStep(name, Program(cfg))

    def dram(op: MatrixOperand, rows: int) -> str:
        if op.offset is None:
            return step.dram(op.name, (rows * math.prod(op.shape[:-2]), op.shape[-1]), "input")
        return step.dram(op.name, (1, math.prod(schedule.buffers[op.name].shape)), "input")
    A, B = dram(a, M), dram(b, K)
    if not b_batched and a.offset is None:
        # Every batch multiplies the same B: the batches are one taller 2-D matmul.
        M, batches = M * batches, 1
        a = dataclasses.replace(a, shape=(M, K))
    row, col = _rows_and_col(tuple(ext.shape))
    if epilogue:
        bodies = [s.body for s in epilogue.stores]
        ins = operands(bodies, epilogue.buffers_written | {ext.name}, schedule, step, row, col,
                       M, N)
        outs = [s.buffer for s in epilogue.stores if s.buffer in live]
        if ext.name in live:
            raise Unmappable("the product is read after its epilogue")
        if any(op.kind == "strided" or op.fmt != "fp16" for op in ins) or any(
                schedule.buffers[o].dtype.kind != "f" for o in outs):
            raise Unmappable("an epilogue with strided or non-float operands")
        per_elem = per_element_bytes(bodies, ins, ["fp16"] * len(outs))
    else:
        bodies, ins, outs, per_elem = [], [], [ext.name], 4
    out_dram = {o: step.dram(o, (batches * M, N), "output") for o in outs}
    t = _tiling(M, N, K, cfg, per_elem, double_buffer, (a.transposed, b.transposed))
    chunks = list(range(0, K, t.tk))
    t = dataclasses.replace(t, split_k=max(1, min(t.split_k, len(chunks), cfg.cores)))
    # Output tiles of every batch, dealt to the cores together: a batch of small
    # matmuls fills the card as one large one would.
    tiles = [(n, i, j) for n in range(batches) for i in range(0, M, t.tm)
             for j in range(0, N, t.tn)]
    ranges = [chunks[m * len(chunks) // t.split_k:(m + 1) * len(chunks) // t.split_k]
              for m in range(t.split_k)]
    jobs: list[list[tuple[int, int]]] = [[] for _ in range(cfg.cores)]
    for n in range(len(tiles)):
        for m in range(t.split_k):
            jobs[(n * t.split_k + m) % cfg.cores].append((n, m))
    shape = dict(M=M, N=N, K=K, A=A, B=B, a=a, b=b)
    for core, mine in enumerate(jobs):
        if mine:
            _emit_core(step, core, mine, tiles, ranges, t, shape, epilogue, ext.name, ins, outs,
                       out_dram, double_buffer)
    step.plan = (f"{name}: {f'{batches} x ' if batches > 1 else ''}{M}x{N}x{K}, {t}, over "
                 f"{min(len(tiles) * t.split_k, cfg.cores)} cores"
                 + (", epilogue on the accumulator" if epilogue else "")
                 + ("" if double_buffer else ", single-buffered"))
    return step


def _emit_core(step, core, jobs, tiles, ranges, t, shape, epilogue, product, ins, outs,
               out_dram, double_buffer):
    program, cfg = step.program, step.program.config
    M, N, K, A, B = (shape[k] for k in "MNKAB")
    a_op, b_op = shape["a"], shape["b"]
    batched = lambda op: len(op.shape) > 2  # noqa: E731
    alloc = Allocator(program, core)
    copies = 2 if double_buffer else 1
    a = [alloc(f"a{c}", (t.tm, t.tk)) for c in range(copies)]
    b = [alloc(f"b{c}", (t.tk, t.tn)) for c in range(copies)]
    a_t = [alloc(f"a{c}_t", (t.tk, t.tm)) for c in range(copies)] if a_op.transposed else a
    b_t = [alloc(f"b{c}_t", (t.tn, t.tk)) for c in range(copies)] if b_op.transposed else b
    acc = [alloc(f"acc{c}", (t.tm, t.tn), "fp32") for c in range(copies)]
    part = alloc("part", (t.tm, t.tn), "fp32") if t.split_k > 1 else None
    narrow = {o: alloc(f"out{n}", (t.tm, t.tn)) for n, o in enumerate(outs)}
    ep_bufs = {op.load: alloc(f"in{n}", (t.tm if SHAPE_OF_KIND[op.kind][0] else 1,
                                         t.tn if SHAPE_OF_KIND[op.kind][1] else 1))
               for n, op in enumerate(ins)}
    emitter = TileEmitter(program, core, alloc, t.tm, t.tn)
    emit = lambda *i: program.emit(core, *i)  # noqa: E731
    steps = [(j, k0) for j, (n, m) in enumerate(jobs) for k0 in ranges[m]]

    def extent(j, k0):
        batch, i0, j0 = tiles[jobs[j][0]]
        return batch, i0, j0, min(t.tm, M - i0), min(t.tn, N - j0), min(t.tk, K - k0)

    def load(s):
        j, k0 = steps[s]
        batch, i0, j0, rm, rn, rk = extent(j, k0)
        c = s % copies
        emit(*a_op.fetch(A, a[c].name, a_t[c].name, batch if batched(a_op) else 0,
                         i0, k0, rm, rk, f"ld{s}"),
             *b_op.fetch(B, b[c].name, b_t[c].name, batch if batched(b_op) else 0,
                         k0, j0, rk, rn, f"ld{s}"))

    stored = False
    if double_buffer and steps:
        load(0)
    for s, (j, k0) in enumerate(steps):
        n, member = jobs[j]
        batch, i0, j0, rm, rn, rk = extent(j, k0)
        i0 += batch * M  # the output's row (and the epilogue's) in the (batches * M) x N view
        if member == 0 and k0 == ranges[0][0]:  # the storing member fetches the epilogue's operands
            for op in ins:
                tile, dr, dc = operand_tile(op, ep_bufs[op.load].name, i0, j0, rm, rn)
                emit(DmaLoad(tile, op.dram, dr, dc, f"ep{j}"))
        if double_buffer and s + 1 < len(steps):
            load(s + 1)
        elif not double_buffer:
            load(s)
        emit(DmaWait(f"ld{s}"))
        c = s % copies
        if a_op.transposed:
            emit(Retile("transpose", Tile(a[c].name, rm, rk), Tile(a_t[c].name, rk, rm)))
        if b_op.transposed:
            emit(Retile("transpose", Tile(b[c].name, rk, rn), Tile(b_t[c].name, rn, rk)))
        out = Tile(acc[j % copies].name, rm, rn)
        emit(Matmul(out, Tile(a[s % copies].name, rm, rk), Tile(b[s % copies].name, rk, rn),
                    accumulate=k0 != ranges[member][0]))
        if k0 != ranges[member][-1] or not tree_sum(emit, core, n, member, out, part, t.split_k,
                                                     cfg.cores):
            continue
        results = {product: (out, (True, True))}
        if epilogue:
            if ins:
                emit(DmaWait(f"ep{j}"))
            bound = {op.load: (operand_tile(op, ep_bufs[op.load].name, i0, j0, rm, rn)[0],
                               SHAPE_OF_KIND[op.kind]) for op in ins}
            emitter.begin(rm, rn, bound)
            emitter.define(product, results[product])
            for store in epilogue.pointwise:
                emitter.define(store.buffer, emitter.value(store.body))
            results = emitter.computed
        for o in outs:
            value = results[o]
            if is_scalar(value) or value[0].shape != (rm, rn):
                raise Unmappable(f"{o} is a broadcast value, not one per element")
            tile = Tile(narrow[o].name, rm, rn)
            emit(VectorUnary("cast", tile, value[0]), DmaStore(tile, out_dram[o], i0, j0, "out"))
            stored = True
    if stored:
        emit(DmaWait("out"))


def matmul_cycles_program(M: int, N: int, K: int, cfg: SpyreConfig | None = None,
                          double_buffer: bool = True) -> Program:
    """The program this backend runs for a plain fp16 M x K @ K x N (for timing)."""
    f16 = np.dtype(np.float16)
    buffers = {n: Buffer(n, s, f16, L.contiguous_strides(s), "input")
               for n, s in (("a", (M, K)), ("b", (K, N)))}
    ext = L.Extern("c", "matmul", np.matmul, (L.BufferRef("a"), L.BufferRef("b")), (M, N), f16, "")
    schedule = Schedule(None, [], buffers, [ext], {}, {})
    step = plan_matmul_step(ext, None, schedule, {"c"}, cfg or SpyreConfig(), double_buffer)
    return step.program
