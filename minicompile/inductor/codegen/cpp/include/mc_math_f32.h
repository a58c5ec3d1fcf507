// Vectorizable float32 exp, log and tanh (mc_exp_f32, mc_log_f32, mc_tanh_f32),
// the FMA macros (MC_FMA, MC_FMAF) and float <-> bits casts they use.  The op
// table (codegen/cpp/ops.py) calls them for float32 and float16 loops;
// tests/inductor/test_fast_math.py holds them to the error bounds stated here.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

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
// only with AVX-512; with AVX2 such loops stay scalar).

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
// FMA.  25 AVX2 instructions per 8 lanes, load and store included.
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
// 1 ulp off it), measured with GCC on AVX2+FMA.
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
