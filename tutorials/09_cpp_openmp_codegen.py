# %% [markdown]
# # 09 — The C++/OpenMP backend: generated code, flags, the disk cache
#
# The last stage turns each scheduled kernel into a C++ function
# (`minicompile/inductor/codegen/cpp/kernel.py`, our version of Inductor's
# `codegen/cpp.py`), compiles all kernels of a graph into one shared library
# (`inductor/codecache.py`, like Inductor's `codecache.py`), and writes a small
# Python wrapper that allocates buffers and calls the kernels
# (`codegen/cpp/wrapper.py`, like Inductor's `wrapper.py` / `output_code`).
# The backend's entry point, graph in and compiled callable out, is
# `codegen/cpp/compile.py`.  Each technique the kernel writer may apply has a
# module of its own that decides whether it applies and writes its loops:
# `reductions.py`, `tiling.py`, `streaming.py`, `interleave.py`, and
# `matmul.py` for the GEMM.  The C++ that is not generated — NumPy's division
# rules, our exp/log/tanh, the reduction and streaming helpers, the GEMM, the
# caching allocator — is written by hand in `codegen/cpp/include/*.h`, and a
# translation unit `#include`s the headers it needs by path.

# %%
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from minicompile import config, ir
from minicompile.inductor import codecache, compile_graph
from minicompile.ir import TensorMeta

F32 = np.dtype(np.float32)
config.cache_dir = Path(tempfile.mkdtemp(prefix="minicompile-tutorial-09-"))

# %% [markdown]
# ## A layer norm, compiled
#
# Shapes and strides are constants in the code (guards promise the same
# layout on every call), so loop bounds and index arithmetic fold at compile
# time.  The outer loop over rows is `#pragma omp parallel for`; the loops
# over a row are `#pragma omp simd`.  A float32 sum over a row runs in chunks
# of 256 added into a double, and within a chunk into 32 partial sums (four
# independent vectors, then folded pairwise): with a single vector accumulator
# (`omp simd reduction(+:acc)`) every add would wait for the previous one.
# The compiler reassociates nothing itself; the order is the generated code's.
# The first line of each row prefetches the next row.

# %%
g = ir.Graph()
x = g.placeholder("x", TensorMeta((2048, 512), F32))
c = g.call("subtract", x, g.call("mean", x, axis=1, keepdims=True))
var = g.call("mean", g.call("multiply", c, c), axis=1, keepdims=True)
g.output([g.call("divide", c, g.call("sqrt", g.call("add", var, 1e-5)))])

start = time.perf_counter()
compiled = compile_graph(g, [np.zeros((2048, 512), F32)])
cold = time.perf_counter() - start
source = compiled.kernel_source
print("\n".join(source.splitlines()[:7]))  # the translation unit starts with its #include lines
kernel = source[source.index('extern "C" void kernel_0'):]
print(kernel)
assert source.count("#include") == 4 and "static inline" not in source  # helpers named, not pasted
assert "#pragma omp parallel for" in kernel and "acc0_p[32]" in kernel and "#pragma omp simd" in kernel
assert "__builtin_prefetch" in kernel
assert len(compiled.kernels) == 1

# %% [markdown]
# ## Compile flags
#
# No `-ffast-math`: results must match NumPy.  `-ffp-contract=off` keeps
# `a*b+c` from becoming a fused multiply-add that rounds differently;
# `-fwrapv` makes integer overflow wrap as NumPy's does; `-march=native` is
# safe because the cache key includes the host CPU.

# %%
print(" ".join(compiled.compile_flags))
assert "-fopenmp" in compiled.compile_flags and "-ffp-contract=off" in compiled.compile_flags

# %% [markdown]
# ## The wrapper
#
# The wrapper is plain Python.  Kernels take the arrays themselves (their
# `_obj` entry reads each data pointer in C): asking NumPy for `.ctypes.data`
# costs more than a small kernel does.

