// What a graph's translation unit needs to call the runtime's attention kernels
// (mc_attention.h, compiled once per machine into the runtime library, as the GEMM is):
// the problem's type, and pointers to the float32 and float64 kernels that
// codegen/cpp/runtime.py's bind() sets through mc_bind_attention when the graph's
// library is loaded (before any of its functions runs).
#pragma once

#include <cstdint>

#include "mc_attention_problem.h"

typedef void (*mc_attention_f32_fn)(const float* q, const float* kt, const float* v, const uint8_t* mask, float* out,
                                    const mc_attention_problem* problem);
typedef void (*mc_attention_f64_fn)(const double* q, const double* kt, const double* v, const uint8_t* mask,
                                    double* out, const mc_attention_problem* problem);
static mc_attention_f32_fn mc_attention_f32 = nullptr;
static mc_attention_f64_fn mc_attention_f64 = nullptr;
extern "C" void mc_bind_attention(void* f32, void* f64) {
    mc_attention_f32 = (mc_attention_f32_fn)f32;
    mc_attention_f64 = (mc_attention_f64_fn)f64;
}
