"""Float32 matmuls as generated C++ (a packed, cache-blocked GEMM) with their epilogues fused.

In:  an ``np.matmul`` :class:`~minicompile.inductor.loop_ir.Extern` of two
     float32 matrices (or equal stacks of them) whose shapes the schedule knows
     (a symbolic row or stack count — a dynamic batch — is a size argument),
     and optionally the pointwise kernel right after it that reads the product
     only at its own element (``gelu(x @ w + b)``: the bias and the GELU).
Out: :func:`generate` returns the C++ of the matmul's ``extern "C"`` function
     (and its ``_obj`` entry), or None when NumPy's BLAS should keep the call;
     :func:`epilogues` picks the kernels that run as epilogues, and
     :func:`describe` says so in the schedule log.  With an epilogue, the function is the epilogue kernel's: it computes the
     product and runs the epilogue on each finished tile (a 16-column panel of
     a block of at most 144 rows) while the tile is still in L1, so the
     product is never read back from memory.

Why generate a GEMM at all: NumPy's BLAS runs its own thread pool.  Between
OpenMP kernels, on a machine with few cores, the two pools take turns spinning
on the same cores while the other works (MobileNetV2's 1x1 convolutions, a
decoder's projections).  A GEMM in the OpenMP pool has no such cost, and it
can take the following pointwise kernel as an epilogue, as torch.compile's
CPU GEMM templates do.

The GEMM itself (``include/mc_gemm.h``) follows BLIS and the Goto paper:
packed panels of ``A`` and ``B``, a 6 x 16 register tile, one block of ``C``
per thread with its own packed copies (no barriers).  Its summation order
differs from BLAS's (which is not specified either): results match NumPy to
float32 rounding.
"""
from __future__ import annotations

import math

import numpy as np

from .... import config
from ....ir.symbolic import has_division, is_symbolic, size_hint
from ... import loop_ir as L
from .ops import ARRAY_DATA_OFFSET

F32 = np.dtype(np.float32)
# Matmuls up to this many multiply-adds are generated; larger ones go to BLAS
# (None: every eligible matmul is generated).
MAX_WORK: int | None = None
# Below this many multiply-adds the product runs on one thread.
PARALLEL_MIN_WORK = 1 << 16

# The GEMM itself (include/mc_gemm.h) is a library of its own, compiled once
# per machine and shared by every graph (see :mod:`.runtime`), as ATen's GEMMs
# are for torch.compile: compiled with each graph it would add a second to
# every cold compile of a graph with a matmul.  A graph's translation unit
# includes only HEADER: the GEMM's type, and a pointer to it that
# :func:`.runtime.bind` sets when the library is loaded.
RUNTIME_HEADER = "mc_gemm.h"
HEADER = "mc_gemm_binding.h"


def _operand(schedule, name: str) -> tuple[tuple, np.dtype] | None:
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None or node.meta is None:
        return None
    return tuple(node.shape), np.dtype(node.dtype)


def kernel_name(ext: L.Extern, schedule) -> str:
    """The generated GEMM's entry for matmul ``ext``: ``mm_<node>``, after the graph's prefix."""
    return f"{schedule.name_prefix}mm_{ext.name}"


def _shapes(ext: L.Extern, schedule) -> tuple[tuple, tuple] | None:
    """The shapes of a float32 matmul's two buffer operands."""
    if ext.op_name != "matmul" or ext.dtype != F32 or len(ext.args) != 2:
        return None
    if not all(isinstance(a, L.BufferRef) for a in ext.args):
        return None
    operands = [_operand(schedule, a.name) for a in ext.args]
    if any(o is None or o[1] != F32 for o in operands):
        return None
    return operands[0][0], operands[1][0]


def row_axes(ext: L.Extern, schedule) -> int:
    """How many axes of the product make up the rows of the GEMM: 1, or all
    but the last when a stack ``(..., M, K)`` multiplies one matrix ``(K, N)``
    (a linear layer): the stack is then one ``(... * M) x K`` matrix."""
    shapes = _shapes(ext, schedule)
    return len(shapes[0]) - 1 if shapes and len(shapes[1]) == 2 and len(shapes[0]) > 2 else 1


def eligible(ext: L.Extern, schedule) -> tuple[int, int, int, int] | None:
    """(batch, M, K, N) when ``ext`` is a float32 matrix product of two
    buffers: matrices, stacks of them with the same leading axes, or a stack
    times one matrix (its rows flattened, see :func:`row_axes`)."""
    shapes = _shapes(ext, schedule)
    if shapes is None:
        return None
    sa, sb = shapes
    if len(sa) < 2 or len(sb) < 2 or (len(sb) != 2 and (len(sa) != len(sb) or sa[:-2] != sb[:-2])):
        return None
    # A symbolic batch or row count (dynamic shapes) is a kernel argument; K and N stay plain.
    if any(is_symbolic(d) for d in sb[-2:] + sa[-1:]) or has_division(sa):
        return None
    flat = len(sb) == 2
    (m, k), (k2, n) = (math.prod(sa[:-1]), sa[-1]) if flat else sa[-2:], sb[-2:]
    batch = 1 if flat else math.prod(sa[:-2])
    if k != k2 or any(not is_symbolic(d) and d == 0 for d in (batch, m, k, n)):
        return None
    if MAX_WORK is not None and size_hint(batch * m * k * n) > MAX_WORK:  # a heuristic: the example's sizes
        return None
    return batch, m, k, n


