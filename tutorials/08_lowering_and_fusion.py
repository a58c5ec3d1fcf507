# %% [markdown]
# # 08 — Lowering to loop IR, and the fusion decisions of the scheduler
#
# The inductor does not compile graph nodes one by one.  It first *lowers*
# each node to a loop-level description — what one output element is, as an
# expression over loop variables (`minicompile/inductor/lowering.py`, like
# Inductor's `lowering.py` producing `ir.Pointwise`/`ir.Reduction`).  Then the
# *scheduler* (`scheduler.py`, like Inductor's `scheduler.py`) decides which
# of those loops run together.  Fusing is what saves memory traffic: a value
# that stays in a register is never written out and read back.

# %%
import numpy as np

from minicompile import ir
from minicompile.inductor import compile_graph, lowering, scheduler
from minicompile.ir import TensorMeta

F32 = np.dtype(np.float32)
ROWS, COLS = 512, 256

# %% [markdown]
# ## Softmax as a graph

# %%
g = ir.Graph()
x = g.placeholder("x", TensorMeta((ROWS, COLS), F32))
m = g.call("max", x, axis=1, keepdims=True)
e = g.call("exp", g.call("subtract", x, m))
out = g.call("divide", e, g.call("sum", e, axis=1, keepdims=True))
g.output([out])
print(g)

# %% [markdown]
# ## Lowering: one loop-IR node per graph node
#
# `x0, x1` are the output loop variables, `r0` the reduction loop.  Views
# (transpose, reshape, broadcasting) never copy: they only change the index
# expression of a `Load` — `max[x0, 0]` is the broadcast of the row maximum.

# %%
for node in g.calls:
    print(lowering.lower(node))
t = ir.Graph()
a = t.placeholder("a", TensorMeta((4, 6), F32))
view = lowering.lower(t.call("reshape", t.call("transpose", a, (1, 0)), (24,)))
print("a view is index arithmetic:", view)
assert view.is_view

# %% [markdown]
# ## Scheduling: one kernel for all of softmax
#
# Eager NumPy makes five passes over memory.  The scheduler puts the two
# reductions and the division into one *row kernel*: per row, pass 1 finds the
# max, pass 2 sums `exp(x - max)`, pass 3 writes `exp(x - max) / sum`.  The row
# (1 KiB here) stays in cache between passes; `exp` is recomputed instead of
# stored, because storing it would cost a write and a read of the whole array.

# %%
sched = scheduler.schedule(g, [np.zeros((ROWS, COLS), F32)])
print(sched)
(kernel,) = sched.kernels
assert [len(stage) for stage in kernel.stages] == [1, 1]
assert [s.buffer for s in kernel.row_pointwise] == ["divide"]

# %% [markdown]
# ## Bytes moved: eager vs fused
#
# Eager: each op reads its inputs and writes its result.  Fused: the kernel
# reads `x` once from memory and writes the result once.

# %%
n = ROWS * COLS * 4
eager_bytes = (n + ROWS * 4) + (2 * n) + (2 * n) + (n + ROWS * 4) + (2 * n)  # max, sub, exp, sum, div
fused_bytes = 2 * n
print(f"eager NumPy: {eager_bytes / 2**20:.1f} MiB, fused: {fused_bytes / 2**20:.1f} MiB")
assert eager_bytes > 3 * fused_bytes

compiled = compile_graph(g, [np.zeros((ROWS, COLS), F32)])
xv = np.random.default_rng(0).standard_normal((ROWS, COLS), dtype=np.float32)
np.testing.assert_allclose(compiled(xv)[0], np.exp(xv - xv.max(1, keepdims=True)) /
                           np.exp(xv - xv.max(1, keepdims=True)).sum(1, keepdims=True), rtol=1e-5)
assert len(compiled.kernels) == 1
print("kernels:", compiled.kernels, " peak intermediate bytes:", compiled.peak_intermediate_bytes)

# %% [markdown]
# ## When fusion stops, the log says why
#
# A consumer that reads a value at *another* element (here through a
# transpose) cannot run in the producer's loop: the value is not computed yet
# when it is needed.  `MINICOMPILE_LOGS=schedule` prints these decisions.

# %%
h = ir.Graph()
y = h.placeholder("y", TensorMeta((64, 64), F32))
s = h.call("sum", h.call("exp", y), axis=1, keepdims=True)
z = h.call("multiply", y, s)
h.output([h.call("sum", h.call("transpose", z, (1, 0)), axis=1)])
sched2 = scheduler.schedule(h, [np.zeros((64, 64), F32)])
print(sched2)
assert len(sched2.kernels) == 2 and "new kernel:" in str(sched2)

# %% [markdown]
# ## Siblings share a loop (horizontal fusion)
#
# An Adam step writes three arrays of one shape from the same inputs: one loop
# computes all three, reading each input once.

# %%
k = ir.Graph()
p, grad, mom = (k.placeholder(name, TensorMeta((1000,), F32)) for name in ("p", "grad", "mom"))
mom2 = k.call("add", k.call("multiply", mom, 0.9), k.call("multiply", grad, 0.1))
k.output([k.call("subtract", p, k.call("multiply", mom2, 0.01)), mom2])
adam_like = compile_graph(k, [np.zeros(1000, F32)] * 3)
print(adam_like.schedule)
assert len(adam_like.kernels) == 1
