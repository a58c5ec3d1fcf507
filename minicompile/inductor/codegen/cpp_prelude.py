"""The C++ helpers every generated translation unit starts with.

In:  nothing.
Out: :data:`PRELUDE`, C++ source: NumPy's integer and float division and
     remainder semantics, integer power, NaN-propagating maximum/minimum, and
     vectorizable float32 exp/log/tanh with their stated error bounds (checked
     in tests/inductor/test_fast_math.py), and the value-and-position pair
     of argmax/argmin with its OpenMP reductions.  :mod:`.cpp` names these
     functions in its op table.
"""
from __future__ import annotations

PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// NumPy's integer floor division: x // 0 == 0, and INT_MIN // -1 wraps
// (C's '/' would trap on both).
template <typename T> static inline T mc_floordiv_int(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == (T)-1) return (T)(0 - a);
        T q = (T)(a / b);
        if ((a % b != 0) && ((a < 0) != (b < 0))) q = (T)(q - 1);
        return q;
    } else {
        return (T)(a / b);
    }
}

// NumPy's integer remainder: the sign of the divisor, x % 0 == 0.
template <typename T> static inline T mc_remainder_int(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == (T)-1) return 0;
        T r = (T)(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
        return r;
    } else {
        return (T)(a % b);
    }
}

// NumPy's npy_divmod for floats: floor quotient, remainder with the sign of b.
template <typename T> static inline T mc_divmod_float(T a, T b, T* modulus) {
    T mod = std::fmod(a, b);
    if (!b) { *modulus = mod; return a / b; }
    T div = (a - mod) / b;
    if (mod) {
        if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; }
    } else {
        mod = std::copysign((T)0, b);
    }
    T floordiv;
    if (div) {
        floordiv = std::floor(div);
        if (div - floordiv > (T)0.5) floordiv += (T)1;
    } else {
        floordiv = std::copysign((T)0, a / b);
    }
    *modulus = mod;
    return floordiv;
}
template <typename T> static inline T mc_floordiv_float(T a, T b) {
    if (!b) return a / b;
    T mod;
    return mc_divmod_float(a, b, &mod);
}
template <typename T> static inline T mc_remainder_float(T a, T b) {
    if (!b) return std::fmod(a, b);
    T mod;
    mc_divmod_float(a, b, &mod);
    return mod;
}

// Integer power by squaring; the exponent is a known non-negative constant.
template <typename T> static inline T mc_ipow(T base, int64_t exponent) {
    T result = 1;
    while (exponent > 0) {
        if (exponent & 1) result = (T)(result * base);
        base = (T)(base * base);
        exponent >>= 1;
    }
    return result;
}

// float32 exp, log and tanh, written so that the compiler vectorizes them
// (glibc's expf/logf/tanhf are scalar calls; NumPy's own are SIMD).  They
// compute in float (twice the lanes per vector of double, and no double
// divide) with careful reductions.  Each result is within 1 ulp of the
// correctly rounded one.  Special values (NaN, +-inf, 0, negatives for log) are selected at the
// end, without branches.
// Polynomial steps as fused multiply-adds where the CPU has them: one rounding
// instead of two, so faster and no less accurate.  (-ffp-contract=off keeps the
// user's own a * b + c unfused, as NumPy computes it; these steps are ours.)
#ifdef __FMA__
#define MC_FMA(a, b, c) __builtin_fma((a), (b), (c))
#define MC_FMAF(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define MC_FMA(a, b, c) ((a) * (b) + (c))
#define MC_FMAF(a, b, c) ((a) * (b) + (c))
#endif

// Rounding to an integer by a shifter (v + 1.5 * 2^23 for float: its low bits
// are round(v)): integers and 2^n then come out of integer adds and shifts on
// the bits, never a float <-> int conversion (double <-> int64 exists on x86
// only with AVX-512; with AVX2 such loops once stayed scalar, 4x slower).