# %%
print(compiled.wrapper_source)
xv = np.random.default_rng(0).standard_normal((2048, 512), dtype=np.float32)
mean = xv.mean(1, keepdims=True)
expected = (xv - mean) / np.sqrt(((xv - mean) ** 2).mean(1, keepdims=True) + 1e-5)
np.testing.assert_allclose(compiled(xv)[0], expected, rtol=1e-4, atol=1e-5)

# %% [markdown]
# ## The disk cache
#
# The library's name is the sha256 of (source, the contents of the headers it
# includes, flags, compiler version, host CPU): editing a header compiles again.  Files are written to a temporary name and renamed into place, so
# several processes compiling at once all end with a complete library; a
# library whose checksum does not match is rebuilt.  A second compile of the
# same graph — say in a new process — loads instead of compiling.
#
# Most of a small kernel's compile is g++ reading the headers, ours and the
# C++ library's they include.  So the first unit with a given list of includes
# also builds a *precompiled header* of them (`inductor/precompiled_headers.py`:
# GCC's `.gch` under `pch/` in the cache), and later units are compiled with
# `-include` of it, reading the parse back instead of redoing it, as Inductor
# precompiles its C++ prelude.  The unit means the same either way: the
# prelude is its own include lines, and each header is `#pragma once`.

# %%
print("precompiled:", [str(p.relative_to(config.cache_dir)) for p in config.cache_dir.glob("pch/*/*")])
codecache.clear_memory_cache()
start = time.perf_counter()
again = compile_graph(g, [np.zeros((2048, 512), F32)])
warm = time.perf_counter() - start
libraries = sorted(p.name for p in config.cache_dir.rglob("*.so"))
print(f"cold compile {cold * 1e3:.0f} ms, from the disk cache {warm * 1e3:.0f} ms; cache: {libraries}")
assert warm < cold and len(libraries) == 1
np.testing.assert_allclose(again(xv)[0], expected, rtol=1e-4, atol=1e-5)

# %% [markdown]
# ## A reduction over the first axis
#
# `x.sum(axis=0)` reads down columns.  A loop per output would stride through
# memory; instead the kernel keeps a block of accumulators (one per output
# column) and streams rows through it, so every load is contiguous.

# %%
h = ir.Graph()
y = h.placeholder("y", TensorMeta((4096, 512), F32))
h.output([h.call("sum", y, axis=0)])
colsum = compile_graph(h, [np.zeros((4096, 512), F32)])
body = colsum.kernel_source[colsum.kernel_source.index('extern "C" void kernel_0'):]
print(body[:900])
assert "acc0[256]" in body
yv = np.random.default_rng(1).standard_normal((4096, 512), dtype=np.float32)
np.testing.assert_allclose(colsum(yv)[0], yv.sum(axis=0), rtol=1e-4, atol=1e-3)

# %% [markdown]
# ## A matmul and its epilogue: the generated GEMM
#
# A float32 matmul does not go to NumPy's BLAS: it calls the GEMM of
# minicompile's C++ runtime (`codegen/cpp/matmul.py`: packed panels of `A`
# and `B`, a 6 x 16 register tile, the loop nest of BLIS), compiled once per
# machine into a library of its own and handed to each graph's library as a
# function pointer.  Running in the same OpenMP pool as the other kernels, it
# never fights a BLAS thread pool for the cores.  The pointwise kernel after
# it — here the bias and the GELU — becomes its *epilogue*: a `_tile`
# function the GEMM calls on each finished panel of the product (16 columns
# of at most 144 rows) while it is still in L1, so the product is never read
# back from memory.  This is
# Inductor's CPU GEMM template with epilogue fusion (`cpp_gemm_template.py`),
# and the Triton template of tutorial 10.

