# %% [markdown]
# # 10 — Triton code generation: blocks, masks, tiles, reductions and matmul templates
#
# The C++ backend (tutorial 09) writes loops: one iteration per element.  A GPU
# wants something else: thousands of *programs*, each handling a *block* of
# elements with vector instructions.  Triton is a Python-embedded language for
# exactly that, and it is what TorchInductor emits for CUDA.  minicompile's
# `backend="triton"` generates Triton from the same fused schedule the C++
# backend reads.
#
# No GPU?  Triton ships an *interpreter* that runs each program with NumPy on
# the CPU.  Give `backend="triton"` NumPy arrays and that is what happens — slow,
# but the very same kernels, so every claim below is checked on any machine.
# Give it CuPy arrays and the kernels run on the GPU.

# %%
import math
import time

import numpy as np

import minicompile as mc

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def compiled_graph(fn):
    """The inductor's result for the one cache entry of a compiled function."""
    return fn.cache[0].compiled


def kernel_text(cg, name):
    """One kernel's source, cut out of the generated module."""
    source = cg.kernel_source
    start = source.index(f"@triton.jit\ndef {name}(")
    end = source.find("\n\n\n", start)
    return source[start:] if end < 0 else source[start:end]


rng = np.random.default_rng(0)

# %% [markdown]
# ## A pointwise kernel: one flat index, a mask for the tail
#
# GELU is a chain of eight ops.  The scheduler inlines all of them into one
# expression; the Triton generator flattens the output's loops into one index,
# `xindex`, cut into blocks of `XBLOCK`.  The last block hangs past the end of
# the array, so every load and store carries `xmask`.  The loop variables of
# the 2-D shape are recovered from `xindex` by division and remainder — the same
# index arithmetic the loop IR wrote.  The kernel is named as torch.compile names
# its own, after what it fuses, behind `g0_`: the first graph compiled for `gelu`
# (a graph break or a recompile makes `g1_`, `g2_`, ...; tutorial 04).

# %%
x = rng.standard_normal((33, 47), dtype=np.float32)  # 1551 elements: not a multiple of any block
f = mc.compile(gelu, backend="triton")
assert np.allclose(f(x), gelu(x), rtol=1e-5, atol=1e-6)
cg = compiled_graph(f)
print(cg.kernels)
print(kernel_text(cg, cg.kernels[0]))
assert cg.kernels == ["g0_triton_poi_fused_multiply_add_tanh_0"]  # one kernel, named after what it fuses
assert "xmask = xindex < xnumel" in cg.kernel_source

# %% [markdown]
# The wrapper allocates the output and launches the kernel; the launcher
# computes the grid, `cdiv(1551, XBLOCK)` programs.

# %%
print(cg.wrapper_source)

# %% [markdown]
# ## Reductions: persistent when a row fits in a block
#
# Softmax over rows of 100: each program takes `XBLOCK` rows as a
# `[XBLOCK, RBLOCK]` tile with `RBLOCK = 128 >= 100`, masks the 28 extra
# columns to the reduction's identity (`-INF` for max), and reduces the tile
# along its rows at once.  That is a *persistent* reduction (`triton_per_`).
# A row too long for one block (more than 4096 here) is walked in a loop
# of `RBLOCK` chunks instead (`triton_red_`), partial results kept in a tile.

# %%


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


x = rng.standard_normal((9, 100), dtype=np.float32)
f = mc.compile(softmax, backend="triton")
assert np.allclose(f(x), softmax(x), rtol=1e-5, atol=1e-7)
cg = compiled_graph(f)
print(cg.schedule)
print(kernel_text(cg, cg.kernels[0]))
assert cg.kernels[0].startswith("g0_triton_per_fused_max")

long_rows = rng.standard_normal((2, 5000), dtype=np.float32)
f_long = mc.compile(softmax, backend="triton")
assert np.allclose(f_long(long_rows), softmax(long_rows), rtol=1e-5, atol=1e-7)
looped = compiled_graph(f_long)
print(kernel_text(looped, looped.kernels[0]))
assert looped.kernels[0].startswith("g0_triton_red_fused_max")
assert "for roffset in range(0, rnumel, RBLOCK):" in looped.kernel_source

