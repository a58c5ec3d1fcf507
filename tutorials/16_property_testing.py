# %% [markdown]
# # 16 — Property testing: is the compiled version of *my* function right?
#
# Every stage of minicompile is checked against eager NumPy in its own test
# suite, but the function that matters to you is yours, on your inputs, with
# your backend.  `minicompile.testing` gives you the suite's tools:
#
# * `assert_same(fn, *args, backend=...)` — compiled against eager, the result
#   *and* every argument after the call (torch's twin: `torch.testing.assert_close`,
#   which compares values only);
# * `check(fn, *strategies)` — the same over inputs hypothesis draws, in the
#   layouts compiled code gets wrong most easily, with a reproducer of the
#   smallest failure; `aliasing_groups`, `shape_sequences` and `programs`
#   draw arguments that share memory, calls whose sizes change, and whole
#   random programs;
# * `check_backend(backend)` — a backend of your own over every op-info sample,
#   reported per op and dtype (the role of torch's `opcheck`, for a backend);
# * `CompileCounter`, `no_recompiles()`, `max_graph_breaks(n)` —
#   `torch._dynamo.testing`'s counters; `check_gradients` — JAX's `check_grads`.
#
# `pip install 'minicompile[testing]'` brings hypothesis, which `check` and
# its strategies need; the rest needs only NumPy.

# %%
import numpy as np

import minicompile as mc
from minicompile.ir import passes
from minicompile.testing import (CompileCounter, aliasing_groups, arrays, assert_same, check, check_backend,
                                 check_gradients, max_graph_breaks, no_recompiles, programs, shape_sequences)


def normalize_rows(x, out):
    """Softmax of each row of x, written into out; returns each row's log-sum-exp."""
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    out[...] = e / s
    return (m + np.log(s))[..., 0]


x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
out = np.zeros_like(x)

# %% [markdown]
# ## 1. One call: `assert_same`
#
# Each side gets its own copy of the arguments (strides, read-only flags and
# shared memory kept), so the write into `out` is compared too.  The compiled
# result comes back.

# %%
lse = assert_same(normalize_rows, x, out, backend="cpp")
print(lse)
assert lse.dtype == np.float32 and not out.any()  # the caller's `out` was not touched: copies were

# %% [markdown]
# ## 2. A backend with a bug
#
# A custom backend is any callable `(graph, example_inputs) -> callable`
# (tutorial 13).  This one has a planted bug: it rewrites every `np.subtract`
# into `np.add` before running the graph.  `assert_same` says where the
# results differ (`result`; not `argument out`, as a softmax does not change
# when every element of a row is shifted by the same amount, `x + m` instead
# of `x - m`), by how much, on which backend, and shows the graph that
# computed it.

# %%
def subtract_to_add(graph, example_inputs):
    return passes.rewrite(graph, lambda g, node, outputs: g.call("add", *node.args)
                          if node.op.name == "subtract" else None)


try:
    assert_same(normalize_rows, x, out, backend=subtract_to_add)
    raise RuntimeError("the bug went unnoticed")
except AssertionError as e:
    message = str(e)
print(message[:1200])
assert "result:" in message and "argument out" not in message and "np.subtract" in message

# %% [markdown]
# ## 3. Many calls: `check` over drawn inputs
#
# `arrays()` draws dtypes, shapes (0-d and empty included) and layouts: C,
# Fortran, strided, negative strides and read-only broadcast views.  `check`
# runs `assert_same` on each backend for every example.

# %%
rows = arrays(dtypes=[np.float32, np.float64], shapes=[(3, 5), (1, 4), (2, 0)], layouts=["C", "F", "reversed"])
outs = arrays(dtypes=[np.float64], shapes=[(3, 5)])
check(lambda x, out: normalize_rows(x, out[: x.shape[0], : x.shape[1]]), rows, outs,
      backends=("eager", "cpp"), max_examples=10, seed=0)
print("10 examples on eager and cpp: same as NumPy")

# %% [markdown]
# On the buggy backend `check` fails, and hypothesis shrinks the failure to a
# small example.  The message ends with a reproducer: each array as an
# `np.array(...)` literal with its dtype and the view that gives its layout,
# then the call — paste it into a file next to your function.

# %%
def scale_shift(x, y):
    return (x - y.mean()) * 2


try:
    check(scale_shift, arrays(dtypes=[np.float32]), arrays(dtypes=[np.float64], layouts=["strided"]),
          backends=(subtract_to_add,), max_examples=30, seed=0)
    raise RuntimeError("the bug went unnoticed")
except AssertionError as e:
    reproducer = str(e).split("Reproducer:\n")[1]
print(reproducer)
assert "assert_same(scale_shift, x0, x1, backend=subtract_to_add)" in reproducer
try:  # it reproduces
    exec(reproducer.replace("from __main__ import scale_shift", ""), globals())
    raise RuntimeError("the reproducer passed")