def _contiguous(buf) -> bool:
    """Row-major contiguous (the stride of a size-1 axis is never used)."""
    return buf is not None and all(st == c for st, c, n in zip(buf.strides, L.contiguous_strides(buf.shape), buf.shape)
                                   if n != 1)


def _swaps_last_two(node) -> bool:
    """Whether the view ``node`` swaps the last two axes and keeps the others."""
    nd = len(node.shape)
    swapped = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    if node.op.name != "transpose":
        return False
    axes = node.args[1] if len(node.args) > 1 else None
    return tuple(range(nd))[::-1] == swapped if axes is None else tuple(a % nd for a in axes) == swapped


def _layout(name: str, schedule) -> tuple[str, bool] | None:
    """``(buffer, transposed)`` when the array ``name`` is the data of a
    contiguous buffer as it is (a reshape of one is too), or with its last two
    axes swapped; None for any other view."""
    if _contiguous(schedule.buffers.get(name)):
        return name, False
    view = schedule.views.get(name)
    if view is None or not view.inputs:
        return None
    inner = _layout(view.inputs[0].name, schedule)
    if inner is None or inner[1]:
        return None
    if view.op.name == "reshape":
        return inner
    return (inner[0], True) if _swaps_last_two(view) else None


def operands(ext: L.Extern, schedule) -> list[tuple[str, bool | None]]:
    """How the GEMM reads each operand of an eligible matmul: ``(buffer, False)``
    for the data of a contiguous buffer, ``(base, True)`` for a view swapping
    its last two axes (``w.T``, ``k.transpose(0, 1, 3, 2)``,
    ``x.reshape(-1, d).T``: packing reads the transpose in place), else
    ``(name, None)``: the operand must be made contiguous first (a copy)."""
    layouts = []
    for position, ref in enumerate(ext.args):
        layout = _layout(ref.name, schedule)
        # A stack whose rows are flattened (row_axes) must be one contiguous block.
        if layout is None or (layout[1] and position == 0 and row_axes(ext, schedule) > 1):
            layouts.append((ref.name, None))
        else:
            layouts.append(layout)
    return layouts


def fusable_epilogue(ext: L.Extern, kernel) -> bool:
    """Whether ``kernel`` (the step after ``ext``) is pointwise over the
    product's own shape and reads the product only at its own element, so it
    can run on each tile of the product as soon as the tile is done."""
    from ...scheduler import Kernel

    if not isinstance(kernel, Kernel) or kernel.reductions or kernel.row_pointwise \
            or tuple(kernel.ranges) != tuple(ext.shape):
        return False
    identity = L.loop_index("x", kernel.ranges)
    uses = [ld for s in kernel.pointwise for ld in L.loads(s.body) if ld.buffer == ext.name]
    return bool(uses) and all(ld.index == identity for ld in uses) and all(s.index is None for s in kernel.pointwise)


def _c(v) -> str:
    """A size in C: a symbolic one in parentheses (it may be a sum)."""
    return f"({v})" if is_symbolic(v) else str(v)


def _threads(work) -> str:
    """The team size: 1 below PARALLEL_MIN_WORK (decided at run time for symbolic sizes)."""
    team = str(config.num_threads) if config.num_threads > 0 else "0"  # 0: OpenMP's default
    if is_symbolic(work):
        return f"(({work}) >= {PARALLEL_MIN_WORK} ? {team} : 1)"
    return team if work >= PARALLEL_MIN_WORK else "1"


def tile_axes(shape: tuple, rows: int = 1) -> dict[str, tuple[str, str]]:
    """For an epilogue over the product's ``shape``, how each loop variable
    covers one tile ``(b, i0, mr, j0, nr)``: ``("loop", start, end)``, or
    ``("row", value)`` / ``("stack", value)`` for an axis computed from the
    flat row index ``r`` (running over ``i0 .. i0 + mr``) or from the flat
    stack index ``b``.  ``rows`` is :func:`row_axes`."""
    last = len(shape) - 1
    axes = {f"x{last}": ("loop", "j0", "j0 + nr")}
    if rows == 1 and last >= 1:
        axes[f"x{last - 1}"] = ("loop", "i0", "i0 + mr")
    inner = 1
    for d in reversed(range(last - rows, last) if rows > 1 else ()):
        axes[f"x{d}"] = ("row", f"(r / {_c(inner)}) % {_c(shape[d])}" if inner != 1 else f"r % {_c(shape[d])}")
        inner = inner * shape[d]
    inner = 1
    for d in reversed(range(last - rows)):
        axes[f"x{d}"] = ("stack", f"(b / {_c(inner)}) % {_c(shape[d])}" if inner != 1 else f"b % {_c(shape[d])}")
        inner = inner * shape[d]
    return axes


