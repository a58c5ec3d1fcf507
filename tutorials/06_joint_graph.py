# %% [markdown]
# # 06 — From eager autograd to the joint graph
#
# There are two ways to get gradients out of a program.  **Eager autograd**
# records a *tape* while the forward runs — which op ran, on which inputs,
# with which result — and `backward()` walks that tape in reverse, applying
# each op's derivative rule.  That is PyTorch's autograd (`loss.grad_fn`),
# micrograd, and minicompile's `mc.Tensor`.  **Ahead-of-time autograd**
# traces the backward *into a graph* before anything runs, next to the
# forward: one *joint graph* that a compiler can partition, fuse and
# generate code for.  That is AOTAutograd, the stage of torch.compile between
# TorchDynamo and TorchInductor, and minicompile's `aot/` package.
#
# Both are driven by one table of derivative rules (PyTorch's
# `tools/autograd/derivatives.yaml`; our `minicompile/aot/derivatives.py`).
# This tutorial goes from the tape to the table to the joint graph, and checks
# at every step that the gradients are the same.

# %%
import inspect

import numpy as np

import minicompile as mc
from minicompile import ir
from minicompile.aot import DERIVATIVES
from minicompile.aot.emit import EagerEmitter, GraphEmitter


def f(w, b, x):
    h = np.tanh(x @ w + b)
    return (h * h).sum()


rng = np.random.default_rng(0)
w = rng.standard_normal((3, 2))
b = rng.standard_normal(2)
x = rng.standard_normal((4, 3))
print(f"f(w, b, x) = {f(w, b, x):.6f} on plain NumPy arrays")

# %% [markdown]
# ## The eager tape
#
# `mc.Tensor` wraps an ndarray.  NumPy's dispatch protocols
# (`__array_ufunc__`, `__array_function__`) route `x @ w` and `np.tanh(...)`
# to it, and its methods mirror ndarray's (`.sum()`), so the *same* function
# `f` runs unchanged.  Each op runs
# right away on NumPy and, because an input requires a gradient, leaves a tape
# node behind.  `x` is a plain array: nothing flows back into it, so the tape
# does not mention it.

# %%
w_t = mc.Tensor(w, requires_grad=True)
b_t = mc.Tensor(b, requires_grad=True)
loss = f(w_t, b_t, x)
print(loss)


def show_tape(t, names):
    """Print the tape behind ``t``, from the output back to the leaves."""
    order, seen, stack = [], set(), [t]
    while stack:
        u = stack.pop()
        if id(u) in seen or u._node is None:
            continue
        seen.add(id(u))
        order.append(u)
        stack.extend(u._node.tensors.values())
    for u in order:
        parents = [names.get(id(p), p._node.op if p._node else "?") for p in u._node.tensors.values()]
        print(f"  {u._node.op:9} <- {', '.join(parents)}")
    return [u._node.op for u in order]


print("tape (like loss.grad_fn.next_functions in PyTorch):")
tape_ops = show_tape(loss, {id(w_t): "w (leaf)", id(b_t): "b (leaf)"})
assert tape_ops == ["sum", "multiply", "tanh", "add", "matmul"]

# %% [markdown]
# `backward()` seeds d loss / d loss = 1, walks the tape and accumulates into
# each leaf's `.grad` (PyTorch's `AccumulateGrad`).  Check the result the way
# HIPS/autograd's `check_grads` does: against central finite differences,
# `(f(p + h e_i) - f(p - h e_i)) / 2h`, one element `i` at a time.

# %%
loss.backward()


def finite_differences(fn, p, h=1e-6):
    grad = np.zeros_like(p)
    for i in np.ndindex(p.shape):
        e = np.zeros_like(p)
        e[i] = h
        grad[i] = (fn(p + e) - fn(p - e)) / (2 * h)
    return grad


fd_w = finite_differences(lambda p: f(p, b, x), w)
fd_b = finite_differences(lambda p: f(w, p, x), b)
print("d loss / d w (tape):\n", w_t.grad)
print(f"max |tape - finite differences|: w {np.abs(w_t.grad - fd_w).max():.1e}, "
      f"b {np.abs(b_t.grad - fd_b).max():.1e}")
np.testing.assert_allclose(w_t.grad, fd_w, rtol=1e-6, atol=1e-8)
np.testing.assert_allclose(b_t.grad, fd_b, rtol=1e-6, atol=1e-8)
assert b_t.grad.shape == b.shape  # the broadcast of b over 4 rows was summed away