except AssertionError:
    pass

# %% [markdown]
# ## 4. Where is my backend wrong? `check_backend`
#
# Every sample of the op-info table — each op in function, method and operator
# form, each dtype it accepts, odd shapes and layouts — compiled with the
# backend and compared with NumPy: pass, wrong, or raised.  A backend that
# raises is honest; a wrong one is the bug to find.

# %%
report = check_backend(subtract_to_add, ops=["subtract", "add", "mean"])
print(report.table(details=False))
assert {r.op for r in report.wrong} == {"subtract"} and report.status("add", np.float64)["wrong"] == 0
assert not check_backend("cpp", ops=["subtract", "add", "mean"]).wrong

# %% [markdown]
# A backend that computes in a narrower float type says so (`precision`), and
# is judged at that precision: the Spyre card keeps floats as fp16, so its
# results are compared with float16's tolerance; integers stay exact.

# %%
spyre = check_backend("spyre", ops=["add", "mean"])
print(spyre.table(details=False).splitlines()[0])
assert spyre.precision == np.float16 and not spyre.wrong and not spyre.raised

# %% [markdown]
# ## 5. Compiles and graph breaks, counted
#
# `CompileCounter` is a backend that counts the graphs it is given and runs
# them through NumPy.  `no_recompiles()` fails when a guard fails inside it
# (naming the guard); `max_graph_breaks(0)` when capture meets a graph break.

# %%
counter = CompileCounter()
f = mc.compile(normalize_rows, backend=counter)
with max_graph_breaks(0), no_recompiles():
    f(x, out)
    f(x + 1, out)  # same shapes and dtypes: the cache entry is reused
print(counter)
assert counter.frame_count == 1
try:
    with no_recompiles():
        f(x[:2], out[:2])
except AssertionError as e:
    print(e)

# %% [markdown]
# ## 6. Gradients: `check_gradients`
#
# `mc.grad` of the function (compiled, when a backend is named) against
# central differences along random directions, to first or second order.

# %%
def loss(w, x):
    return np.tanh(x @ w).mean(axis=0)


rng = np.random.default_rng(1)
check_gradients(loss, rng.standard_normal((6, 3)), rng.standard_normal((4, 6)), order=2)
check_gradients(loss, rng.standard_normal((6, 3)), rng.standard_normal((4, 6)), backend="cpp")
print("gradients match central differences")

# %% [markdown]
# ## 7. Arguments that alias, sizes that change, whole programs
#
# `aliasing_groups(n)` draws `n` arguments at once, all views of one base: the
# same array twice, overlapping windows, an array and its reversal or
# transpose, interleaved elements.  A write through one is a write into the
# others, and the compiled function must see it where NumPy does.

# %%
def add_into(x, out):
    out += x[::-1]  # x may view out's elements: NumPy reads them as they were
    return out.sum()


check(add_into, aliasing_groups(2, dtypes=[np.float64]), backends=("eager", "cpp"), max_examples=10, seed=0)
print("10 aliasing groups on eager and cpp: same as NumPy")

# %% [markdown]
# `shape_sequences(*shapes)` draws the arguments of several calls whose sizes
# change from call to call (every axis of a changed size, in every argument,
# so that they still broadcast): `check` calls one compiled function with each
# set in turn — the first compiles for its sizes, the first change recompiles
# once with symbolic sizes (tutorial 14), later ones reuse it.

# %%
check(normalize_rows, shape_sequences((3, 5), (3, 5), dtypes=[np.float32], layouts=["C"], min_calls=3),
      backends=("cpp",), max_examples=4, seed=0)
print("4 sequences of 3 calls on cpp: same as NumPy")

# %% [markdown]
# `programs()` draws whole NumPy programs, the generator minicompile's own
# suite tests itself with: by default calls of the op table over independent
# arrays; `mutation=True` adds writes (in-place operators, setitem, `out=`,
# views written through), `graph_breaks=True` prints and calls the tracer
# cannot see, `aliasing=True` arguments that share memory.  A program prints
# as its source and that of its arguments; `check` runs each on its own.

# %%
from hypothesis import find, settings  # noqa: E402


def writes_through_an_alias(program):
    arrays_passed = [a for a in program.arguments() if isinstance(a, np.ndarray)]
    return "+=" in program.source and any(np.shares_memory(x, y) for i, x in enumerate(arrays_passed)
                                          for y in arrays_passed[i + 1:])


# The smallest program hypothesis finds that writes into an argument another one aliases:
smallest = find(programs(mutation=True, aliasing=True), writes_through_an_alias,
                settings=settings(database=None, derandomize=True))
print(smallest)
check(programs(mutation=True, aliasing=True, graph_breaks=True), backends=("eager",), max_examples=10, seed=0)
check(programs(), backends=("cpp",), max_examples=3, seed=0)
print("drawn programs on eager and cpp: same as NumPy")
