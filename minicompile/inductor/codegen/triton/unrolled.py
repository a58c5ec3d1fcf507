"""Short reductions written out: ``triton_unr_*`` kernels, one output element per lane.

In:  a scheduled reduction :class:`~...scheduler.Kernel` whose row length
     (``rnumel``, the product of its reduction loops) is a compile-time
     constant of at most :data:`UNROLL_MAX` elements, and whose reductions are
     sums, means, products, maxima or minima (:func:`unrolls` decides).
Out: :func:`unrolled_reduction_kernel`, a :class:`~.kernel.TritonKernel` of kind
     ``"unrolled"`` shaped like a pointwise kernel: a 1-D block of ``XBLOCK``
     outputs, and for each of the ``rnumel`` positions of a row, one term —
     the body with the reduction variables replaced by that position's
     constants — combined into a per-lane accumulator; the epilogue (bias,
     activation, stores) follows as in every reduction kernel.

Why: the persistent form (:func:`~.kernel.reduction_kernel`) puts a row in a
``[XBLOCK, RBLOCK]`` tile, ``RBLOCK`` the next power of two, and reduces it
across lanes.  For a short row most of that is overhead: lanes past
``rnumel`` are wasted (9 taps of a 3x3 window fill 9 of 16), the reduction
needs a tree of cross-lane steps, the output's index arithmetic (unravelling
``x``, a pad's border tests) is done once per lane instead of once per
output, and neighbouring lanes walk the row, so when the row is not
contiguous in memory (a window's taps are a channel count or an image row
apart) a warp's load is scattered.  Written out, neighbouring lanes are
neighbouring outputs, so every term's load is contiguous along ``x``
wherever the output's innermost axis is contiguous in the input (channels of
an NHWC convolution, ``x.sum(axis=0)``); the terms' index expressions are
affine in ``x`` with constant offsets, and a pad's border test is dropped
for the taps that cannot cross the border (``border_checks`` sees the
constant).

The threshold, 32: the code has one term per element, so it grows with
``rnumel`` — at 32 it is still a few hundred lines, compiled about as fast
as a pointwise kernel; a row of 32 float32 is one 128-byte line, so even a
reduction over the contiguous last axis, whose lanes are a row apart, reads
each line once from memory and the later terms from cache; and from 32 on a
persistent row fills a whole warp, so its lanes are no longer wasted.
Longer rows keep the persistent or looped forms; so do argmax/argmin (their
tie and NaN rules are the pair combine's, :data:`~.ops.PRELUDE`), rows of
symbolic length and empty rows.

Exactness: the accumulator starts from the
reduction's identity, typed in :func:`~.ops.accumulator_dtype` (float16 and
float32 sums in float32), so a row of negative zeros sums to +0.0 as NumPy's
does; max/min fold ``np.maximum``/``np.minimum`` over the row in order, as NumPy
does, so NaN wins and a tie of +0.0 and -0.0 resolves as NumPy's
(:func:`combine`); mean divides by ``rnumel`` in the accumulator's dtype,
correctly rounded.
Each term is a different loop-IR value (its indices hold other constants),
so the writer's memo shares only what does not depend on the row position
(the output's indices, a bias load); a pad's guarded loads stay in their
narrower mask (:meth:`~.kernel.ValueWriter.masked`).  The output's sizes may
be symbolic (a dynamic batch): they are the same expressions as in a
pointwise kernel.
"""
from __future__ import annotations

import math

import numpy as np

from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...lowering import data_loads
from ...scheduler import Buffer, Kernel
from . import kernel as tg
from .ops import (F32, HALF, HALF_OPS, REDUCTION_COMBINE, TRITON_OPS, accumulator_dtype, full, init_value,
                  triton_type)

# Rows up to this many elements are written out (see the module docstring).
UNROLL_MAX = 32


def unrolls(kernel: Kernel, buffers: dict[str, Buffer]) -> bool:
    """Whether ``kernel``'s reductions take the written-out form: a static row of
    1..UNROLL_MAX elements, no argmax/argmin among them, and the rows of the largest
    buffer read not lying along its contiguous axis (a row contiguous in memory,
    ``x.sum(axis=-1)``, is read coalesced by the persistent form's lanes; written out,
    neighbouring lanes read a row apart, which made a sum of rows of 16 about twice as
    slow on the GPU; a depthwise convolution's windows run across channels, its
    contiguous axis, while its small weight's taps lie contiguous)."""
    rnumel = math.prod(kernel.reduction_ranges)
    if is_symbolic(rnumel) or not 0 < rnumel <= UNROLL_MAX:
        return False
    if not kernel.reductions or any(s.reduction.is_arg for s in kernel.reductions):
        return False
    loads = [load for s in kernel.reductions for load in data_loads(s.body) if load.buffer in buffers]
    if not loads:
        return True
    largest = max(buffers[load.buffer].numel for load in loads)  # the data, not a small weight
    return not all(_along_the_row(load, kernel, buffers) for load in loads
                   if buffers[load.buffer].numel == largest)


