"""Float32 matmuls as generated C++ (a packed, cache-blocked GEMM) with their epilogues fused.

In:  an ``np.matmul`` :class:`~minicompile.inductor.loop_ir.Extern` of two
     float32 matrices (or equal stacks of them) whose shapes the schedule knows
     (a symbolic row or stack count — a dynamic batch — is a size argument),
     and optionally the pointwise kernel right after it that reads the product
     only at its own element (``gelu(x @ w + b)``: the bias and the GELU).
Out: :func:`generate` returns the C++ of the matmul's ``extern "C"`` function
     (and its ``_obj`` entry), or None when NumPy's BLAS should keep the call.
     With an epilogue, the function is the epilogue kernel's: it computes the
     product and runs the epilogue on each finished tile (a 16-column panel of
     a block of at most 144 rows) while the tile is still in L1, so the
     product is never read back from memory.

Why generate a GEMM at all: NumPy's BLAS runs its own thread pool.  Between
OpenMP kernels, on a machine with few cores, the two pools take turns spinning
on the same cores while the other works (MobileNetV2's 1x1 convolutions, a
decoder's projections).  A GEMM in the OpenMP pool has no such cost, and it
can take the following pointwise kernel as an epilogue, as torch.compile's
CPU GEMM templates do.

The algorithm is the one of BLIS and of the Goto paper ("Anatomy of
high-performance matrix multiplication", Goto and van de Geijn, 2008):

* ``C`` is computed in blocks of ``MC_NC`` columns; ``K`` is cut in slices of
  ``MC_KC``; for each slice, the ``MC_KC x MC_NC`` block of ``B`` is *packed*
  (copied into column panels of ``MC_NR`` that the micro-kernel reads
  contiguously, zero-padded at the edge);
* ``MC_MC x MC_KC`` blocks of ``A`` are packed too (panels of ``MC_MR``
  rows; they stay in L2) and the micro-kernel runs over them;
* the micro-kernel keeps a ``6 x 16`` tile of ``C`` in twelve 8-float vector
  registers: per step of ``k``, two vectors of ``B``, six broadcasts of ``A``,
  twelve fused multiply-adds (written with GCC vector types, so other
  instruction sets get the same code through the compiler).

Each thread computes one block of ``C`` (a group of its rows times a group
of its columns) with its own packed copies of what it reads: no barriers, so
a thread whose core another process (NumPy's BLAS pool, still spinning) takes
for a while delays only its own block, where a shared packed ``B`` would
stall every thread at each slice of ``K``.  The split packs the fewest bytes
(``gelu(x @ w1)`` with a wide ``w1``: columns, each thread packing all of the
small ``x``).  A stack of many small products gives each thread whole products.
The summation order differs from BLAS's (which is not specified either):
results match NumPy to float32 rounding.
"""
from __future__ import annotations

import math

import numpy as np

from .... import config
from ....ir.symbolic import has_division, is_symbolic, size_hint
from ... import loop_ir as L
from .prelude import ARRAY_DATA_OFFSET

F32 = np.dtype(np.float32)
# Matmuls up to this many multiply-adds are generated; larger ones go to BLAS
# (None: every eligible matmul is generated).
MAX_WORK: int | None = None
# Below this many multiply-adds the product runs on one thread.
PARALLEL_MIN_WORK = 1 << 16

