// Softmax attention as one kernel: FlashAttention's forward pass on the CPU.
// Compiled once per machine into the runtime library (codegen/cpp/runtime.py), as the
// GEMM is: mc_attention_f32 / mc_attention_f64 take the description a generated
// attn_<node> function fills in (mc_attention_problem.h; codegen/cpp/attention.py
// writes those functions for the `attention` nodes inductor/fuse_attention.py forms),
// which call them through mc_attention_binding.h.
//
// out[b] = softmax(where(mask[b], (q[b] @ kt[b]) * scale, fill), last axis) @ v[b]
// (or / scale), for each of `batch` matrices: q is M x D, kt D x N, v N x DV, the
// mask M x N booleans, out M x DV, each read at its own strides.
//
// One task is a block of at most MC_ATTN_BM query rows of one batch matrix (the blocks of
// a matrix equally tall; the OpenMP loop runs over all of them, dynamically: a causal
// mask makes later blocks longer).  The
// task copies its rows of q into a packed block, then walks the keys MC_ATTN_BN at a time:
//   * S = Q Kt for the tile (Kt's columns packed, a register-tiled product),
//     scaled, then `where(mask, S, fill)`; columns past N are -inf;
//   * online softmax, per row: the running maximum m, the running sum l of
//     exp(s - m) and the accumulator acc of exp(s - m) @ v; when the maximum grows,
//     l and acc are first multiplied by exp(m_old - m_new);
//   * acc += P V for the tile (v's rows read in place when they are whole vectors,
//     else packed; a register-tiled product);
// and finally writes acc / l.  The M x N scores exist one tile at a time, in L1/L2.
//
// Exactly NumPy's semantics where they matter:
//   * while every column of a row so far is -inf (masked with a fill of -inf), the
//     exponentials are taken against 0 instead of -inf (exp(-inf) = 0, never
//     exp(-inf - -inf) = NaN), so a row whose first columns are masked is unaffected
//     and a row masked entirely ends as 0 / 0 = NaN, as NumPy's exp(-inf - -inf) gives;
//   * columns the mask hides are skipped only where that changes nothing: for each
//     register tile of MC_ATTN_R rows, the columns of a tile of keys outside the span
//     its rows keep (all of them: the whole tile is skipped, the upper half of a causal
//     mask; some: the diagonal tiles cost about half) — with a fill of -inf always (each
//     exponential is 0 and the maximum does not move), with a finite fill once each of
//     those rows' maximum is so far above the fill that exp(fill - m) is 0
//     (mc_attn_traits<T>::underflow: below it T's exp rounds to 0);
//   * the scale multiplies (or divides) the rounded products, then the mask applies.
// The sums run in another order than NumPy's (and the products use FMA, as BLAS
// does): results agree to float tolerance, not bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <omp.h>

#include "mc_attention_problem.h"
#include "mc_math_f32.h"
#include "mc_math_f64.h"

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
// dst[i * ld + j] = src[j * ls + i] for a 16 x 16 block of floats (unpack pairs of rows, then
// pairs of pairs, then 128-bit lanes twice).
static inline void mc_attn_transpose16(const float* src, int64_t ls, float* dst, int64_t ld) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ls);
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
            t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0x88);
            t[8 * i + j + 4] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0xdd);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    }
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + i * ld, r[i]);
}
#endif

// Vector width in bytes: AVX-512's registers, else AVX2's (other ISAs get the same
// code split by the compiler).  The register tiles: MC_ATTN_R rows of
// MC_ATTN_NV vectors of accumulators.
#if defined(__AVX512F__)
enum { MC_ATTN_VBYTES = 64, MC_ATTN_NV = 4 };
#else
enum { MC_ATTN_VBYTES = 32, MC_ATTN_NV = 2 };
#endif
enum { MC_ATTN_R = 6, MC_ATTN_BM = 132, MC_ATTN_BN = 64 };

typedef float mc_attn_vf __attribute__((vector_size(MC_ATTN_VBYTES)));
typedef double mc_attn_vd __attribute__((vector_size(MC_ATTN_VBYTES)));
typedef float mc_attn_vfu __attribute__((vector_size(MC_ATTN_VBYTES), aligned(4)));
typedef double mc_attn_vdu __attribute__((vector_size(MC_ATTN_VBYTES), aligned(8)));

