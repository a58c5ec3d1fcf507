# %% [markdown]
# # 12 — End to end: profile MobileNetV2, compile it, profile again
#
# The earlier tutorials took the pipeline apart one stage at a time.  This one
# runs it on a whole model the way a user would: measure where eager NumPy
# spends its time, compile, check that the model was captured whole (one
# graph, zero breaks), and measure again.  torch.compile's twin of this
# workflow is `torch.profiler.profile()` around the eager model, then
# `torch.compile(model)`, then `torch._dynamo.explain` and the profiler again.
#
# The model is `minicompile/examples/mobilenet_v2.py`: MobileNetV2 (width 1.0,
# 3.5 M parameters, 52 convolutions) in plain NumPy, NHWC.  To keep this
# tutorial quick it runs at **96×96** instead of the usual 224×224; the network
# is the same, only the activations are smaller (`make bench` measures 224×224).

# %%
import time

import numpy as np

import minicompile as mc
from minicompile.benchmarks.timing import format_seconds, run_times
from minicompile.examples import mobilenet_v2 as mnv2

SIZE = 96
params = mnv2.init_params()
images = mnv2.example_images(batch=1, size=SIZE)
expected = mnv2.forward(params, images)
print("logits:", expected.shape, expected.dtype)

# %% [markdown]
# ## Where eager NumPy spends its time
#
# `mc.profile()` records every NumPy function, ufunc and array method the
# model calls, and the Python time between them.  One caveat for reading the
# table: operators (`x @ w`, `windows * w`, `h + b`) run NumPy's C code
# straight from the interpreter, without a Python-level call the profiler can
# see, so their time lands in "Python (between calls)" together with the
# interpreter's own overhead.  In this model that is where the matmuls (1×1
# convolutions) and the depthwise products are.

# %%
mnv2.forward(params, images)  # warm up (first-touch page faults, BLAS threads)
with mc.profile() as eager_prof:
    mnv2.forward(params, images)
print(eager_prof.table(row_limit=10))

by_category = {}
for row in eager_prof.key_averages():
    by_category[row.cat] = by_category.get(row.cat, 0) + row.self_ns
eager_ms = eager_prof.total_ns / 1e6
print({cat: f"{ns / 1e6:.1f} ms" for cat, ns in by_category.items()}, f"of {eager_ms:.1f} ms")
calls = {r.name: r.count for r in eager_prof.key_averages()}
# 17 depthwise convolutions reduce their windows with ndarray.sum; 35 ReLU6 are maximum + minimum
assert calls["ndarray.sum"] == 17 and calls["np.maximum"] == calls["np.minimum"] == 35
assert set(by_category) == {"numpy", "python"}

# %% [markdown]
# Every one of those calls writes a full temporary activation and reads it
# back in the next one: the bias add, `np.maximum`, `np.minimum`, the padding
# of the next depthwise convolution.  That traffic is what fusion removes.
#
# ## Captured whole?
#
# `mc.explain` runs the capture alone.  A graph break would split the model
# into several graphs with Python in between (tutorial 04); MobileNetV2 has
# none: the loop over blocks is unrolled, the dict lookups and the
# `if "expand_w" in block` tests are resolved at trace time and guarded.

# %%
explanation = mc.explain(mnv2.forward)(params, images)
print(f"graphs: {explanation.graph_count}, breaks: {explanation.graph_break_count}, "
      f"ops: {explanation.op_count}, guards: {len(explanation.guards)}")
assert explanation.graph_count == 1 and explanation.graph_break_count == 0

# %% [markdown]
# ## Compile
#
# The first call captures, lowers, fuses, generates C++ and compiles it
# (`g++`, cached on disk by content hash); later calls only check the guards
# and run the generated code.

# %%
compiled = mc.compile(mnv2.forward, backend="cpp")
start = time.perf_counter()
result = compiled(params, images)
first_call_s = time.perf_counter() - start
kernels = compiled.cache[0].compiled
externs = sum(line.startswith("extern ") for line in kernels.schedule.splitlines())  # calls through NumPy
print(f"first call (capture + compile): {first_call_s:.1f} s; "
      f"{len(kernels.kernels)} kernels, {len(kernels.extern_kernels)} small float32 matmuls as generated C++ "
      f"GEMMs in the same thread pool, {externs} calls through NumPy (the other matmuls, the stem's einsum)")