# The GEMM itself: a library of its own, compiled once per machine and shared by
# every graph (see :mod:`.runtime`), as ATen's GEMMs are for torch.compile;
# a graph's translation unit only declares it.  Compiling it with each graph would
# add a second to every cold compile of a graph with a matmul.
GEMM_SOURCE = r"""
// ---- packed float32 GEMM (see minicompile/inductor/codegen/cpp/matmul.py) ----
#include <cstdint>
#include <cstdlib>
#include <omp.h>

typedef float mc_v8 __attribute__((vector_size(32)));
typedef float mc_v8u __attribute__((vector_size(32), aligned(4)));  // 8 floats at any address

static inline mc_v8 mc_v8_fma(mc_v8 a, mc_v8 b, mc_v8 c) {
#if defined(__FMA__) && defined(__x86_64__)
    return __builtin_ia32_vfmaddps256(a, b, c);  // one vfmadd (the build has no FP contraction)
#else
    mc_v8 r;
    for (int i = 0; i < 8; ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
    return r;
#endif
}

// 8 copies of *p (one vbroadcastss on AVX; `vector + scalar` would cost an addition of 0).
static inline mc_v8 mc_v8_splat(const float* p) {
    const float x = *p;
    return (mc_v8){x, x, x, x, x, x, x, x};
}

enum { MC_MR = 6, MC_NR = 16, MC_KC = 256, MC_MC = 144, MC_NC = 4096 };

// C[0:6, 0:16] (row stride ldc) = (add ? C : 0) + a (kc x 6, packed) @ b (kc x 16, packed).
static inline void mc_gemm_micro(int64_t kc, const float* __restrict a, const float* __restrict b,
                                 float* __restrict c, int64_t ldc, bool add) {
    mc_v8 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {},
          c30 = {}, c31 = {}, c40 = {}, c41 = {}, c50 = {}, c51 = {};
    for (int r = 0; r < MC_MR; ++r) {  // the tile of C is needed at the end: start fetching it now
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + MC_NR - 1, 1, 3);
    }
    #pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        const mc_v8 b0 = *(const mc_v8*)b, b1 = *(const mc_v8*)(b + 8);
        mc_v8 ar;
        ar = mc_v8_splat(a + 0); c00 = mc_v8_fma(ar, b0, c00); c01 = mc_v8_fma(ar, b1, c01);
        ar = mc_v8_splat(a + 1); c10 = mc_v8_fma(ar, b0, c10); c11 = mc_v8_fma(ar, b1, c11);
        ar = mc_v8_splat(a + 2); c20 = mc_v8_fma(ar, b0, c20); c21 = mc_v8_fma(ar, b1, c21);
        ar = mc_v8_splat(a + 3); c30 = mc_v8_fma(ar, b0, c30); c31 = mc_v8_fma(ar, b1, c31);
        ar = mc_v8_splat(a + 4); c40 = mc_v8_fma(ar, b0, c40); c41 = mc_v8_fma(ar, b1, c41);
        ar = mc_v8_splat(a + 5); c50 = mc_v8_fma(ar, b0, c50); c51 = mc_v8_fma(ar, b1, c51);
        a += MC_MR;
        b += MC_NR;
    }
    const mc_v8 acc[MC_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < MC_MR; ++r) {
        mc_v8u* row = (mc_v8u*)(c + r * ldc);
        row[0] = add ? row[0] + acc[r][0] : acc[r][0];
        row[1] = add ? row[1] + acc[r][1] : acc[r][1];
    }
}

// A grown-on-demand, 64-byte-aligned scratch array per thread (0: packed A, 1: packed B).
static inline float* mc_scratch(int which, size_t floats) {
    static thread_local float* buf[2] = {nullptr, nullptr};
    static thread_local size_t size[2] = {0, 0};
    if (size[which] < floats) {
        std::free(buf[which]);
        buf[which] = (float*)std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
        size[which] = floats;
    }
    return buf[which];
}

// ap <- A[i0:i0+mc, p0:p0+kc] as panels of MC_MR rows, k-major within a panel; rows past M are 0.
// A is M x K row-major, or (ta) its transpose is: K x M row-major, a column of A contiguous.
static inline void mc_pack_a(const float* __restrict A, bool ta, int64_t K, int64_t i0, int64_t mc, int64_t p0,
                             int64_t kc, int64_t M, float* __restrict ap) {
    for (int64_t ir = 0; ir < mc; ir += MC_MR) {
        const int64_t rows = M - (i0 + ir) < MC_MR ? M - (i0 + ir) : MC_MR;
        if (ta) {  // the panel's rows are MC_MR consecutive floats of each row of A^T
            for (int64_t k = 0; k < kc; ++k) {
                const float* src = A + (p0 + k) * M + i0 + ir;
                for (int r = 0; r < MC_MR; ++r) ap[k * MC_MR + r] = r < rows ? src[r] : 0.0f;
            }
        } else {
            const float* src[MC_MR];
            for (int r = 0; r < MC_MR; ++r) src[r] = r < rows ? A + (i0 + ir + r) * K + p0 : nullptr;
            for (int64_t k = 0; k < kc; ++k)
                for (int r = 0; r < MC_MR; ++r) ap[k * MC_MR + r] = src[r] ? src[r][k] : 0.0f;
        }
        ap += kc * MC_MR;
    }
}

// One column panel: bp <- B[p0:p0+kc, j0:j0+MC_NR]; columns past N are 0.  B is K x N
// row-major, or (tb) its transpose is: N x K row-major (x @ W.T), a column of B contiguous.
static inline void mc_pack_b(const float* __restrict B, bool tb, int64_t K, int64_t p0, int64_t kc, int64_t j0,
                             int64_t N, float* __restrict bp) {
    const int64_t nr = N - j0 < MC_NR ? N - j0 : MC_NR;
    if (tb) {  // each column of the panel is kc consecutive floats of a row of B^T
        for (int j = 0; j < MC_NR; ++j) {
            const float* src = B + (j0 + j) * K + p0;
            for (int64_t k = 0; k < kc; ++k) bp[k * MC_NR + j] = j < nr ? src[k] : 0.0f;
        }
        return;
    }
    const float* src = B + p0 * N + j0;
    if (nr == MC_NR) {
        for (int64_t k = 0; k < kc; ++k) {
            *(mc_v8*)(bp + k * MC_NR) = *(const mc_v8u*)(src + k * N);
            *(mc_v8*)(bp + k * MC_NR + 8) = *(const mc_v8u*)(src + k * N + 8);
        }
        return;
    }
    for (int64_t k = 0; k < kc; ++k)
        for (int j = 0; j < MC_NR; ++j) bp[k * MC_NR + j] = j < nr ? src[k * N + j] : 0.0f;
}

// C[r0:r1, c0:c1] of C (M x N) = A (M x K) @ B (K x N), all row-major and contiguous: one
// thread's block, with its own packed copies of the parts of A and B it reads (no sharing, so no
// barriers: a thread that is late — its core taken by another process — delays only itself).
// c0 is a multiple of MC_NR.  epi(i0, rows, j0, cols) runs on each column panel of a row block of
// C once its last slice of K is in.
template <class Epi>
static void mc_gemm_block(const float* A, bool ta, const float* B, bool tb, float* C, int64_t M, int64_t N,
                          int64_t K, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const Epi& epi) {
    if (r0 >= r1 || c0 >= c1) return;
    // Row blocks of at most MC_MC, all about the same height.
    const int64_t blocks = (r1 - r0 + MC_MC - 1) / MC_MC;
    const int64_t mc_step = ((r1 - r0 + blocks - 1) / blocks + MC_MR - 1) / MC_MR * MC_MR;
    const int64_t widest = ((c1 - c0 < MC_NC ? c1 - c0 : MC_NC) + MC_NR - 1) / MC_NR * MC_NR;
    float* ap = mc_scratch(0, (size_t)mc_step * MC_KC);
    float* bp = mc_scratch(1, (size_t)MC_KC * widest);
    float edge[MC_MR * MC_NR];
    for (int64_t jc = c0; jc < c1; jc += MC_NC) {
        const int64_t nc = c1 - jc < MC_NC ? c1 - jc : MC_NC;
        const int64_t panels = (nc + MC_NR - 1) / MC_NR;
        for (int64_t pc = 0; pc < K; pc += MC_KC) {
            const int64_t kc = K - pc < MC_KC ? K - pc : MC_KC;
            for (int64_t q = 0; q < panels; ++q) mc_pack_b(B, tb, K, pc, kc, jc + q * MC_NR, N, bp + q * kc * MC_NR);
            for (int64_t ic = r0; ic < r1; ic += mc_step) {
                const int64_t mc = r1 - ic < mc_step ? r1 - ic : mc_step;
                mc_pack_a(A, ta, K, ic, mc, pc, kc, M, ap);
                for (int64_t q = 0; q < panels; ++q) {
                    const int64_t j = jc + q * MC_NR, nr = N - j < MC_NR ? N - j : MC_NR;
                    for (int64_t ir = 0; ir < mc; ir += MC_MR) {
                        const int64_t i = ic + ir, mr = M - i < MC_MR ? M - i : MC_MR;
                        float* c = C + i * N + j;
                        if (mr == MC_MR && nr == MC_NR) {
                            mc_gemm_micro(kc, ap + ir * kc, bp + q * kc * MC_NR, c, N, pc > 0);
                        } else {  // an edge tile: through a full-size tile on the stack
                            mc_gemm_micro(kc, ap + ir * kc, bp + q * kc * MC_NR, edge, MC_NR, false);
                            for (int64_t r = 0; r < mr; ++r)
                                for (int64_t s = 0; s < nr; ++s)
                                    c[r * N + s] = pc > 0 ? c[r * N + s] + edge[r * MC_NR + s] : edge[r * MC_NR + s];
                        }
                    }
                    // The block's column panel is done (mc x MC_NR floats, still in L1): its epilogue,
                    // one call per panel rather than per tile, so the epilogue's loops run long.
                    if (pc + kc == K) epi(ic, mc, j, nr);
                }
            }
        }
    }
}

// How T threads split one product: Tm groups of rows x Tn groups of columns (Tm * Tn = T), each
// group at least one panel wide and tall.  Each thread packs the rows of A and the columns of B it
// reads, so A is packed Tn times and B Tm times: the split that packs the fewest bytes wins.
static inline void mc_gemm_grid(int64_t M, int64_t N, int64_t K, int T, int* Tm, int* Tn) {
    const int64_t row_panels = (M + MC_MR - 1) / MC_MR, col_panels = (N + MC_NR - 1) / MC_NR;
    double best = -1;
    *Tm = T;
    *Tn = 1;
    for (int tm = 1; tm <= T; ++tm) {
        if (T % tm) continue;
        const int tn = T / tm;
        if (tm > row_panels || tn > col_panels) continue;
        const double packed = (double)tn * M * K + (double)tm * K * N;
        if (best < 0 || packed < best) {
            best = packed;
            *Tm = tm;
            *Tn = tn;
        }
    }
}

typedef void (*mc_gemm_epilogue)(void* ctx, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols);

// batch x [C = A @ B] (A: M x K, B: K x N, C: M x N, each contiguous; ta / tb: A / B given as
// their contiguous transposes, a matrix of the stack at a time) on `threads` threads (0: OpenMP's
// default); epi(ctx, b, i0, rows, j0, cols), if given, on each finished tile.  Many small
// products: one per thread at a time; otherwise each product is split into one block per thread
// (mc_gemm_grid).
extern "C" void mc_gemm_f32(const float* A, int ta, const float* B, int tb, float* C, int64_t batch, int64_t M,
                            int64_t N, int64_t K, int threads, mc_gemm_epilogue epilogue, void* ctx) {
    if (threads <= 0) threads = omp_get_max_threads();
    auto epi = [=](int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
        if (epilogue) epilogue(ctx, b, i0, rows, j0, cols);
    };
    if (threads <= 1 || (batch >= threads && M * N * K < (1 << 22))) {
        #pragma omp parallel for schedule(static) num_threads(threads) if(threads > 1)
        for (int64_t b = 0; b < batch; ++b)
            mc_gemm_block(A + b * M * K, ta, B + b * K * N, tb, C + b * M * N, M, N, K, 0, M, 0, N,
                          [&](int64_t i, int64_t mr, int64_t j, int64_t nr) { epi(b, i, mr, j, nr); });
        return;
    }
    int Tm, Tn;
    mc_gemm_grid(M, N, K, threads, &Tm, &Tn);
    const int64_t row_panels = (M + MC_MR - 1) / MC_MR, col_panels = (N + MC_NR - 1) / MC_NR;
    #pragma omp parallel num_threads(Tm * Tn)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        // (fewer threads than asked for: the first T blocks of a grid of T rows)
        const int tm = T == Tm * Tn ? t / Tn : t, gm = T == Tm * Tn ? Tm : T;
        const int tn = T == Tm * Tn ? t % Tn : 0, gn = T == Tm * Tn ? Tn : 1;
        const int64_t r0 = row_panels * tm / gm * MC_MR, r1 = row_panels * (tm + 1) / gm * MC_MR;
        const int64_t c0 = col_panels * tn / gn * MC_NR, c1 = col_panels * (tn + 1) / gn * MC_NR;
        for (int64_t b = 0; b < batch; ++b)
            mc_gemm_block(A + b * M * K, ta, B + b * K * N, tb, C + b * M * N, M, N, K, r0, r1 < M ? r1 : M, c0,
                          c1 < N ? c1 : N, [&](int64_t i, int64_t mr, int64_t j, int64_t nr) { epi(b, i, mr, j, nr); });
    }
}
"""


