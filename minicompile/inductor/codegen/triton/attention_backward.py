"""Attention's backward as flash-style Triton kernels: the softmax's weights recomputed, never stored.

In:  a schedule in which ``attention_stats`` and ``attention_grad`` are Externs (the ops
     ``attention``'s derivative rule emits: ``ir/ops/linalg.py``).
Out: :func:`backward_template_for` makes each one an :class:`AttentionGradTemplate`, and
     :func:`attention_grad_kernel` writes its kernel.

FlashAttention-2's backward (Dao, 2023), one kernel per result:

* ``stats``: each row's maximum ``m`` and sum ``l`` of ``exp(s - m)``, the forward's
  online softmax over blocks of ``kᵀ`` (no ``v``), kept apart (``m + log(l)`` in float32
  would lose ``log(l)`` against a fill of -1e9 that masks a row entirely);
* ``q``: one program per ``BLOCK_M`` rows of queries, over blocks of keys:
  ``p = exp(s - m) / l``, ``ds = p * (dout @ vᵀ - delta)``, ``dq += ds @ k``;
* ``kt`` and ``v``: one program per ``BLOCK_N`` keys, over blocks of queries:
  ``dkᵀ += qᵀ @ ds`` and ``dv += pᵀ @ dout``.

``s`` is recomputed as the forward computes it (product rounded to the operands' dtype,
scaled, masked with the fill), ``ds`` is 0 where the mask hides a score (its fill is a
constant), and the scale's derivative multiplies ``ds``.  Nothing of size ``[M, N]``
goes to memory.  A block the mask hides entirely is skipped where that is exact: for
``dq`` and ``dkᵀ`` always (``ds`` is 0 there), for ``dv`` and ``stats`` where every row's
``exp(fill - m)`` is 0 in float32 (a row masked entirely with ``-inf`` has ``l = 0`` and
NaN weights, as NumPy's softmax does, so such a block is not skipped).  Rows and columns past the
ends weigh 0.  The torch.compile twin is ``aten._scaled_dot_product_flash_attention_backward``,
which Inductor calls for the attention its pattern matcher finds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...scheduler import Buffer, Kernel, Schedule
from . import kernel as tg
from .attention import DOT_PRECISION, matrix_strides, offset_of, operand
from .matmul import MATMUL_DTYPES, Operand
from .ops import literal, triton_type


@dataclass
class AttentionGradTemplate:
    """``out = attention_stats(q, kt, mask, ...)`` (``wrt="stats"``) or ``attention_grad(q, kt, v,
    mask, dout, stats, delta, ..., wrt)`` over ``batch_shape`` matrices of queries ``[m, d]``,
    keys ``kᵀ [d, n]`` and values ``[n, dv]``."""

    name: str
    wrt: str  # "stats", "q", "kt" or "v"
    q: Operand
    kt: Operand
    v: Operand | None
    mask: Operand | None
    dout: Operand | None
    stats: Operand | None
    delta: Operand | None
    scale: Any
    divide: bool
    fill: Any
    batch_shape: tuple[int, ...]
    m: int
    n: int
    d: int
    dv: int
    dtype: np.dtype  # the operands'
    origins: list[str] = field(default_factory=list)

    @property
    def stores(self) -> list[str]:
        return [self.name]

    @property
    def reads(self) -> set[str]:
        return {o.buffer for o in (self.q, self.kt, self.v, self.mask, self.dout, self.stats, self.delta)
                if o is not None}

    @property
    def over_keys(self) -> bool:
        """Programs over blocks of keys (``dkᵀ``, ``dv``), else over blocks of queries."""
        return self.wrt in ("kt", "v")


def backward_template_for(ext: L.Extern, schedule: Schedule,
                          buffers: dict) -> tuple[AttentionGradTemplate, list] | None:
    """The template of an ``attention_stats``/``attention_grad`` Extern, and the copies laying
    out views it cannot read at strides; None where it does not apply (the op then runs as
    its NumPy/CuPy reference)."""
    if ext.op_name == "attention_stats" and len(ext.args) == 6:
        (q_ref, kt_ref, mask_ref, scale, divide, fill), wrt = ext.args, "stats"
        v_ref = dout_ref = stats_ref = delta_ref = None
    elif ext.op_name == "attention_grad" and len(ext.args) == 11:
        q_ref, kt_ref, v_ref, mask_ref, dout_ref, stats_ref, delta_ref, scale, divide, fill, wrt = ext.args
    else:
        return None
    if is_symbolic(ext.shape) or 0 in ext.shape:
        return None
    copies: list[Kernel] = []
    refs = (q_ref, kt_ref, v_ref, mask_ref, dout_ref, stats_ref, delta_ref)
    ops = [operand(r, schedule, buffers, copies) if r is not None else None for r in refs]
    if any(r is not None and o is None for r, o in zip(refs, ops)):
        return None
    q, kt, v, mask, dout, stats, delta = ops
    present = [o for o in ops if o is not None]
    if any(is_symbolic(o.shape) or is_symbolic(o.strides) for o in present):
        return None
    dtype = buffers[q.buffer].dtype
    if dtype not in MATMUL_DTYPES or buffers[kt.buffer].dtype != dtype \
            or any(o is not None and buffers[o.buffer].dtype != dtype for o in (v, dout)):
        return None
    if (stats is not None and buffers[stats.buffer].dtype != np.float32) \
            or (delta is not None and buffers[delta.buffer].dtype not in (np.dtype(np.float32), dtype)):
        return None
    batch_shape = tuple(ext.shape[:-2])
    m, d = q.shape[-2:]
    n = kt.shape[-1]
    dv = v.shape[-1] if v is not None else 1
    return AttentionGradTemplate(ext.name, wrt, q, kt, v, mask, dout, stats, delta, scale, divide, fill,
                                 batch_shape, m, n, d, dv, dtype, [ext.name]), copies


# -- the kernels --------------------------------------------------------------------------------

class _Writer:
    """The lines every backward kernel shares: loads of tiles at an operand's strides, the
    scores, the mask's tile and whether a block may be skipped."""

    def __init__(self, t: AttentionGradTemplate, w: tg.ValueWriter):
        self.t, self.w = t, w
        self.dot = f", {DOT_PRECISION}" if t.dtype == np.dtype(np.float32) else ""
        self.fill = np.asarray(t.fill).astype(t.dtype).item() if t.mask is not None else None

    def load(self, name: str, o: Operand, rows: str, cols: str, row_limit: str, col_limit: str,
             transposed: bool = False) -> None:
        """``name = o[rows, cols]`` of this program's matrix (``transposed``: ``[cols, rows]``)."""
        sr, sc = matrix_strides(o)
        ptr = self.w.pointer(o.buffer)
        if transposed:
            index = f"{rows}[None, :] * {sr} + {cols}[:, None] * {sc}"
            inside = f"({rows}[None, :] < {row_limit}) & ({cols}[:, None] < {col_limit})"
        else:
            index = f"{rows}[:, None] * {sr} + {cols}[None, :] * {sc}"
            inside = f"({rows}[:, None] < {row_limit}) & ({cols}[None, :] < {col_limit})"
        self.w.line(f"{name} = tl.load({ptr} + {offset_of(o, self.t.batch_shape)}{index}, mask={inside}, other=0.0)")

    def load_rows(self, name: str, o: Operand, other: str, column: int = 0) -> None:
        """``name = o[rm, column]``: one value per query row (``delta``, a column of ``stats``)."""
        sr, sc = matrix_strides(o)
        ptr = self.w.pointer(o.buffer)
        self.w.line(f"{name} = tl.load({ptr} + {offset_of(o, self.t.batch_shape)}rm * {sr} + {column * sc}, "
                    f"mask=rm < M, other={other}).to(tl.float32)")

    def load_stats(self) -> None:
        """``m`` and ``l``: each query row's softmax maximum and sum (``stats``' columns)."""
        self.load_rows("m", self.t.stats, "0.0", 0)
        self.load_rows("l", self.t.stats, "1.0", 1)

    def mask_tile(self) -> None:
        """``keep`` (the mask's block) and ``live`` (any of it kept)."""
        t = self.t
        sm, sn = matrix_strides(t.mask)
        self.w.line(f"keep = tl.load({self.w.pointer(t.mask.buffer)} + {offset_of(t.mask, t.batch_shape)}"
                    f"rm[:, None] * {sm} + rn[None, :] * {sn}, mask=(rm[:, None] < M) & (rn[None, :] < N), "
                    "other=0)")
        self.w.line("live = tl.reduce(keep.to(tl.int32), None, _maximum) != 0")

    def scores(self) -> None:
        """``s``, as the forward computes it, from the tiles ``q`` and ``kt``."""
        t, w = self.t, self.w
        w.line(f"s = tl.dot(q, kt{self.dot})")
        w.line(f"s = s.to({triton_type(t.dtype)}).to(tl.float32)  # the product rounded as NumPy's matmul")
        if t.scale is not None:
            w.line(f"s = s {'/' if t.divide else '*'} {literal(float(t.scale), np.dtype(np.float32))}")
        if t.mask is not None:
            w.line(f"s = tl.where(keep != 0, s, {literal(self.fill, np.dtype(np.float32))})")

    def weights(self) -> None:
        """``p = exp(s - m) / l``, 0 past the ends."""
        self.w.line("p = tl.exp(s - m[:, None]) / l[:, None]")
        self.w.line("p = tl.where((rm[:, None] < M) & (rn[None, :] < N), p, 0.0)")

    def score_gradient(self) -> None:
        """``ds``: the gradient of the scaled product (0 where the mask hides a score)."""
        t, w = self.t, self.w
        w.line(f"dp = tl.dot(do, vt{self.dot})")
        w.line("ds = p * (dp - delta[:, None])")
        if t.mask is not None:
            w.line("ds = tl.where(keep != 0, ds, 0.0)")
        if t.scale is not None:
            w.line(f"ds = ds {'/' if t.divide else '*'} {literal(float(t.scale), np.dtype(np.float32))}")

    def skip_unless(self, counts: str) -> None:
        """Open the block's ``if``: a block the mask hides entirely is skipped where that is
        exact.  ``counts`` says what of a hidden score reaches the result: ``"nothing"``
        (``ds`` is 0 there: ``dq``, ``dkᵀ``); ``"sum"`` (``exp(fill - m)`` adds to the row's
        sum: 0 for a fill of ``-inf``, else once every row's running maximum ``m_i`` is far
        above the fill); ``"weights"`` (``exp(fill - m) / l`` multiplies ``dout``: 0 once every
        row's maximum is far above the fill, ``l`` being at least 1; a row masked entirely
        with ``-inf`` has ``l = 0``, counted here as a maximum of ``-inf``: its NaN must reach
        the result, as in NumPy's softmax)."""
        fill = literal(self.fill, np.dtype(np.float32))
        if counts == "nothing" or (counts == "sum" and math.isinf(self.fill) and self.fill < 0):
            self.w.line("if live:")
        else:
            rows = "m_i" if counts == "sum" else "tl.where(l > 0, m, -INF)"
            self.w.line(f"settled = (tl.reduce(tl.where(rm < M, {rows}, float('inf')), None, _minimum) - "
                        f"{fill}) > 110.0")
            self.w.line("if live | (settled == 0):")
        self.w.depth += 1


