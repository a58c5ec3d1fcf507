# %% [markdown]
# # 13 — Write your own backend, and your own pass
#
# A backend is any callable `(graph, example_inputs) -> callable`: minicompile
# captures the function into an `ir.Graph`, calls the backend once per cache
# entry with the graph and the arrays of the call that triggered the compile,
# and from then on calls what the backend returned with the graph's inputs,
# expecting the graph's outputs as a tuple.  This is torch.compile's contract
# too (`torch.compile(fn, backend=my_backend)` with
# `my_backend(gm: torch.fx.GraphModule, example_inputs) -> callable`).
#
# This tutorial writes three backends — one that only looks, one that
# generates Python source, one that adds a graph pass in front of the C++
# inductor — and a pass in the style of `minicompile/ir/passes.py`.

# %%
import numpy as np

import minicompile as mc
from minicompile import ir
from minicompile.inductor import compile_graph
from minicompile.ir import passes


def gelu(x, w):
    h = x @ w
    return h / 2 * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 16)).astype(np.float32)
w = rng.standard_normal((16, 32)).astype(np.float32)
expected = gelu(x, w)

# %% [markdown]
# ## 1. A backend that looks
#
# A `Graph` is itself callable (it runs its nodes through NumPy's reference
# implementations), so the simplest backend returns the graph.  This one also
# records what it was given.

# %%
calls = []


def inspecting_backend(graph: ir.Graph, example_inputs: list):
    calls.append((graph, [a.shape for a in example_inputs]))
    print(graph)
    return graph


fn = mc.compile(gelu, backend=inspecting_backend)
np.testing.assert_array_equal(fn(x, w), expected)
fn(x, w)  # a cache hit: the backend is not called again
assert len(calls) == 1 and calls[0][1] == [(8, 16), (16, 32)]
graph = calls[0][0]
print([n.op.name for n in graph.calls])

# %% [markdown]
# A call with new shapes fails a guard and compiles again: the backend is
# called a second time, with the new example inputs.

# %%
fn(x[:4], w)
assert len(calls) == 2 and calls[1][1] == [(4, 16), (16, 32)]

# %% [markdown]
# ## 2. A backend that generates code
#
# `graph.python_code()` prints the graph as a Python function over `np.*`
# calls.  For graphs whose ops are all plain NumPy functions, executing that
# source is already a working code generator — a toy version of what the C++
# and Triton backends do with loops.

# %%
def python_source_backend(graph: ir.Graph, example_inputs: list):
    missing = [n.op.name for n in graph.calls if not hasattr(np, n.op.name)]
    if missing:  # ops without an np.<name> function: run the graph itself
        return graph
    namespace = {"np": np}
    exec(graph.python_code("generated"), namespace)
    return namespace["generated"]


fn = mc.compile(gelu, backend=python_source_backend)
np.testing.assert_array_equal(fn(x, w), expected)
print(mc.explain(gelu)(x, w).graphs[0].python_code("generated"))

# %% [markdown]
# ## 3. A pass of your own
#
# Division is several times slower than multiplication on most CPUs.
# Dividing by a power of two is *exactly* multiplying by its reciprocal
# (both round the same real number, `x · 2⁻ᵏ`, to the nearest float), so
# `x / 2 -> x * 0.5` changes no bit of any result — the kind of rule the pass
# table in `ir/passes.py` holds.  (`x / 3 -> x * (1/3)` would not be exact.)
#
# `passes.rewrite(graph, rule)` walks the graph once and offers each call node
# to `rule(new_graph, node, outputs)`; the rule returns a replacement node, or
# `None` to keep the node.  Dead nodes are dropped afterwards.

# %%
def power_of_two(value) -> bool:
    if isinstance(value, ir.Node) or isinstance(value, (bool, np.bool_)) or not np.isscalar(value):
        return False
    mantissa, _ = np.frexp(float(value))
    return value != 0 and abs(mantissa) == 0.5


def divide_by_power_of_two(g: ir.Graph, node: ir.Node, outputs):
    """x / 2**k -> x * 2**-k (float results only: exact in IEEE arithmetic)."""
    if node.op.name != "divide" or node.dtype.kind != "f" or not power_of_two(node.args[1]):
        return None
    divisor = node.args[1]
    # keep the scalar's kind: a NumPy scalar stays one (it promotes as a strong type),
    # a Python int or float becomes a Python float (weak, like the 2 it replaces)
    reciprocal = divisor.dtype.type(1 / divisor) if isinstance(divisor, np.generic) else 1.0 / divisor
    replacement = g.call("multiply", node.args[0], reciprocal)
    if replacement.meta != node.meta:  # NumPy's type promotion must agree
        g.nodes.remove(replacement)
        return None
    return replacement


def strength_reduction(graph: ir.Graph) -> ir.Graph:
    return passes.rewrite(graph, divide_by_power_of_two)


before = mc.explain(gelu)(x, w).graphs[0]
after = strength_reduction(before)
ops_before, ops_after = [n.op.name for n in before.calls], [n.op.name for n in after.calls]
print(ops_before, ops_after, sep="\n")
assert "divide" in ops_before and "divide" not in ops_after
assert len(ops_after) == len(ops_before)
# exact: bit for bit, including zeros, infinities and NaN
special = np.array([[0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -7.25] * 2] * 8, np.float32)
with np.errstate(all="ignore"):  # inf * 0 in the matmul is NaN, on both sides
    for inputs in [(x, w), (special, np.eye(16, 32, dtype=np.float32))]:
        np.testing.assert_array_equal(after(*inputs)[0], before(*inputs)[0])

# %% [markdown]
# ## 4. Your pass in front of the inductor
#
# A backend is a function, so composing is calling: run the pass, then hand
# the graph to the C++ inductor (`compile_graph` is the `"cpp"` backend).
# torch.compile users do the same with a custom backend that transforms the
# FX graph and then calls `compile_fx`.

# %%
seen = {}


def my_cpp_backend(graph: ir.Graph, example_inputs: list):
    seen["graph"] = strength_reduction(graph)
    seen["compiled"] = compile_graph(seen["graph"], example_inputs)
    return seen["compiled"]


fn = mc.compile(gelu, backend=my_cpp_backend)
np.testing.assert_allclose(fn(x, w), expected, rtol=1e-5, atol=1e-6)
compiled = seen["compiled"]
print(repr(compiled))
assert "divide" not in [n.op.name for n in seen["graph"].calls]
assert len(compiled.kernels) == 1  # the whole GELU epilogue fused into one kernel after the matmul

# %% [markdown]
# ## 5. Errors are the backend's to report
#
# A backend may refuse a graph by raising.  minicompile reports it as a
# `RuntimeError` naming the backend and the function, with the backend's own
# exception as its cause (torch.compile's twin is `BackendCompilerFailed`),
# so say in the message what was refused and why.

# %%
def matmul_only_backend(graph: ir.Graph, example_inputs: list):
    others = sorted({n.op.name for n in graph.calls} - {"matmul"})
    if others:
        raise NotImplementedError(f"matmul_only_backend: cannot run {others}")
    return graph


try:
    mc.compile(gelu, backend=matmul_only_backend)(x, w)
    raise AssertionError("the backend should have refused")
except RuntimeError as e:
    print("refused:", e)
    assert isinstance(e.__cause__, NotImplementedError) and "tanh" in str(e)

assert mc.compile(lambda a, b: a @ b, backend=matmul_only_backend)(x, w).shape == (8, 32)