# %% [markdown]
# ## The matmul template, with its epilogue fused
#
# `x @ w` is a library call for the C++ backend.  For Triton it becomes a
# *template*: a tiled `tl.dot` loop over K that leaves a `[BLOCK_M, BLOCK_N]`
# tile of the product in registers (accumulated in float32).  The pointwise
# kernel that followed — bias add and GELU — is pasted onto that tile, so
# `gelu(x @ w + b)` is **one kernel** and the product never touches memory.
# float32 inputs ask for `input_precision="tf32x3"`: each operand is split into
# a TF32 part and a TF32 remainder, and three tensor-core products keep
# float32's accuracy (plain TF32, the GPU's default, keeps 10 bits of the
# mantissa and would not match NumPy).  A tile whose product holds an inf or NaN
# runs the loop again with exact float32 products (`"ieee"`), so non-finite
# values come out as NumPy's do.

# %%


def mlp(x, w, b):
    return gelu(x @ w + b)


x = rng.standard_normal((40, 64), dtype=np.float32)
w = rng.standard_normal((64, 24), dtype=np.float32) / 8
b = rng.standard_normal(24, dtype=np.float32)
f = mc.compile(mlp, backend="triton")
assert np.allclose(f(x, w, b), mlp(x, w, b), rtol=1e-4, atol=1e-5)
cg = compiled_graph(f)
print(cg.schedule)
print(kernel_text(cg, cg.kernels[0]))
assert cg.kernels == ["g0_triton_tem_fused_matmul_add_multiply_tanh_0"]  # one kernel
assert "buf_matmul" not in cg.wrapper_source  # no buffer for the product

# %% [markdown]
# Operands may be views and carry batch dimensions.  Attention's
# `q @ k.transpose(0, 1, 3, 2)` multiplies `[batch, heads, seq, dim]` arrays: the
# template reads `k`'s transpose straight from `k` at the view's strides (no
# copy for a library call), and the program id walks the batch and head
# dimensions, unravelled from one matrix index.  Inductor gets the same effect
# from its layouts: a transposed operand is a strided input to its `mm` template.

# %%


def scores(q, k):
    return (q @ k.transpose(0, 1, 3, 2)) * 0.125


q4, k4 = (rng.standard_normal((2, 4, 16, 8), dtype=np.float32) for _ in range(2))
f_scores = mc.compile(scores, backend="triton")
assert np.allclose(f_scores(q4, k4), scores(q4, k4), rtol=1e-5, atol=1e-5)
sg = compiled_graph(f_scores)
print(sg.schedule)
print("\n".join(line for line in kernel_text(sg, sg.kernels[0]).splitlines() if "in_k" in line or "x0 =" in line))
assert sg.kernels == ["g0_triton_tem_fused_matmul_multiply_0"]

# %% [markdown]
# float16 works the same way: the tile loads half-precision values, `tl.dot`
# accumulates in float32 on the tensor cores, and the product is rounded to
# float16 before the epilogue — exactly where NumPy rounds it.

# %%
x16, w16, b16 = x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)
f16 = mc.compile(mlp, backend="triton")
out16 = f16(x16, w16, b16)
assert out16.dtype == np.float16
assert np.allclose(out16.astype(np.float32), mlp(x16, w16, b16).astype(np.float32), rtol=2e-2, atol=2e-2)

# %% [markdown]
# ## Transposes: a tiled kernel, so reads and writes are both contiguous
#
# `x.T + 1.0` writes the output row by row, but reads `x` column by column: in a
# flat kernel, neighbouring lanes read addresses 45 elements apart, and on a GPU
# every such read costs a memory transaction of its own.  The generator notices
# a read that is contiguous along *another* loop than the output's innermost
# one and tiles the kernel instead: each program takes a `[YBLOCK, XBLOCK]`
# tile spanning both loops, reads it along `x`'s rows and writes it along the
# output's (Triton moves the tile between the two layouts through shared
# memory).  On an H200 this makes `x.T + 1.0` over 8192 x 8192 about three
# times faster than the flat kernel.

# %%
x = rng.standard_normal((37, 45), dtype=np.float32)
f = mc.compile(lambda x: x.T + 1.0, backend="triton")
assert np.array_equal(f(x), x.T + 1.0)
cg = compiled_graph(f)
print(kernel_text(cg, cg.kernels[0]))
assert [k.kind for k in cg.module.kernels.values()] == ["tiled"]

# %% [markdown]
# ## A batch of matmuls is one template too
#
# `q @ k` on `[batch, M, K] @ [batch, K, N]` (attention scores) is the same
# `tl.dot` loop with the matrix index folded into the program id: programs
# `b * tiles ... (b + 1) * tiles - 1` compute matrix `b`.  An operand shared by
# the whole batch (a 2-D weight) simply has batch stride 0, and the epilogue —
# here the `1/sqrt(d)` scale — is fused as before.

