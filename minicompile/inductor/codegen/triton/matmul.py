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
``input_precision="tf32x3"`` for float32 inputs by default: each operand is a
TF32 part plus a TF32 remainder, and three tensor-core products summed keep
float32's accuracy (TF32 alone keeps 10 bits of the mantissa and would not match
NumPy).  A tile whose product holds an inf or NaN is computed again with exact
float32 products (``ieee``), so non-finite values propagate as NumPy's do;
``config.matmul_precision="ieee"`` uses those throughout.
A batched matmul (``[B, M, K] @ [B, K, N]``, either side possibly 2-D or of
batch 1 and broadcast as ``np.matmul`` does) is the same loop with the batch
in the program id: programs ``b * tiles .. (b + 1) * tiles - 1`` compute
matrix ``b``, and an operand that is broadcast over the batch has batch
stride 0.  Any number of batch dimensions
(attention's ``[B, H, S, D] @ [B, H, D, S]``) is one batch axis: the program's
matrix index is unravelled into them, each operand reading its own strides
(0 where it is broadcast).  A stacked matmul (``[..., M, K] @ [K, N]`` of four or more
dimensions, a 1x1 convolution of ``[N, H, W, C]`` activations) is one 2-D
product whose rows are ``a``'s leading dimensions taken together (they must
lie in memory as one axis); the epilogue's loop variables are unravelled
from the row.

An operand is a buffer or a view of one at fixed strides (``k.transpose(0, 1,
3, 2)``, ``x.T``, a slice, a reshape that moves no data): the template reads the
view's elements straight from the buffer, so the view is never copied for BLAS.
Every matmul of float32/float16 operands is then a Triton kernel; on CuPy
arrays that also keeps cuBLAS, which CuPy does not let a CUDA graph capture,
out of ``mode="reduce-overhead"``'s graphs.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import numpy as np

from .... import config, ir
from ....ir.symbolic import SymbolicUnsupported, is_symbolic
from ... import loop_ir as L
from ...lowering import Unsupported, data_loads, lower
from . import kernel as tg
from .ops import triton_type
from .scatter import ScatterTemplate
from ...scheduler import Buffer, Kernel, Schedule, Store

MATMUL_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))


@dataclass(frozen=True)
class Operand:
    """How the template reads one operand: from ``buffer``, at ``offset`` plus
    ``strides`` (in elements, one per dimension of the operand's ``shape``)."""

    buffer: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0


@dataclass
class MatmulTemplate:
    """``out = a @ b`` (``a``: M x K, ``b``: K x N) followed by ``epilogue``'s stores.

    ``store_product`` is set when the product itself is needed as an array (a
    graph output, an Extern's input, read by a later kernel).  ``batch`` is
    None for a 2-D product, else the number of matrices of a ``[batch, M, N]``
    output (``a`` and ``b`` are 2-D or 3-D, a batch of 1 broadcasts)."""

    name: str  # the matmul node
    a: Operand
    b: Operand
    m: int
    n: int
    k: int
    dtype: np.dtype
    epilogue: Kernel | None
    store_product: bool
    origins: list[str] = field(default_factory=list)
    batch_shape: tuple[int, ...] | None = None  # a batched product: the output's leading dimensions
    rows: tuple[int, ...] | None = None  # a stacked product: the output's leading dimensions
    kept: frozenset[str] = frozenset()  # epilogue values nothing after it reads: never stored

    @property
    def batch(self) -> int | None:
        """The number of matrices of a batched product (None for 2-D and stacked ones)."""
        return None if self.batch_shape is None else math.prod(self.batch_shape)

    @property
    def shape(self) -> tuple[int, ...]:
        if self.rows is not None:
            return self.rows + (self.n,)
        return (self.m, self.n) if self.batch_shape is None else self.batch_shape + (self.m, self.n)

    @property
    def stores(self) -> list[str]:
        outs = [self.name] if self.store_product else []
        return outs + ([s.buffer for s in self.epilogue.pointwise if s.buffer not in self.kept] if self.epilogue else [])


