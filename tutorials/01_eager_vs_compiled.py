# %% [markdown]
# # 01 — Eager NumPy vs compiled: why fusing a chain of small ops pays
#
# NumPy runs *eagerly*: every operator is a separate call into C that makes
# one full pass over memory and writes a fresh temporary array.  A chain like
# `np.tanh(x * 2 + 1).sum(axis=1)` is four passes and three temporaries, plus
# the Python interpreter's dispatch cost for each call.  torch.compile exists to
# remove exactly that: it captures the chain as a graph (TorchDynamo), fuses it
# (TorchInductor) and runs one generated loop.  minicompile does the same for
# NumPy; this tutorial measures the cost, then removes it, one stage at a time.

# %%
import time

import numpy as np

import minicompile as mc
from minicompile.benchmarks.timing import format_seconds, median_seconds


def f(x):
    return np.tanh(x * 2 + 1).sum(axis=1)


x = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)

# %% [markdown]
# ## The cost of eager execution
#
# Each of `x * 2`, `+ 1` and `np.tanh` allocates and writes an array as large
# as `x`; the sum reads the last one back.  Count the bytes each step moves.

# %%
steps = [("x * 2", lambda a: a * 2), ("+ 1", lambda a: a + 1), ("np.tanh", np.tanh)]
value, moved = x, 0
for name, op in steps:
    value = op(value)
    moved += value.nbytes * 2  # read the input, write the temporary
    print(f"{name:8} -> temporary of {value.nbytes / 2**20:.0f} MiB")
moved += value.nbytes  # the sum reads the last temporary once more
print(f"eager traffic: {moved / 2**20:.0f} MiB for a {x.nbytes / 2**20:.0f} MiB input")
assert moved == 7 * x.nbytes

# %% [markdown]
# For tiny arrays the memory traffic vanishes and what is left is pure
# overhead: four trips from Python into NumPy's C dispatch.

# %%
tiny = np.ones((2, 4), np.float32)
t_tiny = median_seconds(f, tiny, budget_s=0.2)
t_big = median_seconds(f, x, budget_s=0.3)
print(f"f on 8 elements:  {format_seconds(t_tiny)}  ({format_seconds(t_tiny / 4)} per NumPy call)")
print(f"f on 1M elements: {format_seconds(t_big)}")

# %% [markdown]
# ## One decorator
#
# `mc.compile` wraps the function.  Nothing happens until the first call: then
# minicompile reads the function's bytecode, runs it *symbolically* to build a
# graph, guards the assumptions it made (shape, dtype, strides of `x`), and
# compiles the graph with the `cpp` backend.

# %%
compiled = mc.compile(f)
start = time.perf_counter()
result = compiled(x)
print(f"first call (capture + compile): {format_seconds(time.perf_counter() - start)}")
np.testing.assert_allclose(result, f(x), rtol=1e-5, atol=1e-4)
assert result.dtype == f(x).dtype and result.shape == (1024,)

# %% [markdown]
# ## What was captured
#
# `mc.explain` shows the graph (the twin of the FX graph TorchDynamo hands to
# a backend) and the guards a later call must pass to reuse it.

# %%
explanation = mc.explain(f)(x)
print(explanation)
assert explanation.graph_count == 1 and explanation.graph_break_count == 0
assert explanation.ops_per_graph[0] == ["multiply", "add", "tanh", "sum"]

# %% [markdown]
# ## One fused kernel
#
# The inductor lowered the four ops to loops and fused them: the pointwise
# chain is computed inside the reduction's loop, so no temporary is written.

# %%
kernel = compiled.cache[0].compiled
print(kernel.kernel_source)
assert len(kernel.kernels) == 1, kernel.kernels

# %% [markdown]
# ## The speedup
#
# Same input, same process, median of repeated runs.  One pass instead of four,
# no temporaries, one call instead of four.  (Numbers depend on the machine;
# `make bench` measures more workloads.)

# %%
t_eager = median_seconds(f, x, budget_s=0.3)
t_compiled = median_seconds(compiled, x, budget_s=0.3)
print(f"eager NumPy {format_seconds(t_eager)}, compiled {format_seconds(t_compiled)}, "
      f"speedup {t_eager / t_compiled:.1f}x")
np.testing.assert_allclose(compiled(x), f(x), rtol=1e-5, atol=1e-4)
