// The packed float32 GEMM of the C++ runtime library (codegen/cpp/runtime.py
// compiles it once per machine; codegen/cpp/matmul.py generates the calls).
//
// The algorithm is the one of BLIS and of the Goto paper ("Anatomy of
// high-performance matrix multiplication", Goto and van de Geijn, 2008):
//
// * C is computed in blocks of MC_NC columns; K is cut in slices of
//   MC_KC; for each slice, the MC_KC x MC_NC block of B is *packed*
//   (copied into column panels of MC_NR that the micro-kernel reads
//   contiguously, zero-padded at the edge);
// * MC_MC x MC_KC blocks of A are packed too (panels of MC_MR
//   rows; they stay in L2) and the micro-kernel runs over them;
// * the micro-kernel keeps a 6 x 16 tile of C in twelve 8-float vector
//   registers: per step of k, two vectors of B, six broadcasts of A,
//   twelve fused multiply-adds (written with GCC vector types, so other
//   instruction sets get the same code through the compiler).
//
// Each thread computes one block of C (a group of its rows times a group
// of its columns) with its own packed copies of what it reads: no barriers, so
// a thread whose core another process (NumPy's BLAS pool, still spinning) takes
// for a while delays only its own block, where a shared packed B would
// stall every thread at each slice of K.  The split packs the fewest bytes
// (gelu(x @ w1) with a wide w1: columns, each thread packing all of the
// small x).  A stack of many small products gives each thread whole products.
// The summation order differs from BLAS's (which is not specified either):
// results match NumPy to float32 rounding.
#pragma once

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
