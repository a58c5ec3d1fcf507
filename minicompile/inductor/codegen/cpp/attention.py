"""Softmax attention as one generated C++ kernel (FlashAttention's forward pass on the CPU).

In:  an ``attention`` :class:`~minicompile.inductor.loop_ir.Extern` (``inductor/fuse_attention.py``
     made the NumPy program ``softmax(where(mask, q @ kt * c, fill)) @ v`` one node of the
     ``attention`` op, ``ir/ops/linalg.py``) and the schedule it is a step of.
Out: :func:`generate` returns the C++ of its ``extern "C"`` function ``attn_<node>`` (and the
     ``_obj`` entry taking NumPy arrays) with the buffers it takes, in order — or None, and
     :func:`why_not` says why, when the node keeps its NumPy reference;
     :func:`describe` gives the schedule's line for each.

The kernel itself is hand-written, ``include/mc_attention.h``: blocks of query rows
spread over the OpenMP threads, each walking tiles of ``kᵀ`` and ``v`` with an online
softmax (the running maximum, the running sum, the accumulator rescaled when the
maximum grows), so the ``M x N`` scores never exist in memory; tiles the mask hides
entirely are skipped where that is exact (the upper half of a causal mask).  Like the
GEMM it is compiled once per machine into the runtime library (:mod:`.runtime`), so a
graph's cold compile does not pay for it.  The generated function only describes the
problem (``include/mc_attention_problem.h``): sizes, each operand's offset and
strides (a batch axis an operand broadcasts along has stride 0, so a ``[S, S]`` mask
serves every head), the scale and the fill, and calls the kernel through the pointer
``include/mc_attention_binding.h`` declares.

Operands are read where they lie: a buffer, or a view of one at fixed strides
(``k.swapaxes(-1, -2)``, a slice, a transpose) is read through those strides from the
buffer itself.  A view at no fixed strides (a reshape of a transpose) is made
contiguous by the wrapper first, as for the generated GEMM (:mod:`.matmul`).
Sizes known only at run time (dynamic shapes) are the function's size arguments: the
problem is filled in from them on each call, and a view of such sizes is read at its
strides when it is a transpose (``k.swapaxes(-1, -2)``), else copied.
What stays NumPy's, with the reason in the schedule: a size that divides (a strided
slice of a symbolic size), more than ``MAX_BATCH_DIMS`` batch axes, dtypes other than float32/float64 (float16
has no vector exp here) or mixed ones, and empty arrays.  Inductor's counterpart is its
SDPA pattern (``fuse_attention.py``) calling ATen's flash attention for CPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .... import config, ir
from ....ir.symbolic import SymbolicUnsupported, has_division, is_symbolic
from ... import loop_ir as L
from ...lowering import Unsupported, lower
from .ops import ARRAY_DATA_OFFSET, ctype, literal

HEADER = "mc_attention_binding.h"  # what a graph's translation unit includes
RUNTIME_HEADER = "mc_attention.h"  # the kernel, in the runtime library
PROBLEM_HEADER = "mc_attention_problem.h"  # the description both include
MAX_BATCH_DIMS = 8  # MC_ATTN_MAX_BATCH_DIMS
DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Below this many multiply-adds the attention runs on one thread.
PARALLEL_MIN_WORK = 1 << 16


@dataclass(frozen=True)
class Operand:
    """How the kernel reads one operand: ``array`` (a buffer, or a view the wrapper makes
    contiguous) at ``offset`` plus ``strides`` (elements, one per axis of ``shape``)."""

    array: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0


def kernel_name(ext: L.Extern, schedule) -> str:
    """The generated function of attention ``ext``: ``attn_<node>``, after the graph's prefix."""
    return f"{schedule.name_prefix}attn_{ext.name}"


def _strided(name: str, schedule) -> Operand | None:
    """``name`` as a buffer read at fixed strides: the buffer itself, or a chain of views of
    one whose index is affine in the view's loop variables (no division or remainder);
    with sizes known only at run time, a buffer or a chain of transposes of one (its strides
    permuted).  None for any other view."""
    if name in schedule.buffers:
        buf = schedule.buffers[name]
        return Operand(name, tuple(buf.shape), tuple(buf.strides))
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None or node.kind != "call" or not node.args or not isinstance(node.args[0], ir.Node):
        return None
    if is_symbolic(node.shape) or is_symbolic(node.args[0].shape):
        source = _strided(node.args[0].name, schedule) if node.op.name == "transpose" else None
        if source is None:
            return None
        axes = node.args[1] if len(node.args) > 1 and node.args[1] is not None else None
        axes = tuple(range(len(source.shape)))[::-1] if axes is None else tuple(a % len(source.shape) for a in axes)
        return Operand(source.array, tuple(node.shape), tuple(source.strides[a] for a in axes), source.offset)
    try:
        low = lower(node)
    except (Unsupported, SymbolicUnsupported):
        return None
    if not (isinstance(low, L.Pointwise) and low.is_view and isinstance(low.body, L.Load)):
        return None
    source = _strided(low.body.buffer, schedule)
    if source is None or is_symbolic(source.strides):
        return None
    flat = L.linearize(low.body.index, source.strides) + source.offset
    if not all(isinstance(atom, L.Var) and isinstance(c, int) for atom, c in flat.terms):
        return None
    strides = tuple(flat.coeff(v) if n != 1 else 0 for v, n in zip(low.vars, node.shape))
    return Operand(source.array, tuple(node.shape), strides, flat.const)