def generate(ext: L.Extern, schedule, symbols: tuple[str, ...] = (),
             epilogue: tuple[str, list[str]] | None = None) -> str | None:
    """The C++ of ``ext`` as a call of the generated GEMM, or None if it stays a BLAS call.

    Alone: ``mm_<name>(A, B, C, sizes...)``.  With ``epilogue`` — the epilogue
    kernel's name and the declarations of its array parameters, its tile
    function being ``<name>_tile(arrays..., sizes..., b, i0, mr, j0, nr)`` —
    the function is ``<name>(A, B, C, arrays..., sizes...)`` and the GEMM
    calls the tile function (through a context struct of those arguments) on
    each finished tile.  Each also gets an ``_obj`` entry taking NumPy arrays
    (their data pointers read in C)."""
    shape = eligible(ext, schedule)
    if shape is None:
        return None
    batch, m, k, n = shape
    ta, tb = (int(bool(t)) for _, t in operands(ext, schedule))
    name, extra = epilogue if epilogue else (kernel_name(ext, schedule), [])
    # No __restrict here: the epilogue's parameters include the product C itself
    # (and in-place outputs may share its storage); the tile function has its own.
    params = ["const float* A", "const float* B", "float* C"] + [p.replace(" __restrict", "") for p in extra]
    sizes = [f"const int64_t {s}" for s in symbols]
    lines = []
    epi, ctx = "nullptr", "nullptr"
    if epilogue:
        fields = [p.rsplit(" ", 1) for p in params[3:] + sizes]  # (type, name)
        lines += [f"struct {name}_ctx {{ {' '.join(f'{t} {f};' for t, f in fields)} }};",
                  f"static void {name}_epilogue(void* p, int64_t b, int64_t i0, int64_t mr, int64_t j0, int64_t nr)",
                  "{",
                  f"    const {name}_ctx* c = (const {name}_ctx*)p;",
                  f"    {name}_tile({', '.join(f'c->{f}' for _, f in fields)}, b, i0, mr, j0, nr);",
                  "}"]
        epi, ctx = f"{name}_epilogue", "&ctx"
    lines += [
        f'extern "C" void {name}({", ".join(params + sizes)})',
        "{",
        f"    // C ({m} x {n}) = A ({m} x {k}) @ B ({k} x {n}), {batch} time(s)"
        + "".join(f"; {o} read transposed in place" for o, t in (("A", ta), ("B", tb)) if t)
        + ("; the epilogue on each finished tile" if epilogue else ""),
    ]
    if epilogue:
        lines.append(f"    {name}_ctx ctx = {{{', '.join(f for _, f in fields)}}};")
    lines += [f"    mc_gemm_f32(A, {ta}, B, {tb}, C, {_c(batch)}, {_c(m)}, {n}, {k}, {_threads(batch * m * k * n)}, "
              f"{epi}, {ctx});",
              "}"]
    # The entry taking arrays: each parameter's data pointer, read at the array's data offset.
    obj_params = ", ".join([f"void* a{i}" for i in range(len(params))] + [f"int64_t {s}" for s in symbols])
    ptrs = [f"*({p.rsplit('*', 1)[0]}**)((char*)a{i} + {ARRAY_DATA_OFFSET})" for i, p in enumerate(params)]
    lines.append(f'extern "C" void {name}_obj({obj_params}) {{ {name}({", ".join(ptrs + list(symbols))}); }}')
    return "\n".join(lines)


def epilogues(schedule) -> dict[str, L.Extern]:
    """Each pointwise kernel that runs as the epilogue of the generated matmul
    right before it, by kernel name."""
    fused = {}
    if not config.cpp_matmul_epilogues:
        return fused
    for step, nxt in zip(schedule.steps, schedule.steps[1:]):
        if not isinstance(step, L.Extern) or eligible(step, schedule) is None or not fusable_epilogue(step, nxt):
            continue
        # The kernel's entry takes the operands as they are (no copy on the way).
        if all(t is not None for _, t in operands(step, schedule)):
            fused[nxt.name] = step
    return fused


def describe(schedule, kernel_args: dict[str, list[str]], fused: dict[str, L.Extern]) -> dict[str, str]:
    """Extern name -> the schedule's line for each matmul generated as C++ (the
    scheduler itself knows them only as NumPy calls, :meth:`~...scheduler.Schedule.describe`);
    ``fused`` is :func:`epilogues` of the schedule."""
    kernel_of = {ext.name: kernel for kernel, ext in fused.items()}
    lines = {}
    for ext in schedule.steps:
        if not isinstance(ext, L.Extern) or kernel_name(ext, schedule) not in kernel_args:
            continue
        operands = ", ".join(a.name for a in ext.args)
        if ext.name in kernel_of:
            lines[ext.name] = (f"{ext.name} = GEMM({operands}) inside {kernel_of[ext.name]}  generated C++ GEMM, "
                               "not BLAS; the kernel runs its epilogue on each finished tile (epilogue fusion)")
        else:
            lines[ext.name] = f"{ext.name} = {kernel_name(ext, schedule)}({operands})  generated C++ GEMM, not BLAS"
    return lines
