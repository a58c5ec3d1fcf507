# %% [markdown]
# # 04 — Graph breaks: compile what you can, run the rest in CPython, resume
#
# Some Python cannot become a graph: `print` has to print, `if x.sum() > 0:`
# needs a real number to choose a side.  TorchDynamo does not give up on the
# whole function there.  It *breaks the graph*: the instructions traced so far
# become graph 1; the frame's code is replaced by a *transformed* code object
# that calls graph 1, runs the unsupported instruction in CPython, and then
# calls a *resume function* — the rest of the original bytecode, entered in the
# middle — which is itself compiled on its first call and gets graph 2.
#
# minicompile builds the same machinery for NumPy: `dynamo/graph_break.py`
# writes the transformed function, `dynamo/resume_execution.py` builds resume
# functions from the original bytecode, and `mc.explain` (like
# `torch._dynamo.explain`) reports every graph and every break.

# %%
import contextlib
import dis
import inspect
import io

import numpy as np

import minicompile as mc


def normalize_and_report(x, w):
    h = np.tanh(x @ w)
    print("hidden layer:", h.shape)  # break 1: print must really print
    scores = h * 2
    if scores.mean() > 0:            # break 2: which side depends on the data
        return np.exp(scores).sum(axis=1)
    return -scores.max(axis=1)


