// Streaming (non-temporal) stores, included by a translation unit whose
// kernels stream (codegen/cpp/streaming.py decides which and writes the loops).
#pragma once

#include <cstdint>

// mc_stream_out: copy n
// elements from an L1 buffer to dst, whole 32-byte vectors with non-temporal
// stores, the unaligned head and the tail with plain ones.  Compiler builtins,
// not <immintrin.h>: that header alone takes most of a second to compile.
#if defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
typedef long long mc_v4i __attribute__((vector_size(32)));
typedef long long mc_v4i_u __attribute__((vector_size(32), aligned(1)));
#define MC_STREAMING 1
#endif
template <typename T> static inline void mc_stream_out(T* __restrict dst, const T* __restrict src, int64_t n) {
    char* d = reinterpret_cast<char*>(dst);
    const char* s = reinterpret_cast<const char*>(src);
    int64_t bytes = n * (int64_t)sizeof(T);
#ifdef MC_STREAMING
    const int64_t head = (int64_t)((32 - ((uintptr_t)d & 31)) & 31);
    if (head % (int64_t)sizeof(T) == 0 && bytes >= head + 32) {
        __builtin_memcpy(d, s, head);
        d += head; s += head; bytes -= head;
        const int64_t whole = bytes & ~(int64_t)31;
        for (int64_t b = 0; b < whole; b += 32) {
            const mc_v4i v = *reinterpret_cast<const mc_v4i_u*>(s + b);
#ifdef __clang__
            __builtin_nontemporal_store(v, reinterpret_cast<mc_v4i*>(d + b));
#else
            __builtin_ia32_movntdq256(reinterpret_cast<mc_v4i*>(d + b), v);
#endif
        }
        d += whole; s += whole; bytes -= whole;
    }
#endif
    __builtin_memcpy(d, s, bytes);
}
// A row pass that streams its one output writes it directly: a plain head
// loop up to dst's first 32-byte boundary (mc_stream_head elements: all n where
// dst is not aligned to its element, or streaming is not available), then
// one 32-byte vector at a time (mc_stream_vector), then a plain tail.
template <typename T> static inline int64_t mc_stream_head(const T* dst, int64_t n) {
#ifdef MC_STREAMING
    const uintptr_t a = (uintptr_t)dst;
    if (a % sizeof(T) == 0) {
        const int64_t head = (int64_t)(((32 - (a & 31)) & 31) / sizeof(T));
        return head < n ? head : n;
    }
#endif
    return n;
}
// The same for several outputs indexed alike: their common head, or n where
// they are not all at the same address modulo 32 (no common boundary).
template <typename T, typename... R> static inline int64_t mc_stream_head_all(int64_t n, const T* first, const R*... rest) {
    const uintptr_t phase = (uintptr_t)first & 31;
    return ((((uintptr_t)rest & 31) == phase) && ...) ? mc_stream_head(first, n) : n;
}
template <typename T> static inline void mc_stream_vector(T* __restrict dst, const T* __restrict src) {
#ifdef MC_STREAMING
    mc_v4i v;
    __builtin_memcpy(&v, src, 32);
#ifdef __clang__
    __builtin_nontemporal_store(v, reinterpret_cast<mc_v4i*>(dst));
#else
    __builtin_ia32_movntdq256(reinterpret_cast<mc_v4i*>(dst), v);
#endif
#else
    __builtin_memcpy(dst, src, 32);
#endif
}
// Streaming stores are weakly ordered: a thread fences once it has written its last chunk.
static inline void mc_stream_fence() {
#ifdef MC_STREAMING
    __builtin_ia32_sfence();
#endif
}
