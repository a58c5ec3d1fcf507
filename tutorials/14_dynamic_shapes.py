# %% [markdown]
# # 14 — Dynamic shapes: one compile for every batch size
#
# A compiled function is specialized to what it saw: tutorial 03 showed that a
# new array shape fails a guard and recompiles.  Serving code calls the same
# model with a different batch size on every request, and recompiling for each
# is slow (and stops at the recompile limit).  torch.compile answers with
# *automatic dynamic shapes*: after a size changes once, the next capture
# makes that size a symbol (`s0`), and the compiled code works for any value.
#
# | minicompile | torch.compile |
# | --- | --- |
# | `minicompile/ir/symbolic.py`: `Sym`, `ShapeEnv` | `SymInt`, `torch.fx.experimental.symbolic_shapes.ShapeEnv` |
# | `mc.compile(dynamic=None)` (default): static, then symbolic after a size change | `automatic_dynamic_shapes` |
# | `mc.compile(dynamic=True)` | `torch.compile(dynamic=True)` / `mark_dynamic` on every axis |
# | `mc.compile(dynamic=False)` | `torch.compile(dynamic=False)` |
# | sizes 0 and 1 stay specialized | the 0/1 specialization |
# | guards `2 <= s0`, `s0 == s1`, `(s0) % 2 == 0` | ShapeEnv guards |
# | kernels with `int64_t s0` arguments | Inductor kernels with `ks0` size arguments |

# %%
import numpy as np

import minicompile as mc
from minicompile.inductor.compiled import CompiledGraph
from minicompile.ir.symbolic import ShapeEnv

rng = np.random.default_rng(0)


def layer(x, w, b):
    h = np.maximum(x @ w + b, 0.0)           # a dense layer with ReLU
    h = h - h.mean(axis=1, keepdims=True)    # centre each row
    return h.reshape(x.shape[0], -1) * 2.0


w = rng.standard_normal((16, 32)).astype(np.float32)
b = rng.standard_normal(32).astype(np.float32)

# %% [markdown]
# ## Symbols, hints and guards
#
# A `Sym` is an int-like size that stays an expression under arithmetic.  Each
# symbol remembers its *hint* — the value in the example call.  A question
# about sizes that the symbols alone cannot answer is answered by the hint and
# recorded as a guard, exactly what ShapeEnv does.  Symbols are never 0 or 1,
# so `s0 != 1` needs no guard at all.

