# %% [markdown]
# # 15 — Functionalization: in-place updates and views in a functional graph
#
# NumPy code writes into arrays all the time: `x += 1`, `out[:, 0] = 0`,
# `np.add(a, b, out=c)`, `w -= lr * g`.  And NumPy arrays share memory: `v =
# x[1:]` is a *view*, so a write through `v` changes `x`, a write to `x`
# changes what `v` reads, and a write to an argument is seen by the caller.
# The captured graph cannot say any of that: every node of an `ir.Graph` makes
# a new value.
#
# torch.compile has the same gap between PyTorch programs and its FX graphs,
# and closes it with **functionalization** (`FunctionalTensor`, run while
# AOTAutograd traces): each in-place op becomes its out-of-place twin, a
# write through a view becomes a "view scatter" into the base
# (`slice_scatter`, `as_strided_scatter`), every other view of that base is
# regenerated from the new base when it is next used ("view replay"), and at
# the end the graph's new values of mutated inputs are copied back into them
# (`copy_`).  minicompile does the same, in `dynamo/functionalization.py`,
# while the bytecode interpreter traces.

# %%
import numpy as np

import minicompile as mc


def shift_and_scale(x, out):
    out[:] = x          # write the whole of out
    v = out[1:]         # a view of out: rows 1 and 2
    out[0] = -1.0       # a write to out (row 0, which v does not see)
    v *= 2.0            # a write through the view: rows 1 and 2 of out double
    return v.sum()      # read the view after the writes


x = np.arange(12.0).reshape(3, 4)
expected_out = np.zeros((3, 4))
expected = shift_and_scale(x, expected_out)

# %% [markdown]
# ## One graph, no break
#
# Every write above is captured: there is no graph break, and the compiled
# function leaves `out` exactly as NumPy leaves it.

# %%
explained = mc.explain(shift_and_scale)(x, np.zeros((3, 4)))
print(explained)
assert explained.graph_count == 1 and explained.graph_break_count == 0

out = np.zeros((3, 4))
compiled = mc.compile(shift_and_scale, backend="eager")
result = compiled(x, out)
print("result", result, "| out after the call:\n", out)
assert result == expected and np.array_equal(out, expected_out)

# %% [markdown]
# ## Storages, views and scatters
#
# During the trace every array lives in a *storage*: the memory eager NumPy
# would have.  `out` is an argument's storage; `v = out[1:]` is a view of it,
# remembered as the chain `(getitem (slice(1, 3, 1),),)` from the base.  A
# write computes the new value of what it wrote and *scatters* it into the
# base: a write to `v` (a `getitem` of the base) becomes `setitem` of the
# base.  Reading `v` after a write to its base replays its chain on the base's
# newest value.
#
# The graph shows exactly that: one `setitem` of the base per write;
# `v *= 2.0` reads `v` after `out[0] = -1.0` wrote the base, so `v` is
# re-derived from the newest base (`getitem_1` reads `setitem_1`), never the
# stale value; and `v.sum()` reads what the write through `v` gave it.

# %%
graph = compiled.cache[0].capture.graph
print(graph)
ops = [n.op.name for n in graph.calls]
assert ops == ["setitem", "setitem", "getitem", "multiply", "setitem", "sum"]
replayed = graph.calls[2]
assert replayed.args[0] is graph.calls[1]  # the view, re-derived from the base after row 0's write

# %% [markdown]
# ## The write-back
#
# The graph returns the final value of `out`, and the code that runs after it
# (the *epilogue*, TorchDynamo's and AOTAutograd's "mutated inputs" handling)
# copies it into the caller's array, once.  `x` was only read, so nothing is
# written to it.

# %%
epilogue = compiled.cache[0].capture.break_plan.source
print(epilogue)
assert epilogue.count("L['out'][...] = ") == 1 and "L['x'][...]" not in epilogue

# %% [markdown]
# ## Every view op has its scatter
#
# A write through a transpose scatters back with the inverse transpose, a
# write through a reshape with the reshape back, through a flip with the same
# flip.  NumPy decides whether `reshape` is a view by the memory layout, so the
# trace keeps each array's layout (its strides) and asks NumPy, on an array
# with those strides over a single element that is never read.