# %% [markdown]
# Like PyTorch, the tape frees what it saved once it has been used: a second
# `backward()` through the same graph is an error, not a silent wrong answer.

# %%
try:
    loss.backward()
    raise AssertionError("a second backward() should fail")
except RuntimeError as e:
    print("second backward():", e)

# %% [markdown]
# ## One table of derivative rules
#
# The tape did not know how to differentiate `tanh`; it looked the op up in
# `DERIVATIVES`, a dict from op name to a rule.  A rule gets the gradient of
# the op's output `g`, the output `out` and the op's arguments `a`, and returns
# the gradient of each array argument.  Here is tanh's — compare PyTorch's
# `derivatives.yaml` entry `- name: tanh(Tensor self)` /
# `self: tanh_backward(grad, result)`, which also reuses the *result*.

# %%
print(f"{len(DERIVATIVES)} ops have a derivative rule, e.g. {', '.join(sorted(DERIVATIVES)[:8])}, ...")
print(inspect.getsource(DERIVATIVES["tanh"]))
assert "tanh" in DERIVATIVES and "matmul" in DERIVATIVES

# %% [markdown]
# A rule never calls NumPy directly: it calls `E.call(op, ...)` on an
# *emitter*.  The tape passes an `EagerEmitter`, which runs the op now and
# returns an array; the joint-graph builder passes a `GraphEmitter`, which adds
# a node to a graph and returns the node.  Same rule, two interpretations —
# that is why eager and compiled gradients cannot drift apart.

# %%
rule = DERIVATIVES["tanh"]
z = rng.standard_normal(4)
g = np.ones(4)
eager_grad = rule(EagerEmitter(), g, np.tanh(z), {"x": z})["x"]
print("EagerEmitter ->", eager_grad)

graph = ir.Graph()
z_node = graph.placeholder("z", ir.TensorMeta((4,), np.dtype(np.float64)))
g_node = graph.placeholder("g", ir.TensorMeta((4,), np.dtype(np.float64)))
out_node = graph.call("tanh", z_node)
graph.output([rule(GraphEmitter(graph), g_node, out_node, {"x": z_node})["x"]])
print("GraphEmitter ->")
print(graph)
np.testing.assert_allclose(graph(z, g)[0], eager_grad)
np.testing.assert_allclose(eager_grad, 1 - np.tanh(z) ** 2)

# %% [markdown]
# ## Compiling with tensor inputs
#
# Call an `mc.compile`d function with `mc.Tensor` arguments that require
# gradients and minicompile does what torch.compile does with
# `requires_grad=True` parameters: TorchDynamo's twin captures the forward
# `ir.Graph` (the tensors become graph inputs, and `requires_grad` becomes a
# guard), then AOTAutograd's twin builds the joint graph from it and hands the
# compiled forward/backward pair to the tape as a single node.  The
# `aot_eager` backend runs both halves through NumPy.
# (`MINICOMPILE_LOGS=aot,partition` prints the joint graph and its cut as
# they are built.)

# %%
compiled = mc.compile(f, backend="aot_eager")
wc, bc = mc.Tensor(w, requires_grad=True), mc.Tensor(b, requires_grad=True)
compiled_loss = compiled(wc, bc, x)
aot = compiled.cache[0].compiled
print("captured forward graph:")
print(aot.graph)
assert [n.op.name for n in aot.graph.calls] == ["matmul", "add", "tanh", "multiply", "sum"]

# %% [markdown]
# ## The joint graph: primals in, tangents in, outputs and gradients out
#
# `aot.joint` is a `JointGraph`; its `.graph` is one ordinary `ir.Graph`
# (it prints as Python).  Its inputs are the forward's inputs, the
# **primals**, followed by one **tangent** per differentiable forward
# output: the incoming gradient (PyTorch names them `primals_1, ...` and
# `tangents_1, ...` in the same way).  The primals come in the order the
# function first reads them — `x @ w` reads `x` first.  Its outputs are the forward outputs
# followed by the gradient of each input that requires one.  It computes a
# vector-Jacobian product: `tangent_0 = 1.0` gives d loss / d w.