# %%
m = ir.Graph()
xm = m.placeholder("x", TensorMeta((512, 256), F32))
wm = m.placeholder("w", TensorMeta((256, 768), F32))
bm = m.placeholder("b", TensorMeta((768,), F32))
pre = m.call("add", m.call("matmul", xm, wm), bm)
m.output([m.call("multiply", m.call("multiply", pre, 0.5), m.call("add", m.call("tanh", pre), 1.0))])
rng = np.random.default_rng(2)
inputs = [rng.standard_normal(s, dtype=np.float32) for s in ((512, 256), (256, 768), (768,))]
mlp_layer = compile_graph(m, inputs)
source = mlp_layer.kernel_source
print(source[source.index("static inline void kernel_0"):])
print(mlp_layer.wrapper_source)
print(mlp_layer.schedule.splitlines()[-1])
assert mlp_layer.kernels == ["kernel_0_add_multiply_tanh_add_multiply"] and "_op_matmul" not in mlp_layer.wrapper_source
xv, wv, bv = inputs
pre_v = xv @ wv + bv
np.testing.assert_allclose(mlp_layer(*inputs)[0], pre_v * 0.5 * (np.tanh(pre_v) + 1.0), rtol=1e-4, atol=1e-4)

# %% [markdown]
# ## Softmax attention as one kernel: flash attention on the CPU
#
# `softmax(q @ k.T * c, masked) @ v` written as NumPy ops would be two GEMMs
# around a row kernel, with the `[S, S]` scores written and read back per
# head.  `inductor/fuse_attention.py` finds the pattern in the graph and makes
# it one `attention` node (the `patterns` log says where it fired), and
# `codegen/cpp/attention.py` generates one C++ function for it.  The function
# only describes the problem — sizes, each operand's offset and strides (a mask
# broadcast over heads has stride 0 there), the scale and the fill — and calls
# the kernel, which like the GEMM is compiled once per machine into the C++
# runtime.  The kernel is hand-written, `include/mc_attention.h`: blocks of query rows over
# the OpenMP threads, each walking 64-column tiles of `kᵀ` and `v` with an
# *online softmax* — a running maximum `m`, a running sum `l` and an
# accumulator rescaled by `exp(m_old - m_new)` when the maximum grows — so
# the scores only ever exist one tile at a time, in cache.  Where the mask
# hides every column of a tile for a register tile of rows (the upper half of
# a causal mask), the work is skipped, exactly: with a fill of `-inf` those
# columns add `exp(-inf) = 0`.
#
# torch.compile does the same: Inductor's SDPA pattern
# (`torch/_inductor/fx_passes/fuse_attention.py`) rewrites the matmul-softmax-
# matmul chain to `scaled_dot_product_attention`, which on the CPU runs ATen's
# own flash attention for CPU (blocked over queries and keys, online softmax).

# %%
import minicompile as mc  # noqa: E402


