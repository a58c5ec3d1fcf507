// NumPy's complex64/complex128 arithmetic, as NumPy's own array loops compute it
// (numpy/_core/src/umath/loops.c.src and its SIMD loops): no C99 Annex G recovery of infinities
// (std::complex's operator* under GCC calls __muldc3, which NumPy does not),
// Smith's algorithm for division, a scaled square root for the absolute value.
// mc_complex<T> has NumPy's memory layout: the real part, then the imaginary one.
#pragma once

#include <cmath>

// A plain aggregate, no constructors: GCC's ``omp simd`` keeps such temporaries
// in registers (one with constructors becomes an addressable per-lane array,
// and the loop is no longer vectorized).
template <typename T> struct mc_complex { T re, im; };
template <typename T> static inline mc_complex<T> mc_cmake(T re, T im) { return mc_complex<T>{re, im}; }
typedef mc_complex<float> mc_c64;
typedef mc_complex<double> mc_c128;
// Casts (what a C-style cast would be with constructors): a real value's
// imaginary part is +0; complex64 <-> complex128 casts each part.
template <typename U> static inline mc_c64 mc_to_c64(U r) { return mc_c64{(float)r, 0.0f}; }
template <typename U> static inline mc_c64 mc_to_c64(mc_complex<U> z) { return mc_c64{(float)z.re, (float)z.im}; }
template <typename U> static inline mc_c128 mc_to_c128(U r) { return mc_c128{(double)r, 0.0}; }
template <typename U> static inline mc_c128 mc_to_c128(mc_complex<U> z) { return mc_c128{(double)z.re, (double)z.im}; }


template <typename T> static inline mc_complex<T> mc_cadd(mc_complex<T> a, mc_complex<T> b) {
    return mc_cmake<T>(a.re + b.re, a.im + b.im);
}
template <typename T> static inline mc_complex<T> mc_csub(mc_complex<T> a, mc_complex<T> b) {
    return mc_cmake<T>(a.re - b.re, a.im - b.im);
}
// NumPy's array loop multiplies with a fused multiply-add/subtract where the
// CPU has one (its SIMD loop: re = fma(a.re, b.re, -(a.im b.im)), im =
// fma(a.re, b.im, a.im b.re)): the same rounding, and the same -inf where the
// plain formula's inf - inf would give NaN.  (NumPy *scalars* use the plain one.)
template <typename T> static inline mc_complex<T> mc_cmul(mc_complex<T> a, mc_complex<T> b) {
#ifdef __FMA__
    return mc_cmake<T>(std::fma(a.re, b.re, -(a.im * b.im)), std::fma(a.re, b.im, a.im * b.re));
#else
    return mc_cmake<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
#endif
}
// A product kept apart from the sum it feeds: GCC's vectorizer recognizes the
// (re, im) shape of Smith's numerators as complex arithmetic and fuses it into
// fmaddsub even under -ffp-contract=off, which NumPy's division does not do
// (one rounding less: a last-bit difference).  The empty asm hides the product.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MC_UNFUSED(v) __asm__("" : "+x"(v))
#else
#define MC_UNFUSED(v) ((void)0)
#endif
// Smith's algorithm, branch for branch NumPy's (a zero divisor gives inf or nan parts).
template <typename T> static inline mc_complex<T> mc_cdiv(mc_complex<T> a, mc_complex<T> b) {
    const T br_abs = std::fabs(b.re), bi_abs = std::fabs(b.im);
    if (br_abs >= bi_abs) {
        if (br_abs == 0 && bi_abs == 0) {
            return mc_cmake<T>(a.re / br_abs, a.im / br_abs);
        }
        const T rat = b.im / b.re;
        T d = b.im * rat, p = a.im * rat, q = a.re * rat;
        MC_UNFUSED(d); MC_UNFUSED(p); MC_UNFUSED(q);
        const T scl = (T)1.0 / (b.re + d);
        return mc_cmake<T>((a.re + p) * scl, (a.im - q) * scl);
    }
    const T rat = b.re / b.im;
    T d = b.re * rat, p = a.re * rat, q = a.im * rat;
    MC_UNFUSED(d); MC_UNFUSED(p); MC_UNFUSED(q);
    const T scl = (T)1.0 / (b.im + d);
    return mc_cmake<T>((p + a.im) * scl, (q - a.re) * scl);
}
template <typename T> static inline mc_complex<T> mc_cneg(mc_complex<T> a) { return mc_cmake<T>(-a.re, -a.im); }
template <typename T> static inline mc_complex<T> mc_cconj(mc_complex<T> a) { return mc_cmake<T>(a.re, -a.im); }
template <typename T> static inline mc_complex<T> mc_csquare(mc_complex<T> a) { return mc_cmul(a, a); }
// |a| as NumPy's SIMD loop computes it (loops_unary_complex): the larger part
// times sqrt(1 + (smaller/larger)^2), 0 for 0; a NaN part gives NaN, an
// infinite part inf (even beside a NaN).  Unlike the libm's hypot, this
// vectorizes: one select per special case, each on a comparison of its own.
template <typename T> static inline T mc_cabs(mc_complex<T> a) {
    const T inf = (T)INFINITY;
    const T re = std::fabs(a.re), im = std::fabs(a.im);
    const T larger = re > im ? re : im, smaller = re > im ? im : re;
    const T ratio = larger == 0 ? (T)0 : smaller / larger;
#ifdef __FMA__
    T h = std::sqrt(std::fma(ratio, ratio, (T)1)) * larger;
#else
    T h = std::sqrt(ratio * ratio + (T)1) * larger;
#endif
    h = re != re ? (T)NAN : h;
    h = im != im ? (T)NAN : h;
    h = re == inf ? inf : h;
    return im == inf ? inf : h;
}
template <typename T> static inline bool mc_ceq(mc_complex<T> a, mc_complex<T> b) {
    return a.re == b.re && a.im == b.im;
}
template <typename T> static inline bool mc_cne(mc_complex<T> a, mc_complex<T> b) {
    return a.re != b.re || a.im != b.im;
}