def line_of(fn, text: str) -> int:
    """The absolute line number of the line of ``fn`` that contains ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, line in enumerate(lines) if text in line)


def captured_log(artifacts: str, fn, *args):
    """Call ``fn`` with the given ``MINICOMPILE_LOGS`` artifacts on; return (result, log)."""
    mc.logs.set_logs(artifacts)
    stream = io.StringIO()
    try:
        with contextlib.redirect_stderr(stream):
            result = fn(*args)
    finally:
        mc.logs.set_logs("")
    return result, stream.getvalue()


rng = np.random.default_rng(0)
x = rng.standard_normal((4, 3))
w = rng.standard_normal((3, 5))

# %% [markdown]
# ## What `explain` sees
#
# `mc.explain(fn)(*args)` runs the function once under capture and reports:
# how many graphs, how many breaks, and for each break the reason and the
# user's line.  The code between the two breaks and the code after the
# branch each got a graph of their own.

# %%
explanation = mc.explain(normalize_and_report)(x, w)
print(explanation)
assert explanation.graph_count == 3 and explanation.graph_break_count == 2
print_line = line_of(normalize_and_report, 'print("hidden layer:"')
branch_line = line_of(normalize_and_report, "if scores.mean() > 0:")
assert [r.lineno for r in explanation.break_reasons] == [print_line, branch_line]
assert "print" in explanation.break_reasons[0].reason
assert "branch on an array value" in explanation.break_reasons[1].reason
assert explanation.ops_per_graph[0] == ["matmul", "tanh"]              # before the print
assert explanation.ops_per_graph[1] == ["multiply", "mean", "greater"]  # up to the if

# %% [markdown]
# ## The transformed function
#
# The first cache entry of the compiled function does not run a graph and
# return: it runs the *transformed function*.  Its source is kept in the
# entry's break plan.  It (1) calls the graph of everything before the break,
# (2) rebuilds the values the frame would have (live locals, the stack),
# (3) runs the `print` for real, and (4) returns what the resume function
# returns.  `MINICOMPILE_LOGS=bytecode` prints it with its real bytecode next
# to the original's.

# %%
compiled = mc.compile(normalize_and_report, backend="eager")
result, log = captured_log("bytecode", compiled, x, w)
np.testing.assert_allclose(result, normalize_and_report(x, w))

entry = compiled.cache[0]
plan = entry.capture.break_plan
print(plan.source)
assert plan.source.startswith("def transformed(L, G):")
assert "___graph(" in plan.source and "___result = " in plan.source

transformed_log = log[log.index("transformed normalize_and_report"):]
print(transformed_log[:3000])
assert "original normalize_and_report" in transformed_log

# %% [markdown]
# ## The resume function
#
# `___resume_at_N` (the same name TorchDynamo gives them) is the original code
# object with a short prologue: load the stack values passed as parameters,
# jump to offset N — the instruction right after `print`'s `CALL` — and carry
# on with the original instructions, unchanged.  In the transformed
# function's namespace it is wrapped like any compiled function, so it has its
# own cache; its own first call traced it and found the second break.

# %%
resumes = {name: fn for name, fn in plan.namespace.items() if name.startswith("___resume_at_")}
print(list(resumes))
(resume,) = resumes.values()
dis.dis(resume.fn.__code__)
resume_code = resume.fn.__code__
assert resume_code.co_filename == normalize_and_report.__code__.co_filename
assert resume_code.co_varnames[:3] == normalize_and_report.__code__.co_varnames[:3]
assert "JUMP_FORWARD" in [i.opname for i in dis.get_instructions(resume_code)][:8]
assert len(resume.cache) == 1 and resume.cache[0].capture.break_reason.lineno == branch_line

# %% [markdown]
# ## Both sides of the branch
#
# At `if scores.mean() > 0:` the transformed function of the resume function
# computes the condition with its graph, tests it in Python and calls one of
# two resume functions — one per side.  Only the side that runs is traced;
# the other is traced the first time the data sends execution there.  Both
# give eager's answer, and the branch costs no recompile of the function.

# %%
branch_plan = resume.cache[0].capture.break_plan
sides = {name: fn for name, fn in branch_plan.namespace.items() if name.startswith("___resume_at_")}
print(branch_plan.source)
assert len(sides) == 2
for inputs in [(x, w), (x, -w)]:  # -w flips the sign of the mean
    np.testing.assert_allclose(compiled(*inputs), normalize_and_report(*inputs))
print({name: len(fn.cache) for name, fn in sides.items()})
assert all(len(fn.cache) == 1 for fn in sides.values())  # both sides have run by now
assert len(compiled.cache) == 1

# %% [markdown]
# ## A break inside a helper
#
# When a method called from the compiled function breaks, the caller is split
# at the call: its transformed function calls the method *compiled on its
# own*, so the method's array work before and after its own break is still
# captured.  (TorchDynamo does the same: the callee frame is simply compiled
# again when CPython runs it.)

# %%
class Layer:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        h = x @ self.w
        print("inside forward")
        return np.maximum(h, 0)


def two_layers(layer, x):
    y = layer.forward(x * 2)
    return y.sum(axis=1)


layer = Layer(w)
explanation = mc.explain(two_layers)(layer, x)
print(explanation)
all_ops = [op for ops in explanation.ops_per_graph for op in ops]
assert explanation.graph_count == 4  # caller before/after, forward before/after
assert all_ops == ["multiply", "matmul", "maximum", "sum"]
np.testing.assert_allclose(mc.compile(two_layers, backend="eager")(layer, x), two_layers(layer, x))

# %% [markdown]
# ## A break inside a loop body
#
# A resume function enters the original bytecode in the middle.  Inside a
# loop that would mean resuming in the middle of an unrolled iteration, so
# minicompile runs such a frame eagerly instead, and says so in the
# `graph_breaks` log.  (TorchDynamo also cannot resume inside a loop in a
# frame it is tracing; it falls back to running the frame in CPython.)

# %%
def noisy_cumsum(x):
    total = x * 0
    for i in range(3):
        total = total + x * i
        print("step", i)
    return total


result, log = captured_log("graph_breaks", mc.compile(noisy_cumsum, backend="eager"), x)
print(log)
np.testing.assert_allclose(result, noisy_cumsum(x))
assert "running the function eagerly" in log and "inside a loop body" in log
explanation = mc.explain(noisy_cumsum)(x)
assert explanation.graph_count == 0 and explanation.graph_break_count == 1

# %% [markdown]
# ## Side effects before a break are replayed
#
# Appending to a list the caller passed in is not an array op, but it is not a
# reason to break either: during the trace the append changes only the
# interpreter's copy of the list, and the transformed function *replays* the
# append on the caller's real list (TorchDynamo's `SideEffects`) before running the
# `print`.  The caller sees exactly what eager leaves, once per call.

# %%
def record_then_print(x, history):
    y = np.sqrt(np.abs(x))
    history.append(y.shape)
    print("recorded", len(history))
    return y + 1


eager_history, compiled_history = [], []
compiled = mc.compile(record_then_print, backend="eager")
for _ in range(2):
    np.testing.assert_allclose(compiled(x, compiled_history), record_then_print(x, eager_history))
print(compiled.cache[0].capture.break_plan.source)
print("history:", compiled_history)
assert compiled_history == eager_history == [(4, 3), (4, 3)]
# Replayed as the operation it was, an append on whatever the list holds by
# then (under threads, another thread's appends are kept), not a rewrite.
assert ".append(" in compiled.cache[0].capture.break_plan.source

# %% [markdown]
# ## `fullgraph=True`
#
# When a graph break would hide a performance problem, `fullgraph=True`
# (same flag in `torch.compile`) turns the first break into an error that
# names the line.

# %%
strict = mc.compile(normalize_and_report, backend="eager", fullgraph=True)
try:
    strict(x, w)
except mc.GraphBreakError as e:
    print(e)
    assert e.reason.lineno == print_line
else:
    raise AssertionError("expected a GraphBreakError")

# %% [markdown]
# ## Where each piece lives
#
# | minicompile | TorchDynamo |
# | --- | --- |
# | `Unsupported` raised by a handler, `BreakReason` with file and line | `Unsupported`, graph break reasons |
# | `graph_break.plan_graph_break` → the transformed function | `InstructionTranslator.create_call_resume_at`, `OutputGraph.compile_subgraph` |
# | `resume_execution.make_resume_code` → `__resume_at_N` | `resume_execution.ContinueExecutionCache` → `__resume_at_N` |
# | `side_effects.SideEffects.emit` | `side_effects.SideEffects.codegen_update_mutated` |
# | `mc.explain(fn)(*args)` | `torch._dynamo.explain(fn)(*args)` |
# | `fullgraph=True` → `mc.GraphBreakError` | `fullgraph=True` → `torch._dynamo.exc.Unsupported` |
