// Vectorizable float64 exp, tanh and log (mc_exp_f64, mc_tanh_f64, mc_log_f64),
// for the op table's float64 loops (codegen/cpp/ops.py); same construction as
// the float32 ones of mc_math_f32.h, whose MC_FMA it uses.
// tests/inductor/test_fast_math_f64.py holds them to the error bounds stated here.
#pragma once

#include "mc_math_f32.h"

// glibc's exp, tanh and log are scalar calls that GCC cannot vectorize; these
// are branch-free polynomials (selects as ?: or masks, no calls) that it can.
// As in the float32 ones, the shifter 1.5 * 2^52 (v + 1.5 * 2^52 holds round(v)
// in its low mantissa bits, |v| < 2^51) gives n without a double <-> int64
// conversion (AVX2 has none), and 2^n comes from 64-bit shifts and adds on
// those bits.  Special values are selected without branches, and exact: NaN,
// +-inf, +-0 (tanh keeps the sign of zero), overflow to +inf (x > 709.782712893384),
// +0 below exp's underflow (x < -745.1332), tanh = +-1 for |x| > 19.07 and
// tanh x = x for tiny and subnormal x.  The bounds need FMA (where MC_FMA is a
// plain multiply-add the reductions and residuals are inexact and the bounds
// unchecked).
static inline double mc_bits_to_double(uint64_t b) { double d; __builtin_memcpy(&d, &b, 8); return d; }
static inline uint64_t mc_double_to_bits(double d) { uint64_t b; __builtin_memcpy(&b, &d, 8); return b; }

// Q(r) = (e^r - 1 - r) / r^2 on |r| <= ln2/2 (a little more), degree 10:
// fitted by Chebyshev interpolation in 60-digit arithmetic (mpmath), the
// coefficients rounded to double; e^r = 1 + r + r^2 Q(r) is then off by at most
// 0.003 * 2^-53 relative (checked in the same arithmetic on a dense grid).
// Estrin's scheme (pairs, then r^2 and r^4: 5 dependent FMAs instead of 10, as
// accurate as Horner's).  Shared by exp and tanh
// (through e^r - 1 = r + r^2 Q(r)).
static inline double mc_exp_q_f64(double r) {
    const double r2 = r * r, r4 = r2 * r2;
    const double a = MC_FMA(r, 2.0914717341716378e-09, 2.5105259538448494e-08);
    const double b = MC_FMA(r, 2.755727357010214e-07, 2.7557255297969643e-06);
    const double c = MC_FMA(r, 2.4801587325605324e-05, 0.0001984126987490126);
    const double d = MC_FMA(r, 0.001388888888888373, 0.008333333333326112);
    const double e = MC_FMA(r, 0.04166666666666667, 0.1666666666666667);
    const double hi = MC_FMA(MC_FMA(a, r2, b), r4, MC_FMA(c, r2, d));  // degrees 10..2 over r^2
    return MC_FMA(MC_FMA(hi, r2, e), r, 0.5);
}