def _operand(name: str, schedule) -> Operand | None:
    """``name`` at strides (:func:`_strided`), else the view itself, which the wrapper
    copies to a contiguous array."""
    found = _strided(name, schedule)
    if found is not None:
        return found
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None:
        return None
    return Operand(name, tuple(node.shape), L.contiguous_strides(tuple(node.shape)))


@dataclass(frozen=True)
class _Attention:
    """One attention node's operands and sizes (``mask`` None: no mask)."""

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


def _plan(ext: L.Extern, schedule) -> tuple[_Attention | None, str]:
    """The attention ``ext`` computes, or (None, why it keeps NumPy's reference)."""
    if ext.op_name != "attention" or len(ext.args) != 7:
        return None, "not an attention node"
    q_ref, kt_ref, v_ref, mask_ref, scale, divide, fill = ext.args
    if has_division(ext.shape):
        return None, "a size divides (a strided slice)"
    if len(ext.shape) - 2 > MAX_BATCH_DIMS:
        return None, f"more than {MAX_BATCH_DIMS} batch axes"
    if 0 in ext.shape:
        return None, "an empty result"
    if ext.dtype not in DTYPES:
        return None, f"{ext.dtype} (the kernel is float32/float64)"
    refs = [q_ref, kt_ref, v_ref] + ([mask_ref] if mask_ref is not None else [])
    if not all(isinstance(r, L.BufferRef) for r in refs):
        return None, "an operand is not an array"
    operands = [_operand(r.name, schedule) for r in refs]
    if any(o is None or has_division(o.shape) or has_division(o.strides) for o in operands):
        return None, "an operand is neither an array nor a view of one"
    dtypes = [next(n.dtype for n in schedule.graph.nodes if n.name == r.name) for r in refs]
    if any(dt != ext.dtype for dt in dtypes[:3]) or (mask_ref is not None and dtypes[3] != np.bool_):
        return None, f"mixed dtypes ({', '.join(str(dt) for dt in dtypes)})"
    q, kt, v = operands[:3]
    if 0 in q.shape or 0 in kt.shape or 0 in v.shape:
        return None, "an empty operand"
    m, dv = ext.shape[-2:]
    return _Attention(q, kt, v, operands[3] if mask_ref is not None else None, scale, bool(divide), fill,
                      tuple(ext.shape[:-2]), m, kt.shape[-1], kt.shape[-2], dv, ext.dtype), ""


def why_not(ext: L.Extern, schedule) -> str:
    """Why attention ``ext`` keeps NumPy's reference ('' when it is generated)."""
    return _plan(ext, schedule)[1]


def _matrix_strides(o: Operand) -> tuple[int, int]:
    """The strides of the last two axes (0 where an axis has size 1 or is missing)."""
    shape, strides = (1, 1) + o.shape, (0, 0) + o.strides
    return (strides[-2] if shape[-2] != 1 else 0), (strides[-1] if shape[-1] != 1 else 0)


def _batch_strides(o: Operand, batch_shape: tuple[int, ...]) -> list[int]:
    """The operand's stride along each batch axis of the result (0 where it broadcasts:
    an axis it lacks or has of size 1)."""
    lead = o.shape[:-2]
    strides = []
    for i in range(len(batch_shape)):
        j = i - (len(batch_shape) - len(lead))
        strides.append(o.strides[j] if j >= 0 and lead[j] != 1 else 0)
    return strides


def _threads(work) -> str:
    """The team size: 1 below PARALLEL_MIN_WORK (decided at run time for symbolic sizes)."""
    team = str(config.num_threads) if config.num_threads > 0 else "0"  # 0: OpenMP's default
    if is_symbolic(work):
        return f"(({work}) >= {PARALLEL_MIN_WORK} ? {team} : 1)"
    return team if work >= PARALLEL_MIN_WORK else "1"


def _c(v) -> str:
    """A size or stride in C: a symbolic one in parentheses (it may be a sum)."""
    return f"({v})" if is_symbolic(v) else str(v)


