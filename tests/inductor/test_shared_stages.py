"""What every backend shares: the graph passes before lowering, and the scheduler's
question to a backend about which lowered nodes it can generate as kernels."""
from __future__ import annotations

import numpy as np
import pytest

import minicompile as mc
from minicompile import ir
from minicompile.inductor import decompositions, loop_ir as L, scheduler
from minicompile.ir import TensorMeta

F32 = np.dtype(np.float32)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def tanh_exp_graph():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((8, 16), F32))
    t = g.call("tanh", g.call("multiply", x, 2.0))
    g.output([g.call("add", g.call("exp", t), 1.0)])
    return g


def test_a_node_the_backend_cannot_generate_becomes_an_extern_with_its_reason():
    def no_exp(node):
        return "no exp here" if any(isinstance(v, L.Op) and v.name == "exp" for v in L.walk(node.body)) else None

    s = scheduler.schedule(tanh_exp_graph(), [rand(8, 16)], cannot_generate=no_exp)
    externs = [step for step in s.steps if isinstance(step, L.Extern)]
    assert [(e.op_name, e.reason) for e in externs] == [("exp", "fallback: no exp here")]
    # The extern's input is realized, its consumer starts a kernel of its own.
    assert s.decisions["tanh"].startswith("realized: input of extern exp")
    assert len(s.kernels) == 2
    assert "extern exp = np.exp(...)  fallback: no exp here" in str(s)


def test_without_the_question_everything_that_lowers_is_a_kernel():
    s = scheduler.schedule(tanh_exp_graph(), [rand(8, 16)])
    assert not [step for step in s.steps if isinstance(step, L.Extern)] and len(s.kernels) == 1


def var_clip_graph():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((16, 40), F32))
    v = g.call("var", g.call("multiply", x, 1.0), axis=(1,), keepdims=False)
    g.output([g.call("clip", v, 0.0, 2.0), g.call("mean", x, axis=(1,), keepdims=False)])
    return g


def test_before_lowering_decomposes_simplifies_and_keeps_what_it_is_told():
    ops = lambda g: [n.op.name for n in g.calls]  # noqa: E731
    full = decompositions.before_lowering(var_clip_graph())
    assert not {"var", "clip", "mean"} & set(ops(full))
    assert ops(full).count("multiply") == 1  # the variance's square; x * 1 -> x
    kept = decompositions.before_lowering(var_clip_graph(), keep=("mean",))
    assert "mean" in ops(kept) and "var" not in ops(kept)
    plain = decompositions.before_lowering(var_clip_graph(), keep=tuple(decompositions.DECOMPOSITIONS),
                                           optimize=False)
    assert ops(plain) == ops(var_clip_graph())


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_every_backend_runs_the_decompositions(backend):
    if backend == "triton":
        pytest.importorskip("triton")

    def f(x):
        return np.clip(x.var(axis=1), 0.0, 2.0), np.std(x + 1.0, axis=0)

    x = rand(16, 40)
    compiled = mc.compile(f, backend=backend)
    for got, want in zip(compiled(x), f(x)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    entry = compiled.cache[0].compiled
    assert "extern" not in str(entry.schedule)  # var, std and clip run as generated kernels