def causal_attention(q, k, v, mask):
    s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(q.shape[-1]))  # a Python float: float32 scores
    s = np.where(mask, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


rng = np.random.default_rng(3)
qkv = [rng.standard_normal((2, 4, 200, 64), dtype=np.float32) for _ in range(3)]
causal = np.tril(np.ones((200, 200), bool))
attend = mc.compile(causal_attention, backend="cpp")
result = attend(*qkv, causal)
attention_graph = attend.cache[0].compiled
source = attention_graph.kernel_source
print(source[source.index('extern "C" void g0_attn'):])  # the whole generated function
print(attention_graph.schedule)
# The heart of the hand-written kernel: one row's online softmax over a tile of keys.
header = (Path(mc.__file__).parent / "inductor/codegen/cpp/include/mc_attention.h").read_text()
print(header[header.index("            const T m_new"):header.index("            m[r] = m_new;") + 26])
assert attention_graph.kernels == [] and attention_graph.extern_kernels == ["g0_attn_attention"]
assert "mc_attention_binding.h" in source and "_op_matmul" not in attention_graph.wrapper_source
np.testing.assert_allclose(result, causal_attention(*qkv, causal), rtol=3e-5, atol=3e-5)

# %% [markdown]
# ## Where the outputs' memory comes from: the caching allocator
#
# A new 16 MB array costs a page fault per page the first time the kernel
# writes it, and the operating system zeroes every page first; glibc hands
# big blocks back to the system when they are freed, so a graph that returns
# large arrays would pay that on every call.  A graph whose arrays are large
# runs with NumPy's memory handler switched (`PyDataMem_SetHandler`, for this
# thread and only during the call) to the caching allocator of the C++
# runtime (`codegen/cpp/allocator.py`): a freed array's block is kept and the
# next array of about its size gets it.  The arrays are ordinary NumPy arrays
# that own their data; `np._core.multiarray.get_handler_name(a)` names the
# allocator that will free them.  This is the CPU twin of torch's CUDA caching
# allocator, and `mc.empty_cache()` of `torch.cuda.empty_cache()`.
#
# Where in its page an array starts matters too.  glibc puts the data of a
# block it maps on its own 16 bytes past a page boundary, and that is where
# NumPy's big arrays usually start.
# A kernel that reads such an array and writes one that starts a little
# further on modulo 4096 issues loads whose low 12 address bits match a store
# it has just made to the other array; the core checks those bits first and
# holds the load back ("4K aliasing").  Layer norm over 4096 x 1024 ran
# 2.9-3.0 ms with its output 48 bytes past its input that way, against
# 1.1-1.2 ms half a page away, so the cache's blocks start their data half a
# page (2048 bytes) into the mapping.

# %%
import minicompile as mc  # noqa: E402
from minicompile.inductor.codegen.cpp import allocator  # noqa: E402


def momentum(p, g, m):
    m = 0.9 * m + 0.1 * g
    return p - 0.01 * m, m


momentum_step = mc.compile(momentum)


p0, g0, m0 = (np.random.default_rng(3).standard_normal(1 << 20, dtype=np.float32) for _ in range(3))
for _ in range(4):
    new_p, new_m = momentum_step(p0, g0, m0)
    del new_p, new_m  # freed: their blocks go back to the cache
new_p, new_m = momentum_step(p0, g0, m0)
print("allocated by:", np._core.multiarray.get_handler_name(new_p), "| owns its data:", new_p.flags.owndata)
print("cache:", allocator.stats())
print("input starts", p0.ctypes.data % 4096, "bytes into its page, the output", new_p.ctypes.data % 4096)
assert np._core.multiarray.get_handler_name(new_p) in ("minicompile_cache", "default_allocator")
if np._core.multiarray.get_handler_name(new_p) == "minicompile_cache":
    assert new_p.ctypes.data % 4096 == 2048
np.testing.assert_allclose(new_m, 0.9 * m0 + 0.1 * g0, rtol=1e-6)

# %% [markdown]
# ## Writing more than the cache holds: streaming stores
#
# An ordinary store to a line that is not in the cache first *reads* the line,
# so writing `n` bytes moves `2n` through the memory bus.  A kernel that
# stores at least 16 MiB and does no transcendental per element (it waits on
# memory, not on arithmetic) writes with streaming stores instead
# (`codegen/cpp/streaming.py`), non-temporal stores that skip the read.  GCC
# cannot be asked for them in a loop it vectorizes, so the loop is written a
# vector at a time: plain stores up to the outputs' first 32-byte boundary
# (`mc_stream_head_all`), then for each vector an 8-iteration `omp simd`
# loop that writes each output's lanes into a local array (GCC keeps it in a
# register) and `mc_stream_vector` stores it (`vmovntdq`), then a plain tail;
# each thread ends with a fence.  (Outputs of mixed element sizes go through
# a 1 KB buffer per output in L1 and `mc_stream_out` instead.)  The same step
# as above, compiled afresh for 4M parameters.  (Calling `momentum_step` with a
# new size would compile it again with a symbolic size, tutorial 14: its
# kernel then holds both loops, and `if (4*s0 + ... >= 16777216)` picks one on
# each call.)

# %%
big_step = mc.compile(momentum)
big = [np.random.default_rng(i).standard_normal(1 << 22, dtype=np.float32) for i in range(3)]
new_p, new_m = big_step(*big)
big_kernel = big_step.cache[0].compiled.kernel_source
start = big_kernel.index('extern "C" void g0_kernel')
print(big_kernel[start:big_kernel.index('extern "C"', start + 1)])
assert "mc_stream_vector(&out_" in big_kernel and "mc_stream_fence();" in big_kernel
np.testing.assert_allclose(new_m, 0.9 * big[2] + 0.1 * big[1], rtol=1e-6)

# %% [markdown]
# ## Long chains of arithmetic: interleaved vectors
#
# GELU's `tanh` is about 55 vector instructions per 8 lanes, most of them one
# chain of dependent multiply-adds.  The core overlaps one vector's chain
# with the next only as far as its scheduler holds their instructions, so a
# plain vector loop leaves most of the arithmetic units idle.  A pointwise
# loop that evaluates float32 `exp`, `log` or `tanh` is written four vectors
# at a time instead, each statement four times in a row for four independent
# lane groups (`codegen/cpp/interleave.py`), and its function is compiled
# with GCC's instruction scheduler run before register allocation
# (`MC_SCHEDULED`), which interleaves the four chains.  Every element computes
# exactly as in the plain loop; the elements left over after the last group of
# 32 take the plain loop.  (Inductor's C++ backend does the analogue by hand:
# its vectorized loops use `at::vec` types of one or two registers.)

# %%
gelu_step = mc.compile(lambda x: 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x))))
xg = np.random.default_rng(4).standard_normal(100_000, dtype=np.float32)
yg = gelu_step(xg)
gelu_kernel = gelu_step.cache[0].compiled.kernel_source
start = gelu_kernel.index('extern "C" MC_SCHEDULED')
print("\n".join(gelu_kernel[start:].splitlines()[:22]), "\n    ...")
assert "MC_SCHEDULED void" in gelu_kernel and "mc_tanh_f32(t6_3)" in gelu_kernel
np.testing.assert_allclose(yg, 0.5 * xg * (1.0 + np.tanh(0.7978845608 * (xg + 0.044715 * xg**3))), rtol=1e-5, atol=1e-6)