# %%
q = rng.standard_normal((3, 10, 16), dtype=np.float32)
k = rng.standard_normal((3, 16, 12), dtype=np.float32)
f = mc.compile(lambda q, k: (q @ k) * 0.25, backend="triton")
assert np.allclose(f(q, k), (q @ k) * 0.25, rtol=1e-5, atol=1e-6)
cg = compiled_graph(f)
print(cg.schedule)
assert cg.kernels == ["g0_triton_tem_fused_matmul_multiply_0"]
assert "batch = pid // (tiles_m * tiles_n)" in cg.kernel_source

# %% [markdown]
# ## Attention: the pattern and the flash template
#
# Softmax attention written as NumPy ops — `q @ k.T`, a scale, a mask, the
# max-subtracted softmax, `@ v` — would be two matmul templates and a row
# kernel that writes the `[batch, heads, S, S]` scores and the weights to
# memory and reads them back.  Before scheduling, the Triton backend looks for
# that pattern in the graph (`MINICOMPILE_LOGS=patterns` says where it fired
# and, where it saw a softmax but did not fire, why), as Inductor's
# `fuse_attention` pattern matcher finds torch's attention and calls a
# flash-attention kernel.  The template is FlashAttention's forward: each
# program keeps `BLOCK_M` rows of queries, streams blocks of `kᵀ` and `v`,
# keeps the running maximum and sum of the online softmax in registers, and
# skips a block the mask hides entirely (the upper half of a causal mask).
# No `S x S` value is ever stored.  `config.attention_template = False`
# (`MINICOMPILE_ATTENTION_TEMPLATE=0`) keeps the ops as they are.

# %%
def causal_attention(q, k, v, mask):
    s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
    s = np.where(mask, s, -1e9)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


qa, ka, va = (rng.standard_normal((2, 4, 48, 16), dtype=np.float32) for _ in range(3))
causal = np.tril(np.ones((48, 48), bool))
flash = mc.compile(causal_attention, backend="triton")
assert np.allclose(flash(qa, ka, va, causal), causal_attention(qa, ka, va, causal), rtol=1e-5, atol=1e-5)
print(compiled_graph(flash).schedule)
mc.config.attention_template = False
unfused = mc.compile(causal_attention, backend="triton")
unfused(qa, ka, va, causal)
mc.config.attention_template = True
print(compiled_graph(unfused).schedule)
scores_bytes = 2 * 4 * 48 * 48 * 4
print(f"{len(compiled_graph(flash).kernels)} kernel against {len(compiled_graph(unfused).kernels)}; "
      f"the scores and weights ({scores_bytes} bytes each here) are never stored")
assert len(compiled_graph(flash).kernels) == 1 and len(compiled_graph(unfused).kernels) == 3

# %% [markdown]
# On the H200, at the decoder's size (batch 8, 16 heads, 1,024 tokens, head
# size 64, float32, causal), the template's products are "tf32x3" (three
# tensor-core products per float32 product, float32's precision within a few
# units in the last place: plain TF32 would not match NumPy), as the matmul
# template's are.  With exact "ieee" products the same kernel runs on CUDA cores
# and is slower than the two unfused matmuls.  Measured on 2026-12-04
# (`triton.testing.do_bench`, one attention): the template 0.57 ms, the unfused
# ops 1.58 ms, torch.compile of the same program 1.22 ms; and the whole
# decoder's inference (`benchmarks/gpu_models.py`) 22.2 ms against 26.1 ms for
# torch.compile in the same run.

# %% [markdown]
# ## Attention's backward: the weights recomputed, never saved
#
# Trained, the same program would save the `[batch, heads, S, S]` softmax
# weights for its backward, which reads them: the pattern could not fire.  So
# for a training graph the Triton backend runs the pattern *before* the joint
# graph is built (a pre-grad pass, as Inductor's attention patterns are matched
# with their backward), and the `attention` node's own derivative rule gives
# FlashAttention's backward: each row's maximum `m` and sum `l` of the softmax
# (kept apart: `m + log(l)` in float32 would lose `log(l)` against a fill of
# -1e9), `delta = rowsum(g * out)`, and one kernel each for `dq`, `dkᵀ` and `dv`
# that recomputes the weights block by block, `p = exp(s - m) / l`.  The min-cut partitioner saves
# q, k, v, the output and the row statistics: no `S x S` value crosses from the
# forward to the backward.  torch.compile's twin is
# `aten._scaled_dot_product_flash_attention_backward`.

