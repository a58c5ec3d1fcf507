"""Writes into mc.Tensor values, with views of them kept, against NumPy and central differences.

An mc.Tensor written in place (``u[1:-1] = ...``, ``u += ...``) becomes a new
value on the tape; the ops that read it before keep the old one, and a view
of it taken before (``v = u[1:]``) sees the write, as in NumPy.  Hypothesis
writes programs from a table of such statements, with graph breaks between
any two, and checks on the tape alone and compiled on several backends: the
loss equals NumPy's on arrays, and the gradient of each input equals its
central difference.  Silent wrong answers of this kind once passed every
other test: a zero gradient for ``u[1:-1] = 0.5 * (u[:-2] + u[2:])`` (a cycle
on the tape), a view that missed ``u += w`` (``+=`` rebound the tensor), and
writes the trace kept in the graph although a dict, an attribute, a global
list or the tensor a view views would see them (the tape refuses the last:
compiled code must refuse it too); and views a compiled region returned, or
an argument it returned as itself, which later writes missed.
"""
from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.testing.gradients import central_differences

try:
    import triton  # noqa: F401
    BACKENDS: tuple[str, ...] = ("eager", "cpp", "triton")  # triton in its interpreter (conftest)
except ImportError:
    BACKENDS = ("eager", "cpp")

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 15)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

STATEMENTS = [
    "u[1:-1] = 0.5 * (u[:-2] + u[2:])",
    "u += w * 0.5",
    "u *= np.tanh(u)",
    "u[::2] = u[1::2] * w[::2]",
    "u -= v.sum() * 0.1",
    "v = u[1:]",
    "v = u.reshape(2, 3)[1]",
    "u = u * w",
    "u[0] = (v * v).sum()",
    "print(end='')",  # a graph break
    "v = u",  # another name for the same tensor: it sees u's writes
    "bump(u, w)",  # a write inside a called function reaches the caller's tensor
    "h = u * 2.0\nh += w\nu = u + h",  # a fresh value nothing else holds: written in the graph
    # Holders the trace must count (each once gave a silently wrong loss): a dict, an
    # object's attribute, a global list; and a write through a view, which the tape refuses.
    "d = {'a': u}\nd['a'] *= 1.5",
    "box = Box()\nbox.u = u\nbox.u += w",
    "HELD.append(u)\nHELD[-1] *= 1.5",
    "g = u[1:4]\ng *= 3.0",
    # Views a compiled region returns (and an argument it returns as itself): the tape links
    # them to their base, so that later writes reach them as NumPy's (they once missed them).
    "v = tail(u)",
    "v = row(u)",
    "u = same(u, w)",
]


def program(statements: list[str]) -> str:
    body = textwrap.indent("\n".join(statements), " " * 4)
    return (f"def f(u, w):\n    u = u * 1.0\n    v = u[2:]\n{body}\n"
            "    return (u * np.arange(1.0, 7.0)).sum() + (v * v).sum()\n")


def bump(x, w):
    x *= 1.5
    x += w


class Box:
    """An object the program stores a tensor on."""


REGIONS = {  # each compiled on its own, on the backend the program is compiled on
    "tail": lambda x: x[2:],
    "row": lambda x: x.reshape(2, 3)[::-1][0],
    "same": lambda x, w: x if w.sum() > 0 else x * 2.0,
}


def build(source: str, backend: str | None = None):
    regions = {k: f if backend is None else mc.compile(f, backend=backend) for k, f in REGIONS.items()}
    namespace = {"np": np, "bump": bump, "Box": Box, "HELD": [], **regions}
    exec(compile(source, "<in-place program>", "exec"), namespace)
    fn = namespace["f"]

    def run(*args):
        namespace["HELD"].clear()
        return fn(*args)
    return run