# %%
joint = aot.joint
print("joint graph:")
print(joint.graph)
primals = joint.graph.placeholders[: joint.num_primals]
tangents = joint.graph.placeholders[joint.num_primals:]
print("primals: ", primals)
print("tangents:", tangents)
print(f"outputs: {joint.num_forward_outputs} forward output(s), then gradients; "
      f"gradient position of each primal: {dict(zip([p.name for p in primals], joint.grad_index))}")
assert sorted(p.name for p in primals) == ["primal_b", "primal_w", "primal_x"]
assert [t.name for t in tangents] == ["tangent_0"]
assert joint.grad_index[0] is None  # x is a plain array: no gradient asked for, none computed

# %% [markdown]
# ## The forward half and the backward half
#
# A node belongs to the backward half exactly when it depends on a tangent;
# everything else can be computed from the primals alone.  Note that some
# nodes the derivative rules emitted land in the forward half: `1 - tanh²`
# and `xᵀ` need no tangent.  Which half each of them *runs* in — and which
# forward values are kept for the backward — is the partitioner's decision
# (tutorial 07).  The derivative rules emit some values twice (the rule for
# `h * h` sends the same product to each operand); `build_joint_graph` runs
# common-subexpression elimination (tutorial 05) on the joint graph, so each
# is computed once and can be saved once.

# %%
backward_half = set(tangents)
for node in joint.graph.calls:
    if any(i in backward_half for i in node.inputs):
        backward_half.add(node)
forward_half = [n for n in joint.graph.calls if n not in backward_half]
print("forward half:")
for n in forward_half:
    print(f"    {n.name} = {ir.format_call(n)}")
print("backward half:")
for n in joint.graph.calls:
    if n in backward_half:
        print(f"    {n.name} = {ir.format_call(n)}")
calls = [(n.op.name, n.args) for n in joint.graph.calls]
assert len(calls) == len(set(map(repr, calls)))                       # no value computed twice
assert [n.op.name for n in forward_half][:5] == ["matmul", "add", "tanh", "multiply", "sum"]
assert all(o not in backward_half for o in joint.graph.outputs[: joint.num_forward_outputs])
assert all(o in backward_half for o in joint.graph.outputs[joint.num_forward_outputs:])

# %% [markdown]
# ## Same gradients as the tape
#
# Run the joint graph with the primals and a tangent of 1.0, and compare with
# the eager tape's `.grad` from the first cell.  The compiled pair on the tape
# (`compiled_loss.backward()`) must agree too.  And since a joint graph is a
# vector-Jacobian product, it is linear in the tangent: seeding 2.0 doubles
# every gradient.

# %%
by_name = {"primal_w": w, "primal_b": b, "primal_x": x}
inputs = [by_name[p.name] for p in primals]
outs = joint.graph(*inputs, np.float64(1.0))
value, grads = outs[0], outs[joint.num_forward_outputs:]
grad_w, grad_b = grads[joint.grad_index[1]], grads[joint.grad_index[2]]
print(f"joint graph: loss {value:.6f}, max |joint - tape|: "
      f"w {np.abs(grad_w - w_t.grad).max():.1e}, b {np.abs(grad_b - b_t.grad).max():.1e}")
np.testing.assert_allclose(value, loss.data, rtol=1e-12)
np.testing.assert_allclose(grad_w, w_t.grad, rtol=1e-12, atol=1e-14)
np.testing.assert_allclose(grad_b, b_t.grad, rtol=1e-12, atol=1e-14)

compiled_loss.backward()
np.testing.assert_allclose(wc.grad, w_t.grad, rtol=1e-12, atol=1e-14)
np.testing.assert_allclose(bc.grad, b_t.grad, rtol=1e-12, atol=1e-14)
print("compiled forward/backward on the tape: same .grad as the eager tape")

doubled = joint.graph(*inputs, np.float64(2.0))[joint.num_forward_outputs:]
np.testing.assert_allclose(doubled[joint.grad_index[1]], 2 * w_t.grad, rtol=1e-12)