def attention_grad_kernel(t: AttentionGradTemplate, name: str, buffers: dict[str, Buffer]) -> tg.TritonKernel:
    """The kernel of one backward template (see the module docstring)."""
    w = tg.ValueWriter(buffers, {t.name})
    x = _Writer(t, w)
    batch = math.prod(t.batch_shape)
    sizes = [buffers[o.buffer].numel for o in (t.q, t.kt, t.v, t.dout) if o is not None] + [buffers[t.name].numel]
    pid = "tl.program_id(0).to(tl.int64)" if max(sizes) >= 2**31 else "tl.program_id(0)"
    dtype = triton_type(t.dtype)
    w.line(f"M, N, D, DV = {t.m}, {t.n}, {t.d}, {t.dv}")
    w.line(f"pid = {pid}")
    w.line("rd = tl.arange(0, BLOCK_D)")
    w.line("rdv = tl.arange(0, BLOCK_DV)")
    if t.over_keys:
        w.line("tiles = (N + BLOCK_N - 1) // BLOCK_N")
        w.line("batch = pid // tiles")
        w.line("rn = (pid % tiles) * BLOCK_N + tl.arange(0, BLOCK_N)")
        x.load("kt", t.kt, "rd", "rn", "D", "N")
        if t.wrt == "kt":
            x.load("vt", t.v, "rn", "rdv", "N", "DV", transposed=True)
            w.line("acc = tl.full([BLOCK_D, BLOCK_N], 0.0, tl.float32)")
        else:
            w.line("acc = tl.full([BLOCK_N, BLOCK_DV], 0.0, tl.float32)")
        w.line("for start in range(0, M, BLOCK_M):")
        w.depth += 1
        w.line("rm = start + tl.arange(0, BLOCK_M)")
        x.load_stats()
        if t.mask is not None:
            x.mask_tile()
            x.skip_unless("weights" if t.wrt == "v" else "nothing")
        x.load("q", t.q, "rm", "rd", "M", "D")
        x.scores()
        x.weights()
        x.load("do", t.dout, "rm", "rdv", "M", "DV")
        if t.wrt == "v":
            w.line(f"acc += tl.dot(tl.trans(p.to({dtype})), do{x.dot})")
        else:
            x.load_rows("delta", t.delta, "0.0")
            x.score_gradient()
            w.line(f"acc += tl.dot(tl.trans(q), ds.to({dtype}){x.dot})")
        w.depth -= 1 + (t.mask is not None)
        out_rows, out_cols, limits = ("rd", "rn", ("D", "N")) if t.wrt == "kt" else ("rn", "rdv", ("N", "DV"))
    else:
        w.line("tiles = (M + BLOCK_M - 1) // BLOCK_M")
        w.line("batch = pid // tiles")
        w.line("rm = (pid % tiles) * BLOCK_M + tl.arange(0, BLOCK_M)")
        x.load("q", t.q, "rm", "rd", "M", "D")
        if t.wrt == "stats":
            w.line("m_i = tl.full([BLOCK_M], -INF, tl.float32)")
            w.line("l_i = tl.full([BLOCK_M], 0.0, tl.float32)")
        else:
            x.load("do", t.dout, "rm", "rdv", "M", "DV")
            x.load_stats()
            x.load_rows("delta", t.delta, "0.0")
            w.line("acc = tl.full([BLOCK_M, BLOCK_D], 0.0, tl.float32)")
        w.line("for start in range(0, N, BLOCK_N):")
        w.depth += 1
        w.line("rn = start + tl.arange(0, BLOCK_N)")
        if t.mask is not None:
            x.mask_tile()
            x.skip_unless("sum" if t.wrt == "stats" else "nothing")
        x.load("kt", t.kt, "rd", "rn", "D", "N")
        x.scores()
        if t.wrt == "stats":  # the forward's online softmax, without v
            w.line("s = tl.where(rn[None, :] < N, s, -INF)")
            w.line("m_new = tl.maximum(m_i, tl.reduce(s, 1, _maximum))")
            w.line("m_ref = tl.where(m_new == -INF, 0.0, m_new)")
            w.line("l_i = l_i * tl.exp(m_i - m_ref) + tl.reduce(tl.exp(s - m_ref[:, None]), 1, _add)")
            w.line("m_i = m_new")
        else:
            x.weights()
            x.load("vt", t.v, "rn", "rdv", "N", "DV", transposed=True)
            x.score_gradient()
            w.line(f"acc += tl.dot(ds.to({dtype}), tl.trans(kt){x.dot})")
        w.depth -= 1 + (t.mask is not None)
        out_rows, out_cols, limits = ("rm", "rd", ("M", "D"))
    out = Operand(t.name, tuple(buffers[t.name].shape), tuple(buffers[t.name].strides))
    sr, sc = matrix_strides(out)
    if t.wrt == "stats":  # [..., M, 2]: each row's maximum (0 where all -inf) and sum
        w.line(f"row = out_{t.name} + {offset_of(out, t.batch_shape)}rm * {sr}")
        w.line("tl.store(row, tl.where(m_i == -INF, 0.0, m_i), mask=rm < M)")
        w.line(f"tl.store(row + {sc}, l_i, mask=rm < M)")
    else:
        w.line(f"tl.store(out_{t.name} + {offset_of(out, t.batch_shape)}{out_rows}[:, None] * {sr} + "
               f"{out_cols}[None, :] * {sc}, acc.to({triton_type(buffers[t.name].dtype)}), "
               f"mask=({out_rows}[:, None] < {limits[0]}) & ({out_cols}[None, :] < {limits[1]}))")
    header, params = tg.signature(name, w, [t.name], ["BLOCK_M", "BLOCK_N", "BLOCK_D", "BLOCK_DV"])
    grid = ("matmul", 1, t.n, batch) if t.over_keys else ("matmul", t.m, 1, batch)
    return tg.TritonKernel(name, "matmul", params, grid, _configs(t), "\n".join([header] + w.lines), [t.name])


def _configs(t: AttentionGradTemplate) -> list[dict[str, int]]:
    """Block sizes: head dimensions padded to a power of two (16 at least, for ``tl.dot``);
    64 x 64 blocks by default, a few others worth timing on the GPU."""
    bd, bdv = max(16, tg.next_power_of_2(t.d)), max(16, tg.next_power_of_2(t.dv))
    bm = max(16, min(64, tg.next_power_of_2(t.m)))
    bn = max(16, min(64, tg.next_power_of_2(t.n)))
    default = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=bd, BLOCK_DV=bdv, num_warps=4, num_stages=2)
    if t.m < 128 or t.n < 128:
        return [default]
    tilings = [(64, 64, 4, 3), (128, 64, 8, 2), (64, 128, 8, 2), (32, 64, 4, 3), (64, 32, 4, 3)]
    return [default] + [dict(BLOCK_M=m, BLOCK_N=n, BLOCK_D=bd, BLOCK_DV=bdv, num_warps=nw, num_stages=ns)
                        for m, n, nw, ns in tilings]
