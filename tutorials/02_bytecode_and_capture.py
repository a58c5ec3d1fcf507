# %% [markdown]
# # 02 — From `dis` to the graph, one opcode at a time
#
# torch.compile never parses your source code.  TorchDynamo reads the
# function's *bytecode* — the instructions CPython itself executes — and runs
# them symbolically: instead of real tensors its stack holds `VariableTracker`s
# that remember what a value *is* (a tensor that will be a graph input, the
# result of an op, a Python constant).  Tensor operations append nodes to an FX
# graph; Python values are computed right away and become constants.
#
# minicompile does the same for NumPy.  This tutorial takes one small function,
# prints its bytecode, then drives minicompile's interpreter
# (`minicompile.dynamo.symbolic_convert.InstructionTranslator`, the twin of
# `torch._dynamo.symbolic_convert.InstructionTranslator`) one instruction at a
# time and watches the stack turn into a graph.

# %%
import dis
import sys

import numpy as np

import minicompile as mc
from minicompile.dynamo import bytecode
from minicompile.dynamo.output_graph import OutputGraph
from minicompile.dynamo.symbolic_convert import InstructionTranslator
from minicompile.dynamo.variables.arrays import ArrayVariable
from minicompile.dynamo.variables.base import (
    NULL,
    ConstantVariable,
    MethodVariable,
    PythonObjectVariable,
    VariableTracker,
)


def scaled_tanh_sum(x, scale):
    y = x * scale
    return np.tanh(y + 1).sum(axis=0)


x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
scale = 0.5

# %% [markdown]
# ## The bytecode
#
# `dis.dis` shows what CPython runs.  A *stack machine*: `LOAD_FAST x` pushes
# the local `x`, `BINARY_OP *` pops two values and pushes their product,
# `CALL` pops a callable and its arguments and pushes the result,
# `RETURN_VALUE` pops the answer.  The listing differs between Python
# versions — we come back to that at the end.

# %%
print(f"Python {sys.version.split()[0]}")
dis.dis(scaled_tanh_sum)
opnames = [i.opname for i in bytecode.instructions(scaled_tanh_sum.__code__)]
assert "BINARY_OP" in opnames and opnames[-1] == "RETURN_VALUE"

# %% [markdown]
# ## The interpreter and its output
#
# Capturing one call needs two objects:
#
# * an `OutputGraph` (TorchDynamo's `OutputGraph`): the graph being built, the
#   guards, and the list of *sources* the graph's inputs are read from;
# * an `InstructionTranslator` over the function and the frame's real values
#   (`L`, the locals by name).  It reads the real values only to decide what
#   they are: an array becomes a graph placeholder, a float a constant.
#
# `InstructionTranslator.run()` loops over the instructions and calls the
# handler method named after each opcode (`self.BINARY_OP(inst)`, ...).  A
# handler pops its operands, hands them to the code of their kind of value —
# `dynamo/variables/`, one module per kind: `arrays.py` makes `x * scale` a
# `multiply` node, `containers.py` indexes a list, `functions.py` inlines a
# call — and pushes the result.  Here we write that loop ourselves so we can
# print the stack after each step.

# %%
def show(var: VariableTracker) -> str:
    """One variable tracker, briefly."""
    if var is NULL:
        return "NULL"
    if isinstance(var, ArrayVariable):
        return f"Array({var.node.name}: {var.node.meta})"
    if isinstance(var, ConstantVariable):
        return f"Const({var.value!r})"
    if isinstance(var, MethodVariable):
        return f"Method(.{var.name})"
    if isinstance(var, PythonObjectVariable):
        return f"Object({var.describe()})"
    return f"{type(var).__name__}({var.describe()})"


output = OutputGraph()
tracer = InstructionTranslator(scaled_tanh_sum, {"x": x, "scale": scale}, output)
seen_on_stack: list[type] = []

while tracer.return_value is None:
    inst = tracer.instructions[tracer.ip]
    tracer.ip += 1
    if inst.positions is not None and inst.positions.lineno is not None:
        tracer.lineno = inst.positions.lineno  # guards remember the line that needed them
    getattr(tracer, inst.opname)(inst)  # the handler: one method per opcode
    seen_on_stack += [type(v) for v in tracer.stack]
    stack = ", ".join(show(v) for v in tracer.stack)
    print(f"{inst.opname:<20} {inst.argrepr:<16} stack: [{stack}]")

result = tracer.return_value
print("returned:", show(result))
assert isinstance(result, ArrayVariable) and result.node.meta.shape == (3,)
assert ArrayVariable in seen_on_stack and ConstantVariable in seen_on_stack