template <class T> struct mc_attn_traits;
template <> struct mc_attn_traits<float> {
    typedef mc_attn_vf vec;
    typedef mc_attn_vfu vec_unaligned;
    static constexpr float underflow = 110.0f;  // exp(x) is +0 for x < -104 (mc_exp_f32)
    static inline float exp(float x) { return mc_exp_f32(x); }
    static inline vec fma(vec a, vec b, vec c) {
#if defined(__AVX512F__)
        return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__)
        return _mm256_fmadd_ps(a, b, c);
#else
        vec r;
        for (unsigned i = 0; i < sizeof(vec) / sizeof(float); ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
        return r;
#endif
    }
};
template <> struct mc_attn_traits<double> {
    typedef mc_attn_vd vec;
    typedef mc_attn_vdu vec_unaligned;
    static constexpr double underflow = 750.0;  // exp(x) is +0 for x < -746 (mc_exp_f64)
    static inline double exp(double x) { return mc_exp_f64(x); }
    static inline vec fma(vec a, vec b, vec c) {
#if defined(__AVX512F__)
        return _mm512_fmadd_pd(a, b, c);
#elif defined(__FMA__)
        return _mm256_fmadd_pd(a, b, c);
#else
        vec r;
        for (unsigned i = 0; i < sizeof(vec) / sizeof(double); ++i) r[i] = __builtin_fma(a[i], b[i], c[i]);
        return r;
#endif
    }
};

// The problem's sizes and 2-D strides, its scale and fill in the element type T.
template <class T>
struct mc_attn_layout {
    int64_t batch, M, N, D, DV;
    int64_t q_row, q_col, kt_row, kt_col, v_row, v_col, mask_row, mask_col, out_row, out_col;
    bool has_scale, divide, has_mask;
    T scale, fill;

    explicit mc_attn_layout(const mc_attention_problem& p)
        : batch(1), M(p.M), N(p.N), D(p.D), DV(p.DV),
          q_row(p.row_stride[MC_ATTN_Q]), q_col(p.col_stride[MC_ATTN_Q]),
          kt_row(p.row_stride[MC_ATTN_KT]), kt_col(p.col_stride[MC_ATTN_KT]),
          v_row(p.row_stride[MC_ATTN_V]), v_col(p.col_stride[MC_ATTN_V]),
          mask_row(p.row_stride[MC_ATTN_MASK]), mask_col(p.col_stride[MC_ATTN_MASK]),
          out_row(p.row_stride[MC_ATTN_OUT]), out_col(p.col_stride[MC_ATTN_OUT]),
          has_scale(p.has_scale), divide(p.divide), has_mask(p.has_mask), scale((T)p.scale), fill((T)p.fill) {
        for (int64_t a = 0; a < p.batch_dims; ++a) batch *= p.batch_sizes[a];
    }
};

// Where batch matrix b of operand `which` starts: b unravelled over the batch axes.
static inline int64_t mc_attn_batch_offset(const mc_attention_problem& p, int which, int64_t b) {
    int64_t offset = p.offset[which];
    for (int64_t a = p.batch_dims - 1; a >= 0; --a) {
        offset += (b % p.batch_sizes[a]) * p.batch_stride[which][a];
        b /= p.batch_sizes[a];
    }
    return offset;
}

// kp[d * MC_ATTN_BN + j] = k[j * ld + d] for j < cols (zero for cols <= j < whole), d < D: the
// columns of kt = k.T when k's rows are contiguous (kt's rows stride 1), a transpose.
template <class T>
static inline void mc_attn_pack_k_rows(const T* k, int64_t ld, int64_t cols, int64_t whole, int64_t D, T* kp) {
    int64_t j0 = 0;
#if defined(__AVX512F__)
    if (sizeof(T) == 4) {  // 16 x 16 blocks through registers: 64 shuffles instead of 256 scattered stores
        for (; j0 + 16 <= cols; j0 += 16) {
            int64_t d0 = 0;
            for (; d0 + 16 <= D; d0 += 16) mc_attn_transpose16((const float*)k + j0 * ld + d0, ld,
                                                                (float*)kp + d0 * MC_ATTN_BN + j0, MC_ATTN_BN);
            for (int64_t j = j0; j < j0 + 16; ++j)
                for (int64_t d = d0; d < D; ++d) kp[d * MC_ATTN_BN + j] = k[j * ld + d];
        }
    }
#endif
    for (int64_t j = j0; j < whole; ++j) {
        if (j < cols)
            for (int64_t d = 0; d < D; ++d) kp[d * MC_ATTN_BN + j] = k[j * ld + d];
        else
            for (int64_t d = 0; d < D; ++d) kp[d * MC_ATTN_BN + j] = 0;
    }
}

