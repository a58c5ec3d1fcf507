# %% [markdown]
# # 05 — Graph passes: constant folding, CSE, DCE and a table of rewrite rules
#
# Before the inductor lowers a graph to loops it cleans it up with a few
# `Graph -> Graph` passes (`minicompile/ir/passes.py`).  Each takes a graph and
# returns a new one; none changes what the graph computes.  torch.compile has
# the same stage: FX passes (`torch.fx.passes`, `eliminate_dead_code`,
# Inductor's `joint_graph` constant folding) and Inductor's pattern matcher,
# which rewrites subgraphs by a registry of patterns.  Ours is a plain table.

# %%
import numpy as np

from minicompile import ir
from minicompile.inductor import decompositions
from minicompile.ir import TensorMeta, passes

F32 = np.dtype(np.float32)


def ops(graph):
    return [n.op.name for n in graph.calls]


# %% [markdown]
# ## A graph with something for every pass
#
# `np.exp(np.float32(2))` has only constant inputs (constant folding), `x * y`
# appears twice (CSE), `np.tanh(x)` is never used (DCE), and `* 1`, `/ 1` do
# nothing (algebraic simplification).

# %%
g = ir.Graph()
x = g.placeholder("x", TensorMeta((4,), F32))
y = g.placeholder("y", TensorMeta((4,), F32))
scale = g.call("exp", np.float32(2.0))
a = g.call("multiply", x, y)
b = g.call("multiply", x, y)
g.call("tanh", x)
c = g.call("divide", g.call("multiply", g.call("add", a, b), 1.0), 1.0)
g.output([g.call("multiply", c, scale)])
print(g)

# %% [markdown]
# ## One pass at a time

# %%
folded = passes.constant_folding(g)
print("constant folding:", ops(folded))
assert "exp" not in ops(folded)            # evaluated once, at compile time

merged = passes.common_subexpression_elimination(folded)
print("CSE:             ", ops(merged))
assert ops(merged).count("multiply") == ops(folded).count("multiply") - 1

simplified = passes.algebraic_simplification(merged)
print("simplification:  ", ops(simplified))

clean = passes.dead_code_elimination(simplified)
print("DCE:             ", ops(clean))
assert ops(clean) == ["multiply", "add", "multiply"]
print(clean)

inputs = [np.arange(4, dtype=F32), np.full(4, 0.5, F32)]
np.testing.assert_allclose(clean(*inputs)[0], g(*inputs)[0], rtol=1e-6)
assert passes.optimize(g).python_code() == clean.python_code()  # all of them, to a fixed point

# %% [markdown]
# ## The rewrite table, and the rules that are *not* in it
#
# Each rule is one line with its math.  Only rules that hold for every IEEE
# value are allowed: `x * 0 -> 0` is wrong (`inf * 0` and `nan * 0` are NaN),
# and `x + 0 -> x` is wrong for floats (`-0.0 + 0.0` is `+0.0`), so the float
# rule is `x + (-0.0) -> x`.

# %%
for rule_math, op_name, _, _ in passes.RULES:
    print(f"  {op_name:<10} {rule_math}")
g2 = ir.Graph()
x2 = g2.placeholder("x", TensorMeta((3,), F32))
g2.output([g2.call("add", g2.call("multiply", x2, 0.0), 0.0)])
kept = passes.optimize(g2)
assert ops(kept) == ["multiply", "add"]
special = np.array([np.inf, -0.0, np.nan], F32)
with np.errstate(invalid="ignore"):  # inf * 0 is NaN, as it must be
    result = kept(special)[0]
print("x*0+0 on [inf, -0.0, nan]:", result)
assert np.isnan(result[0]) and not np.signbit(result[1])

# %% [markdown]
# ## Decompositions: composite ops into primitives
#
# The inductor also rewrites composite ops into primitives it can fuse, e.g.
# `mean -> sum / n` (Inductor's `decompositions.py` does this for aten ops).
# `MINICOMPILE_LOGS=decomp` prints the graph before and after.

# %%
g3 = ir.Graph()
x3 = g3.placeholder("x", TensorMeta((8, 16), F32))
g3.output([g3.call("mean", x3, axis=1)])
d = decompositions.decompose(g3)
print(d)
assert ops(d) == ["sum", "divide"]
x3v = np.random.default_rng(0).standard_normal((8, 16), dtype=np.float32)
np.testing.assert_allclose(d(x3v)[0], x3v.mean(axis=1), rtol=1e-6)
print("composite ops with a decomposition:", ", ".join(decompositions.DECOMPOSITIONS))