def generate(ext: L.Extern, schedule, symbols: tuple[str, ...] = ()) -> tuple[str, list[str]] | None:
    """The C++ of attention ``ext`` — ``attn_<node>(q, kt, v[, mask], out, sizes...)``, which
    describes the problem and calls the runtime's kernel, and its ``_obj`` entry — and the
    arrays it takes, in order; None when it keeps NumPy's reference (:func:`why_not`)."""
    a, _ = _plan(ext, schedule)
    if a is None:
        return None
    name, t = kernel_name(ext, schedule), ctype(a.dtype)
    operands = [("Q", a.q), ("KT", a.kt), ("V", a.v)] + ([("MASK", a.mask)] if a.mask else [])
    out = Operand(ext.name, tuple(ext.shape), L.contiguous_strides(tuple(ext.shape)))
    params = [f"const {t}* q", f"const {t}* kt", f"const {t}* v"] + (["const uint8_t* mask"] if a.mask else [])
    params += [f"{t}* out"]
    batch = math.prod(a.batch_shape)
    scale = "" if a.scale is None else f" {'/' if a.divide else '*'} {a.scale!r}"
    masked = "" if a.mask is None else f", where(mask, ., {a.fill!r})"
    f64 = np.dtype(np.float64)
    lines = [
        f'extern "C" void {name}({", ".join(params + [f"const int64_t {s}" for s in symbols])})',
        "{",
        f"    // out ({' x '.join(map(str, a.batch_shape + (a.m, a.dv)))}) = softmax(q @ kt{scale}{masked}) @ v",
        f"    // (q {a.m} x {a.d}, kt {a.d} x {a.n}, v {a.n} x {a.dv} per batch matrix)",
        "    mc_attention_problem p = {};",
        f"    p.M = {_c(a.m)}; p.N = {_c(a.n)}; p.D = {_c(a.d)}; p.DV = {_c(a.dv)};",
        f"    p.batch_dims = {len(a.batch_shape)};"
        + "".join(f" p.batch_sizes[{i}] = {_c(n)};" for i, n in enumerate(a.batch_shape)),
    ]
    for field, o in operands + [("OUT", out)]:
        rows, cols = _matrix_strides(o)
        strides = ", ".join(map(_c, _batch_strides(o, a.batch_shape))) or "0"
        lines.append(f"    const int64_t {field.lower()}_batch[] = {{{strides}}};")
        lines.append(f"    mc_attention_operand(&p, MC_ATTN_{field}, {_c(o.offset)}, {_c(rows)}, {_c(cols)}, "
                     f"{field.lower()}_batch);")
    if a.scale is not None:
        lines.append(f"    p.has_scale = 1; p.divide = {int(a.divide)}; p.scale = {literal(a.scale, f64)};")
    if a.mask is not None:
        lines.append(f"    p.has_mask = 1; p.fill = {literal(a.fill, f64)};")
    lines += [f"    p.threads = {_threads(batch * a.m * a.n * (a.d + a.dv))};",
              f"    mc_attention_{'f32' if a.dtype == np.float32 else 'f64'}(q, kt, v, "
              f"{'mask' if a.mask else 'nullptr'}, out, &p);",
              "}"]
    types = [p.rsplit("*", 1)[0] for p in params]
    obj_params = ", ".join([f"void* a{i}" for i in range(len(params))] + [f"int64_t {s}" for s in symbols])
    ptrs = [f"*({ty}**)((char*)a{i} + {ARRAY_DATA_OFFSET})" for i, ty in enumerate(types)]
    lines.append(f'extern "C" void {name}_obj({obj_params}) {{ {name}({", ".join(ptrs + list(symbols))}); }}')
    return "\n".join(lines), [o.array for _, o in operands] + [ext.name]


def describe(schedule, kernel_args: dict[str, list[str]]) -> dict[str, str]:
    """Extern name -> the schedule's line for each attention node: the generated kernel,
    or the NumPy reference and why."""
    lines = {}
    for ext in schedule.steps:
        if not isinstance(ext, L.Extern) or ext.op_name != "attention":
            continue
        operands = ", ".join(a.name for a in ext.args[:4] if isinstance(a, L.BufferRef))
        if kernel_name(ext, schedule) in kernel_args:
            copied = [a for a in kernel_args[kernel_name(ext, schedule)][:-1] if a not in schedule.buffers]
            lines[ext.name] = (f"{ext.name} = {kernel_name(ext, schedule)}({operands})  generated C++ flash "
                               "attention: online softmax over tiles of kᵀ and v, the scores never stored"
                               + "".join(f"; {a} copied to a contiguous array first (a view at no fixed strides)"
                                         for a in copied))
        else:
            lines[ext.name] = (f"extern {ext.name} = np.attention(...)  the NumPy reference: "
                               f"{why_not(ext, schedule)}")
    return lines


def view_decisions(schedule, kernel_args: dict[str, list[str]]) -> dict[str, str]:
    """View name -> the schedule's decision for each view an attention kernel reads at its
    strides (the scheduler planned a NumPy view for the Extern; no view is made)."""
    decisions = {}
    for ext in schedule.steps:
        if not isinstance(ext, L.Extern) or kernel_name(ext, schedule) not in kernel_args:
            continue
        for ref in ext.args[:4]:
            if isinstance(ref, L.BufferRef) and ref.name in schedule.views and ref.name in schedule.decisions:
                found = _strided(ref.name, schedule)
                if found is not None:
                    decisions[ref.name] = (f"view: read at its strides from {found.array} by "
                                           f"{kernel_name(ext, schedule)} (no copy, no NumPy view)")
    return decisions