# %%
weights = rng.standard_normal(qa.shape, dtype=np.float32)
train = mc.compile(lambda q, k, v: (causal_attention(q, k, v, causal) * weights).sum(), backend="triton")
tq, tk, tv = (mc.Tensor(a, requires_grad=True) for a in (qa, ka, va))
train(tq, tk, tv).backward()
aot = compiled_graph(train)
print(aot.forward.schedule)
print(aot._backward.schedule)
saved = [n.name for n in aot.partition.backward.placeholders if n.name.startswith("saved")]
print("saved for the backward:", saved)
assert "template flash attention backward (q)" in aot._backward.schedule
eager_q = mc.Tensor(qa, requires_grad=True)
(causal_attention(eager_q, ka, va, causal) * weights).sum().backward()
assert np.allclose(tq.grad, eager_q.grad, rtol=1e-4, atol=1e-5)

# %% [markdown]
# Measured on the H200 on 2026-12-04 (`benchmarks/gpu_models.py`'s attention at
# the decoder's size, forward and backward of `(attention * w).sum()`, device ms
# per step): the templates 4.05 ms against 6.33 ms for the unfused ops and 3.46
# ms for torch.compile (2.35 ms for torch's own flash attention).  The whole
# decoder's training step went from 113.8 ms (unfused) to 105.4 ms, against
# 75.3 ms for torch.compile; the rest of the gap was the matmul template's exact
# "ieee" products on the CUDA cores.  With "tf32x3" products there too (the
# default now) the step takes 72.4 ms against 75.4 ms for torch.compile in the
# same run, and its gradients are as close to a float64 reference as CuPy's
# cuBLAS ones (closer, on that run).

# %% [markdown]
# ## What Triton cannot do exactly falls back to NumPy
#
# Integer `floor_divide` has NumPy semantics (floor, and 0 for a zero divisor)
# that a one-line Triton expression would not reproduce, so that node becomes
# an Extern — a call of NumPy itself from the wrapper — and the rest still
# fuses.  On CuPy arrays the same Extern is handed to CuPy.

# %%
a = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
f = mc.compile(lambda a: np.floor_divide(a, 4) * 2 + 1, backend="triton")
assert np.array_equal(f(a), np.floor_divide(a, 4) * 2 + 1)
cg = compiled_graph(f)
print(cg.schedule)
assert "fallback" in cg.schedule and len(cg.kernels) == 1

# %% [markdown]
# ## Gathers: an index read from memory
#
# `table[tokens]` (an embedding lookup), `np.take` and `np.take_along_axis` read
# the array at positions that are themselves read from memory.  In the loop IR
# such a position is an `Indirect` atom of the index expression; the Triton
# kernel loads the index, counts a negative one from the end and reads the table
# there, in the same kernel as what consumes the values (Inductor's indirect
# indexing).  An index out of range is NumPy's IndexError here, in the
# interpreter (`tl.device_assert`); compiled for the GPU the check is off and
# the index wraps around, which is what CuPy's own gathers do.

# %%
table = rng.standard_normal((1000, 16), dtype=np.float32)
tokens = np.array([[5, 999, -1], [0, 5, 42]])
pos = rng.standard_normal((3, 16), dtype=np.float32)
lookup = mc.compile(lambda table, tokens, pos: table[tokens] + pos, backend="triton")
assert np.array_equal(lookup(table, tokens, pos), table[tokens] + pos)
cg = compiled_graph(lookup)
print("@triton.jit\ndef triton_" + cg.kernel_source.split("@triton.jit\ndef triton_")[-1])
assert len(cg.kernels) == 1 and "extern" not in cg.schedule

# %% [markdown]
# ## A repeated layer is one kernel
#
# A model applies the same layer again and again, and each application
# generates the same kernel on other buffers.  Such a kernel is written once:
# the module says which kernel it repeats, and it is compiled, tuned and
# launched as that one (its code is compared with names replaced by
# positions).  On the GPU, before the first call, every kernel and
# configuration autotuning will try is compiled on a pool of worker processes,
# as Inductor's compile workers do.

# %%
def layer(x, w):
    return np.tanh(x @ w) + x


def three_layers(x, w1, w2, w3):
    return layer(layer(layer(x, w1), w2), w3)


ws = [rng.standard_normal((32, 32), dtype=np.float32) / 6 for _ in range(3)]
xs = rng.standard_normal((8, 32), dtype=np.float32)
deep = mc.compile(three_layers, backend="triton")
np.testing.assert_allclose(deep(xs, *ws), three_layers(xs, *ws), rtol=1e-5, atol=1e-6)
kernels = list(compiled_graph(deep).module.kernels.values())
for k in kernels:
    print(k.name, "->", k.same_as or "written")
assert [k.same_as is None for k in kernels] == [True, False, False]