def _template_for(ext: L.Extern, schedule: Schedule) -> tuple[Operand, Operand, list[Kernel], list[Buffer]] | None:
    """The operands when ``ext`` is a 2-D, batched or stacked matmul (see the module
    docstring) of two same-dtype float16/float32 arrays, and the copy kernels (with
    their buffers) that lay out an operand not at fixed strides (a reshape of a
    transpose, which NumPy would copy for BLAS too)."""
    if ext.op_name != "matmul" or len(ext.args) != 2 or len(ext.shape) < 2:
        return None
    if not all(isinstance(r, L.BufferRef) for r in ext.args):
        return None
    operands, copies, buffers = [], [], dict(schedule.buffers)
    for ref in ext.args:
        operand = operand_of(ref.name, schedule, buffers, copies)
        if operand is None:
            return None
        operands.append(operand)
    a, b = operands
    if len(a.shape) < 2 or len(b.shape) < 2:
        return None  # a vector
    dtype = buffers[a.buffer].dtype
    if buffers[b.buffer].dtype != dtype or dtype not in MATMUL_DTYPES or ext.dtype != dtype:
        return None
    if 0 in ext.shape or a.shape[-1] == 0:
        return None
    return a, b, copies, [buffers[k.pointwise[0].buffer] for k in copies]


def operand_of(name: str, schedule: Schedule, buffers: dict[str, Buffer], copies: list[Kernel]) -> Operand | None:
    """How a template reads ``name``: at its strides (:func:`_strided`), or, for a view at no
    fixed strides, from a C-contiguous copy whose kernel is appended to ``copies`` (its buffer
    added to ``buffers``); None when neither is possible."""
    operand = _strided(name, schedule)
    if operand is None:
        copy = _copy_of_view(name, schedule)
        if copy is None:
            return None
        copies.append(copy[0])
        buffers[copy[1].name] = copy[1]
        operand = Operand(copy[1].name, copy[1].shape, copy[1].strides)
    return operand


def _view_load(name: str, schedule: Schedule) -> tuple[ir.Node, L.Load] | None:
    """``name``'s node and its elements as one load from a buffer (a chain of views
    composed), or None when ``name`` is no view of a buffer."""
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None or node.kind != "call":
        return None
    try:
        low = lower(node)
    except (Unsupported, SymbolicUnsupported):  # (a view loop IR cannot index: the matmul stays NumPy's)
        return None
    if not (isinstance(low, L.Pointwise) and low.is_view and isinstance(low.body, L.Load)):
        return None
    load = low.body
    while load.buffer not in schedule.buffers:
        inner = _view_load(load.buffer, schedule)
        if inner is None:
            return None
        source = lower(inner[0])
        load = L.substitute(inner[1], dict(zip(source.vars, load.index)))
    return node, load


def _copy_of_view(name: str, schedule: Schedule) -> tuple[Kernel, Buffer] | None:
    """A pointwise kernel that writes view ``name`` into a C-contiguous buffer of its own."""
    found = _view_load(name, schedule)
    if found is None:
        return None
    node, load = found
    buffer = Buffer(f"{name}_contiguous", tuple(node.shape), node.dtype, L.contiguous_strides(node.shape), "kernel")
    kernel = Kernel(buffer.name, tuple(node.shape), pointwise=[Store(buffer.name, load)], origins=[name])
    return kernel, buffer


def _strided(name: str, schedule: Schedule) -> Operand | None:
    """``name`` as an :class:`Operand`: a buffer, or a chain of views of one whose
    index into it is affine (no division or remainder, so its elements lie at fixed
    strides).  None for any other view, and for a view of symbolic sizes."""
    if name in schedule.buffers:
        buf = schedule.buffers[name]
        return Operand(name, tuple(buf.shape), tuple(buf.strides))
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None or node.kind != "call" or is_symbolic(node.shape):
        return None
    low = lower(node)
    if not (isinstance(low, L.Pointwise) and low.is_view and isinstance(low.body, L.Load)):
        return None
    source = _strided(low.body.buffer, schedule)
    if source is None or is_symbolic(source.shape) or is_symbolic(source.strides):
        return None
    flat = L.linearize(low.body.index, source.strides) + source.offset
    if not all(isinstance(atom, L.Var) and isinstance(c, int) for atom, c in flat.terms):
        return None
    strides = tuple(flat.coeff(v) if n != 1 else 0 for v, n in zip(low.vars, node.shape))
    return Operand(source.buffer, tuple(node.shape), strides, flat.const)