def _operand(schedule, name: str) -> tuple[tuple, np.dtype] | None:
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None or node.meta is None:
        return None
    return tuple(node.shape), np.dtype(node.dtype)


def kernel_name(ext: L.Extern) -> str:
    return f"mm_{ext.name}"


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


# What a graph's translation unit needs: the GEMM's type, and a pointer to it
# that :func:`.runtime.bind` sets when the library is loaded.
GEMM_DECLARATIONS = r"""
typedef void (*mc_gemm_epilogue)(void* ctx, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols);
typedef void (*mc_gemm_fn)(const float* A, int ta, const float* B, int tb, float* C, int64_t batch, int64_t M,
                           int64_t N, int64_t K, int threads, mc_gemm_epilogue epilogue, void* ctx);
// Until the runtime is bound (it always is, on load): the same contract, one dot product at a time.
static void mc_gemm_unbound(const float* A, int ta, const float* B, int tb, float* C, int64_t batch, int64_t M,
                            int64_t N, int64_t K, int, mc_gemm_epilogue epilogue, void* ctx) {
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (int64_t k = 0; k < K; ++k)
                    acc += A[b * M * K + (ta ? k * M + i : i * K + k)] * B[b * K * N + (tb ? j * K + k : k * N + j)];
                C[(b * M + i) * N + j] = acc;
            }
            if (epilogue) epilogue(ctx, b, i, 1, 0, N);
        }
}
static mc_gemm_fn mc_gemm_f32 = mc_gemm_unbound;
extern "C" void mc_bind_gemm(void* fn) { mc_gemm_f32 = (mc_gemm_fn)fn; }
"""


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
    name, extra = epilogue if epilogue else (kernel_name(ext), [])
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
