// Softmax attention as one kernel: FlashAttention's forward pass on the CPU.
// codegen/cpp/attention.py generates one extern "C" function per `attention`
// node (inductor/fuse_attention.py forms them), which fills an
// mc_attention_problem with the node's sizes, strides, scale and fill and calls
// mc_attention<T>(..., offsets) with a lambda giving each batch matrix's offsets.
//
// out[b] = softmax(where(mask[b], (q[b] @ kt[b]) * scale, fill), last axis) @ v[b]
// (or / scale), for each of `batch` matrices: q is M x D, kt D x N, v N x DV, the
// mask M x N booleans, out M x DV, each read at its own strides.
//
// One task is a block of MC_ATTN_BM query rows of one batch matrix (the OpenMP loop
// runs over all of them).  The task copies its rows of q into a packed block, then
// walks the keys MC_ATTN_BN at a time:
//   * S = Q Kt for the tile (Kt's columns packed, a register-tiled product),
//     scaled, then `where(mask, S, fill)`; columns past N are -inf;
//   * online softmax, per row: the running maximum m, the running sum l of
//     exp(s - m) and the accumulator acc of exp(s - m) @ v; when the maximum grows,
//     l and acc are first multiplied by exp(m_old - m_new);
//   * acc += P V for the tile (v's rows packed, a register-tiled product);
// and finally writes acc / l.  The M x N scores exist one tile at a time, in L1/L2.
//
// Exactly NumPy's semantics where they matter:
//   * while every column of a row so far is -inf (masked with a fill of -inf), the
//     exponentials are taken against 0 instead of -inf (exp(-inf) = 0, never
//     exp(-inf - -inf) = NaN), so a row whose first columns are masked is unaffected
//     and a row masked entirely ends as 0 / 0 = NaN, as NumPy's exp(-inf - -inf) gives;
//   * a tile the mask hides entirely is skipped only where that changes nothing: with
//     a fill of -inf always (each of its exponentials is 0 and the maximum does not
//     move), with a finite fill once every row's maximum is so far above the fill
//     that exp(fill - m) is 0 (MC_ATTN_UNDERFLOW: below it T's exp rounds to 0);
//   * the scale multiplies (or divides) the rounded products, then the mask applies.
// The sums run in another order than NumPy's (and the products use FMA, as BLAS
// does): results agree to float tolerance, not bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <omp.h>

#include "mc_math_f32.h"
#include "mc_math_f64.h"

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

// Vector width in bytes: AVX-512's registers, else AVX2's (other ISAs get the same
// code split by the compiler).  The register tiles: MC_ATTN_R rows of
// MC_ATTN_NV vectors of accumulators.
#if defined(__AVX512F__)
enum { MC_ATTN_VBYTES = 64, MC_ATTN_NV = 4 };
#else
enum { MC_ATTN_VBYTES = 32, MC_ATTN_NV = 2 };
#endif
enum { MC_ATTN_R = 4, MC_ATTN_BM = 64, MC_ATTN_BN = 64 };

typedef float mc_attn_vf __attribute__((vector_size(MC_ATTN_VBYTES)));
typedef double mc_attn_vd __attribute__((vector_size(MC_ATTN_VBYTES)));
typedef float mc_attn_vfu __attribute__((vector_size(MC_ATTN_VBYTES), aligned(4)));