# %% [markdown]
# Read the trace line by line:
#
# * `LOAD_FAST x` (fused with the next load into `LOAD_FAST_LOAD_FAST x, scale`
#   on 3.13) pushed an **`ArrayVariable`** — not the data, but a graph
#   placeholder `x: f32[4, 3]`.  Its *source* `L['x']` says where a later call
#   finds the real array.
# * `LOAD_FAST scale` pushed a **`ConstantVariable(0.5)`**: a Python float is
#   known now, so it is baked into the graph (and guarded, below).
# * `BINARY_OP *` on an array and a constant did not multiply anything: it
#   appended a `multiply` node to the graph and pushed an `ArrayVariable` for it.
# * `LOAD_GLOBAL np` / `LOAD_ATTR tanh` pushed the real function `np.tanh`
#   (an object known by identity); `CALL` looked it up in the table of NumPy
#   functions (`dynamo/variables/numpy_calls.py`) and added a `tanh` node.
# * `.sum` became a `MethodVariable` until `CALL` bound its keyword `axis=0`.
#
# TorchDynamo has the same cast: `TensorVariable` (a node of the FX graph),
# `ConstantVariable`, `TorchVariable`/`UserFunctionVariable`, `GetAttrVariable`.

# %% [markdown]
# ## The graph
#
# Each `ArrayVariable` holds an `ir.Node`.  Marking the returned node as the
# graph's output finishes it.  It prints as Python — the twin of the FX
# `GraphModule` code TorchDynamo hands to a backend.

# %%
output.graph.output([result.node])
print(output.graph.python_code("scaled_tanh_sum"))
ops = [node.op.name for node in output.graph.calls]
print("ops:", ops)
assert ops == ["multiply", "add", "tanh", "sum"]
assert [str(s) for s in output.input_sources] == ["L['x']"]  # scale is a constant, not an input

# %% [markdown]
# ## The guards
#
# Everything the trace looked at became an assumption: the array's type,
# shape, dtype and strides, the float's type and value, and that the global
# `np` is still NumPy.  The next tutorial compiles these into a guard function.

# %%
print(output.guards)
checks = [g.check for g in output.guards.guards]
assert "L['x'].shape == (4, 3)" in checks
assert any(c.startswith("L['scale'] ==") for c in checks)
assert "G['np'] is ___module_numpy" in checks

# %% [markdown]
# ## The same, through the public API
#
# `mc.compile` does all of the above on the first call (`convert_frame.capture`
# runs the interpreter, `compile_entry` hands the graph to a backend).  The
# `bytecode` and `graph` logs print the artifacts as they are produced
# (on stderr, like `TORCH_LOGS="bytecode,graph"`), and `mc.explain` summarizes.

# %%
mc.logs.set_logs("bytecode,graph")
compiled = mc.compile(scaled_tanh_sum, backend="eager")
got = compiled(x, scale)
mc.logs.set_logs("")
np.testing.assert_allclose(got, scaled_tanh_sum(x, scale), rtol=1e-6)
assert got.dtype == np.float32

explanation = mc.explain(scaled_tanh_sum)(x, scale)
print(explanation)
assert explanation.graph_count == 1 and explanation.graph_break_count == 0
assert explanation.ops_per_graph == [ops]

# %% [markdown]
# ## Models are objects
#
# NumPy models in the wild are classes: layers are objects with `__call__`,
# a model holds them as attributes or in a list, state is a `NamedTuple`.
# `mc.compile(model)` compiles the object the way torch.compile compiles an
# `nn.Module`: it traces `type(model).__call__` with `self` bound
# (`dynamo/callables.py` says what is traced for each kind of callable).  The
# interpreter follows the object's attributes, calls the layers' own
# `__call__` (inlined like any method) and even makes new objects — here the
# LSTM's `LSTMState(h, c)`, a named tuple built inside `forward`; an object the
# trace makes is built for real only if it outlives the trace.
#
# Arrays read from `self` are graph inputs like any argument's: guarded on
# type, shape, dtype and strides (`L['self'].inputs.weight.shape == (16, 32)`),
# never on identity or values — torch's parameters — so an optimizer step that
# replaces a weight by another of the same shape reuses the compiled code.

# %%
from minicompile.examples import class_models as cm

batch = np.random.default_rng(1).standard_normal((4, 16), dtype=np.float32)
cell = cm.LSTMCell(16, 8)
step = mc.compile(cell, backend="eager")
print("traced function:", step.fn.__qualname__, "with self =", type(step.target.args[0]).__name__)
state = step(batch, cell.zero_state(4))
expected = cell(batch, cell.zero_state(4))
assert type(state) is cm.LSTMState
np.testing.assert_allclose(state.h, expected.h, rtol=1e-5, atol=1e-6)