# %%
def through_views(x):
    x.T[0, 1] = 100.0             # transpose: x[1, 0]
    x.reshape(-1)[-1] = -5.0      # a reshape of a C-contiguous array is a view
    np.flip(x, 1)[0, 0] = 7.0     # flip: x[0, -1]
    x.T.reshape(-1)[0] = 999.0    # this reshape copies: x is unchanged by it
    return x


mine, eagers = np.zeros((2, 3)), np.zeros((2, 3))
compiled_views = mc.compile(through_views, backend="cpp")
compiled_views(mine)
through_views(eagers)
print(mine)
assert np.array_equal(mine, eagers)
names = [n.op.name for n in compiled_views.cache[0].capture.graph.calls]
print(names)
assert {"transpose", "reshape", "flip", "setitem"} <= set(names)

# %% [markdown]
# ## New arrays keep NumPy's layout
#
# NumPy allocates a new array in its operands' memory order (`order="K"`):
# `b * 2` of a Fortran-ordered `b` is Fortran-ordered, so a later
# `reshape(-1)` of it copies.  A compiled kernel writes a C-contiguous buffer,
# so the trace works out NumPy's strides for every new array (running the op
# on tiny stand-ins laid out as its operands), and an array that leaves the
# graph, returned or alive across a graph break, is laid out that way first.
# Without that, the reshape below would be a view after the break, and the
# `+=` would change `b`.

# %%
def reshape_after_a_break(b):
    v = b * 2
    print("a graph break")
    flat = v.reshape(-1)          # a copy: v is Fortran-ordered
    flat += 100.0
    b += v
    return v


fortran_mine, fortran_eager = (np.asfortranarray(np.arange(6.0).reshape(2, 3)) for _ in range(2))
v_mine = mc.compile(reshape_after_a_break, backend="cpp")(fortran_mine)
v_eager = reshape_after_a_break(fortran_eager)
print(v_mine.strides, v_eager.strides)
assert v_mine.strides == v_eager.strides and np.array_equal(fortran_mine, fortran_eager)

# %% [markdown]
# ## Arguments that share memory
#
# `f(a, a)` passes one array twice: the trace sees one variable (and guards
# `L['y'] is L['x']`).  Two *different* arrays over one memory, such as
# `f(b[:4], b[1:])`, start as two graph inputs — right while they are only
# read.  The first write to one of them rewrites both as `as_strided` views
# of their common base, read from the frame as `L['x'].base`, and the guards
# say so: the next call must pass views of one base at the same offsets.

# %%
def add_then_read(x, y):
    x += 1.0
    return y * 2.0


b_eager, b_mine = np.arange(6.0), np.arange(6.0)
compiled_alias = mc.compile(add_then_read, backend="eager")
r = compiled_alias(b_mine[:4], b_mine[1:5])
assert np.array_equal(r, add_then_read(b_eager[:4], b_eager[1:5])) and np.array_equal(b_mine, b_eager)
capture = compiled_alias.cache[0].capture
print(capture.graph)
print("\n".join(g for g in str(capture.guards).splitlines() if "base" in g))
assert "as_strided" in [n.op.name for n in capture.graph.calls]
assert "L['y'].base is L['x'].base" in str(capture.guards)

# %% [markdown]
# Passing arrays that do not overlap fails the aliasing guards and compiles a
# second entry, in which the two arguments are independent again.

# %%
c_eager, d_eager, c_mine, d_mine = (np.arange(4.0) for _ in range(4))
assert np.array_equal(compiled_alias(c_mine, d_mine), add_then_read(c_eager, d_eager))
assert len(compiled_alias.cache) == 2 and np.array_equal(c_mine, c_eager)

# %% [markdown]
# ## What stays NumPy's
#
# Writes NumPy refuses are refused the same way: through `np.broadcast_to`
# (a read-only view), into a read-only argument, or a cast `same_kind`
# forbids (`int_array += 1.5`) raise NumPy's own error at the user's line,
# with the arguments left as NumPy leaves them — the function runs as
# Python.  A view returned by the function is a real view of the caller's
# array, as in NumPy.