// e^x in double.  x = n ln2 + r, n = round(x / ln2) by the shifter, ln2 split
// into ln2_hi (32 significant bits: n ln2_hi and x - n ln2_hi are exact) and
// ln2_lo; r = r_hi + r_lo with r_lo the rounding error of r_hi (one more
// FMA), so that the reduction loses nothing.  e^r = 1 + r_hi + t with
// t = r_hi^2 Q(r_hi) + r_lo (1 + r_hi); 1 + r_hi is summed exactly (Fast2Sum:
// s plus its error c), and s + (c + t) is the last rounding (t < 0.07, so
// its own rounding and Q's are worth under 0.1 ulp).  The result is e^r 2^(n-1) times 2:
// n = 1024 (e^x just below DBL_MAX) would need 2^1024, so the scale is one
// power of two 2^(n-1), from the shifter's bits: the shifter
// 1.5 * 2^52 + 1022 leaves n + 1022 in its low bits, and (bits << 52) is
// 2^(n-1); the product is exact, the last multiply by 2 overflows to +inf
// exactly where e^x rounds to it (x > 709.782712893384).
// - x < -707 (n <= -1020: results near or below DBL_MIN): the scale's
//   exponent is 64 higher, 2^(n+63), normal, and the last factor is 2^-63
//   instead of 2: the result rounds once, so subnormal results are right too.
// - x < -746 (e^x rounds to +0 below -745.1332; -inf): the lane computes as
//   x = -1086 ln2, whose scale 2^(n+63) has exponent field 0: +0 exactly
//   (64-bit adds wrap: n + 1022 < 0 is fine as long as n + 1086 >= 0).
// - x > 710 (and +inf) computes as 710: overflows to +inf; NaN stays NaN.
// Error: at most 0.60 ulp measured for normal results, 0.76 ulp for
// subnormal ones (rounded twice: to 53 bits, then to the subnormal grid), so
// within 1 ulp of the correctly rounded result (about 1.1% of inputs are 1 ulp
// off it); measured on random inputs and dense sweeps around the switch
// points and each (k + 1/2) ln2 (tests/inductor/test_fast_math_f64.py).
static inline double mc_exp_f64(double x) {
    const double xh = 710.0 < x ? 710.0 : x;
    const double xc = x < -746.0 ? -752.7578380881006 : xh;  // -1086 ln2
    const uint64_t k = (uint64_t)-(int64_t)(x < -707.0) & 0x0400000000000000ull;  // 64 << 52, or 0
    const double shifted = MC_FMA(xc, 1.4426950408889634, 6755399441055744.0 + 1022.0);
    const double n = shifted - (6755399441055744.0 + 1022.0);
    const double r0 = MC_FMA(-n, 0.6931471803691238, xc);  // exact
    const double r = MC_FMA(-n, 1.9082149292705877e-10, r0);
    const double rl = MC_FMA(-n, 1.9082149292705877e-10, r0 - r);  // (r0 - n ln2_lo) - r
    const double t = MC_FMA(r * r, mc_exp_q_f64(r), MC_FMA(r, rl, rl));
    const double s = 1.0 + r;
    const double c = (1.0 - s) + r;  // exact: 1 + r = s + c
    const double er = s + (c + t);
    const double scale = mc_bits_to_double((mc_double_to_bits(shifted) << 52) + k);  // 2^(n-1), or 2^(n+63)
    return (er * scale) * mc_bits_to_double(0x4000000000000000ull - k);  // times 2, or 2^-63
}