def _row_stride(a: Operand) -> int | None:
    """The stride of one row when ``a``'s leading dimensions (all but the last)
    lie in memory as one axis of rows, else None (or for symbolic sizes)."""
    if is_symbolic(a.strides) or is_symbolic(a.shape[1:]):
        return None  # (a symbolic outermost size, a dynamic batch, is never part of a stride)
    lead = [(d, s) for d, s in zip(a.shape[:-1], a.strides[:-1]) if is_symbolic(d) or d != 1]
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
        reads = {step.a.buffer, step.b.buffer}
        return reads | (_reads(step.epilogue) if step.epilogue else set())
    if hasattr(step, "reads"):  # another template (attention) says what it reads
        return set(step.reads)
    if isinstance(step, ScatterTemplate):  # it adds into its own buffer, made by the copy before it
        return {step.name} | {k.name for k in step.keys} | ({step.value.name} if isinstance(step.value, Buffer) else set())
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
    buffers, decisions = dict(schedule.buffers), dict(schedule.decisions)
    i = 0
    while i < len(steps):
        step = steps[i]
        found = _template_for(step, schedule) if isinstance(step, L.Extern) else None
        if found is None:
            out.append(step)
            i += 1
            continue
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        epilogue = nxt if _fusable_epilogue(nxt, step.name, step.shape) else None
        after = live[i + 1 if epilogue else i]
        needed = step.name in after
        kept = frozenset(s.buffer for s in epilogue.pointwise if s.buffer not in after) if epilogue else frozenset()
        *operands, copies, copy_buffers = found
        out.extend(copies)  # operands laid out first, each by a pointwise kernel
        for name, why in decisions.items():  # what the scheduler said of the matmul's inputs
            decisions[name] = re.sub(rf"\bextern {re.escape(step.name)}\b", f"template {step.name}", why)
        for ref in step.args:
            if ref.name in decisions and ref.name not in schedule.buffers:
                how = "copied by a kernel (no fixed strides)" if any(ref.name in c.origins for c in copies) \
                    else "read by the template at its strides"
                decisions[ref.name] = f"view: {how}, an operand of template {step.name}"
        buffers.update((b.name, b) for b in copy_buffers)
        (m, n), k = step.shape[-2:], operands[0].shape[-1]
        # Stacked when a's rows lie as one axis; else batched, b broadcast over the batch.
        stacked = len(step.shape) > 3 and len(operands[1].shape) == 2 and _row_stride(operands[0]) is not None
        rows = tuple(step.shape[:-1]) if stacked else None
        batch_shape = tuple(step.shape[:-2]) if len(step.shape) > 2 and not stacked else None
        if rows is not None:
            m = math.prod(rows)
        origins = [step.name] + (list(epilogue.origins) if epilogue else [])
        out.append(MatmulTemplate(step.name, *operands, m, n, k, step.dtype, epilogue,
                                  needed or epilogue is None, list(dict.fromkeys(origins)), batch_shape, rows, kept))
        i += 2 if epilogue else 1
    for s in out:
        if isinstance(s, MatmulTemplate):
            buffers[s.name] = replace(buffers[s.name], kind="kernel")
    return replace(schedule, steps=out, buffers=buffers, decisions=decisions)