@SETTINGS
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=5))
def test_in_place_writes_to_tensors_match_numpy_and_central_differences(statements):
    source = program(statements)
    note(source)
    fn = build(source)
    rng = np.random.default_rng(1)
    u, w = rng.uniform(-1, 1, 6), rng.uniform(0.5, 1.0, 6)
    want = fn(u.copy(), w.copy())
    numeric = [central_differences(fn, [u, w], k) for k in range(2)]
    refused = None  # the tape refuses a write through a view: compiled code must refuse it too
    for backend in (None,) + BACKENDS:  # None: the tape alone
        mc.reset()
        U, W = mc.Tensor(u.copy(), requires_grad=True), mc.Tensor(w.copy(), requires_grad=True)
        try:
            loss = (fn if backend is None else mc.compile(build(source, backend), backend=backend))(U, W)
        except TypeError as e:
            assert backend is None or refused is not None, f"{backend}: {e}"
            refused = e
            continue
        assert refused is None, f"the tape refused ({refused}), {backend} gave {float(loss)}"
        np.testing.assert_allclose(float(loss), want, rtol=1e-12, err_msg=str(backend))
        loss.backward()
        for t, g in zip((U, W), numeric):
            got = np.zeros(6) if t.grad is None else t.grad  # (no path from w: no gradient)
            np.testing.assert_allclose(got, g, rtol=1e-6, atol=1e-7, err_msg=str(backend))


def test_in_place_operators_write_into_the_tensor():
    t = mc.Tensor(np.ones(3), requires_grad=True)
    h = t * 2.0
    view = h[1:]
    same = h
    h += 1.0
    assert h is same and np.all(view.data == 3.0)
    h.sum().backward()
    np.testing.assert_allclose(t.grad, np.full(3, 2.0))


def test_in_place_operators_follow_numpys_casting_and_shapes():
    h = mc.Tensor(np.ones(3, np.float32)) * 1.0
    h += np.ones(3)  # float64 into float32: 'same_kind' allows it, the dtype stays
    assert h.dtype == np.float32
    with pytest.raises(ValueError, match="non-broadcastable output"):
        h += np.ones((2, 3))
    k = mc.Tensor(np.ones(3, np.int64))
    with pytest.raises(TypeError, match="same_kind"):
        k += 1.5


def test_a_leaf_that_requires_grad_is_written_only_under_no_grad():
    w = mc.Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor"):
        w -= 0.1
    (w * w).sum().backward()
    with mc.no_grad():  # an optimizer's step
        w -= 0.1 * w.grad
    assert w.requires_grad and w._node is None
    np.testing.assert_allclose(w.data, np.full(3, 0.8))


def test_a_fresh_tensor_written_in_place_stays_in_the_graph():
    """``h += w`` on a value only ``h`` holds is its new value: no graph break."""
    def f(u, w):
        h = u * 2.0
        h += w
        h *= np.tanh(h)
        return h.sum()

    ex = mc.explain(f)(mc.Tensor(np.ones(4), requires_grad=True), mc.Tensor(np.ones(4)))
    assert ex.graph_break_count == 0


def test_a_write_to_a_tensor_another_name_holds_reaches_it():
    def f(u, w):
        u = u * 1.0
        alias = u
        u += w
        return alias.sum()

    u, w = np.arange(4.0), np.ones(4)
    for backend in BACKENDS:
        mc.reset()
        got = mc.compile(f, backend=backend)(mc.Tensor(u, requires_grad=True), mc.Tensor(w))
        assert float(got) == f(u.copy(), w) == 10.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_a_compiled_region_returns_sees_later_writes_into_its_base(backend):
    transposed = mc.compile(lambda h: h.T, backend=backend)
    c = np.arange(6.0).reshape(3, 2)

    def f(x):
        h = x * 1.0
        t = transposed(h)
        h *= 3.0  # t is a view of h, in NumPy: it sees this
        return (t * c).sum() + (h ** 2).sum()

    x = np.arange(6.0).reshape(2, 3) / 7
    X = mc.Tensor(x.copy(), requires_grad=True)
    loss = f(X)
    np.testing.assert_allclose(float(loss), f(x.copy()), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(X.grad, 3.0 * c.T + 18.0 * x, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_argument_a_compiled_region_returns_is_the_callers_tensor(backend):
    def f(x, w):
        return x, np.tanh(x * w)

    x, w = mc.Tensor(np.ones(3), requires_grad=True), mc.Tensor(np.ones(3))
    same, _ = mc.compile(f, backend=backend)(x, w)
    assert same is x