# %% [markdown]
# ## Functional by construction
#
# Before PyTorch's AOTAutograd traces a joint graph it runs
# **functionalization**: in-place updates (`x.add_(1)`) and views that alias
# them are rewritten into pure, out-of-place ops, because a partitioner that
# moves or recomputes a value must be sure nothing overwrote it in between.
# minicompile's IR has no in-place ops at all — every node makes a new value:
# capture has already functionalized the NumPy program's writes into arrays
# and their views (tutorial 15), and the joint graph is built from those
# same ops.  On the eager side, a write into an `mc.Tensor` — `h += 1`,
# `h[0] = v`, `np.copyto`, `np.add.at` — keeps the tensor object, as NumPy
# keeps the array, but gives it a new tape node (`copyto`, `setitem`) whose
# input is the old value: the tape nodes that read `h` before the write keep
# reading the old value, so the value the tape saved is never overwritten
# (torch counts versions of a tensor to refuse a backward that would read an
# overwritten value; here the old value is a tensor of its own).  A view
# taken before the write sees it, as in NumPy: each live view is taken again
# from the written tensor.

# %%
t = mc.Tensor(np.ones(3), requires_grad=True)
h = t * 2.0
before, view = h, h[1:]
reads_old = h * 1.0  # recorded before the write: reads the old value
h += 1.0
print("h += 1 wrote into h:", h is before, "| its view sees it:", view.data, "| the tape node:", h._node.op)
assert h is before and np.all(view.data == 3.0) and h._node.op == "copyto"
(h.sum() + reads_old.sum()).backward()
np.testing.assert_allclose(t.grad, 4.0 * np.ones(3))

# %% [markdown]
# ## Differentiating the backward again
#
# A derivative rule is written with registry ops, so the backward it builds
# is made of differentiable ops too.  `mc.grad` called on a tensor that is
# already on a tape (an outer `mc.grad` calls it so) applies the rules
# *to tensors*, recording the backward on the tape, exactly as torch's
# `backward(create_graph=True)`: the gradient it returns can be
# differentiated again.  `mc.hessian(f)` is `mc.jacobian(mc.grad(f))`
# (torch's `torch.func.hessian`), and a Hessian-vector product needs no
# Hessian at all: the gradient of <grad f(x), v>.

# %%
def energy(x):
    return np.sum(np.sin(x) * x ** 2)

x0 = np.array([0.3, -1.2, 2.0])
H = mc.hessian(energy)(x0)
by_hand = np.diag(-np.sin(x0) * x0 ** 2 + 4 * x0 * np.cos(x0) + 2 * np.sin(x0))
print("Hessian (diagonal: the terms do not mix):\n", np.round(H, 4))
np.testing.assert_allclose(H, by_hand, rtol=1e-12, atol=1e-12)

v = np.array([1.0, 2.0, -1.0])
hvp = mc.grad(lambda x: np.sum(mc.grad(energy)(x) * v))(x0)
np.testing.assert_allclose(hvp, by_hand @ v, rtol=1e-12)
print("Hessian-vector product without the Hessian:", np.round(hvp, 4))

# %% [markdown]
# torch.compile's compiled backward cannot be differentiated again (its
# AOTAutograd backward is opaque to autograd).  Ours can: differentiated a
# second time, a compiled region runs its backward as a graph of its own
# (primals and tangents in, gradients out), whose joint graph is built by the
# same rules and partitioned again.

# %%
compiled_energy = mc.compile(energy, backend="aot_eager")
np.testing.assert_allclose(mc.hessian(compiled_energy)(x0), by_hand, rtol=1e-12, atol=1e-12)
print("the compiled function's Hessian: the same")

# %% [markdown]
# ## The map
#
# | minicompile | PyTorch |
# | --- | --- |
# | `mc.Tensor`, its tape of `TapeNode`s, `backward()` | autograd: `grad_fn`, `next_functions`, `AccumulateGrad` |
# | `aot/derivatives.py`, `DERIVATIVES["tanh"]` | `tools/autograd/derivatives.yaml`, `tanh_backward` |
# | `EagerEmitter` / `GraphEmitter` | running a backward formula eagerly / tracing it under `make_fx` |
# | `build_joint_graph` → `JointGraph` | AOTAutograd's joint graph (`primals_*`, `tangents_*`) |
# | no in-place ops in `ir.Graph` (capture functionalizes, tutorial 15) | functionalization |
# | `mc.grad(mc.grad(f))`, `mc.hessian`, `mc.jacobian` | `create_graph=True`, `torch.func.hessian`, `torch.func.jacrev` |
#
# Next (07): the joint graph is one graph, but training runs it in two
# halves separated in time — and what the forward hands to the backward costs
# memory.  The min-cut partitioner chooses it.