def matmul_kernel(t: MatmulTemplate, name: str, buffers: dict[str, Buffer]) -> tg.TritonKernel:
    """The template's source: tiled ``tl.dot`` loop, then the epilogue on the tile."""
    outs = t.stores
    w = tg.ValueWriter(buffers, set(outs), t.kept)
    a, b = t.a, t.b
    w.pointer(a.buffer), w.pointer(b.buffer)
    sizes = [buffers[a.buffer].numel, buffers[b.buffer].numel, t.m * t.n * (t.batch or 1)]
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
    precision = config.matmul_precision if t.dtype == np.dtype(np.float32) else None
    _k_loop(w, t, precision)
    if precision == "tf32x3":
        w.line("# A tile with an inf or NaN is computed again with exact float32 products: an operand")
        w.line("# within 2**-11 of float32's largest value rounds to inf as TF32, where NumPy stays finite.")
        w.line("if tl.reduce(tl.where(tl.abs(acc) < float('inf'), 0, 1), None, _maximum) > 0:")
        w.depth += 1
        _k_loop(w, t, "ieee")
        w.depth -= 1
    # The epilogue's loop variables: (x0, x1) = (row, column), or (x0, .., row, column)
    # with the batch dimensions unravelled from the matrix index, spread over the tile.
    nb = len(t.batch_shape or ())
    row, col = f"x{nb}", f"x{nb + 1}"
    if t.rows is not None:
        row, col = "row", f"x{len(t.rows)}"
    w.line(f"{row} = rm[:, None]")
    w.line(f"{col} = rn[None, :]")
    w.line(f"xmask = ({row} < M) & ({col} < N)")
    w.zero_block, w.block_vars = f"0 * ({row} + {col})", {row, col}
    if t.rows is not None:  # the stacked output's leading loop variables, from the row
        for i in range(len(t.rows)):
            w.line(f"x{i} = {_unravel(row, t.rows, i)}")
        w.block_vars = {f"x{i}" for i in range(len(t.rows) + 1)}
    for i in range(nb):
        w.line(f"x{i} = {_unravel('batch', t.batch_shape, i)} + {w.zero_block}")
    if t.batch_shape is not None:
        w.block_vars = {f"x{i}" for i in range(nb + 2)}
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


def _k_loop(w: tg.ValueWriter, t: MatmulTemplate, precision: str | None) -> None:
    """Write ``acc``, the tile's product: the loop over K in ``BLOCK_K`` steps, each
    loading a ``[BLOCK_M, BLOCK_K]`` tile of ``a`` and a ``[BLOCK_K, BLOCK_N]`` tile
    of ``b`` at their strides; ``precision`` is ``tl.dot``'s for float32 (None: float16)."""
    a, b, st = t.a, t.b, tg.size_text
    w.line("acc = tl.full([BLOCK_M, BLOCK_N], 0.0, tl.float32)")
    w.line("for k in range(0, K, BLOCK_K):")
    w.depth += 1
    row_stride = a.strides[-2] if t.rows is None else _row_stride(a)
    a_ptr = (f"in_{a.buffer} + {_batch_offset(a, t.batch_shape)}ram[:, None] * {st(row_stride)}"
             f" + (k + rk)[None, :] * {st(a.strides[-1])}")
    b_ptr = (f"in_{b.buffer} + {_batch_offset(b, t.batch_shape)}(k + rk)[:, None] * {st(b.strides[-2])}"
             f" + rbn[None, :] * {st(b.strides[-1])}")
    if not is_symbolic(t.k) and t.k % 64 == 0:
        # BLOCK_K (16, 32 or 64 in every config) divides K: every K block is whole.
        w.line(f"a = tl.load({a_ptr})")
        w.line(f"b = tl.load({b_ptr})")
    else:
        w.line(f"a = tl.load({a_ptr}, mask=(k + rk)[None, :] < K, other=0.0)")
        w.line(f"b = tl.load({b_ptr}, mask=(k + rk)[:, None] < K, other=0.0)")
    w.line(f"acc = tl.dot(a, b, acc{f', input_precision={precision!r}' if precision else ''})")
    w.depth -= 1


def _unravel(flat: str, shape: tuple[int, ...], i: int) -> str:
    """The text of index ``i`` of ``flat`` unravelled over ``shape`` (C order)."""
    inner = math.prod(shape[i + 1:])
    text = f"({flat} // {tg.size_text(inner)})" if inner != 1 else flat
    return f"{text} % {tg.size_text(shape[i])}" if i else text


def _batch_offset(operand: Operand, batch_shape: tuple[int, ...] | None) -> str:
    """``offset + `` the operand's matrix of program ``batch``: its batch dimensions
    right-aligned with the output's, those of size 1 (broadcast) contributing nothing."""
    terms = [str(operand.offset)] if operand.offset else []
    lead = operand.shape[:-2]
    for i, d in enumerate(batch_shape or ()):
        j = i - (len(batch_shape) - len(lead))
        if j >= 0 and lead[j] != 1:
            terms.append(f"({_unravel('batch', batch_shape, i)}) * {tg.size_text(operand.strides[j])}")
    return "".join(f"{t} + " for t in terms)


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
