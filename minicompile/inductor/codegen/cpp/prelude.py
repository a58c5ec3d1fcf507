"""The C++ helpers every generated translation unit starts with.

In:  nothing.
Out: :data:`PRELUDE`, C++ source: NumPy's integer and float division and
     remainder semantics, integer power, NaN-propagating maximum/minimum, and
     vectorizable float32 exp/log/tanh with their stated error bounds (checked
     in tests/inductor/test_fast_math.py), and the value-and-position pair
     of argmax/argmin with its OpenMP reductions.  :mod:`.kernel` names these
     functions in its op table.
"""
from __future__ import annotations

# Where NumPy's PyArrayObject keeps its data pointer: right after the object
# header (reference count and type).  Each kernel gets an ``<name>_obj`` entry
# taking the arrays themselves, so the Python wrapper need not ask each array
# for its address (the wrapper checks this offset once before using it).
ARRAY_DATA_OFFSET = 16

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
// correctly rounded one.  Special values (NaN, +-inf, 0, negatives for log) come out
// without branches (selected at the end, or carried through the arithmetic).
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

// float32 e^x in float arithmetic (8 lanes per AVX2 vector, 16 per AVX-512).
// x = n ln2 + r with |r| <= ln2/2, n = round(x / ln2) by the shifter; ln2 is
// split into ln2_hi (n ln2_hi exact) and ln2_lo, two FMAs.  2 e^r by a degree-6
// polynomial 2 + 2r + r^2 Q(r) (Horner, all FMAs): Q fitted minimax for the
// relative error in float64 (Lawson iteration), coefficients rounded to float32
// and doubled (exact); truncation under 4e-9 relative, 0.05 ulp.  The result is
// (2 e^r) 2^(n-1): with the factor 2 in the polynomial, n = 128 (e^x just below
// FLT_MAX) scales by 2^127, so 2^(n-1) is one power of two, from the shifter's
// bits: the shifter 1.5 * 2^23 + 126 leaves n + 126 in its low bits, and
// (bits << 23) is 2^(n-1) (one shift, no second factor).
// - x < -86.5 (n <= -125, results near or below FLT_MIN): the scale's exponent
//   is 64 higher, 2^(n+63), normal, and a last multiply by 2^-64 (by 1 in the
//   other lanes) rounds the result once: subnormal results are within the bound.
// - x < -104 (e^x rounds to 0; -inf, as softmax under a causal mask has for
//   half its elements): the lane computes as x = -190 ln2, whose scale
//   2^(n+63) has exponent field 0: +0 exactly, with no subnormal arithmetic
//   (that costs a microcode assist per lane, as the subnormal results do).
// - x > 89 (and +inf) computes as 89: overflows to +inf; NaN stays NaN.
// The x < -86.5 case is a mask, not a ?: (GCC turned two ?: on one condition
// into two copies of the whole computation, selected at the end).
// Error: at most 0.91 ulp (at 5.19979858) against e^x in double, hence within
// 1 ulp of the correctly rounded result (0.47% of the inputs in [-104, 89] are
// 1 ulp off it), measured over all 2^32 inputs with GCC on AVX2+FMA
// (tests/inductor/test_fast_math.py checks dense sweeps).  The bound needs
// FMA.  About 1.65x faster than the Taylor-series-to-r^7, two-factor version
// it replaces (25 instead of 40 AVX2 instructions per 8 lanes, load and store
// included; a loop of it 0.78 -> 0.47 ns per element on one Zen 3 core).
static inline float mc_bits_to_float(uint32_t b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
static inline uint32_t mc_float_to_bits(float f) { uint32_t b; __builtin_memcpy(&b, &f, 4); return b; }
static inline float mc_exp_f32(float x) {
    const float xh = 89.0f < x ? 89.0f : x;
    const float xc = x < -104.0f ? -131.69797f : xh;  // -190 ln2
    const uint32_t k = (uint32_t)-(int32_t)(x < -86.5f) & 0x20000000u;  // 64 << 23 where x < -86.5, else 0
    const float shifted = MC_FMAF(xc, 1.44269504088896341f, 12582912.0f + 126.0f);
    const float n = shifted - (12582912.0f + 126.0f);
    const float r = MC_FMAF(-n, 1.42860682030941723212e-6f, MC_FMAF(-n, 0.693145751953125f, xc));
    // 2 e^r = 2 + 2r + r^2 Q(r).
    float p = 2.0f * 0.0013814593f;
    p = MC_FMAF(p, r, 2.0f * 0.008368708f);
    p = MC_FMAF(p, r, 2.0f * 0.04166839f);
    p = MC_FMAF(p, r, 2.0f * 0.16666521f);
    p = MC_FMAF(p, r, 2.0f * 0.49999994f);
    p = MC_FMAF(p, r, 2.0f);
    p = MC_FMAF(p, r, 2.0f);
    const float scale = mc_bits_to_float((mc_float_to_bits(shifted) << 23) + k);  // 2^(n-1), or 2^(n+63)
    return (p * scale) * mc_bits_to_float(0x3f800000u - k);  // times 1, or 2^-64
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

// The float32 sum of a row kernel's 32 partial sums (cpp.py, _lane_sum_loops):
// lane i < 8 adds (p[i] + p[i+16]) + (p[i+8] + p[i+24]), then the 8 lanes add
// pairwise, ((0+1) + (2+3)) + ((4+5) + (6+7)).  Written as vector operations:
// as scalar loops over the array, GCC stored the four accumulator vectors and
// added their lanes back one load at a time (a row of layer norm measured 8%
// slower that way, the results bit for bit the same).
typedef float mc_v8f __attribute__((vector_size(32)));
typedef int mc_v8i __attribute__((vector_size(32)));
#ifdef __clang__
#define MC_SWAP_PAIRS(s) __builtin_shufflevector(s, s, 1, 0, 3, 2, 5, 4, 7, 6)
#define MC_SWAP_HALVES_OF_4(s) __builtin_shufflevector(s, s, 2, 3, 0, 1, 6, 7, 4, 5)
#else
#define MC_SWAP_PAIRS(s) __builtin_shuffle(s, (mc_v8i){1, 0, 3, 2, 5, 4, 7, 6})
#define MC_SWAP_HALVES_OF_4(s) __builtin_shuffle(s, (mc_v8i){2, 3, 0, 1, 6, 7, 4, 5})
#endif
static inline float mc_sum_lanes32(const float* p) {
    mc_v8f v0, v1, v2, v3;
    __builtin_memcpy(&v0, p, 32);
    __builtin_memcpy(&v1, p + 8, 32);
    __builtin_memcpy(&v2, p + 16, 32);
    __builtin_memcpy(&v3, p + 24, 32);
    mc_v8f s = (v0 + v2) + (v1 + v3);
    s = s + MC_SWAP_PAIRS(s);
    s = s + MC_SWAP_HALVES_OF_4(s);
    return s[0] + s[4];
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