// tanh in double; a = |x|, the sign of x is put back at the end (so -0 stays -0).
// - a < 0.55: a + a^3 P(a^2), P of degree 10 in a^2 (Chebyshev interpolation of
//   (tanh a - a) / a^3 in 60-digit arithmetic, coefficients rounded to double;
//   truncation under 0.06 * 2^-53 relative, most of it the rounding of -1/3,
//   which P's constant term -1.85e-17 puts back).  a^3 is carried as
//   a3 + a3l (exact to 2^-104 relative), -a^3/3 as the exact product m + ml,
//   a + m is summed exactly (Fast2Sum), and the rest (a^3 (P + 1/3), under
//   1.5% of the result) is added with one last rounding: this took the
//   inputs 1 ulp off the correctly rounded result from 3.7% to 1.3% (in
//   [0.3, 0.55]) against the plain a + a^3 P, for six more operations.
//   tanh x = x comes out for tiny and subnormal x (the terms underflow or are
//   far below half an ulp).
// - a >= 0.55 (results >= 0.5): 1 - Q with Q = 2/(e^2a + 1) = 2^(1-n) / D,
//   D = 1 + 2^-n + (e^r - 1), 2a = n ln2 + r with |r| <= ln2/2 (Cody-Waite on
//   a with ln2/2 split, r and its rounding error r_lo as in mc_exp_f64),
//   e^r - 1 = r + t, t = r^2 Q(r) + r_lo (1 + r) (mc_exp_q_f64).  1/D is
//   rounded to qh, then corrected to first order by its residual
//   eps = 1 - qh D (three FMAs against the unrounded 1 + 2^-n, r and t);
//   1 - Qh (Qh = 2^(1-n) qh, exact) is summed exactly (Fast2Sum) and the
//   correction -Qh eps added with it: one last rounding.
// - a past 22 computes as 22: tanh rounds to 1 from a = 55 ln2/2 = 19.06 on.
// Error: at most 0.61 ulp measured (at 0.87; random inputs and dense sweeps
// around the switch point 0.55, the clamp and each a = (k + 1/2) ln2/2 where
// n steps, tests/inductor/test_fast_math_f64.py), so within 1 ulp of the
// correctly rounded result (about 1% of inputs in [0.3, 1.5] are 1 ulp off
// it, far fewer outside).  NaN, +-inf, +-0 and subnormals come out as
// NumPy's.  Both branches and a divide are computed for every lane.
static inline double mc_tanh_f64(double x) {
    const uint64_t ab = mc_double_to_bits(x) & 0x7fffffffffffffffull;
    const double a = mc_bits_to_double(ab);
    // Small a (clamped as bits, so that the unused lanes stay finite).
    const double as = mc_bits_to_double(ab < 0x3fe199999999999aull ? ab : 0x3fe199999999999aull);  // 0.55
    const double s2 = as * as;
    double p = -2.060149214083168e-05;
    p = MC_FMA(p, s2, 8.511130450065171e-05);
    p = MC_FMA(p, s2, -0.0002346336232753106);
    p = MC_FMA(p, s2, 0.0005889356755666889);
    p = MC_FMA(p, s2, -0.001455661753739356);
    p = MC_FMA(p, s2, 0.003592110369136933);
    p = MC_FMA(p, s2, -0.00886323439708993);
    p = MC_FMA(p, s2, 0.021869488493635535);
    p = MC_FMA(p, s2, -0.05396825396743333);
    p = MC_FMA(p, s2, 0.13333333333332714);
    p = MC_FMA(p, s2, -1.850371707708594e-17);  // -1/3 = -0.3333333333333333 - 1.85e-17
    const double a3 = s2 * as;
    const double a3l = MC_FMA(MC_FMA(as, as, -s2), as, MC_FMA(s2, as, -a3));  // a^3 = a3 + a3l (to 2^-104)
    const double m = a3 * -0.3333333333333333;
    const double ml = MC_FMA(a3, -0.3333333333333333, -m);  // exact: a3 C0 = m + ml
    const double sm = as + m;
    const double sml = (as - sm) + m;  // exact: as + m = sm + sml
    const double small = sm + (sml + (ml + MC_FMA(a3, p, a3l * -0.3333333333333333)));
    // Large a.  A NaN stays NaN through here (and out of the final select).
    const double ac = 22.0 < a ? 22.0 : a;
    const double shifted = MC_FMA(ac, 2.8853900817779268, 6755399441055744.0);  // 2a/ln2 + 1.5 * 2^52
    const double n = shifted - 6755399441055744.0;
    const double h0 = MC_FMA(-n, 0.3465735901845619, ac);  // exact: ln2_hi / 2
    const double h = MC_FMA(-n, 9.541074646352939e-11, h0);  // ln2_lo / 2
    const double hl = MC_FMA(-n, 9.541074646352939e-11, h0 - h);
    const double r = h + h, rl = hl + hl;
    const double t = MC_FMA(r * r, mc_exp_q_f64(r), MC_FMA(r, rl, rl));  // e^r - 1 = r + t
    // 2^-n from the shifter's bits (2 <= n <= 63).
    const double inv = mc_bits_to_double((1023ull - mc_double_to_bits(shifted)) << 52);
    const double one_inv = 1.0 + inv;
    const double qh = 1.0 / ((one_inv + r) + t);
    const double eps = MC_FMA(-qh, t, MC_FMA(-qh, r, MC_FMA(-qh, one_inv, 1.0)));  // 1 - qh D
    const double Qh = (inv + inv) * qh;
    const double u = 1.0 - Qh;
    const double ue = (1.0 - u) - Qh;  // exact: 1 - Qh = u + ue
    const double big = u + MC_FMA(-Qh, eps, ue);
    const double y = ab < 0x3fe199999999999aull ? small : big;
    return mc_bits_to_double(mc_double_to_bits(y) | (mc_double_to_bits(x) & 0x8000000000000000ull));
}