template <class T> struct mc_attn_traits;
template <> struct mc_attn_traits<float> {
    typedef mc_attn_vf vec;
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

// The sizes and strides (in elements) of one attention; the generated function fills it.
template <class T>
struct mc_attention_problem {
    int64_t batch, M, N, D, DV;
    int64_t q_row, q_col, kt_row, kt_col, v_row, v_col, mask_row, mask_col, out_row, out_col;
    bool has_scale, divide, has_mask;
    T scale, fill;
    int threads;  // 0: OpenMP's default
};

// Where batch matrix b of each operand starts (element offsets from its pointer).
struct mc_attention_offsets {
    int64_t q, kt, v, mask, out;
};

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

// s[0:R, 0:NV*W] (row stride ld) = qp[0:R, 0:D] (row stride D) @ kp[0:D, 0:NV*W] (row stride ld).
template <class T>
static inline void mc_attn_scores_micro(int64_t D, const T* __restrict qp, const T* __restrict kp, T* __restrict s,
                                        int64_t ld) {
    typedef mc_attn_traits<T> X;
    typedef typename X::vec V;
    constexpr int W = sizeof(V) / sizeof(T), R = MC_ATTN_R, NV = MC_ATTN_NV;
    V acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NV; ++c) acc[r][c] = V{};
    for (int64_t d = 0; d < D; ++d) {
        V b[NV];
        for (int c = 0; c < NV; ++c) b[c] = *(const V*)(kp + d * ld + c * W);
        for (int r = 0; r < R; ++r) {
            const V a = V{} + qp[r * D + d];
            for (int c = 0; c < NV; ++c) acc[r][c] = X::fma(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NV; ++c) *(V*)(s + r * ld + c * W) = acc[r][c];
}

// acc[0:R, 0:NC*W] (row stride lda) = acc * alpha[r] + p[0:R, 0:BN] (row stride BN) @ vp[0:BN, 0:NC*W]
// (row stride lda).
template <class T, int NC>
static inline void mc_attn_values_micro(const T* __restrict p, const T* __restrict vp, const T* __restrict alpha,
                                        T* __restrict acc, int64_t lda) {
    typedef mc_attn_traits<T> X;
    typedef typename X::vec V;
    constexpr int W = sizeof(V) / sizeof(T), R = MC_ATTN_R;
    V a[R][NC];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NC; ++c) a[r][c] = *(V*)(acc + r * lda + c * W) * alpha[r];
    for (int64_t n = 0; n < MC_ATTN_BN; ++n) {
        V b[NC];
        for (int c = 0; c < NC; ++c) b[c] = *(const V*)(vp + n * lda + c * W);
        for (int r = 0; r < R; ++r) {
            const V x = V{} + p[r * MC_ATTN_BN + n];
            for (int c = 0; c < NC; ++c) a[r][c] = X::fma(x, b[c], a[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < NC; ++c) *(V*)(acc + r * lda + c * W) = a[r][c];
}

// The rows [i0, i0 + MC_ATTN_BM) of batch matrix b (see the top of this file).
template <class T, class Offsets>
static void mc_attention_block(const T* q, const T* kt, const T* v, const uint8_t* mask, T* out,
                               const mc_attention_problem<T>& pr, const Offsets& offsets, int64_t b, int64_t i0) {
    typedef mc_attn_traits<T> X;
    typedef typename X::vec V;
    constexpr int W = sizeof(V) / sizeof(T), BM = MC_ATTN_BM, BN = MC_ATTN_BN;
    const T neg_inf = -INFINITY;
    const int64_t D = pr.D, DV = pr.DV, dvp = (DV + W - 1) / W * W;  // acc and vp rows: DV padded to vectors
    const int64_t rows = pr.M - i0 < BM ? pr.M - i0 : BM;
    mc_attention_offsets o;
    offsets(b, o);
    q += o.q;
    kt += o.kt;
    v += o.v;
    out += o.out;
    if (mask) mask += o.mask;
    // Scratch: qp [BM x D], kp [D x BN], s (then p) [BM x BN], vp [BN x dvp], acc [BM x dvp], m, l, alpha [BM].
    T* qp = (T*)mc_attn_scratch(sizeof(T) * ((size_t)BM * D + (size_t)D * BN + (size_t)BM * BN + (size_t)BN * dvp
                                             + (size_t)BM * dvp + 3 * BM) + 64);
    T* kp = qp + BM * D;
    kp = (T*)(((uintptr_t)kp + 63) & ~(uintptr_t)63);
    T* s = kp + D * BN;
    T* vp = s + BM * BN;
    T* acc = vp + BN * dvp;
    T* m = acc + BM * dvp;
    T* l = m + BM;
    T* alpha = l + BM;
    for (int64_t r = 0; r < BM; ++r)
        for (int64_t d = 0; d < D; ++d) qp[r * D + d] = r < rows ? q[(i0 + r) * pr.q_row + d * pr.q_col] : T(0);
    for (int64_t i = 0; i < BM * dvp; ++i) acc[i] = 0;
    for (int64_t r = 0; r < BM; ++r) {
        m[r] = neg_inf;
        l[r] = 0;
    }
    for (int64_t n0 = 0; n0 < pr.N; n0 += BN) {
        const int64_t cols = pr.N - n0 < BN ? pr.N - n0 : BN;
        if (mask) {  // a tile the mask hides entirely: skipped where that is exact
            bool live = false;
            for (int64_t r = 0; r < rows && !live; ++r) {
                const uint8_t* mr = mask + (i0 + r) * pr.mask_row + n0 * pr.mask_col;
                uint8_t any = 0;
                for (int64_t j = 0; j < cols; ++j) any |= mr[j * pr.mask_col];
                live = any != 0;
            }
            if (!live) {
                bool settled = true;  // exp(fill - m) is 0 in every row
                for (int64_t r = 0; r < rows; ++r) settled = settled && m[r] - pr.fill > X::underflow;
                if (pr.fill == neg_inf || settled) continue;
            }
        }
        // kp <- kt[:, n0:n0+BN], zero past N; the loop order follows kt's smaller stride.
        if (pr.kt_row <= pr.kt_col) {
            for (int64_t j = 0; j < BN; ++j)
                for (int64_t d = 0; d < D; ++d) kp[d * BN + j] = j < cols ? kt[d * pr.kt_row + (n0 + j) * pr.kt_col] : T(0);
        } else {
            for (int64_t d = 0; d < D; ++d)
                for (int64_t j = 0; j < BN; ++j) kp[d * BN + j] = j < cols ? kt[d * pr.kt_row + (n0 + j) * pr.kt_col] : T(0);
        }
        for (int64_t r = 0; r < rows; r += MC_ATTN_R)
            for (int64_t j = 0; j < BN; j += MC_ATTN_NV * W)
                mc_attn_scores_micro<T>(D, qp + r * D, kp + j, s + r * BN + j, BN);
        // Scale, mask, online softmax: s becomes p = exp(s - m_new); alpha = exp(m_old - m_new).
        for (int64_t r = 0; r < rows; ++r) {
            T* sr = s + r * BN;
            if (pr.has_scale && pr.divide) {
                #pragma omp simd
                for (int64_t j = 0; j < BN; ++j) sr[j] = sr[j] / pr.scale;
            } else if (pr.has_scale) {
                #pragma omp simd
                for (int64_t j = 0; j < BN; ++j) sr[j] = sr[j] * pr.scale;
            }
            if (mask) {
                const uint8_t* mr = mask + (i0 + r) * pr.mask_row + n0 * pr.mask_col;
                for (int64_t j = 0; j < cols; ++j) sr[j] = mr[j * pr.mask_col] ? sr[j] : pr.fill;
            }
            for (int64_t j = cols; j < BN; ++j) sr[j] = neg_inf;
            T top = neg_inf;
            #pragma omp simd reduction(max:top)
            for (int64_t j = 0; j < BN; ++j) top = sr[j] > top ? sr[j] : top;
            const T m_new = m[r] > top ? m[r] : top;
            const T m_ref = m_new == neg_inf ? T(0) : m_new;  // all -inf so far: against 0
            T sum = 0;
            #pragma omp simd reduction(+:sum)
            for (int64_t j = 0; j < BN; ++j) {
                const T e = X::exp(sr[j] - m_ref);
                sr[j] = e;
                sum += e;
            }
            alpha[r] = X::exp(m[r] - m_ref);
            l[r] = l[r] * alpha[r] + sum;
            m[r] = m_new;
        }
        for (int64_t r = rows; r < (rows + MC_ATTN_R - 1) / MC_ATTN_R * MC_ATTN_R; ++r) {
            alpha[r] = 0;  // rows past M within the last register tile: computed, never stored
            for (int64_t j = 0; j < BN; ++j) s[r * BN + j] = 0;
        }
        // vp <- v[n0:n0+BN, :], zero past N and past DV.
        if (pr.v_col <= pr.v_row) {
            for (int64_t n = 0; n < BN; ++n)
                for (int64_t c = 0; c < dvp; ++c)
                    vp[n * dvp + c] = n < cols && c < DV ? v[(n0 + n) * pr.v_row + c * pr.v_col] : T(0);
        } else {
            for (int64_t c = 0; c < dvp; ++c)
                for (int64_t n = 0; n < BN; ++n)
                    vp[n * dvp + c] = n < cols && c < DV ? v[(n0 + n) * pr.v_row + c * pr.v_col] : T(0);
        }
        constexpr int64_t CW = MC_ATTN_NV * W;
        for (int64_t r = 0; r < rows; r += MC_ATTN_R) {
            int64_t c = 0;
            for (; c + CW <= dvp; c += CW)
                mc_attn_values_micro<T, MC_ATTN_NV>(s + r * BN, vp + c, alpha + r, acc + r * dvp + c, dvp);
            for (; c < dvp; c += W)
                mc_attn_values_micro<T, 1>(s + r * BN, vp + c, alpha + r, acc + r * dvp + c, dvp);
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
        const T inv_l = l[r];
        for (int64_t c = 0; c < DV; ++c) out[(i0 + r) * pr.out_row + c * pr.out_col] = acc[r * dvp + c] / inv_l;
    }
}

// Every batch matrix's attention, blocks of query rows spread over the threads.
template <class T, class Offsets>
static void mc_attention(const T* q, const T* kt, const T* v, const uint8_t* mask, T* out,
                         const mc_attention_problem<T>& pr, const Offsets& offsets) {
    const int64_t blocks = (pr.M + MC_ATTN_BM - 1) / MC_ATTN_BM;
    const int threads = pr.threads > 0 ? pr.threads : omp_get_max_threads();
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if(threads > 1)
    for (int64_t task = 0; task < pr.batch * blocks; ++task)
        mc_attention_block<T>(q, kt, v, mask, out, pr, offsets, task / blocks, task % blocks * MC_ATTN_BM);
}
