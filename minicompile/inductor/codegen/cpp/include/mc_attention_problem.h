// One attention as generated code describes it to the runtime's kernel (mc_attention.h):
// sizes, each operand's strides, the scale and the fill.  codegen/cpp/attention.py fills
// one in each generated attn_<node> function; mc_attention_binding.h passes it on.
#pragma once

#include <cstdint>

enum { MC_ATTN_MAX_BATCH_DIMS = 8 };
enum { MC_ATTN_Q, MC_ATTN_KT, MC_ATTN_V, MC_ATTN_MASK, MC_ATTN_OUT, MC_ATTN_OPERANDS };

// out[b] = softmax(where(mask[b], (q[b] @ kt[b]) * scale, fill), last axis) @ v[b] (or / scale) for
// each index b of the batch axes: q is M x D, kt D x N, v N x DV, the mask M x N booleans, out M x DV.
// Operand w's element (b, i, j) lies at offset[w] + sum over batch axes a of b[a] * batch_stride[w][a]
// + i * row_stride[w] + j * col_stride[w] (elements; a stride of 0 broadcasts).
struct mc_attention_problem {
    int64_t M, N, D, DV;
    int64_t batch_dims, batch_sizes[MC_ATTN_MAX_BATCH_DIMS];
    int64_t offset[MC_ATTN_OPERANDS], row_stride[MC_ATTN_OPERANDS], col_stride[MC_ATTN_OPERANDS];
    int64_t batch_stride[MC_ATTN_OPERANDS][MC_ATTN_MAX_BATCH_DIMS];
    int has_scale, divide, has_mask;
    double scale, fill;  // the kernel casts them to the element type, as NumPy does
    int threads;         // 0: OpenMP's default
};

// Operand `which`'s layout: its offset, the strides of its rows and columns, and of each batch axis.
static inline void mc_attention_operand(mc_attention_problem* p, int which, int64_t offset, int64_t row_stride,
                                        int64_t col_stride, const int64_t* batch_strides) {
    p->offset[which] = offset;
    p->row_stride[which] = row_stride;
    p->col_stride[which] = col_stride;
    for (int64_t a = 0; a < p->batch_dims; ++a) p->batch_stride[which][a] = batch_strides[a];
}
