// Reduction helpers the C++ writer's reduction loops call (codegen/cpp/reductions.py):
// the fold of a row's 32 float32 partial sums (mc_sum_lanes32), and argmax/argmin's
// value-and-position pair with its steps and its OpenMP reductions.
#pragma once

#include <cstdint>

// The float32 sum of a row kernel's 32 partial sums (reductions.py, lane_sum_loops):
// lane i < 8 adds (p[i] + p[i+16]) + (p[i+8] + p[i+24]), then the 8 lanes add
// pairwise, ((0+1) + (2+3)) + ((4+5) + (6+7)).  Written as vector operations:
// as scalar loops over the array, GCC stored the four accumulator vectors and
// added their lanes back one load at a time (slower, with the same
// result bit for bit).
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

// The OpenMP reductions mc_argmax / mc_argmin, for every element type.  A private
// copy starts as the original, the identity (reductions.py starts each pair at
// position INT64_MAX): combining a pair with itself changes nothing.
#pragma omp declare reduction(mc_argmax : mc_arg<bool> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<int8_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<int16_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<int32_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<int64_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<uint8_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<uint16_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<uint32_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<uint64_t> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<float> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmax : mc_arg<double> : omp_out = mc_argmax_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<bool> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<int8_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<int16_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<int32_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<int64_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<uint8_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<uint16_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<uint32_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<uint64_t> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<float> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
#pragma omp declare reduction(mc_argmin : mc_arg<double> : omp_out = mc_argmin_pair(omp_out, omp_in)) initializer(omp_priv = omp_orig)
