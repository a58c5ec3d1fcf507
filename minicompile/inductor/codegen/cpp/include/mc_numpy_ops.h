// NumPy's semantics where C++'s differ, for the op table of codegen/cpp/ops.py:
// integer and float floor division and remainder, integer power, and
// NaN-propagating maximum/minimum.  Included by every generated translation unit.
#pragma once

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

// np.maximum / np.minimum: a NaN on either side wins.  On a tie (0.0 vs -0.0)
// NumPy's float32/float64 loops return the second operand, its float16 loop
// the first: the sign of a zero result depends on it.
template <typename T> static inline T mc_maximum(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> static inline T mc_minimum(T a, T b) { return (a < b || a != a) ? a : b; }
template <typename T> static inline T mc_maximum_half(T a, T b) { return (a >= b || a != a) ? a : b; }
template <typename T> static inline T mc_minimum_half(T a, T b) { return (a <= b || a != a) ? a : b; }