// float64 log in double arithmetic (fdlibm's log, as in musl and FreeBSD).
// x = 2^k m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^54 first),
// f = m - 1 (exact), s = f/(2 + f),
// log m = log((1+s)/(1-s)) = f - f^2/2 + s (f^2/2 + R(s^2)), R of degree 7 in
// z = s^2 (|s| < 0.1716, Estrin's scheme: a shorter dependency chain than
// Horner's), and k ln2 with ln2 split so that k ln2_hi is exact.  k comes from
// 64-bit shifts and adds on the bits and becomes a double without an int64 ->
// double conversion (x86 has one only with AVX-512; with AVX2 such loops once
// stayed scalar): the exponent field, + 64 (- 54 for subnormals), is added to
// the bits of 2^52, and 2^52 + 64 + 1023 subtracted.
// Constants: fdlibm's Lg1..Lg7 (its minimax fit of R: |R - exact| < 2^-58.47
// over |s| < 0.1716) and ln2_hi/ln2_lo (ln2_hi has 32 significant bits, so
// k ln2_hi is exact for |k| < 2^21; ln2_hi + ln2_lo = ln2 within 1.2e-26),
// each checked against mpmath at 200 bits.
// Error: at most 0.867 ulp (at 0.7066592666739954) against log in long double,
// so within 1 ulp of the correctly rounded result (0.1% of random positive
// doubles are 1 ulp off it; the largest errors are where f is near its ends and
// k = -1, 0 or 1), found over 10^9 random inputs in the worst ranges plus the
// sweeps of test_log_f64.py (random bit patterns, subnormals,
// [0.9, 1.1], around sqrt(1/2), sqrt(2) and every power of two), with GCC 12 on
// AVX2+FMA; within 1 ulp of NumPy's float64 log there.  The bound needs FMA
// (where MC_FMA is a plain multiply-add it is unchecked).
// Special values without branches (selected at the end): log 1 = +0, log +-0 =
// -inf, log of x < 0 (and -inf) is NaN, log +inf = +inf, NaN stays NaN.
static inline double mc_log_f64(double x) {
    // All ones where x is subnormal (or not positive: selected away below), as
    // a mask, not a ?: (GCC computed both sides of the ?: form, twice the work).
    const uint64_t sub = -(uint64_t)(x < 2.2250738585072014e-308);
    const double xn = x * mc_bits_to_double(0x3ff0000000000000ull + (sub & (54ull << 52)));  // x, or x 2^54
    // The bits of xn minus those of sqrt(1/2): k is their exponent field, m the
    // mantissa put back on sqrt(1/2)'s exponent.
    const uint64_t ix = mc_double_to_bits(xn) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
    // k: the exponent field + 64 (- 54 for subnormals) added to the bits of 2^52 (the mantissa's low
    // bits), then 2^52 + 64 + 1023 off; exact.
    const double k = mc_bits_to_double((ix >> 52) + (0x4330000000000000ull + 64 - (sub & 54)))
                     - (4503599627370496.0 + 64.0 + 1023.0);
    const double f = mc_bits_to_double((ix & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
    const double s = f / (2.0 + f);
    // hfsq + R(z), R(z) = z (Lg1 + Lg2 z + ... + Lg7 z^6), by Estrin's scheme.
    const double z = s * s, w = z * z, w2 = w * w;
    const double p01 = MC_FMA(z, 3.999999999940941908e-01, 6.666666666666735130e-01);  // Lg2, Lg1
    const double p23 = MC_FMA(z, 2.222219843214978396e-01, 2.857142874366239149e-01);  // Lg4, Lg3
    const double p45 = MC_FMA(z, 1.531383769920937332e-01, 1.818357216161805012e-01);  // Lg6, Lg5
    const double p03 = MC_FMA(w, p23, p01);
    const double p46 = MC_FMA(w, 1.479819860511658591e-01, p45);  // Lg7
    const double hfsq = 0.5 * f * f;  // f^2/2
    const double hR = MC_FMA(z, MC_FMA(w2, p46, p03), hfsq);
    // log x = k ln2_hi + (f - (hfsq - (s (hfsq + R) + k ln2_lo))); k ln2_hi is exact (the last FMA is an add).
    const double y = MC_FMA(k, 6.93147180369123816490e-01,  // ln2_hi
                            (MC_FMA(s, hR, k * 1.90821492927058770002e-10) - hfsq) + f);  // ln2_lo
    // x > 0: y, except +inf; x = +-0: -inf; x < 0 and NaN: NaN (6 instructions: cheaper than the
    // nested ?: on x == 0 and x < 0, which GCC compiled to 8).
    const double inf = std::numeric_limits<double>::infinity();
    const double y1 = x < inf ? y : x;  // +inf (and NaN): x
    const double zs = x == 0 ? -inf : std::numeric_limits<double>::quiet_NaN();
    return x > 0 ? y1 : zs;
}