# %%
def bad_cast(x):
    x[0] = 9
    x += 1.5
    return x


ints = np.arange(3)
try:
    mc.compile(bad_cast, backend="eager")(ints)
except Exception as e:  # NumPy's UFuncTypeError
    print(type(e).__name__, e)
    assert "same_kind" in str(e)
assert ints.tolist() == [9, 1, 2]  # the first write happened, as in NumPy

ys = np.arange(4.0)
tail = mc.compile(lambda y: y[1:], backend="cpp")(ys)
assert np.shares_memory(tail, ys)

# %% [markdown]
# ## The map
#
# | minicompile | torch.compile |
# | --- | --- |
# | `Storage`, a variable's `view` chain | `FunctionalTensorWrapper`, its `ViewMeta` chain |
# | `ViewStep.scatter` (`setitem`, inverse transpose, reshape back) | `slice_scatter`, `select_scatter`, `as_strided_scatter` |
# | re-reading a view after a write (`ArrayVariable.node`) | view replay (`sync()` / `regenerate_from_base`) |
# | `write_backs`: `L['x'][...] = new` after the graph | `copy_` of mutated inputs in AOTAutograd's epilogue |
# | alias groups, `as_strided` of `L['x'].base` | synthetic bases for aliased inputs |
# | guards `L['y'].base is L['x'].base`, `not ___may_share(...)` | Dynamo's aliasing guards |
# | `numpy_layout`, outputs laid out by `storage_array` | fake tensors' strides, Inductor's `keep_output_stride` |

# %% [markdown]
# ## Loops: the body once, as one loop node
#
# Capture unrolls Python loops: each iteration's ops land in the graph again.
# A stencil stepped 1,000 times would be 1,000 copies of its body.  A counted
# loop longer than `config.loop_unroll_limit` (16) whose body is the same graph
# every time becomes **one loop node** instead, holding the body traced once:
# torch's `while_loop`/`scan` higher-order ops and JAX's `lax.fori_loop` are its
# twins.  The in-place store above is what makes this body a loop: the write to
# `u` is functionalized like any other, and `u`'s memory is the loop's *carried*
# value.  The loop index `t` is a Python int inside the body (NEP 50 applies).

# %%
def diffuse(u, steps):
    for t in range(steps):
        un = u.copy()
        u[1:-1] = un[1:-1] + 0.1 * (un[2:] - 2 * un[1:-1] + un[:-2])
    return u


explained = mc.explain(diffuse)(np.linspace(0, 1, 32) ** 2, 1000)
loop_graph = explained.graphs[0]
print(loop_graph)
assert [n.op.name for n in loop_graph.calls].count("loop") == 1 and loop_graph.op_count() < 10

heat, heat_eager = np.linspace(0, 1, 32) ** 2, np.linspace(0, 1, 32) ** 2
mc.compile(diffuse, backend="cpp")(heat, 1000)
diffuse(heat_eager, 1000)
assert np.allclose(heat, heat_eager)  # the caller's array written, as NumPy writes it

# %% [markdown]
# The C++ backend compiles the body once and runs its kernels from a generated
# C++ loop that rotates two buffers per carried value; Triton launches the body
# from a host loop.  A body that is not one graph — a `break`, a branch on the
# index, a list that grows, a Python number that changes — unrolls, and
# `MINICOMPILE_LOGS=loops` says why.  A gradient through a loop node is a loop
# node too: the loop run in reverse over the carries it saved (tutorial 07).

# %% [markdown]
# ### Loops inside loops, and a step count that changes
#
# A loop inside a loop body is tried the same way while the body is traced, so
# it becomes a loop node *of the body*: the printed graph shows the inner body
# (`loop_loop_body`) first.  Its writes count as writes of the outer body too,
# and the outer index is a value the inner body reads from outside.

# %%
def relax(u, sweeps, smooth):
    for s in range(sweeps):
        for k in range(smooth):
            u = 0.5 * u + 0.25 * (np.roll(u, 1) + np.roll(u, -1))
        u = u - u.mean()
    return u