# %%
env = ShapeEnv()
s0 = env.create_symbol(8, "L['x'].shape[0]")
s1 = env.create_symbol(8, "L['y'].shape[0]")
print(s0 * 16 + 4, "|", (s0 * 16) // 4, "|", s0 != 1)
assert str(s0 * 16 + 4) == "16*s0 + 4" and str((s0 * 16) // 4) == "4*s0"
assert s0 == s1                       # equal in the example: a guard now
assert [text for _, text, _, _ in env.relation_guards()] == ["s0 == s1"]

# %% [markdown]
# ## Automatic dynamic shapes
#
# The first call compiles a static graph.  A second call with another batch
# size misses *only* because a size changed, so the next capture makes that
# axis symbolic.  Every later batch size reuses that entry.

# %%
compiled = mc.compile(layer, backend="cpp")
for n in [4, 7, 32, 5, 100, 3, 64, 9]:
    x = rng.standard_normal((n, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled(x, w, b), layer(x, w, b), rtol=1e-4, atol=1e-4)
print(compiled)
assert len(compiled.cache) == 2       # 8 batch sizes, 2 compiles

static, dynamic = compiled.cache
print(static.capture.graph.python_code("static"))
print(dynamic.capture.graph.python_code("dynamic"))
assert 'x: "f32[s0, 16]"' in dynamic.capture.graph.python_code()

# %% [markdown]
# ## The guards are relations
#
# The dynamic entry does not check `x.shape == (7, 16)` any more: it checks the
# rank, each static size, `2 <= s0` for the symbol, and C-contiguity (the
# compiled code derives every stride from the sizes).

# %%
print(dynamic.capture.guards)
guards = str(dynamic.capture.guards)
assert "2 <= s0  # s0 = L['x'].shape[0]" in guards and "L['x'].shape[1] == 16" in guards

# %% [markdown]
# ## Kernels take the sizes as arguments
#
# One C++ compile serves every size: each kernel takes `const int64_t s0`, the
# loops run to `s0`, the mean divides by the runtime count, and whether the
# loop is worth threads is an OpenMP `if(...)` decided at run time.  The
# wrapper reads `s0` off the input and allocates outputs with shapes computed
# from it.

# %%
kernels = dynamic.compiled
assert isinstance(kernels, CompiledGraph)
print(kernels.wrapper_source)
assert "s0 = x.shape[0]" in kernels.wrapper_source
assert "const int64_t s0" in kernels.kernel_source
print("\n".join(line for line in kernels.kernel_source.splitlines() if "s0" in line)[:1500])

# %% [markdown]
# ## Int arguments that are sizes
#
# A Python int argument is guarded by value (`L['n'] == 3`).  As in
# torch.compile, when a call misses only because that int changed, the next
# capture makes it a size symbol too (`2 <= s0  # s0 = L['n']`; with
# `dynamic=True`, from the first call).  The graph
# gets it as a *size input* `n: i8[s0]` — a zero-stride array of shape `(n,)`
# whose data is never read — so the wrapper binds `s0` from a shape, as for an
# array.  A use other than size arithmetic (`range(n)`, `x * n`) pins it.

# %%
def first_rows(x, n):
    return np.ones((n, 4), np.float32) * x + 1.0


by_n = mc.compile(first_rows, backend="cpp")
x4 = rng.standard_normal(4).astype(np.float32)
for n in range(2, 12):
    np.testing.assert_allclose(by_n(x4, n), first_rows(x4, n), rtol=1e-6)
print(by_n.cache[1].capture.guards)
assert len(by_n.cache) == 2           # 10 values of n, 2 compiles
assert "2 <= s0  # s0 = L['n']" in str(by_n.cache[1].capture.guards)
assert "s0 = n.shape[0]" in by_n.cache[1].compiled.wrapper_source

scaled = mc.compile(lambda x, n: x * n, backend="eager")
for n in (2, 3, 4):
    scaled(x4, n)
assert len(scaled.cache) == 3         # n is a value here: one entry per n

# %% [markdown]
# ## `dynamic=True`, `dynamic=False`, and what stays specialized
#
# `dynamic=True` makes every axis of size >= 2 symbolic from the first call;
# `dynamic=False` never does.  Sizes 0 and 1 always stay specialized
# (broadcasting treats a 1 differently), and a size the code needs as a plain
# number — an unrolled `for i in range(n)` — is guarded equal to its value.

# %%
def rows_summed_by_a_loop(x):
    total = x[0]
    for i in range(1, x.shape[0]):          # unrolled: one add per row
        total = total + x[i]
    return total


looped = mc.compile(rows_summed_by_a_loop, backend="eager", dynamic=True)
for n in (3, 4, 3):
    x = rng.standard_normal((n, 2))
    np.testing.assert_allclose(looped(x), rows_summed_by_a_loop(x))
print(looped.cache[0].capture.guards)
assert len(looped.cache) == 2 and "s0 == 3" in str(looped.cache[0].capture.guards)

never = mc.compile(layer, backend="eager", dynamic=False)
for n in (4, 5, 6):
    never(rng.standard_normal((n, 16)).astype(np.float32), w, b)
assert len(never.cache) == 3

# %% [markdown]
# ## When the loops cannot say it: one compile per shape, never a wrong answer
#
# Sizes stay polynomials in the symbols; a strided slice `x[::2]` has length
# `(s0 + 1)//2`, which the capture keeps exact by guarding the parity of the
# example, but which the C++ index arithmetic does not express.  The compiled
# callable then specializes per shape instead, and says so in
# `MINICOMPILE_LOGS=recompiles`.

# %%
from minicompile.per_shape import PerShapeCompiled

every_other = mc.compile(lambda x: np.tanh(x[::2]) * 2, backend="cpp", dynamic=True)
for n in (4, 6, 4):
    x = rng.standard_normal((n, 3)).astype(np.float32)
    np.testing.assert_allclose(every_other(x), np.tanh(x[::2]) * 2, rtol=1e-5)
per_shape = every_other.cache[0].compiled
print(every_other.cache[0].capture.guards)
print(per_shape)
assert isinstance(per_shape, PerShapeCompiled) and len(per_shape.compiled) == 2

# %% [markdown]
# Whether a backend is handed the symbolic graph at all is its own statement,
# read once when the backend is looked up (`minicompile.per_shape.Backend`): the
# C++ and Triton backends take symbolic sizes, the Spyre backend plans its
# programs for concrete sizes and is compiled once per shape.  A custom backend
# is handed the symbolic graph first (and compiled per shape if that raises),
# unless it sets `symbolic_sizes = False`.

# %%
print(mc.api.BACKENDS["cpp"], mc.api.BACKENDS["spyre"])
seen = []


def plans_for_sizes(graph, example_inputs):
    seen.append([p.meta.shape for p in graph.placeholders])
    return graph


plans_for_sizes.symbolic_sizes = False
planned = mc.compile(lambda x: np.tanh(x) * 2, backend=plans_for_sizes, dynamic=True)
for n in (4, 6, 4):
    planned(rng.standard_normal((n, 3)).astype(np.float32))
print(seen)
assert seen == [[(4, 3)], [(6, 3)]]  # concrete sizes only, one compile each
