"""A small float32 matmul as a generated C++ kernel instead of a BLAS call.

In:  an ``np.matmul`` :class:`~minicompile.inductor.loop_ir.Extern` of two
     float32 matrices (or equal stacks of them) whose shapes the schedule knows
     (a symbolic row or stack count — a dynamic batch — is a size argument).
Out: :func:`generate` returns the C++ of ``extern "C" void mm_<name>(A, B, C, sizes...)``
     (and its ``_obj`` entry), or None when NumPy's BLAS should keep the call.

Why: NumPy's BLAS runs its own thread pool.  In a network of small matmuls
(MobileNetV2's 1x1 convolutions) between OpenMP kernels, on a machine with few
cores, the two pools take turns spinning on the same cores while the other
works.  A kernel in the OpenMP pool has no such cost.  Big matmuls, where
BLAS's cache blocking and packing pay off, stay with BLAS.

The kernel: ``C = A @ B`` with ``A`` (M x K) and ``B`` (K x N) row-major.
Each task computes an ``MR x NR`` tile of C in registers, one fused
multiply-add per (row, column, k) — an outer product of a column of A with a
row of B per step of k, as BLAS micro-kernels do.  Tiles are split across
threads, columns outermost: a thread's consecutive tiles share the same
panel of B (K x NR) while it is in cache.  The summation order differs from BLAS's (which is not specified
either); results match NumPy to float32 rounding.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.symbolic import has_division, is_symbolic, size_hint
from .. import loop_ir as L

F32 = np.dtype(np.float32)
# Matmuls up to this many multiply-adds are generated; larger ones go to BLAS.
MAX_WORK = 1 << 28
# Below this many multiply-adds the kernel runs on one thread.
PARALLEL_MIN_WORK = 1 << 16

TILE_SOURCE = r"""
// One MR x NR tile of C = A @ B: MR * NR / 8 vector accumulators, a broadcast
// of A and a vector of B per fused multiply-add.
template <int MR, int NR>
static inline void mc_mm_tile(const float* __restrict A, const float* __restrict B, float* __restrict C,
                              int64_t i0, int64_t j0, int64_t K, int64_t N) {
    float acc[MR][NR] = {};
    const float* a = A + i0 * K;
    const float* b = B + j0;
    for (int64_t k = 0; k < K; ++k) {
        #pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const float ar = a[r * K + k];
            #pragma omp simd
            for (int j = 0; j < NR; ++j) acc[r][j] = MC_FMAF(ar, b[k * N + j], acc[r][j]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        #pragma omp simd
        for (int j = 0; j < NR; ++j) C[(i0 + r) * N + j0 + j] = acc[r][j];
    }
}

// A row of fewer than NR columns (the right edge of C).
template <int NR>
static inline void mc_mm_row_edge(const float* __restrict A, const float* __restrict B, float* __restrict C,
                                  int64_t i, int64_t j0, int64_t nr, int64_t K, int64_t N) {
    float acc[NR] = {};
    for (int64_t k = 0; k < K; ++k) {
        const float ar = A[i * K + k];
        for (int64_t j = 0; j < nr; ++j) acc[j] = MC_FMAF(ar, B[k * N + j0 + j], acc[j]);
    }
    for (int64_t j = 0; j < nr; ++j) C[i * N + j0 + j] = acc[j];
}

// The tile at (i0, j0), clipped at the bottom and right edges of C.
template <int MR, int NR>
static inline void mc_mm_block(const float* __restrict A, const float* __restrict B, float* __restrict C,
                               int64_t i0, int64_t j0, int64_t M, int64_t K, int64_t N) {
    const int64_t mr = M - i0 < MR ? M - i0 : MR;
    const int64_t nr = N - j0 < NR ? N - j0 : NR;
    if (mr == MR && nr == NR) {
        mc_mm_tile<MR, NR>(A, B, C, i0, j0, K, N);
        return;
    }
    for (int64_t i = i0; i < i0 + mr; ++i) {
        if (nr == NR)
            mc_mm_tile<1, NR>(A, B, C, i, j0, K, N);
        else
            mc_mm_row_edge<NR>(A, B, C, i, j0, nr, K, N);
    }
}
"""


def tile_shape(m: int, n: int) -> tuple[int, int]:
    """(MR, NR): 6 x 16 (twelve 8-float vector accumulators, enough independent
    multiply-adds to cover their latency), or 8 x 8 when N is a multiple of 8
    but not of 16 (MobileNetV2's 24 channels), so that no column is an edge.
    Measured on MobileNetV2's 1x1 convolutions: 4 x 16 was 1.3x slower."""
    mr, nr = (8, 8) if n % 16 and n % 8 == 0 and n < 64 else (6, 16)
    return (1 if not is_symbolic(m) and m < mr else mr), nr


def _operand(schedule, name: str) -> tuple[tuple, np.dtype] | None:
    node = next((n for n in schedule.graph.nodes if n.name == name), None)
    if node is None or node.meta is None:
        return None
    return tuple(node.shape), np.dtype(node.dtype)


def kernel_name(ext: L.Extern) -> str:
    return f"mm_{ext.name}"


def eligible(ext: L.Extern, schedule) -> tuple[int, int, int, int] | None:
    """(batch, M, K, N) when ``ext`` is a float32 matrix product (or a stack of
    them with the same leading dimensions, no broadcasting) worth generating."""
    if ext.op_name != "matmul" or ext.dtype != F32 or len(ext.args) != 2:
        return None
    if not all(isinstance(a, L.BufferRef) for a in ext.args):
        return None
    operands = [_operand(schedule, a.name) for a in ext.args]
    if any(o is None for o in operands):
        return None
    (sa, da), (sb, db) = operands
    if da != F32 or db != F32 or len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2]:
        return None
    # A symbolic batch or row count (dynamic shapes) is a kernel argument; K and N stay plain.
    if any(is_symbolic(d) for d in sb[-2:] + sa[-1:]) or has_division(sa):
        return None
    (m, k), (k2, n), batch = sa[-2:], sb[-2:], math.prod(sa[:-2])
    if k != k2 or any(not is_symbolic(d) and d == 0 for d in (batch, m, k, n)) \
            or size_hint(batch * m * k * n) > MAX_WORK:  # a heuristic: the example's sizes
        return None
    return batch, m, k, n


def generate(ext: L.Extern, schedule, symbols: tuple[str, ...] = ()) -> str | None:
    """``mm_<name>(A, B, C, sizes...)`` and its ``_obj`` entry (arrays in, data
    pointers read in C); ``symbols`` are the graph's size symbols, passed last."""
    from .cpp import ARRAY_DATA_OFFSET

    shape = eligible(ext, schedule)
    if shape is None:
        return None
    batch, m, k, n = shape
    mr, nr = tile_shape(m, n)
    name = kernel_name(ext)
    work = batch * m * k * n
    parallel = "#pragma omp parallel for collapse(3) schedule(static)"
    if is_symbolic(work):  # sizes known at run time: OpenMP decides there
        parallel += f" if(({work}) >= {PARALLEL_MIN_WORK})"
    elif work < PARALLEL_MIN_WORK:
        parallel = ""
    sizes = "".join(f", const int64_t {s}" for s in symbols)

    def c(v) -> str:  # a symbolic size in parentheses: it may be a sum
        return f"({v})" if is_symbolic(v) else str(v)

    lines = [
        f'extern "C" void {name}(const float* __restrict A, const float* __restrict B, float* __restrict C{sizes})',
        "{",
        f"    // C ({m} x {n}) = A ({m} x {k}) @ B ({k} x {n}), {batch} time(s), tiles of {mr} x {nr}",
        f"    {parallel}" if parallel else "",
        f"    for (int64_t b = 0; b < {c(batch)}; ++b)",
        f"        for (int64_t j0 = 0; j0 < {n}; j0 += {nr})",
        f"            for (int64_t i0 = 0; i0 < {c(m)}; i0 += {mr})",
        f"                mc_mm_block<{mr}, {nr}>(A + b * {c(m * k)}, B + b * {k * n}, C + b * {c(m * n)}, "
        f"i0, j0, {c(m)}, {k}, {n});",
        "}",
        f'extern "C" void {name}_obj(void* a, void* b, void* c{"".join(f", int64_t {s}" for s in symbols)}) {{ {name}('
        + ", ".join([f"*(float**)((char*){p} + {ARRAY_DATA_OFFSET})" for p in "abc"] + list(symbols)) + "); }",
    ]
    return "\n".join(line for line in lines if line)
