"""The Triton matmul template and the pass that fuses epilogues into it.

In:  a :class:`~...scheduler.Schedule` in which every matmul is an Extern (the
     scheduler does not know templates).
Out: :func:`fuse_matmul_epilogues` returns a schedule where each 2-D or
     batched (3-D) float16 or float32 matmul is a :class:`MatmulTemplate` step, together with the
     pointwise kernel right after it when that kernel reads the product only
     at its own element — so ``gelu(x @ w + b)`` is one kernel: the bias, the
     activation, a residual add or a scale run on the accumulator tile in
     registers, and the product never goes to memory.  :func:`matmul_kernel`
     writes the template's source.

The template is the classic tiled ``tl.dot`` loop: one ``[BLOCK_M, BLOCK_N]``
tile of the output per program, ``GROUP_M`` rows of tiles launched together so
that they share columns of ``B`` in L2, float32 accumulation, and
``input_precision="ieee"`` for float32 inputs (TF32 would not match NumPy).
A batched matmul (``[B, M, K] @ [B, K, N]``, either side possibly 2-D or of
batch 1 and broadcast as ``np.matmul`` does) is the same loop with the batch
in the program id: programs ``b * tiles .. (b + 1) * tiles - 1`` compute
matrix ``b``, and an operand that is broadcast over the batch has batch
stride 0.  A stacked matmul (``[..., M, K] @ [K, N]`` of four or more
dimensions, a 1x1 convolution of ``[N, H, W, C]`` activations) is one 2-D
product whose rows are ``a``'s leading dimensions taken together (they must
lie in memory as one axis); the epilogue's loop variables are unravelled
from the row.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...lowering import data_loads
from . import kernel as tg
from .ops import triton_type
from ...scheduler import Buffer, Kernel, Schedule
from .versions import DOT_IEEE

MATMUL_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))


@dataclass
class MatmulTemplate:
    """``out = a @ b`` (``a``: M x K, ``b``: K x N) followed by ``epilogue``'s stores.

    ``store_product`` is set when the product itself is needed as an array (a
    graph output, an Extern's input, read by a later kernel).  ``batch`` is
    None for a 2-D product, else the number of matrices of a ``[batch, M, N]``
    output (``a`` and ``b`` are 2-D or 3-D, a batch of 1 broadcasts)."""

    name: str  # the matmul node
    a: str
    b: str
    m: int
    n: int
    k: int
    dtype: np.dtype
    epilogue: Kernel | None
    store_product: bool
    origins: list[str] = field(default_factory=list)
    batch: int | None = None
    rows: tuple[int, ...] | None = None  # a stacked product: the output's leading dimensions
    kept: frozenset[str] = frozenset()  # epilogue values nothing after it reads: never stored

    @property
    def shape(self) -> tuple[int, ...]:
        if self.rows is not None:
            return self.rows + (self.n,)
        return (self.m, self.n) if self.batch is None else (self.batch, self.m, self.n)

    @property
    def stores(self) -> list[str]:
        outs = [self.name] if self.store_product else []
        return outs + ([s.buffer for s in self.epilogue.pointwise if s.buffer not in self.kept] if self.epilogue else [])


def _template_for(ext: L.Extern, buffers: dict[str, Buffer]) -> tuple[str, str] | None:
    """(a, b) when ``ext`` is a 2-D, batched 3-D or stacked matmul (see the module
    docstring) of two same-dtype float16/float32 buffers."""
    if ext.op_name != "matmul" or len(ext.args) != 2 or len(ext.shape) < 2:
        return None
    refs = ext.args
    if not all(isinstance(r, L.BufferRef) and r.name in buffers for r in refs):
        return None  # a view operand: NumPy hands it to BLAS, we keep the Extern
    a, b = (buffers[r.name] for r in refs)
    if len(ext.shape) > 3 and not (len(b.shape) == 2 and _row_stride(a) is not None):
        return None
    if len(ext.shape) <= 3 and (len(a.shape) not in (2, 3) or len(b.shape) not in (2, 3)):
        return None
    if a.dtype != b.dtype or a.dtype not in MATMUL_DTYPES:
        return None
    if ext.dtype != a.dtype or 0 in a.shape or 0 in b.shape:
        return None
    return refs[0].name, refs[1].name


def _row_stride(a: Buffer) -> int | None:
    """The stride of one row when ``a``'s leading dimensions (all but the last)
    lie in memory as one axis of rows, else None (or for symbolic sizes)."""
    lead = [(d, s) for d, s in zip(a.shape[:-1], a.strides[:-1]) if d != 1]
    if is_symbolic(a.shape) or is_symbolic(a.strides):
        return None
    if not lead:
        return 0
    for (_, outer), (d, inner) in zip(lead, lead[1:]):
        if outer != inner * d:
            return None
    return lead[-1][1]


def _reads(step) -> set[str]:
    if isinstance(step, Kernel):
        return {ld.buffer for s in step.stores for ld in data_loads(s.body)}
    if isinstance(step, L.Extern):
        return set(step.inputs)
    if isinstance(step, MatmulTemplate):
        reads = {step.a, step.b}
        return reads | (_reads(step.epilogue) if step.epilogue else set())
    return set()


def _fusable_epilogue(kernel, product: str, shape: tuple[int, ...]) -> bool:
    if not isinstance(kernel, Kernel) or kernel.reductions or kernel.ranges != shape:
        return False
    identity = L.loop_index("x", shape)
    uses = [ld for s in kernel.pointwise for ld in L.loads(s.body) if ld.buffer == product]
    return bool(uses) and all(ld.index == identity for ld in uses)


def fuse_matmul_epilogues(schedule: Schedule) -> Schedule:
    """Replace each eligible matmul Extern (+ its pointwise epilogue) by a template."""
    steps = list(schedule.steps)
    live = schedule.live_after(_reads)
    out: list = []
    i = 0
    while i < len(steps):
        step = steps[i]
        operands = _template_for(step, schedule.buffers) if isinstance(step, L.Extern) else None
        if operands is None:
            out.append(step)
            i += 1
            continue
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        epilogue = nxt if _fusable_epilogue(nxt, step.name, step.shape) else None
        after = live[i + 1 if epilogue else i]
        needed = step.name in after
        kept = frozenset(s.buffer for s in epilogue.pointwise if s.buffer not in after) if epilogue else frozenset()
        (m, n), k = step.shape[-2:], schedule.buffers[operands[0]].shape[-1]
        batch = step.shape[0] if len(step.shape) == 3 else None
        rows = tuple(step.shape[:-1]) if len(step.shape) > 3 else None
        if rows is not None:
            m = math.prod(rows)
        origins = [step.name] + (list(epilogue.origins) if epilogue else [])
        out.append(MatmulTemplate(step.name, *operands, m, n, k, step.dtype, epilogue,
                                  needed or epilogue is None, list(dict.fromkeys(origins)), batch, rows, kept))
        i += 2 if epilogue else 1
    buffers = dict(schedule.buffers)
    for s in out:
        if isinstance(s, MatmulTemplate):
            buffers[s.name] = replace(buffers[s.name], kind="kernel")
    return replace(schedule, steps=out, buffers=buffers)


def matmul_kernel(t: MatmulTemplate, name: str, buffers: dict[str, Buffer]) -> tg.TritonKernel:
    """The template's source: tiled ``tl.dot`` loop, then the epilogue on the tile."""
    outs = t.stores
    w = tg.ValueWriter(buffers, set(outs), t.kept)
    a, b = buffers[t.a], buffers[t.b]
    w.pointer(t.a), w.pointer(t.b)
    sizes = [a.numel, b.numel, t.m * t.n * (t.batch or 1)]
    big = is_symbolic(sizes) or max(sizes) >= 2**31  # symbolic: 64-bit, right for any size
    pid = "tl.program_id(0).to(tl.int64)" if big else "tl.program_id(0)"
    w.line(f"M, N, K = {t.m}, {t.n}, {t.k}")
    w.line(f"pid = {pid}")
    w.line("tiles_m, tiles_n = (M + BLOCK_M - 1) // BLOCK_M, (N + BLOCK_N - 1) // BLOCK_N")
    if t.batch is not None:
        w.line("# Each matrix of the batch is tiles_m * tiles_n programs.")
        w.line("batch = pid // (tiles_m * tiles_n)")
        w.line("pid = pid % (tiles_m * tiles_n)")
    w.line("# GROUP_M rows of tiles run together and share B's columns in L2.")
    w.line("group = pid // (GROUP_M * tiles_n)")
    w.line("group_rows = tl.minimum(tiles_m - group * GROUP_M, GROUP_M)")
    w.line("pid_m = group * GROUP_M + (pid % group_rows)")
    w.line("pid_n = (pid % (GROUP_M * tiles_n)) // group_rows")
    w.line("rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)")
    w.line("rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)")
    w.line("# Rows/columns past the edge re-read valid ones (never stored): no load masks.")
    w.line("ram = rm % M")
    w.line("rbn = rn % N")
    w.line("rk = tl.arange(0, BLOCK_K)")
    w.line("acc = tl.full([BLOCK_M, BLOCK_N], 0.0, tl.float32)")
    w.line("for k in range(0, K, BLOCK_K):")
    w.depth += 1
    st = tg.size_text
    row_stride = a.strides[-2] if t.rows is None else _row_stride(a)
    a_ptr = f"in_{t.a} + {_batch_offset(a)}ram[:, None] * {st(row_stride)} + (k + rk)[None, :] * {st(a.strides[-1])}"
    b_ptr = f"in_{t.b} + {_batch_offset(b)}(k + rk)[:, None] * {st(b.strides[-2])} + rbn[None, :] * {st(b.strides[-1])}"
    if not is_symbolic(t.k) and t.k % 64 == 0:
        # BLOCK_K (16, 32 or 64 in every config) divides K: every K block is whole.
        w.line(f"a = tl.load({a_ptr})")
        w.line(f"b = tl.load({b_ptr})")
    else:
        w.line(f"a = tl.load({a_ptr}, mask=(k + rk)[None, :] < K, other=0.0)")
        w.line(f"b = tl.load({b_ptr}, mask=(k + rk)[:, None] < K, other=0.0)")
    precision = f", {DOT_IEEE}" if t.dtype == np.dtype(np.float32) else ""
    w.line(f"acc = tl.dot(a, b, acc{precision})")
    w.depth -= 1
    # The epilogue's loop variables: (x0, x1) = (row, column), or (x0, x1, x2)
    # = (matrix, row, column), the matrix index spread over the whole tile.
    row, col = ("x0", "x1") if t.batch is None else ("x1", "x2")
    if t.rows is not None:
        row, col = "row", f"x{len(t.rows)}"
    w.line(f"{row} = rm[:, None]")
    w.line(f"{col} = rn[None, :]")
    w.line(f"xmask = ({row} < M) & ({col} < N)")
    w.zero_block, w.block_vars = f"0 * ({row} + {col})", {row, col}
    if t.rows is not None:  # the stacked output's leading loop variables, from the row
        for i, d in enumerate(t.rows):
            inner = math.prod(t.rows[i + 1:])
            text = f"({row} // {inner})" if inner != 1 else row
            w.line(f"x{i} = {text} % {d}" if i else f"x{i} = {text}")
        w.block_vars = {f"x{i}" for i in range(len(t.rows) + 1)}
    if t.batch is not None:
        w.line(f"x0 = batch + {w.zero_block}")
    product = "product"
    w.line(f"{product} = acc.to({triton_type(t.dtype)})  # rounded as NumPy rounds its result")
    identity = L.loop_index("x", t.shape)
    w.forwarded[(t.name, identity)] = product
    shape = "[BLOCK_M, BLOCK_N]"
    if t.store_product:
        w.store(t.name, identity, product, shape, "xmask")
    if t.epilogue is not None:
        for store in t.epilogue.pointwise:
            w.store(store.buffer, identity, store.body, shape, "xmask")
    header, params = tg.signature(name, w, outs, ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"])
    configs = _configs(t)
    return tg.TritonKernel(name, "matmul", params, ("matmul", t.m, t.n, t.batch or 1), configs,
                           "\n".join([header] + w.lines), outs)


def _batch_offset(operand: Buffer) -> str:
    """``batch * stride + `` for a 3-D operand; nothing for one broadcast over the batch."""
    if len(operand.shape) == 3 and operand.shape[0] != 1:
        return f"batch * {tg.size_text(operand.strides[0])} + "
    return ""


def _configs(t: MatmulTemplate) -> list[dict[str, int]]:
    """The default first (sized down for small problems), then classic GPU tilings."""
    bm = min(64, max(16, tg.next_power_of_2(t.m)))
    bn = min(64, max(16, tg.next_power_of_2(t.n)))
    bk = min(32, max(16, tg.next_power_of_2(t.k)))
    default = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=4, num_stages=3)
    tilings = [(128, 128, 32, 4, 4), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3),
               (256, 128, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 32, 4, 4)]
    small = max(tg.size_hint(t.m), tg.size_hint(t.n)) < 128  # by the example's sizes
    extra = [] if small else [dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, GROUP_M=8, num_warps=w, num_stages=s)
                              for m, n, k, w, s in tilings]
    return [default] + extra