def _along_the_row(load: L.Load, kernel: Kernel, buffers: dict[str, Buffer]) -> bool:
    """Whether ``load`` walks the buffer's unit-stride axis with the row's innermost variable."""
    buffer = buffers.get(load.buffer)
    if buffer is None or len(buffer.strides) != len(load.index) or not kernel.reduction_ranges:
        return False
    inner = L.loop_vars("r", kernel.reduction_ranges)[-1]
    return any(stride == 1 and dict(index.terms).get(inner, 0) != 0
               for stride, index in zip(buffer.strides, load.index))


def row_positions(ranges: tuple[int, ...]) -> list[dict[L.Var, L.Expr]]:
    """For each element of a row, row-major, the constant each reduction variable takes."""
    variables = L.loop_vars("r", ranges)
    return [{v: L.Expr(None, int(i)) for v, i in zip(variables, np.unravel_index(flat, ranges))}
            for flat in range(math.prod(ranges))]


def combine(red: L.Reduction, acc_dtype: np.dtype, acc: str, term: str) -> str:
    """``acc`` combined with the next element ``term``.  Max and min are
    ``np.maximum(acc, term)``/``np.minimum`` (:data:`~.ops.TRITON_OPS`): NumPy's
    reduction folds its ufunc over the row in order, so this keeps its NaN (either
    side wins) and its ties (+0.0 against -0.0: the later element in float32 and
    float64, the earlier in float16 — decided by the elements' dtype, whatever
    the accumulator's — as its loops decide)."""
    if red.reduction_type in ("max", "min"):
        op = "maximum" if red.reduction_type == "max" else "minimum"
        template = HALF_OPS[op] if red.body.dtype == HALF else TRITON_OPS[op][acc_dtype.kind]
        return template.format(acc, term)
    return REDUCTION_COMBINE[red.reduction_type].format(acc=acc, v=term)


def unrolled_reduction_kernel(kernel: Kernel, name: str, buffers: dict[str, Buffer],
                              kept: frozenset[str] = frozenset()) -> tg.TritonKernel:
    """The kernel's reductions, one lane per output and one term per row element, then its epilogue."""
    w = tg.ValueWriter(buffers, kernel.buffers_written, kept)
    xnumel, rnumel = math.prod(kernel.ranges), math.prod(kernel.reduction_ranges)
    pid = "tl.program_id(0).to(tl.int64)" if tg.needs_int64(kernel, buffers) else "tl.program_id(0)"
    w.line(f"xnumel = {xnumel}")
    w.line(f"xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK)")
    w.line("xmask = xindex < xnumel")
    tg.index_vars(w, "x", kernel.ranges, "xindex")
    accs = []
    for i, store in enumerate(kernel.reductions):
        acc_dtype = accumulator_dtype(store.reduction)
        # A typed block from the identity: a term that is a constant or a scalar broadcasts into it.
        w.line(f"acc{i} = tl.full([XBLOCK], {init_value(store.reduction.reduction_type, acc_dtype)}, "
               f"{triton_type(acc_dtype)})")
        accs.append((f"acc{i}", acc_dtype))
    for position in row_positions(kernel.reduction_ranges):
        where = ", ".join(f"{v.name} = {e.const}" for v, e in position.items() if v.size > 1)
        if where:
            w.line(f"# {where}")
        for store, (acc, acc_dtype) in zip(kernel.reductions, accs):
            body = L.substitute(store.body, position)
            if isinstance(body, L.Constant):  # typed, as the accumulator holds it
                term = full("[]", L.cast(body, acc_dtype).value, acc_dtype)
            else:
                src = F32 if body.dtype == HALF else body.dtype  # float16 computes in float32
                term = w.cast(w.compute(body), src, acc_dtype)
            w.line(f"{acc} = {combine(store.reduction, acc_dtype, acc, term)}")
    identity = L.loop_index("x", kernel.ranges)
    for store, (acc, acc_dtype) in zip(kernel.reductions, accs):
        w.store(store.buffer, identity, tg.finish_reduction(w, store.reduction, acc_dtype, acc, rnumel),
                "[XBLOCK]", "xmask")
    for store in kernel.pointwise:
        w.store(store.buffer, identity, store.body, "[XBLOCK]", "xmask")
    outs = tg.stored(kernel, kept)
    header, params = tg.signature(name, w, outs, ["XBLOCK"])
    # A pointwise kernel's blocks, smaller ones too (each lane does rnumel terms),
    # never fewer outputs than threads.
    ceiling = tg.next_power_of_2(xnumel)
    block = max(32, min(1024, ceiling))
    configs = [dict(XBLOCK=block, num_warps=min(4, block // 32))]
    configs += [dict(XBLOCK=b, num_warps=nw) for b in (128, 256, 512, 1024) for nw in (4, 8)
                if b <= ceiling and b >= 32 * nw and (b, nw) != (block, 4)]
    return tg.TritonKernel(name, "unrolled", params, ("flat", xnumel, "XBLOCK"), configs,
                           "\n".join([header] + w.lines), outs)