# %% [markdown]
# ## On a GPU
#
# With CuPy arrays the same function runs on the device; `backend="auto"` picks
# Triton by itself for CuPy inputs.  Results stay CuPy arrays (no copy to the
# host), and the first call of each kernel times a few block sizes and warp
# counts with CUDA events, remembering the fastest on disk.  Without a GPU this
# cell says so and moves on.

# %%
try:
    import cupy as cp

    have_gpu = cp.cuda.runtime.getDeviceCount() > 0
except Exception:
    have_gpu = False

if have_gpu:
    xg = cp.asarray(rng.standard_normal((8192, 4096), dtype=np.float32))
    fg = mc.compile(gelu)  # auto -> triton for CuPy
    yg = fg(xg)
    assert isinstance(yg, cp.ndarray)
    cp.testing.assert_allclose(yg, gelu(xg), rtol=1e-5, atol=1e-5)
    for name, fn in (("CuPy eager", gelu), ("minicompile triton", fg)):
        for _ in range(3):
            fn(xg)
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        for _ in range(20):
            fn(xg)
        cp.cuda.Device().synchronize()
        print(f"{name:20} {(time.perf_counter() - start) / 20 * 1e3:.3f} ms")
    # After the first call a kernel is no longer launched through Triton's
    # JITFunction (which re-binds and re-specializes the arguments on every
    # call): a generated function reads the arrays' addresses, checks their
    # 16-byte alignment (what the kernel was compiled for) and calls the
    # compiled kernel's launcher with the grid and block sizes baked in.
    (launcher,) = compiled_graph(fg).launchers.values()
    print(launcher.fast.source)
else:
    print("no CUDA device: the kernels above ran in Triton's interpreter")

# %% [markdown]
# ## CUDA graphs: `mode="reduce-overhead"`
#
# A small model on a GPU is often *launch-bound*: each kernel runs for a few
# microseconds, and the host's Python takes longer than that to launch the next
# one, so the GPU idles between kernels.  `mc.compile(fn, mode="reduce-overhead")`
# does what torch.compile's mode of that name does: the second call of each input
# signature is *recorded* by CUDA stream capture into a CUDA graph, and every
# later call *replays* it — one launch from the host for all the kernels.  Arrays
# that were the same at the first two calls (weights) are read in place; other
# inputs are copied into the recording's buffers; outputs are copied out, so a
# result kept across calls is never overwritten by the next replay
# (`minicompile/inductor/codegen/triton/cudagraphs.py` says why).  CuPy refuses to capture cuBLAS,
# so this mode depends on the matmul template above: every float32/float16
# matmul is a Triton kernel.  A graph that still cannot be captured runs as
# before, with one warning.  On NumPy arrays the mode changes nothing.

# %%
if have_gpu:
    from minicompile.examples import decoder_block as D

    cfg = D.Config(vocab=8192, dim=1024, heads=16, layers=4, hidden=2816, seq=16)  # one short sequence
    params = {k: ({kk: cp.asarray(vv) for kk, vv in v.items()} if isinstance(v, dict) else cp.asarray(v))
              for k, v in D.init_params(cfg).items()}
    args = (cp.asarray(D.synthetic_tokens(cfg, 1)[0]),) + tuple(
        cp.asarray(t) for t in (*D.rotary_tables(cfg), D.causal_mask(cfg))) + (cfg.heads, cfg.layers)
    engines = {"CuPy eager": D.forward, "triton": mc.compile(D.forward, backend="triton"),
               "triton, reduce-overhead": mc.compile(D.forward, backend="triton", mode="reduce-overhead")}
    for name, fn in engines.items():
        for _ in range(3):  # the first call compiles; with the mode, the second records
            fn(params, *args)
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        for _ in range(20):
            fn(params, *args)
        cp.cuda.Device().synchronize()
        print(f"{name:24} {(time.perf_counter() - start) / 20 * 1e3:.3f} ms per call")
else:
    print("no CUDA device: CUDA graphs need one (on NumPy arrays the mode changes nothing)")

# %% [markdown]
# Where the time goes shows in a profile.  On CuPy arrays `mc.profile()` records a
# CUDA event before and after each launch it times (a kernel, a replay), which puts
# each launch on a GPU track at the time the device ran it (never before the host
# had made it); the gaps on that track are the device waiting for the host.  The table's last line sums them up.  (CuPy's
# operators in eager code are launches Python cannot see, so eager code is left out.)

# %%
if have_gpu:
    for name in ("triton", "triton, reduce-overhead"):
        with mc.profile() as prof:
            for _ in range(20):
                engines[name](params, *args)
        print(f"{name:24} {prof.table().splitlines()[-1]}")

