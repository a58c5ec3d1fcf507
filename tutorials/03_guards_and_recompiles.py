# %% [markdown]
# # 03 — Guards and recompiles: when a compiled entry may be reused
#
# A captured graph is only right for the inputs it was traced with: the trace
# read `x.shape` to broadcast, baked the float `scale` into the graph as a
# constant, and assumed `np` is NumPy.  TorchDynamo records each such
# assumption as a *guard*; the guards of one capture are compiled into a
# single check function and stored with the compiled code in a *cache entry*.
# Every later call runs the entry's check first: pass, and the compiled code
# runs; fail, and the function is captured again (a *recompile*), up to
# `torch._dynamo.config.recompile_limit` (8) entries per function.
#
# minicompile works the same way.  This tutorial opens a cache entry, reads
# its guard function, and makes it fail on purpose.

# %%
import contextlib
import io
import warnings

import numpy as np

import minicompile as mc
from minicompile import config


def affine_tanh(x, scale, bias=None):
    y = np.tanh(x * scale)
    if bias is not None:
        y = y + bias
    return y.sum(axis=-1)


def captured_log(artifacts: str, fn, *args):
    """Call ``fn`` with the given ``MINICOMPILE_LOGS`` artifacts on; return (result, log text)."""
    mc.logs.set_logs(artifacts)
    stream = io.StringIO()
    try:
        with contextlib.redirect_stderr(stream):  # the logs go to stderr
            result = fn(*args)
    finally:
        mc.logs.set_logs("")
    return result, stream.getvalue()


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 16)).astype(np.float32)
# dynamic=False keeps every shape specialized, which is what this tutorial is
# about; by default a size that changes becomes a symbol after one recompile
# (tutorial 14, dynamic shapes).
compiled = mc.compile(affine_tanh, backend="eager", dynamic=False)

# %% [markdown]
# ## The guard function of a cache entry
#
# After the first call, `compiled.cache` holds one `CacheEntry`.  Its `guard`
# is a real Python function, generated as source and compiled; `L` is the
# call's arguments by name, `G` the function's globals.

# %%
result = compiled(x, 0.5)
np.testing.assert_allclose(result, affine_tanh(x, 0.5), rtol=1e-6)
entry = compiled.cache[0]
print(entry.guard.source)
assert len(compiled.cache) == 1
assert entry.guard({"x": x, "scale": 0.5, "bias": None}, affine_tanh.__globals__)

# %% [markdown]
# Each line protects one thing the trace relied on:
#
# | guard | why the graph needs it |
# | --- | --- |
# | `type(L['x']) is ___ndarray` | a subclass (`np.matrix`) may override `*` |
# | `L['x'].shape == (8, 16)` | node shapes, broadcasting, `axis=-1` were resolved for this shape |
# | `L['x'].dtype == ___dtype_float32` | every node's dtype follows NumPy's promotion from it |
# | `L['x'].strides == (64, 4)` | generated kernels index memory with these strides |
# | `type(L['scale']) is ___type_float`, `L['scale'] == 0.5` | `0.5` is a constant *inside* the graph; an `int` or a NumPy scalar would also promote differently |
# | `L['bias'] is None` | the trace took the `bias is None` branch and left `+ bias` out |
# | `G['np'] is ___module_numpy` | `np.tanh` was resolved through the global `np` |
#
# TorchDynamo's guards are the same kinds: `TENSOR_MATCH` (type, dtype,
# shape, strides, device), `CONSTANT_MATCH` / `EQUALS_MATCH` for Python values,
# `ID_MATCH` for modules and functions.  Every guard also remembers the user
# line that made the trace rely on it.

# %%
for guard in entry.capture.guards.guards:
    print(f"line {guard.lineno}: {guard.check}")
checks = [g.check for g in entry.capture.guards.guards]
assert "L['x'].shape == (8, 16)" in checks and "L['x'].strides == (64, 4)" in checks
assert any(c.startswith("L['scale'] ==") for c in checks)
assert any("L['bias']" in c for c in checks)