np.testing.assert_allclose(result, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
assert result.dtype == expected.dtype and result.shape == expected.shape

# %% [markdown]
# ## Where the time goes now
#
# The profiler now sees one compiled call, the guard check, the wrapper, and
# inside it every generated kernel and every extern (NumPy/BLAS) call.  Each
# kernel is a whole chain of the eager calls above fused into one loop nest:
# a name like `g0_kernel_3_reshape_add_maximum_minimum_pad` (graph 0's kernel
# 3) is a bias add, a ReLU6 and the next convolution's padding in one pass.

# %%
compiled(params, images)  # warm
with mc.profile() as compiled_prof:
    compiled(params, images)
print(compiled_prof.table(row_limit=10))
rows = {(r.name, r.cat): r for r in compiled_prof.key_averages()}
kernel_rows = [r for r in compiled_prof.key_averages() if r.cat == "kernel"]
# every kernel ran once: the loop kernels and the matmuls generated as C++
assert sum(r.count for r in kernel_rows) == len(kernels.kernels) + len(kernels.extern_kernels)
assert any(cat == "guard" for _, cat in rows)

# %% [markdown]
# One profiled run is one sample; on a busy machine a single run can be far
# off.  The fastest of a few runs shows what each version can do (`make
# bench` reports medians at 224×224, against PyTorch too).

# %%
_, eager_s = run_times(mnv2.forward, params, images, warmup=1, min_runs=5, budget_s=0.5)
_, compiled_s = run_times(compiled, params, images, warmup=1, min_runs=5, budget_s=0.5)
print(f"eager {format_seconds(eager_s)} -> compiled {format_seconds(compiled_s)} "
      f"({eager_s / compiled_s:.1f}x, fastest of at least 5 runs each)")

# %% [markdown]
# ## Batch norm, kept in the source
#
# The weights above have batch norm already folded in, as deployed models do.
# A model fresh from training keeps it: each convolution is followed by
# `(h - mean) / np.sqrt(var + eps) * gamma + beta`.  Compiled as is, every
# batch norm costs extra kernels on every call (the `sqrt` of its statistics,
# computed again each time) and four more operations per activation.  torch.compile folds it when asked to
# *freeze* the weights (`options={"freezing": True}`); so does minicompile:
# read-only weight arrays become constants, `ir/fold_batchnorm.py` moves each
# batch norm into the convolution's weight and bias, and what only weights
# determine is computed once.

# %%
kept = mnv2.freeze(mnv2.init_params(batch_norm=True))  # freeze(): the weights become read-only
kept_expected = mnv2.forward(kept, images)

unfrozen = mc.compile(mnv2.forward, backend="cpp")
unfrozen(kept, images)
frozen = mc.compile(mnv2.forward, backend="cpp", options={"freezing": True})
np.testing.assert_allclose(frozen(kept, images), kept_expected, rtol=1e-3, atol=1e-3 * np.abs(kept_expected).max())

frozen_entry = frozen.cache[0].compiled
n_unfrozen = len(unfrozen.cache[0].compiled.kernels)
n_frozen = len(frozen_entry.compiled.kernels)
print(f"batch norm kept: {n_unfrozen} kernels; with freezing: {n_frozen}; folded by hand: {len(kernels.kernels)}")
assert n_frozen == len(kernels.kernels) < n_unfrozen
prologue_ops = [n.op.name for n in frozen_entry.frozen.prologue.calls]
assert prologue_ops.count("sqrt") == 52  # one per convolution, computed once at compile time
assert "sqrt" not in [n.op.name for n in frozen_entry.frozen.runtime.calls]

# %% [markdown]
# The pass is an ordinary `Graph -> Graph` function.  Here it is on the stem
# convolution alone, applied by a three-line backend (tutorial 13 writes
# backends) that prints the graph before and after and returns the folded
# graph, which runs through NumPy.

# %%
from minicompile.ir.fold_batchnorm import fold_batchnorm


def stem(images, w, bn):
    return mnv2.batch_norm(mnv2.conv3x3(images, w, 2), bn)


seen = {}


def folding_backend(graph, example_inputs):
    weights = {p.name for p in graph.placeholders if p.name != "images"}
    seen["before"], seen["after"] = graph, fold_batchnorm(graph, weights)
    print(f"before:\n{graph}\n\nafter:\n{seen['after']}")
    return seen["after"]


stem_out = mc.compile(stem, backend=folding_backend)(images, kept["stem_w"], kept["stem_bn"])
np.testing.assert_allclose(stem_out, stem(images, kept["stem_w"], kept["stem_bn"]), rtol=1e-4, atol=1e-4)
before_ops = [n.op.name for n in seen["before"].calls]
after_ops = [n.op.name for n in seen["after"].calls]
# on the activations (after the einsum): the batch norm before, one bias add after
assert {"subtract", "divide", "multiply"} <= set(before_ops[before_ops.index("einsum"):])
assert after_ops[after_ops.index("einsum"):] == ["einsum", "add"]