nested = mc.explain(relax)(np.linspace(0, 1, 32), 20, 30).graphs[0]
print(nested)

# %% [markdown]
# The step count is an `int` argument.  The first call guards on its value,
# as every int is guarded; when a call brings another value, automatic dynamic
# (tutorial 14) makes it a size symbol `s0`, and the loop node counts `s0`
# times: the graph takes the int as a size input, so every later step count
# runs the same compiled code.  torch.compile has no twin here: it unrolls, so
# each new count is a new graph.  A use of the count other than counting (a
# branch on the index, `list(range(n))`, the last index in array arithmetic)
# pins it to its value again.  A Python float the body changes (`t += dt`)
# is carried by the loop as a 0-d value that the body and the code after the
# loop still see as a Python float, and so are the attributes a method called
# in the loop sets (`self.u = ...`): one store of each follows the loop.
# `for row in x` (and `enumerate(x)`, `zip(x, y)`) over a long array is a
# loop node whose body takes the row at the loop's index; a write through the
# row, which eager makes through a view, unrolls the loop instead.

# %%
stepped = mc.compile(diffuse, backend="cpp")
for steps in (100, 250, 400, 1000, 17):
    stepped(np.linspace(0, 1, 32) ** 2, steps)
print(len(stepped.cache), "compiled entries for five step counts")
print(stepped.cache[-1].capture.graph)
assert len(stepped.cache) == 2 and stepped.cache[-1].capture.graph.is_dynamic

# %% [markdown]
# ### Subscripts at the loop's index are views
#
# In eager code the index is a Python int, so `x[i]` is a *view* of `x`: a
# write through it reaches `x`.  Inside the body the index is a 0-d node, and
# the graph can only index with it as an integer array, whose result NumPy
# copies.  Capture calls such a key a *position* and keeps the result a view
# of `x`'s memory (functionalization, above): it replays as a `getitem` with
# the position and scatters back as a `setitem`.  torch.compile's twin is a
# `select` or `index_put_` at a SymInt the tracer cannot specialize.  A local
# the body assigns before reading it (`r = x[i]`, `j = i + 1`) is the body's
# own: after the loop it holds the view or value of the last iteration.

# %%
def smooth_rows(x):
    for i in range(1, x.shape[0]):
        row = x[i, :]
        row += 0.5 * x[i - 1]  # written through the view: x changes
    return x


rows = mc.explain(smooth_rows)(np.ones((64, 8))).graphs[0]
print(rows)
got, want = np.ones((64, 8)), np.ones((64, 8))
mc.compile(smooth_rows, backend="cpp")(got)
smooth_rows(want)
assert np.array_equal(got, want) and [n.op.name for n in rows.calls].count("loop") == 1

# %% [markdown]
# The C++ backend runs such a body as a host loop: its kernels have no
# position read from memory yet, so the gather and the store call NumPy, and
# the store copies the whole carried array each iteration.  It is right, and
# compiles once, but slower than NumPy on long loops; Triton gathers and
# scatters in its kernels.

# %% [markdown]
# ### Python ints the loop changes, and `while` loops
#
# A Python int that changes in the body (`k += 1`, `prev = i`) is carried by
# the loop as int64.  Python's ints never overflow, so capture also runs the
# loop's int arithmetic now, for every iteration: each value must fit in int64
# (else the loop unrolls, with Python's exact ints), and after the loop the local
# holds the last value as a plain `int`.  The same run gives a `while` loop on
# Python numbers its trip count: its body is traced once from the start of the
# second iteration, the condition at its end is a value of the body's graph,
# and running the numbers until it is false says how often the node runs.
# torch.compile's twin, the `while_loop` higher-order op, evaluates its
# condition on the device; ours is on Python values, known at capture.

# %%
def relax_while(u, n):
    k = 0
    while k < n:
        u = 0.5 * u + 0.25 * (np.roll(u, 1) + np.roll(u, -1))
        k += 1
    return u, k


while_graph = mc.explain(relax_while)(np.linspace(0, 1, 32), 500).graphs[0]
print(while_graph)
assert [n.op.name for n in while_graph.calls].count("loop") == 1
