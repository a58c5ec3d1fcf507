// What a graph's translation unit needs to call the runtime's GEMM (mc_gemm.h):
// its type, and a pointer to it that codegen/cpp/runtime.py's bind() sets
// through mc_bind_gemm when the graph's library is loaded.
#pragma once

#include <cstdint>

typedef void (*mc_gemm_epilogue)(void* ctx, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols);
typedef void (*mc_gemm_fn)(const float* A, int ta, const float* B, int tb, float* C, int64_t batch, int64_t M,
                           int64_t N, int64_t K, int threads, mc_gemm_epilogue epilogue, void* ctx);
// Until the runtime is bound (it always is, on load): the same contract, one dot product at a time.
static void mc_gemm_unbound(const float* A, int ta, const float* B, int tb, float* C, int64_t batch, int64_t M,
                            int64_t N, int64_t K, int, mc_gemm_epilogue epilogue, void* ctx) {
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (int64_t k = 0; k < K; ++k)
                    acc += A[b * M * K + (ta ? k * M + i : i * K + k)] * B[b * K * N + (tb ? j * K + k : k * N + j)];
                C[(b * M + i) * N + j] = acc;
            }
            if (epilogue) epilogue(ctx, b, i, 1, 0, N);
        }
}
static mc_gemm_fn mc_gemm_f32 = mc_gemm_unbound;
extern "C" void mc_bind_gemm(void* fn) { mc_gemm_f32 = (mc_gemm_fn)fn; }
