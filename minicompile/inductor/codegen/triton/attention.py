"""Scaled dot-product attention as one flash-style Triton kernel.

In:  a graph about to be scheduled for Triton, in which ``inductor/fuse_attention.py``
     made each attention pattern one ``attention`` node; then its schedule
     (:func:`attention_templates`).
Out: the schedule with each such node an :class:`AttentionTemplate`, whose kernel
     :func:`attention_kernel` writes.

The kernel is FlashAttention's forward (Dao et al., 2022): one program per
``BLOCK_M`` rows of queries of one batch matrix; it streams ``BLOCK_N``
columns of ``kᵀ`` and rows of ``v`` at a time, keeps the row's running
maximum ``m``, the running sum ``l`` of ``exp(s - m)`` and the accumulator
``acc`` of ``exp(s - m) @ v`` in registers, rescaling both by ``exp(m_old -
m_new)`` when the maximum grows, and divides once at the end.  The
``[M, N]`` score matrix never exists in memory: per head it reads q, k, v and
the mask once and writes the output once.  Masked entries take ``fill`` as in
NumPy; where the running maximum is still ``-inf`` (every column so far masked
with ``-inf``), the exponentials are taken against 0 instead, so a row whose
later columns are unmasked is unaffected and a row masked entirely gives
``0 / 0``: NaN, as NumPy's ``exp(-inf - -inf)`` does.  A block the mask
hides entirely is skipped where that is exact: always for a fill of ``-inf``,
and for a finite fill once every row's maximum is far enough above it that
``exp(fill - m)`` is 0 in float32 (the upper half of a causal mask).  Sums
run in float32 (float16 inputs included) in another order than NumPy's, and
float32 products are "tf32x3" (see ``DOT_PRECISION``): results agree to float
tolerance, not bit for bit.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...scheduler import Buffer, Kernel, Schedule
from . import kernel as tg
from .matmul import MATMUL_DTYPES, Operand, operand_of
from .ops import literal, triton_type

# The float32 products' precision: "tf32x3" splits each float32 operand into a TF32
# high part and a TF32 remainder and sums three tensor-core products, which is float32's
# precision to within a few units in the last place (TF32 alone keeps 10 bits and
# would not match NumPy).  With exact "ieee" products the H200 runs this kernel on
# CUDA cores, several times slower than the unfused matmuls (benchmarks/gpu_models.py).
DOT_PRECISION = 'input_precision="tf32x3"'


# -- the template, on the schedule ---------------------------------------------------------

@dataclass
class AttentionTemplate:
    """``out = attention(q, kt, v, mask, ...)`` over ``batch_shape`` matrices of
    ``[m, d] x [d, n] -> softmax -> [n, dv]``."""

    name: str
    q: Operand
    kt: Operand
    v: Operand
    mask: Operand | None
    scale: float | None
    divide: bool
    fill: float | None
    batch_shape: tuple[int, ...]
    m: int
    n: int
    d: int
    dv: int
    dtype: np.dtype
    origins: list[str] = field(default_factory=list)

    @property
    def stores(self) -> list[str]:
        return [self.name]

    @property
    def reads(self) -> set[str]:
        return {o.buffer for o in (self.q, self.kt, self.v, self.mask) if o is not None}


def operand(ref: Any, schedule: Schedule, buffers: dict, copies: list) -> Operand | None:
    return operand_of(ref.name, schedule, buffers, copies) if isinstance(ref, L.BufferRef) else None


def template_for(ext: L.Extern, schedule: Schedule, buffers: dict) -> tuple[AttentionTemplate, list] | None:
    """The forward template of an ``attention`` Extern and the copies laying out views it
    cannot read at strides; None where it does not apply (the op runs as its reference)."""
    if ext.op_name != "attention" or len(ext.args) != 7 or is_symbolic(ext.shape) or 0 in ext.shape:
        return None
    q_ref, kt_ref, v_ref, mask_ref, scale, divide, fill = ext.args
    copies: list[Kernel] = []
    q, kt, v = (operand(r, schedule, buffers, copies) for r in (q_ref, kt_ref, v_ref))
    mask = operand(mask_ref, schedule, buffers, copies) if mask_ref is not None else None
    if q is None or kt is None or v is None or (mask_ref is not None and mask is None):
        return None
    if any(is_symbolic(o.shape) or is_symbolic(o.strides) for o in (q, kt, v)):
        return None
    if not (buffers[q.buffer].dtype == buffers[kt.buffer].dtype == buffers[v.buffer].dtype == ext.dtype
            and ext.dtype in MATMUL_DTYPES):
        return None
    batch_shape = tuple(ext.shape[:-2])
    m, dv = ext.shape[-2:]
    d, n = kt.shape[-2:]
    origins = [ext.name]
    return AttentionTemplate(ext.name, q, kt, v, mask, scale, divide, fill, batch_shape, m, n, d, dv,
                             ext.dtype, origins), copies


# What each template does, as the schedule says it (by the Extern's op and the result's name).
DECISIONS = {
    "attention": "template: flash attention, online softmax over blocks of kᵀ and v, the scores never stored",
    "stats": "template: flash attention backward, each row's softmax maximum and sum over blocks of kᵀ",
    "q": "template: flash attention backward, dq over blocks of keys, the softmax's weights recomputed",
    "kt": "template: flash attention backward, dkᵀ over blocks of queries, the softmax's weights recomputed",
    "v": "template: flash attention backward, dv over blocks of queries, the softmax's weights recomputed",
}


def attention_templates(schedule: Schedule, makers: tuple[Callable, ...] = (template_for,)) -> Schedule:
    """Replace each Extern one of ``makers`` (``template_for`` and the backward's) takes by
    its template (operands that are views at no fixed strides laid out first by a
    pointwise kernel each)."""
    out: list = []
    buffers, decisions = dict(schedule.buffers), dict(schedule.decisions)
    for step in schedule.steps:
        found = None
        for make in makers if isinstance(step, L.Extern) else ():
            found = found or make(step, schedule, buffers)
        if found is None:
            out.append(step)
            continue
        template, copies = found
        out += copies + [template]
        buffers[step.name] = replace(buffers[step.name], kind="kernel")
        decisions[step.name] = DECISIONS[getattr(template, "wrt", "attention")]
        for name, why in decisions.items():
            decisions[name] = re.sub(rf"\bextern {re.escape(step.name)}\b", f"template {step.name}", why)
    return replace(schedule, steps=out, buffers=buffers, decisions=decisions)


def offset_of(o: Operand, batch_shape: tuple[int, ...]) -> str:
    """``offset + `` the operand's matrix of program ``batch`` (broadcast dimensions: 0)."""
    terms = [str(o.offset)] if o.offset else []
    lead = o.shape[:-2]
    for i, _ in enumerate(batch_shape):
        j = i - (len(batch_shape) - len(lead))
        if j >= 0 and lead[j] != 1:
            inner = math.prod(batch_shape[i + 1:])
            index = f"(batch // {inner})" if inner != 1 else "batch"
            terms.append(f"({index} % {batch_shape[i]}) * {o.strides[j]}")
    return "".join(f"{t} + " for t in terms)


def matrix_strides(o: Operand) -> tuple[int, int]:
    """The strides of the operand's last two axes (0 where it broadcasts along one)."""
    shape, strides = o.shape, o.strides
    rows = strides[-2] if len(shape) >= 2 and shape[-2] != 1 else 0
    return rows, strides[-1] if shape[-1] != 1 else 0


def attention_kernel(t: AttentionTemplate, name: str, buffers: dict[str, Buffer]) -> tg.TritonKernel:
    """The flash-attention forward (see the module docstring)."""
    w = tg.ValueWriter(buffers, {t.name})
    q, kt, v = (w.pointer(o.buffer) for o in (t.q, t.kt, t.v))
    mask = w.pointer(t.mask.buffer) if t.mask is not None else None
    batch = math.prod(t.batch_shape)
    sizes = [buffers[o.buffer].numel for o in (t.q, t.kt, t.v)] + [batch * t.m * max(t.n, t.dv)]
    pid = "tl.program_id(0).to(tl.int64)" if max(sizes) >= 2**31 else "tl.program_id(0)"
    f32 = "tl.float32"
    w.line(f"M, N, D, DV = {t.m}, {t.n}, {t.d}, {t.dv}")
    w.line(f"pid = {pid}")
    w.line("tiles_m = (M + BLOCK_M - 1) // BLOCK_M")
    w.line("batch = pid // tiles_m")
    w.line("rm = (pid % tiles_m) * BLOCK_M + tl.arange(0, BLOCK_M)")
    w.line("rd = tl.arange(0, BLOCK_D)")
    w.line("rdv = tl.arange(0, BLOCK_DV)")
    (qm, qd), (kd, kn), (vn, vd) = (matrix_strides(o) for o in (t.q, t.kt, t.v))
    w.line(f"q = tl.load({q} + {offset_of(t.q, t.batch_shape)}rm[:, None] * {qm} + rd[None, :] * {qd}, "
           "mask=(rm[:, None] < M) & (rd[None, :] < D), other=0.0)")
    w.line(f"m_i = tl.full([BLOCK_M], -INF, {f32})")
    w.line(f"l_i = tl.full([BLOCK_M], 0.0, {f32})")
    w.line(f"acc = tl.full([BLOCK_M, BLOCK_DV], 0.0, {f32})")
    w.line("for start in range(0, N, BLOCK_N):")
    w.depth += 1
    w.line("rn = start + tl.arange(0, BLOCK_N)")
    w.line("inside = rn[None, :] < N")
    precision = f", {DOT_PRECISION}" if t.dtype == np.dtype(np.float32) else ""
    if t.mask is not None:
        mm, mn = matrix_strides(t.mask)
        fill = np.asarray(t.fill).astype(t.dtype).item()  # NumPy's where casts it (-1e9 is -inf in float16)
        w.line(f"keep = tl.load({mask} + {offset_of(t.mask, t.batch_shape)}rm[:, None] * {mm} + rn[None, :] * {mn}, "
               "mask=(rm[:, None] < M) & inside, other=0)")
        # A tile masked entirely adds exp(fill - m) = 0 exactly to each row once the row's
        # maximum is over 110 above the fill (float32's exp is 0 below -104), and always
        # for a fill of -inf: skipped, the causal mask's upper half costs nothing.
        w.line("live = tl.reduce(keep.to(tl.int32), None, _maximum) != 0")
        if math.isinf(fill) and fill < 0:
            w.line("if live:")
        else:
            w.line(f"settled = (tl.reduce(m_i, None, _minimum) - {literal(fill, np.dtype(np.float32))}) > 110.0")
            w.line("if live | (settled == 0):")
        w.depth += 1
    w.line(f"kt = tl.load({kt} + {offset_of(t.kt, t.batch_shape)}rd[:, None] * {kd} + rn[None, :] * {kn}, "
           "mask=(rd[:, None] < D) & (rn[None, :] < N), other=0.0)")
    w.line(f"s = tl.dot(q, kt{precision})")
    w.line(f"s = s.to({triton_type(t.dtype)}).to({f32})  # the product rounded as NumPy's matmul rounds it")
    if t.scale is not None:
        w.line(f"s = s {'/' if t.divide else '*'} {literal(float(t.scale), np.dtype(np.float32))}")
    if t.mask is not None:
        w.line(f"s = tl.where(keep != 0, s, {literal(fill, np.dtype(np.float32))})")
    w.line("s = tl.where(inside, s, -INF)  # columns past the end count for nothing")
    w.line("m_new = tl.maximum(m_i, tl.reduce(s, 1, _maximum))  # (the prelude's combine functions: see ops.py)")
    w.line("# Against 0 while every column so far is -inf: exp gives 0, never -inf - -inf.")
    w.line("m_ref = tl.where(m_new == -INF, 0.0, m_new)")
    w.line("alpha = tl.exp(m_i - m_ref)")
    w.line("p = tl.exp(s - m_ref[:, None])")
    w.line("l_i = l_i * alpha + tl.reduce(p, 1, _add)")
    w.line(f"vt = tl.load({v} + {offset_of(t.v, t.batch_shape)}rn[:, None] * {vn} + rdv[None, :] * {vd}, "
           "mask=(rn[:, None] < N) & (rdv[None, :] < DV), other=0.0)")
    w.line(f"acc = acc * alpha[:, None] + tl.dot(p.to({triton_type(t.dtype)}), vt{precision})")
    w.line("m_i = m_new")
    w.depth -= 1 + (t.mask is not None)
    w.line("result = acc / l_i[:, None]")
    out = Operand(t.name, tuple(buffers[t.name].shape), tuple(buffers[t.name].strides))
    om, od = matrix_strides(out)
    w.line(f"tl.store(out_{t.name} + {offset_of(out, t.batch_shape)}rm[:, None] * {om} + rdv[None, :] * {od}, "
           f"result.to({triton_type(t.dtype)}), mask=(rm[:, None] < M) & (rdv[None, :] < DV))")
    header, params = tg.signature(name, w, [t.name], ["BLOCK_M", "BLOCK_N", "BLOCK_D", "BLOCK_DV"])
    return tg.TritonKernel(name, "matmul", params, ("matmul", t.m, 1, batch), _configs(t),
                           "\n".join([header] + w.lines), [t.name])


def _configs(t: AttentionTemplate) -> list[dict[str, int]]:
    """Block sizes: the head dimensions padded to a power of two (16 at least, for
    ``tl.dot``); rows and columns of 64 by default, larger tiles worth timing on the GPU."""
    bd, bdv = max(16, tg.next_power_of_2(t.d)), max(16, tg.next_power_of_2(t.dv))
    small = max(16, min(64, tg.next_power_of_2(t.m)))
    cols = max(16, min(64, tg.next_power_of_2(t.n)))
    default = dict(BLOCK_M=small, BLOCK_N=cols, BLOCK_D=bd, BLOCK_DV=bdv, num_warps=4, num_stages=2)
    if t.m < 128 or t.n < 128:
        return [default]
    tilings = [(128, 64, 8, 2), (128, 32, 4, 3), (64, 64, 4, 3), (128, 128, 8, 2)]
    return [default] + [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=bd, BLOCK_DV=bdv, num_warps=nw, num_stages=ns)
                        for bm, bn, nw, ns in tilings]