# %% [markdown]
# ## A cache hit
#
# New values with the same shape, dtype and strides pass every guard: the
# entry is reused, nothing is traced.

# %%
x2 = rng.standard_normal((8, 16)).astype(np.float32)
np.testing.assert_allclose(compiled(x2, 0.5), affine_tanh(x2, 0.5), rtol=1e-6)
assert len(compiled.cache) == 1

# %% [markdown]
# ## Recompiles, and which guard failed
#
# With `MINICOMPILE_LOGS=recompiles` (TorchDynamo: `TORCH_LOGS=recompiles`)
# each miss says which guard of the *newest* entry failed and what it saw.
# Below, each call changes one thing from the call before: a new shape, a new
# dtype, a new scalar value, a new branch.  Each compiles a new entry; the old
# entries stay and keep serving their own inputs.

# %%
x_small = rng.standard_normal((4, 16)).astype(np.float32)
bias = np.ones(16)
calls = [
    ("new shape", (x_small, 0.5), "L['x'].shape == (8, 16)"),
    ("new dtype", (x_small.astype(np.float64), 0.5), "L['x'].dtype"),
    ("new scalar", (x_small.astype(np.float64), 2.0), "L['scale']"),
    ("bias given", (x_small.astype(np.float64), 2.0, bias), "L['bias']"),
]
for label, args, expected_guard in calls:
    result, log = captured_log("recompiles", compiled, *args)
    np.testing.assert_allclose(result, affine_tanh(*args), rtol=1e-6)
    print(f"--- {label}\n{log.strip()}")
    assert "Recompiling affine_tanh" in log and expected_guard in log
print("cache entries:", len(compiled.cache))
assert len(compiled.cache) == 5

_, log = captured_log("recompiles", compiled, x, 0.5)  # the first entry still serves x
assert log == "" and len(compiled.cache) == 5

# %% [markdown]
# ## The recompile limit
#
# A function called with ever new shapes would recompile forever.  After
# `config.recompile_limit` entries (8, like
# `torch._dynamo.config.recompile_limit`) minicompile stops capturing this
# function: a call that no entry accepts runs eagerly, and one warning names
# the last failing guard.

# %%
print("recompile_limit =", config.recompile_limit)
assert config.recompile_limit == 8
for rows in range(5, 8):  # three more row counts: entries 6, 7 and 8
    compiled(rng.standard_normal((rows, 16)).astype(np.float32), 0.5)
assert len(compiled.cache) == 8

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x_new = rng.standard_normal((9, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled(x_new, 0.5), affine_tanh(x_new, 0.5), rtol=1e-6)
    compiled(rng.standard_normal((10, 16)).astype(np.float32), 0.5)  # eager again, no new warning
messages = [str(w.message) for w in caught]
print("\n".join(messages))
assert len(messages) == 1 and "recompile limit" in messages[0]
assert len(compiled.cache) == 8  # no ninth entry: those calls ran eagerly

# %% [markdown]
# ## Starting over: `mc.reset()`
#
# `mc.reset()` (TorchDynamo: `torch._dynamo.reset()`) forgets every cache entry
# of every compiled function; the next call captures again.

# %%
mc.reset()
assert len(compiled.cache) == 0
compiled(x, 0.5)
assert len(compiled.cache) == 1
print("after reset:", compiled)

# %% [markdown]
# ## Where each piece lives
#
# | minicompile | TorchDynamo |
# | --- | --- |
# | `dynamo/guards.py` `GuardSet.compile` → `guard(L, G)` | `guards.py` `CheckFunctionManager` → the guard function |
# | `CacheEntry` (`guard`, `run`, `capture`) in `OptimizedFunction.cache` | the cache entries linked to the code object |
# | `GuardSet.first_failure` + the `recompiles` log | `TORCH_LOGS=recompiles`, `guard_failure_fn` |
# | `config.recompile_limit` (8), eager fallback with a warning | `torch._dynamo.config.recompile_limit` (8) |
# | `mc.reset()` | `torch._dynamo.reset()` |