explanation = mc.explain(cell)(batch, cell.zero_state(4))
assert explanation.graph_count == 1 and explanation.graph_break_count == 0
print(f"{explanation.op_count} ops in one graph; guards on the weights:")
weight_guards = [str(g) for g in explanation.guards if "inputs.weight" in g.check]
print("\n".join(weight_guards))
assert any(".shape == (16, 32)" in g for g in weight_guards)
assert not any(g.startswith("L['self'].inputs.weight is") for g in weight_guards)  # never identity

cell.inputs.weight = cell.inputs.weight * 0.5  # a new array of the same shape
step(batch, cell.zero_state(4))
assert len(step.cache) == 1  # no recompile

for model in (cm.MLP(cm.MLPConfig(sizes=(16, 32, 4))), cm.ResidualBlock(16, 32)):
    out = mc.explain(model)(batch)
    print(f"{type(model).__name__}: {out.graph_count} graph, {out.graph_break_count} breaks, {out.op_count} ops")
    assert out.graph_count == 1 and out.graph_break_count == 0
    np.testing.assert_allclose(mc.compile(model, backend="eager")(batch), model(batch), rtol=1e-5, atol=1e-6)

# %% [markdown]
# ## Python 3.11, 3.12 and 3.13 disagree on a few opcodes
#
# The handlers are written once; the facts that differ live in one table,
# `minicompile/dynamo/bytecode.py`:
#
# * where `CALL` finds the NULL that marks "no `self`": *below* the callable on
#   3.11/3.12 (`LOAD_GLOBAL NULL + np`), *above* it on 3.13 (`PUSH_NULL` after
#   `LOAD_ATTR tanh`);
# * keyword names: a `KW_NAMES` instruction before `CALL` on 3.11/3.12, a
#   constant tuple and `CALL_KW` on 3.13;
# * method loads: `LOAD_METHOD` on 3.11, `LOAD_ATTR` with its low bit set
#   (`sum + NULL|self`) on 3.12+;
# * how many instructions an exhausted `FOR_ITER` skips at its target.
#
# 3.12 adds `RETURN_CONST`, `BINARY_SLICE`, `CALL_INTRINSIC_1` and
# `LOAD_FAST_AND_CLEAR` (inlined comprehensions); 3.13 adds superinstructions
# (`LOAD_FAST_LOAD_FAST`, `STORE_FAST_LOAD_FAST`), `TO_BOOL` before every
# branch, `CALL_KW` and `SET_FUNCTION_ATTRIBUTE`: each is one more handler
# method.  TorchDynamo keeps the same kind of per-version logic in
# `torch/_dynamo/bytecode_transformation.py` and its handlers.

# %%
for version, facts in bytecode.FACTS.items():
    marker = "  <- running" if version == sys.version_info[:2] else ""
    print(f"{version[0]}.{version[1]}: {facts}{marker}")
assert bytecode.CURRENT is bytecode.FACTS[sys.version_info[:2]]
call_ops = {"CALL_KW", "KW_NAMES"} & set(opnames)
assert call_ops == ({"KW_NAMES"} if bytecode.CURRENT.kw_names_instruction else {"CALL_KW"})

# %% [markdown]
# ## Where each piece lives
#
# | minicompile | TorchDynamo | role |
# | --- | --- | --- |
# | `dynamo/eval_frame.py` `OptimizedFunction` | `eval_frame.py` (`_TorchDynamoContext`, the frame hook) | intercept the call, check cache entries |
# | `dynamo/callables.py` | `OptimizedModule` (`Module.__call__` → `forward`) | which function a callable (a method, a model) is traced as |
# | `dynamo/convert_frame.py` `capture` | `convert_frame.py` | run the interpreter over one frame |
# | `dynamo/symbolic_convert.py` `InstructionTranslator` | `symbolic_convert.py` `InstructionTranslator` | one handler per opcode over a symbolic stack |
# | `dynamo/variables/` (`base.py`, `arrays.py`, `containers.py`, ...) | `variables/` (`VariableTracker` and subclasses) | what a stack slot stands for, one module per kind of value, and what operations on it mean |
# | `dynamo/output_graph.py` `OutputGraph` | `output_graph.py` `OutputGraph` | the graph, its inputs and guards |
# | `ir.Graph` | `torch.fx.Graph` | the captured program |