// A grown-on-demand, 64-byte-aligned scratch block per thread.
static inline void* mc_attn_scratch(size_t bytes) {
    static thread_local void* buf = nullptr;
    static thread_local size_t size = 0;
    if (size < bytes) {
        std::free(buf);
        buf = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        size = bytes;
    }
    return buf;
}

// A vector of copies of x: one broadcast (x - 0 is x for every x, -0 included, so the compiler
// drops the subtraction; `x + 0` would turn -0 into +0, and a loop filling lanes compiles badly).
template <class V, class T>
static inline V mc_attn_splat(T x) {
    return x - V{};
}

// s[0:R, 0:NV*W] (row stride ld) = qp[0:R, 0:D] (row stride D) @ kp[0:D, 0:NV*W] (row stride ld).
template <class T, int NV>
static inline void mc_attn_scores_micro(int64_t D, const T* __restrict qp, const T* __restrict kp, T* __restrict s,
                                        int64_t ld) {
    typedef mc_attn_traits<T> X;
    typedef typename X::vec V;
    constexpr int W = sizeof(V) / sizeof(T), R = MC_ATTN_R;
    V acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NV; ++c) acc[r][c] = V{};
    for (int64_t d = 0; d < D; ++d) {
        V b[NV];
        for (int c = 0; c < NV; ++c) b[c] = *(const V*)(kp + d * ld + c * W);
        for (int r = 0; r < R; ++r) {
            const V a = mc_attn_splat<V>(qp[r * D + d]);
            for (int c = 0; c < NV; ++c) acc[r][c] = X::fma(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NV; ++c) *(V*)(s + r * ld + c * W) = acc[r][c];
}

// The scores of one register tile of rows, columns [lo, hi) (multiples of the vector width W):
// chunks of MC_ATTN_NV vectors, then one of the few left.
template <class T>
static inline void mc_attn_scores(int64_t D, const T* qp, const T* kp, T* s, int64_t lo, int64_t hi) {
    constexpr int W = sizeof(typename mc_attn_traits<T>::vec) / sizeof(T), CW = MC_ATTN_NV * W;
    int64_t j = lo;
    for (; j + CW <= hi; j += CW) mc_attn_scores_micro<T, MC_ATTN_NV>(D, qp, kp + j, s + j, MC_ATTN_BN);
    switch ((hi - j) / W) {
        case 1: mc_attn_scores_micro<T, 1>(D, qp, kp + j, s + j, MC_ATTN_BN); break;
        case 2: mc_attn_scores_micro<T, 2 < MC_ATTN_NV ? 2 : 1>(D, qp, kp + j, s + j, MC_ATTN_BN); break;
        case 3: mc_attn_scores_micro<T, 3 < MC_ATTN_NV ? 3 : 1>(D, qp, kp + j, s + j, MC_ATTN_BN); break;
        default: break;
    }
}

// acc[0:R, 0:NC*W] (row stride lda) = acc * alpha[r] + p[0:R, lo:hi] (row stride BN) @ vp[lo:hi, 0:NC*W]
// (row stride ldv, any alignment).
template <class T, int NC>
static inline void mc_attn_values_micro(const T* __restrict p, const T* __restrict vp, int64_t ldv,
                                        const T* __restrict alpha, T* __restrict acc, int64_t lda, int64_t lo,
                                        int64_t hi) {
    typedef mc_attn_traits<T> X;
    typedef typename X::vec V;
    typedef typename X::vec_unaligned VU;
    constexpr int W = sizeof(V) / sizeof(T), R = MC_ATTN_R;
    V a[R][NC];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NC; ++c) a[r][c] = *(V*)(acc + r * lda + c * W) * alpha[r];
    for (int64_t n = lo; n < hi; ++n) {
        V b[NC];
        for (int c = 0; c < NC; ++c) b[c] = *(const VU*)(vp + n * ldv + c * W);
        for (int r = 0; r < R; ++r) {
            const V x = mc_attn_splat<V>(p[r * MC_ATTN_BN + n]);
            for (int c = 0; c < NC; ++c) a[r][c] = X::fma(x, b[c], a[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NC; ++c) *(V*)(acc + r * lda + c * W) = a[r][c];
}

// Row `mr` of the mask, columns [0, cols): the first and one past the last column it keeps
// ({0, 0}: none); true when it keeps every one (no `where` to apply).
static inline bool mc_attn_kept_range(const uint8_t* mr, int64_t stride, int64_t cols, int64_t* lo, int64_t* hi) {
    bool none = true, every = true;
    int64_t j = 0;
    if (stride == 1) {  // 8 booleans at a time: any set, any clear (a zero byte: (w - 0x01..) & ~w & 0x80..)
        uint64_t any = 0, zero = 0;
        for (; j + 8 <= cols; j += 8) {
            uint64_t w;
            __builtin_memcpy(&w, mr + j, 8);
            any |= w;
            zero |= (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
        }
        none = any == 0;
        every = zero == 0;
    }
    for (; j < cols; ++j) {
        const bool keep = mr[j * stride] != 0;
        none = none && !keep;
        every = every && keep;
    }
    *lo = 0;
    *hi = none ? 0 : cols;
    if (none || every) return every;
    while (!mr[*lo * stride]) ++*lo;
    while (!mr[(*hi - 1) * stride]) --*hi;
    return false;
}

// The rows [i0, i0 + bm) of batch matrix b (bm <= MC_ATTN_BM; see the top of this file).  Each register
// tile of MC_ATTN_R rows computes, in each tile of keys, only the columns between the first
// and the last that one of its rows keeps, where the others are exactly nothing (a fill of
// -inf, or rows whose maximum is far above the fill): the causal mask's diagonal tiles cost half.
template <class T>
static void mc_attention_block(const T* q, const T* kt, const T* v, const uint8_t* mask, T* out,
                               const mc_attention_problem& problem, const mc_attn_layout<T>& pr, int64_t b,
                               int64_t i0, int64_t bm) {
    typedef mc_attn_traits<T> X;
    typedef typename X::vec V;
    constexpr int W = sizeof(V) / sizeof(T), BM = MC_ATTN_BM, BN = MC_ATTN_BN, R = MC_ATTN_R;
    constexpr int G = BM / R;  // register tiles of rows per block
    const T neg_inf = -INFINITY;
    const int64_t D = pr.D, DV = pr.DV, dvp = (DV + W - 1) / W * W;  // acc and vp rows: DV padded to vectors
    const int64_t rows = pr.M - i0 < bm ? pr.M - i0 : bm, groups = (rows + R - 1) / R;
    q += mc_attn_batch_offset(problem, MC_ATTN_Q, b);
    kt += mc_attn_batch_offset(problem, MC_ATTN_KT, b);
    v += mc_attn_batch_offset(problem, MC_ATTN_V, b);
    out += mc_attn_batch_offset(problem, MC_ATTN_OUT, b);
    if (mask) mask += mc_attn_batch_offset(problem, MC_ATTN_MASK, b) + i0 * pr.mask_row;
    // Scratch: qp [BM x D], kp [D x BN], s (then p) [BM x BN], vp [BN x dvp], acc [BM x dvp], m, l, alpha [BM].
    T* qp = (T*)mc_attn_scratch(sizeof(T) * ((size_t)BM * D + (size_t)D * BN + (size_t)BM * BN + (size_t)BN * dvp
                                             + (size_t)BM * dvp + 3 * BM) + 64);
    T* kp = (T*)(((uintptr_t)(qp + BM * D) + 63) & ~(uintptr_t)63);
    T* s = kp + D * BN;
    T* vp = s + BM * BN;
    T* acc = vp + BN * dvp;
    T* m = acc + BM * dvp;
    T* l = m + BM;
    T* alpha = l + BM;
    for (int64_t r = 0; r < groups * R; ++r) {
        const T* src = q + (i0 + r) * pr.q_row;
        if (r >= rows)
            for (int64_t d = 0; d < D; ++d) qp[r * D + d] = 0;
        else if (pr.q_col == 1)
            for (int64_t d = 0; d < D; ++d) qp[r * D + d] = src[d];
        else
            for (int64_t d = 0; d < D; ++d) qp[r * D + d] = src[d * pr.q_col];
    }
    for (int64_t i = 0; i < groups * R * dvp; ++i) acc[i] = 0;
    for (int64_t r = 0; r < BM; ++r) {
        m[r] = neg_inf;
        l[r] = 0;
        alpha[r] = 0;  // (rows past M: their products are computed, never stored)
    }
    int64_t lo[G], hi[G];  // each register tile's columns to compute in this tile of keys ([lo, hi), W-aligned)
    bool every[BM];        // the row's mask keeps every column of this tile of keys
    for (int64_t n0 = 0; n0 < pr.N; n0 += BN) {
        const int64_t cols = pr.N - n0 < BN ? pr.N - n0 : BN, whole = (cols + W - 1) / W * W;
        bool any = false;
        for (int64_t g = 0; g < groups; ++g) {
            lo[g] = 0;
            hi[g] = whole;
            if (mask) {
                int64_t a = cols, z = 0;
                bool settled = true;  // exp(fill - m) is 0 in every row of the register tile
                for (int64_t r = g * R; r < (g + 1) * R && r < rows; ++r) {
                    int64_t ra, rz;
                    const uint8_t* mr = mask + r * pr.mask_row + n0 * pr.mask_col;
                    every[r] = mc_attn_kept_range(mr, pr.mask_col, cols, &ra, &rz);
                    if (ra < rz) {
                        a = ra < a ? ra : a;
                        z = rz > z ? rz : z;
                    }
                    settled = settled && m[r] - pr.fill > X::underflow;
                }
                if (pr.fill == neg_inf || settled) {  // the columns outside [a, z) add exactly nothing
                    lo[g] = a < z ? a / W * W : 0;
                    hi[g] = a < z ? (z + W - 1) / W * W : 0;
                }
            }
            any = any || lo[g] < hi[g];
        }
        if (!any) continue;  // a tile the mask hides entirely: skipped (exact, see above)
        // kp <- kt[:, n0:n0+BN], zero past N; the loop order follows kt's smaller stride.
        if (pr.kt_row == 1) {  // k's rows (kt = k.T): a transpose
            mc_attn_pack_k_rows<T>(kt + n0 * pr.kt_col, pr.kt_col, cols, whole, D, kp);
        } else {
            for (int64_t d = 0; d < D; ++d) {
                const T* src = kt + d * pr.kt_row + n0 * pr.kt_col;
                for (int64_t j = 0; j < whole; ++j) kp[d * BN + j] = j < cols ? src[j * pr.kt_col] : T(0);
            }
        }
        for (int64_t g = 0; g < groups; ++g)
            if (lo[g] < hi[g]) mc_attn_scores<T>(D, qp + g * R * D, kp, s + g * R * BN, lo[g], hi[g]);
        // Scale, mask, online softmax on [lo, hi): s becomes p = exp(s - m_new); alpha = exp(m_old - m_new).
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t a = lo[r / R], z = hi[r / R];
            if (a >= z) {
                alpha[r] = 1;
                continue;
            }
            T* sr = s + r * BN;
            if (pr.has_scale && pr.divide) {
                #pragma omp simd
                for (int64_t j = a; j < z; ++j) sr[j] = sr[j] / pr.scale;
            } else if (pr.has_scale) {
                #pragma omp simd
                for (int64_t j = a; j < z; ++j) sr[j] = sr[j] * pr.scale;
            }
            const int64_t live = z < cols ? z : cols;
            if (mask && !every[r]) {
                const uint8_t* mr = mask + r * pr.mask_row + n0 * pr.mask_col;
                if (pr.mask_col == 1) {
                    #pragma omp simd
                    for (int64_t j = a; j < live; ++j) sr[j] = mr[j] ? sr[j] : pr.fill;
                } else {
                    for (int64_t j = a; j < live; ++j) sr[j] = mr[j * pr.mask_col] ? sr[j] : pr.fill;
                }
            }
            for (int64_t j = live; j < z; ++j) sr[j] = neg_inf;
            T top = neg_inf;
            #pragma omp simd reduction(max:top)
            for (int64_t j = a; j < z; ++j) top = sr[j] > top ? sr[j] : top;
            const T m_new = m[r] > top ? m[r] : top;
            const T m_ref = m_new == neg_inf ? T(0) : m_new;  // all -inf so far: against 0
            T sum = 0;
            #pragma omp simd reduction(+:sum)
            for (int64_t j = a; j < z; ++j) {
                const T e = X::exp(sr[j] - m_ref);
                sr[j] = e;
                sum += e;
            }
            alpha[r] = X::exp(m[r] - m_ref);
            l[r] = l[r] * alpha[r] + sum;
            m[r] = m_new;
        }
        for (int64_t r = rows; r < groups * R; ++r)  // rows past M in the last register tile: p = 0
            for (int64_t j = lo[r / R]; j < hi[r / R]; ++j) s[r * BN + j] = 0;
        // v's rows as they are when they are whole vectors, else vp <- v[n0:n0+BN, :], zero past N and DV.
        const T* vt = v + n0 * pr.v_row;
        int64_t ldv = pr.v_row;
        if (!(pr.v_col == 1 && DV == dvp && cols == BN)) {
            for (int64_t n = 0; n < whole; ++n) {
                T* dst = vp + n * dvp;
                const T* src = vt + n * pr.v_row;
                int64_t c = 0;
                if (n < cols) {
                    if (pr.v_col == 1)
                        for (; c < DV; ++c) dst[c] = src[c];
                    else
                        for (; c < DV; ++c) dst[c] = src[c * pr.v_col];
                }
                for (; c < dvp; ++c) dst[c] = 0;
            }
            vt = vp;
            ldv = dvp;
        }
        constexpr int64_t CW = MC_ATTN_NV * W;
        for (int64_t g = 0; g < groups; ++g) {
            if (lo[g] >= hi[g]) continue;
            const T* pg = s + g * R * BN;
            T* ag = acc + g * R * dvp;
            int64_t c = 0;
            for (; c + CW <= dvp; c += CW)
                mc_attn_values_micro<T, MC_ATTN_NV>(pg, vt + c, ldv, alpha + g * R, ag + c, dvp, lo[g], hi[g]);
            for (; c < dvp; c += W)
                mc_attn_values_micro<T, 1>(pg, vt + c, ldv, alpha + g * R, ag + c, dvp, lo[g], hi[g]);
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
        const T sum = l[r];
        T* dst = out + (i0 + r) * pr.out_row;
        if (pr.out_col == 1) {
            #pragma omp simd
            for (int64_t c = 0; c < DV; ++c) dst[c] = acc[r * dvp + c] / sum;
        } else {
            for (int64_t c = 0; c < DV; ++c) dst[c * pr.out_col] = acc[r * dvp + c] / sum;
        }
    }
}

// Every batch matrix's attention, blocks of query rows spread over the threads.
template <class T>
static void mc_attention(const T* q, const T* kt, const T* v, const uint8_t* mask, T* out,
                         const mc_attention_problem& problem) {
    const mc_attn_layout<T> pr(problem);
    const int64_t blocks = (pr.M + MC_ATTN_BM - 1) / MC_ATTN_BM;  // of bm rows, a multiple of R
    const int64_t bm = ((pr.M + blocks - 1) / blocks + MC_ATTN_R - 1) / MC_ATTN_R * MC_ATTN_R;
    const int threads = problem.threads > 0 ? problem.threads : omp_get_max_threads();
    if (!problem.has_mask) mask = nullptr;
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if(threads > 1)
    for (int64_t task = 0; task < pr.batch * blocks; ++task)
        mc_attention_block<T>(q, kt, v, mask, out, problem, pr, task / blocks, task % blocks * bm, bm);
}

extern "C" void mc_attention_f32(const float* q, const float* kt, const float* v, const uint8_t* mask, float* out,
                                 const mc_attention_problem* problem) {
    mc_attention<float>(q, kt, v, mask, out, *problem);
}

extern "C" void mc_attention_f64(const double* q, const double* kt, const double* v, const uint8_t* mask,
                                 double* out, const mc_attention_problem* problem) {
    mc_attention<double>(q, kt, v, mask, out, *problem);
}