# %% [markdown]
# ## float64 too: our own vectorizable exp, log and tanh
#
# The C library's `exp`, `log` and `tanh` are function calls, which the
# compiler cannot vectorize: a float64 GELU spent nearly all its time in them.
# NumPy's default dtype is float64, so the headers carry float64 versions
# of their own (`codegen/cpp/include/mc_math_f64.h`): branch-free polynomials like the
# float32 ones, within 1 ulp of the correctly rounded result (checked against
# 80-bit `long double` on millions of inputs, special values exactly).  They
# keep one vector per iteration: interleaving four of them left GCC's loop
# scalar.

# %%
gelu64 = mc.compile(lambda x: 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x))))
x64 = np.random.default_rng(5).standard_normal(100_000)
y64 = gelu64(x64)
kernel64 = gelu64.cache[0].compiled.kernel_source
print([line.strip() for line in kernel64[kernel64.index('extern "C" void g0_kernel'):].splitlines() if "tanh" in line])
assert "mc_tanh_f64(" in kernel64 and y64.dtype == np.float64
np.testing.assert_allclose(y64, 0.5 * x64 * (1.0 + np.tanh(0.7978845608 * (x64 + 0.044715 * x64 * x64 * x64))), rtol=1e-14, atol=1e-15)

# %% [markdown]
# ## What each technique measured
#
# The reasons above were measured when each technique went in, on a 2-core
# AMD EPYC VM (Zen 3, AVX2 + FMA) with GCC 12 and the cache's flags, medians of
# alternated runs (`make bench` measures whole graphs again):
#
# | technique | workload | without | with |
# | --- | --- | --- | --- |
# | streaming stores (`streaming.py`) | Adam's update, 4M float32 (the kernel) | 5.4–6.0 ms | 3.6–3.7 ms |
# | ... its L1 chunk size | same | 2 / 4 / 8 KB: 4.0–4.7 / 4.4–4.7 / 4.5–4.8 ms | 1 KB: 3.6 ms |
# | ... vectors streamed straight from the computation, not through an L1 buffer | softmax 4096 x 1024 float32 | 14.4 cycles per vector | 12.4 |
# | | layer norm, same | 5.8 | 4.6 |
# | | Adam's kernel, 4M float32 | 4.8–5.5 ms | 3.6–4.2 ms |
# | ... both versions in a kernel of symbolic sizes | layer norm 4096 x 1024, a symbolic batch | 2.6 ms | 1.3 ms |
# | ... not for a transcendental per element | GELU, 4M float32 | 3.65 / 4.06 ms plain | 3.87 / 3.79 ms streamed |
# | interleaved vectors (`interleave.py`) | GELU's kernel, 64K float32 in L2, one core | 33 cycles per vector | 24–26 (two copies 28–29) |
# | | GELU, 4M float32, two threads, through `mc.compile` | 3.9–4.7 ms | 2.8–3.2 ms |
# | ... either half alone | same kernel | | unrolled only 31–35, scheduler only 33–37 cycles |
# | ... in float64 (not done) | GELU, float64 | 15–24 ms | 65–80 ms (GCC left it scalar) |
# | tiles of 256 x 32 bytes (`tiling.py`) | `x.T + 1.0`: 4096² / 4000² float32, 4096² float64 | 67 / 43 / 76 ms | 23 / 18 / 34 ms |
# | ... other tile shapes | same | 128 x 64: 28 / 18 / 36; 256 x 64: 32 / 18 / 36; 128 x 32: 23 / 21 / 41 ms | |
# | blocked argmax (`reductions.py`) | `np.argmax(x, axis=-1)`, 4096² / 65536 x 100 float32 | a pair update per element: 24 ms; NumPy 5.5 / 4.0 ms | blocks of 128: 4.1 / 3.4 ms (64: 4.1 / 3.5, 256: 4.6 / 3.7, 1024: 6.4 / 3.6) |
# | lane-partial float32 sums (`reductions.py`) | a row sum | one accumulator: about 2x slower | 32 lanes in 4 vectors |
# | `mc_sum_lanes32` as vector operations | a row of layer norm | scalar loops: 8% slower | (bit for bit the same) |
# | bools read as bytes (`ops.py`) | masked softmax | C++ `bool` loads: 7x slower (not vectorized) | |
# | our float32 exp (`mc_math_f32.h`) | a loop, one core | Taylor series to r^7: 40 instructions / 8 lanes, 0.78 ns per element | 25 instructions, 0.47 ns |
# | our float32 log | same | the float64 version | 1.9x faster |
# | our float64 exp / tanh (`mc_math_f64.h`) | 4M float64 in [-20, 20] | std::exp 22–33 ms, std::tanh 85–101 ms | 8.6–9.1 ms, 16–20 ms |
# | | 8192 float64, in cache | 5.5–9.1 / 17.5–30 ns per element | 1.9–2.0 / 3.7–4.8 ns |
# | our float64 log | 4M float64 e^u, u in [-30, 30] (a scaled copy alone: 1.3 ns) | std::log 5.3 ns per element | 2.2 ns (16K in cache: 1.72) |
# | a float64 GELU before those | 4M float64 | 67 ms (float32: 3 ms) | |
# | kept intermediates (`wrapper.py`) | MobileNetV2, batch 32 | page faults: about a fifth of the time | |
# | the attention kernel's register tiles (`mc_attention.h`; an AVX-512 VM, one thread, CPU time of a C++ harness) | causal attention 8x8x256x64 float32 | 4 rows x 64 columns, blocks of 128 rows: 7.1–7.2 ms | 6 rows x 64 columns, blocks of at most 132: 5.2–5.5 ms |
# | ... kᵀ's tiles packed by 16 x 16 register transposes | same | scattered stores: 7.6–7.7 ms | 7.1–7.2 ms |
# | ... only the columns a register tile of rows keeps | same, wall time of one thread | whole tiles skipped only: 8.4 ms | 7.8–7.9 ms |