// float32 e^x in float arithmetic (16 lanes per AVX-512 vector instead of 8
// in double: about 2.6x faster).  x = n ln2 + r with |r| <= ln2/2; ln2_hi has
// 12 significant bits, so n*ln2_hi is exact and r carries no cancellation
// error; e^r by its Taylor series to r^7 (truncation < 6e-9 relative, under
// 0.1 ulp); 2^n applied as two factors so that 2^128 never forms and a
// subnormal result is rounded once.  Measured within 1 ulp of the correctly
// rounded result over the test sweep (tests/inductor/test_fast_math.py).
static inline float mc_bits_to_float(uint32_t b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
static inline uint32_t mc_float_to_bits(float f) { uint32_t b; __builtin_memcpy(&b, &f, 4); return b; }
static inline float mc_exp_f32(float x) {
    // e^x overflows float32 above 88.8 and underflows to 0 below -103.9.
    // Below that the lane computes e^0 and is zeroed at the end: computing a
    // subnormal there would cost a microcode assist per lane (softmax under a
    // causal mask takes exp(-inf) for half of its elements).
    const bool zero = x < -104.0f;
    const float xc = zero ? 0.0f : (x > 89.0f ? 89.0f : x);
    // n = round(x / ln2) by the 1.5 * 2^23 shifter: its low bits are n.
    const float shifted = MC_FMAF(xc, 1.44269504088896341f, 12582912.0f);
    const float n = shifted - 12582912.0f;
    const float r = MC_FMAF(-n, 1.42860682030941723212e-6f, MC_FMAF(-n, 0.693145751953125f, xc));
    float p = 1.0f / 5040.0f;
    p = MC_FMAF(p, r, 1.0f / 720.0f);
    p = MC_FMAF(p, r, 1.0f / 120.0f);
    p = MC_FMAF(p, r, 1.0f / 24.0f);
    p = MC_FMAF(p, r, 1.0f / 6.0f);
    p = MC_FMAF(p, r, 0.5f);
    p = MC_FMAF(p, r, 1.0f);
    p = MC_FMAF(p, r, 1.0f);
    const int32_t ni = (int32_t)(mc_float_to_bits(shifted) - 0x4B400000u);
    const int32_t n1 = ni >> 1, n2 = ni - n1;
    const float y = (p * mc_bits_to_float((uint32_t)(n1 + 127) << 23)) * mc_bits_to_float((uint32_t)(n2 + 127) << 23);
    return x != x ? x : (zero ? 0.0f : y);
}

// log in float arithmetic (fdlibm's logf, as in musl): x = 2^k m with m in
// [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), f = m - 1,
// s = f/(2 + f), log m = f - f^2/2 + s (f^2/2 + R(s^2)), R of degree 4 in s^2
// (|s| < 0.172), k ln2 with ln2 split so that k ln2_hi is exact.  Error: at
// most 0.84 ulp (at 1.40545952) against log in double over every positive
// float32 (so within 1 ulp of the correctly rounded result; 0.63% of inputs are
// 1 ulp off it), measured with GCC on AVX2+FMA.  About 1.9x faster than the
// double version it replaces (4 lanes and a double divide per AVX2 vector).
static inline float mc_log_f32(float x) {
    const bool sub = x < 1.17549435e-38f;  // subnormal, or not positive (selected away below)
    const float xn = sub ? x * 8388608.0f : x;
    // The bits of xn minus those of sqrt(1/2): k is their exponent field, m the
    // mantissa put back on sqrt(1/2)'s exponent.
    const uint32_t ix = mc_float_to_bits(xn) + (0x3f800000u - 0x3f3504f3u);
    const float k = (float)((int32_t)(ix >> 23) - 0x7f) - (sub ? 23.0f : 0.0f);
    const float f = mc_bits_to_float((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    const float s = f / (2.0f + f);
    const float z = s * s, w = z * z;
    const float R = MC_FMAF(z, MC_FMAF(w, 0.28498786688f, 0.66666662693f), w * MC_FMAF(w, 0.24279078841f, 0.40000972152f));
    const float hfsq = 0.5f * f * f;
    const float y = ((MC_FMAF(s, hfsq + R, k * 9.0580006145e-06f) - hfsq) + f) + k * 6.9313812256e-01f;
    const float inf = std::numeric_limits<float>::infinity();
    const float special = x == 0 ? -inf : (x < 0 ? std::numeric_limits<float>::quiet_NaN() : x);  // NaN, +inf: x
    return x > 0 && x < inf ? y : special;
}

// tanh in float arithmetic (8 lanes per AVX2 vector instead of 4 in double,
// and no double divide); a = |x|, the sign of x is put back at the end.
// - a < 0.55: a + a^3 P(a^2), P of degree 4 fitted (weighted minimax in
//   float64, coefficients rounded to float32); truncation under 0.02 ulp, and
//   the a^3 P term is under 10% of the result, so its rounding errors stay small.
// - a >= 0.55 (results >= 0.5): 1 - q with q = 2/(e^2a + 1) = 2^(1-n) / D,
//   D = 1 + 2^-n + (e^r - 1), a = n ln2/2 + r/2 with |r| <= ln2/2 (Cody-Waite
//   with the 1.5 * 2^23 shifter, as in mc_exp_f32), e^r - 1 = r + r^2 Q(r), Q of
//   degree 4 fitted.  1/D is rounded, then corrected to first order by its
//   residual eps = 1 - qh D (two FMAs against the unrounded 1 + 2^-n and
//   e^r - 1), and qh (1 + eps) is rounded once: with q <= 0.5 that is at most
//   a quarter ulp of the result; 1 - q is one more FMA rounding (0.5 ulp).
// - a past 9.5 computes as 9.5: tanh rounds to 1 from a = 13 ln2 = 9.0109 on.
// Error: at most 0.88 ulp (at 0.87826663) against tanh in double, so always
// within 1 ulp of the correctly rounded result (0.14% of inputs are 1 ulp off
// it), measured over all 2^32 inputs with GCC on AVX2 and checked on dense
// sweeps in tests/inductor/test_fast_math.py.  The bound needs FMA (where
// MC_FMAF is a plain multiply-add the residual is inexact and the bound
// unchecked).  NaN, +-inf, +-0 and subnormals come out as NumPy's (tanh x = x
// below 2^-12), with no branches: GCC vectorizes this under omp simd.
static inline float mc_tanh_f32(float x) {
    const uint32_t ab = mc_float_to_bits(x) & 0x7fffffffu;
    const float a = mc_bits_to_float(ab);
    // Small a (clamped as bits, so that the unused lanes stay finite).
    const float as = mc_bits_to_float(ab < 0x3f0ccccdu ? ab : 0x3f0ccccdu);  // 0.55f
    const float s2 = as * as;
    float p = -0.006274233106523752f;
    p = MC_FMAF(p, s2, 0.021071674302220345f);
    p = MC_FMAF(p, s2, -0.05385230854153633f);
    p = MC_FMAF(p, s2, 0.13332585990428925f);
    p = MC_FMAF(p, s2, -0.33333316445350647f);
    const float small = MC_FMAF(s2 * as, p, as);
    // Large a.  A NaN stays NaN through here (and out of the final select).
    const float ac = 9.5f < a ? 9.5f : a;
    const float shifted = MC_FMAF(ac, 2.885390043258667f, 12582912.0f);  // 2a/ln2 + 1.5 * 2^23
    const float n = shifted - 12582912.0f;
    // r/2 = a - n ln2/2: ln2/2 split into 0.3465728759765625 (n times it is exact) and the rest.
    const float h = MC_FMAF(-n, 7.143033826650935e-07f, MC_FMAF(-n, 0.3465728759765625f, ac));
    const float h2 = h * h;
    // e^r - 1 = 2h + h^2 Q2(h), Q2(h) = 4 Q(2h).
    const float e = MC_FMAF(h2, MC_FMAF(h2, 0.08840422332286835f, MC_FMAF(h, 0.26782113313674927f, 0.6666952967643738f)),
                            MC_FMAF(h, 1.333321213722229f, 1.999999761581421f));
    const float em1 = MC_FMAF(h2, e, h + h);
    // 2^-n from the shifter's bits (0 <= n <= 27).
    const float inv = mc_bits_to_float((127u - mc_float_to_bits(shifted)) << 23);
    const float one_inv = 1.0f + inv;
    const float qh = 1.0f / (one_inv + em1);
    const float eps = MC_FMAF(-qh, em1, MC_FMAF(-qh, one_inv, 1.0f));  // 1 - qh D
    const float big = MC_FMAF(-(inv + inv), MC_FMAF(qh, eps, qh), 1.0f);
    const float y = ab < 0x3f0ccccdu ? small : big;
    return mc_bits_to_float(mc_float_to_bits(y) | (mc_float_to_bits(x) & 0x80000000u));
}

// np.maximum / np.minimum: a NaN on either side wins.  On a tie (0.0 vs -0.0)
// NumPy's float32/float64 loops return the second operand, its float16 loop
// the first: the sign of a zero result depends on it.
template <typename T> static inline T mc_maximum(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> static inline T mc_minimum(T a, T b) { return (a < b || a != a) ? a : b; }
template <typename T> static inline T mc_maximum_half(T a, T b) { return (a >= b || a != a) ? a : b; }
template <typename T> static inline T mc_minimum_half(T a, T b) { return (a <= b || a != a) ? a : b; }

// argmax/argmin: the extreme value of a row so far and its position.  NumPy
// returns the first NaN if the row has one, else the first extreme value.
// Whether (v, i) beats (a.v, a.i) is decided on the positions too, not on
// the order the pairs arrive in: so the per-thread partials of one long row
// combine to the lowest position whatever order OpenMP combines them in.
template <typename T> struct mc_arg { T v; int64_t i; };
template <typename T> static inline bool mc_argmax_beats(T v, int64_t i, const mc_arg<T>& a) {
    const bool vn = v != v, an = a.v != a.v;  // constant false for integers
    if (vn || an) return vn && (!an || i < a.i);
    return v > a.v || (v == a.v && i < a.i);
}
template <typename T> static inline bool mc_argmin_beats(T v, int64_t i, const mc_arg<T>& a) {
    const bool vn = v != v, an = a.v != a.v;
    if (vn || an) return vn && (!an || i < a.i);
    return v < a.v || (v == a.v && i < a.i);
}
template <typename T> static inline void mc_argmax_step(mc_arg<T>& a, T v, int64_t i) {
    if (mc_argmax_beats(v, i, a)) { a.v = v; a.i = i; }
}
template <typename T> static inline void mc_argmin_step(mc_arg<T>& a, T v, int64_t i) {
    if (mc_argmin_beats(v, i, a)) { a.v = v; a.i = i; }
}
template <typename T> static inline mc_arg<T> mc_argmax_pair(mc_arg<T> a, mc_arg<T> b) {
    return mc_argmax_beats(b.v, b.i, a) ? b : a;
}
template <typename T> static inline mc_arg<T> mc_argmin_pair(mc_arg<T> a, mc_arg<T> b) {
    return mc_argmin_beats(b.v, b.i, a) ? b : a;
}
""" + "".join(
    # A private copy starts as the original, the identity (see cpp.py): combining
    # a pair with itself changes nothing, so any starting pair would be right.
    f"#pragma omp declare reduction(mc_{op} : mc_arg<{t}> : omp_out = mc_{op}_pair(omp_out, omp_in))"
    f" initializer(omp_priv = omp_orig)\n"
    for op in ("argmax", "argmin")
    for t in ("bool", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
              "float", "double")
)
