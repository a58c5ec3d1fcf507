"""Counted loops as one loop node (dynamo/loop_capture.py, ir/ops/control.py, inductor/loops.py).

Hypothesis writes loop bodies over two loop-carried arrays from a table of
statements — pointwise and reduction ops, index-dependent terms, in-place
slice stores, buffer rotation — and runs ``for i in range(n)`` around them
for n in 0, 1, 2 and a long count, on every backend (eager, cpp, triton in
its interpreter), against eager NumPy: same values, dtypes, kinds of result
and writes to the arguments.  The loop node must be in the graph (the unroll
limit is set to 0 here, so that short loops become nodes too) and the graph
must not grow with the trip count.  Gradients through a loop are checked
against central differences.  MINICOMPILE_TEST_EXAMPLES raises the count.
"""
from __future__ import annotations

import contextlib
import os
import re
import textwrap
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile import config

try:
    import triton  # noqa: F401
    BACKENDS: tuple[str, ...] = ("eager", "cpp", "triton")  # triton in its interpreter (conftest)
except ImportError:  # the capture-only environments of Python 3.12 and 3.13
    BACKENDS = ("eager", "cpp")
pytestmark = pytest.mark.capture  # loop capture reads bytecode: run on every Python version

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 12)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

STATEMENTS = [
    "u = u * 0.9 + v * 0.1",
    "v = np.tanh(v) + 0.5 * u",
    "u = u + i * 0.01",
    "v = v - v.mean()",
    "u = u / (1.0 + np.abs(u).max())",
    "u[1:-1] = 0.5 * (u[:-2] + u[2:])",
    "v += np.roll(u, 1) * (i % 3)",
    "un = u.copy()\nu[1:] = un[:-1] + 0.1 * v[1:]",
    "u, v = v, u",
    "v = np.where(v > 0, v, 0.1 * v) + np.float32(0.5)",
    "t = t * 0.5 + i * 0.01",  # a Python float that changes: carried by the loop
    "u = u * (1.0 - t * 0.001)\nt += 0.25",
]
# Python ints the body changes: carried, their arithmetic run at capture (loop_numbers.py).
INT_STATEMENTS = [
    "k = (k * 3 + i) % 1000\nu = u + k * 0.001",
    "u = u + p * 0.01\np = i",  # p is read before it is stored: the index of the iteration before
]


# A view of an argument taken before the loop (``w = u[1:-1]``), read and written in the
# body: each read sees u's latest writes.  (Reading it at the loop's head once replayed the
# view on the body's input in the graph before the loop: a crash, and a stale view.)
VIEW_STATEMENTS = [
    "u[i % 7] += w[i % 7] * 0.1",
    "w[i % 7] += 0.5",
]


FELL_BACK = ".*the compiled code of .* raised"  # minicompile's warning when it runs the function as Python


def writes_then_rebinds(statements: list[str]) -> bool:
    """An argument written in place and an array rebound in the body: eager NumPy may
    write the caller's array in the first iteration only, and the loop then unrolls."""
    lines = [line for s in statements for line in s.splitlines()]
    writes = any(line.startswith(("u[", "v[", "u +=", "v +=", "w[")) for line in lines)
    return writes and any(line.startswith(("u = ", "v = ", "u, v = ")) for line in lines)


def program(statements: list[str]) -> str:
    body = textwrap.indent("\n".join(statements), " " * 8)
    view = "    w = u[1:-1]\n" if any(s in VIEW_STATEMENTS for s in statements) else ""
    return f"def f(u, v, n):\n    t, k, p = 0.5, 0, 0\n{view}    for i in range(n):\n{body}\n    return u, v, t, k, p\n"


def build(source: str):
    namespace = {"np": np}
    exec(compile(source, "<loop program>", "exec"), namespace)
    return namespace["f"]


def graphs_of(fn, *args) -> list:
    graphs = []

    def backend(graph, example_inputs):
        graphs.append(graph)
        return graph

    mc.compile(fn, backend=backend)(*args)
    return graphs


def check(fn, backend: "str | Any", n: int, dtype, *more) -> None:
    """``fn(u, v, n, *more)`` compiled (``backend``: a name, or a function compiled
    already, which keeps its cache) against NumPy: results and arguments after the call."""
    rng = np.random.default_rng(0)
    u0, v0 = rng.standard_normal(9).astype(dtype), rng.standard_normal(9).astype(dtype)
    u, v = u0.copy(), v0.copy()
    compiled = mc.compile(fn, backend=backend) if isinstance(backend, str) else backend
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)  # a crash in compiled code fails the test
        got = compiled(u, v, n, *more)
    ue, ve = u0.copy(), v0.copy()
    want = fn(ue, ve, n, *more)
    tol = 1e-4 if dtype == np.float32 else 1e-9
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    np.testing.assert_allclose(u, ue, rtol=tol, atol=tol)  # writes to the arguments
    np.testing.assert_allclose(v, ve, rtol=tol, atol=tol)


@pytest.fixture
def every_loop_a_node(monkeypatch):
    monkeypatch.setattr(config, "loop_unroll_limit", 0)


@contextlib.contextmanager
def loops_as_nodes():
    """Every counted loop tried as a node, short ones too (hypothesis tests cannot take
    the function-scoped fixture above)."""
    old = config.loop_unroll_limit
    config.loop_unroll_limit = 0
    try:
        yield
    finally:
        config.loop_unroll_limit = old


@SETTINGS
@given(st.lists(st.sampled_from(STATEMENTS + INT_STATEMENTS + VIEW_STATEMENTS), min_size=1, max_size=4),
       st.sampled_from([np.float32, np.float64]))
def test_random_loop_bodies(statements, dtype):
    source = program(statements)
    note(source)
    fn = build(source)
    with loops_as_nodes():
        u, v = np.ones(9, dtype), np.ones(9, dtype)
        sizes = []
        for n in (3, 300):
            mc.reset()
            graphs = graphs_of(fn, u.copy(), v.copy(), n)
            assert len(graphs) <= 1  # none: the loop only renames the arguments (u, v = v, u)
            node = bool(graphs) and any(node.op.name == "loop" for node in graphs[0].calls)
            if not graphs:
                break
            assert node or writes_then_rebinds(statements)
            sizes.append(graphs[0].op_count())
        if len(sizes) == 2 and node:
            assert sizes[0] == sizes[1]  # the graph does not grow with the trip count
        for backend in BACKENDS:
            mc.reset()
            compiled = mc.compile(fn, backend=backend)  # one cache: the count becomes a symbol
            for n in (40, 41, 2, 0, 1, 57):
                check(fn, compiled, n, dtype)


INNER_STATEMENTS = STATEMENTS + INT_STATEMENTS + [
    "u = u + j * 0.01 - i * 0.001",  # the inner index and the outer one, read inside
    "v += np.roll(u, 1) * (j % 2)",
]


def nested_program(inner: list[str], outer: list[str]) -> str:
    inner_body = textwrap.indent("\n".join(inner), " " * 12)
    outer_body = textwrap.indent("\n".join(outer), " " * 8)
    return (f"def f(u, v, n, m):\n    t, k, p = 0.5, 0, 0\n    for i in range(n):\n        for j in range(m):\n{inner_body}\n"
            f"{outer_body}\n    return u, v, t, k, p\n")


def loop_depth(graph) -> int:
    """How deep loop nodes nest in ``graph`` (0: none)."""
    return max((1 + loop_depth(node.args[0]) for node in graph.calls if node.op.name == "loop"), default=0)


@SETTINGS
@given(st.lists(st.sampled_from(INNER_STATEMENTS), min_size=1, max_size=3),
       st.lists(st.sampled_from(STATEMENTS), min_size=0, max_size=2), st.sampled_from([np.float32, np.float64]))
def test_random_nested_loops(inner, outer, dtype):
    """A loop inside a loop body is a loop node of that body: the graph's size does not
    depend on either trip count, and every backend agrees with NumPy, writes included."""
    source = nested_program(inner, outer)
    note(source)
    fn = build(source)
    with loops_as_nodes():
        u, v = np.ones(9, dtype), np.ones(9, dtype)
        sizes = {}
        for n, m in ((3, 4), (30, 50)):
            mc.reset()
            graphs = graphs_of(fn, u.copy(), v.copy(), n, m)
            if graphs:
                sizes[n] = (loop_depth(graphs[0]), graphs[0].op_count())
        # (an int the inner loop changes starts from a value of the outer body, unknown at
        # capture, so its arithmetic cannot be run then: the inner loop unrolls)
        if len(sizes) == 2 and not writes_then_rebinds(inner + outer) and not set(inner) & set(INT_STATEMENTS):
            assert sizes[3] == sizes[30] and sizes[3][0] == 2, sizes  # two loop nodes, one inside the other
        for backend in BACKENDS:
            mc.reset()
            compiled = mc.compile(fn, backend=backend)  # one cache: the outer count becomes a symbol
            for n, m in ((3, 5), (4, 5), (0, 3), (2, 0), (7, 6)):
                check(fn, compiled, n, dtype, m)


def stencil(u, steps):
    for t in range(steps):
        un = u.copy()
        u[1:-1] = un[1:-1] + 0.1 * (un[2:] - 2 * un[1:-1] + un[:-2])
    return u


def test_long_loop_is_one_node_and_runs_in_cpp():
    u = np.linspace(0, 1, 64) ** 2
    ex = mc.explain(stencil)(u.copy(), 1000)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count < 20
    names = [n.op.name for n in ex.graphs[0].calls]
    assert "loop" in names
    compiled = mc.compile(stencil, backend="cpp")
    a, b = u.copy(), u.copy()
    np.testing.assert_allclose(compiled(a, 1000), stencil(b, 1000))
    np.testing.assert_allclose(a, b)


def test_short_loop_unrolls():
    ex = mc.explain(stencil)(np.ones(16), 3)
    assert not any(n.op.name == "loop" for n in ex.graphs[0].calls)


@pytest.mark.parametrize("body, why", [
    ("if i % 2 == 0:\n            u = u + 1", "branch"),
    ("hist.append(u.sum())", "list"),
    ("if u.sum() > 1e9:\n            break", "branch"),
    ("t = t + 0.5\n        u = u * t", "changes"),
])
def test_what_cannot_be_a_node_unrolls_and_stays_right(body, why):
    source = f"def f(u, n):\n    hist = []\n    t = 0.0\n    for i in range(n):\n        {body}\n    return u, hist\n"
    fn = build(source)
    u = np.linspace(0, 1, 8)
    got = mc.compile(fn, backend="eager")(u.copy(), 20)
    want = fn(u.copy(), 20)
    np.testing.assert_allclose(got[0], want[0])
    assert len(got[1]) == len(want[1])


def test_rotation_of_argument_buffers_writes_where_numpy_does():
    def f(a, b, n):
        for i in range(n):
            b[:] = a * 0.5 + 1
            a, b = b, a
        return a

    for n in (17, 18):
        x, y = np.arange(5.0), np.zeros(5)
        xe, ye = x.copy(), y.copy()
        r = mc.compile(f, backend="cpp")(x, y, n)
        re = f(xe, ye, n)
        np.testing.assert_allclose(r, re)
        np.testing.assert_allclose(x, xe)
        np.testing.assert_allclose(y, ye)


def test_index_is_a_python_int_for_dtypes():
    def f(x, n):
        for i in range(n):
            x = x * np.float32(0.5) + i  # a Python int meets float32: float32 (NEP 50)
        return x

    x = np.ones(4, np.float32)
    r = mc.compile(f, backend="cpp")(x, 30)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, f(x, 30), rtol=1e-6)


def test_gradient_through_a_loop_node():
    def f(u, w):
        for t in range(20):
            u = np.tanh(u * w) + 0.5 * u
        return u.sum()

    rng = np.random.default_rng(1)
    u, w = rng.random(5), rng.random(5)
    U, W = mc.Tensor(u.copy(), requires_grad=True), mc.Tensor(w.copy(), requires_grad=True)
    mc.compile(f, backend="cpp")(U, W).backward()
    eps = 1e-6
    for grad, point in ((U.grad, lambda e: (f(u + e, w) - f(u - e, w))), (W.grad, lambda e: (f(u, w + e) - f(u, w - e)))):
        numeric = np.array([point(eps * e) / (2 * eps) for e in np.eye(5)])
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_enumerate_over_an_array_with_a_break_compiles_once():
    def f(db):
        out = 0.0
        for idx, line in enumerate(db):
            print(end="")  # a graph break inside the loop
            out = out + line.sum() * idx
        return out

    db = np.random.default_rng(2).random((5, 4))
    compiled = mc.compile(f, backend="eager")
    for _ in range(10):
        result = compiled(db)
    assert len(compiled.cache) == 1
    np.testing.assert_allclose(result, f(db))


def test_python_builtins_of_the_index_unroll_and_keep_dtypes():
    def f(x, n):
        for i in range(n):
            x = x + abs(i - 5) + float(i)  # Python ints and floats in eager code: float32 stays
        return x

    x = np.ones(3, np.float32)
    r = mc.compile(f, backend="eager")(x, 20)
    assert r.dtype == f(x, 20).dtype == np.float32
    np.testing.assert_allclose(r, f(x, 20))


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_builtins_over_arrays_ndindex_ndenumerate_and_import(backend):
    def fold(x):
        return max(x), min(x), sum(x)  # Python's folds over the elements: a first NaN stays

    def indexed(x):
        import numpy
        from numpy import cos
        out = numpy.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            out[idx] = cos(x[idx]) * 2
        total = 0.0
        for idx, v in np.ndenumerate(x):
            total = total + v * idx[0]
        return out, total

    for fn, x in ((fold, np.array([np.nan, 1.0, 3.0, -1.0])), (fold, np.array([2.0, np.nan, 5.0], np.float32)),
                  (indexed, np.arange(6.0, dtype=np.float32).reshape(2, 3))):
        mc.reset()
        ex = mc.explain(fn)(x)
        assert ex.graph_count == 1 and ex.graph_break_count == 0
        got, want = mc.compile(fn, backend=backend)(x), fn(x)
        for g, w in zip(got, want):
            assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, equal_nan=True, rtol=1e-6)


def heat_1d(u, steps):
    t = -1
    for t in range(steps):
        u = u + 0.1 * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u, t


def rotate(a, steps):
    b = np.zeros_like(a)
    for t in range(steps):
        b[:] = a * 0.5 + 1
        a, b = b, a
    return a, b


def peeled(u, steps):
    acc = 0.0
    for t in range(steps):
        acc = acc + u  # a float before the loop, an array after its first iteration
    return acc


def from_three(u, steps):
    i = -5
    for i in range(3, steps):  # no iteration at all for steps <= 3: i keeps -5
        u = u * 0.5 + i
    return u, i


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [heat_1d, rotate, peeled, from_three])
def test_a_trip_count_that_changes_is_a_symbol_not_a_recompile(backend, fn):
    """A loop counting to an int argument: once the int has changed, one loop node counts
    ``s0`` times for every later value (0 and 1 stay specialized).  Before, every new
    count recompiled, and past the recompile limit the function ran eagerly; a rotation
    of buffers is guarded on the count's parity only."""
    compiled = mc.compile(fn, backend=backend)
    counts = (20, 21, 40, 0, 1, 2, 3, 57, 100, 101, 1000, 33, 34)
    for n in counts:
        x = np.linspace(0.0, 1.0, 7)
        got_arg, want_arg = x.copy(), x.copy()
        got, want = compiled(got_arg, n), fn(want_arg, n)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert type(g) is type(w) and np.shape(g) == np.shape(w)
            np.testing.assert_allclose(g, w, rtol=1e-12)
        np.testing.assert_array_equal(got_arg, want_arg)
    assert len(compiled.cache) <= 6, [str(e.capture.guards) for e in compiled.cache]  # 20, s0 (each parity), 0, 1
    assert any(e.capture.graph.is_dynamic for e in compiled.cache)


def test_a_symbolic_trip_count_is_pinned_where_a_gradient_writes_the_loop_out():
    def f(u, w, steps):
        for t in range(steps):
            u = np.tanh(u * w) + 0.5 * u
        return u.sum()

    compiled = mc.compile(f, backend="cpp")
    rng = np.random.default_rng(3)
    for steps in (18, 19, 20):
        u, w = rng.random(4), rng.random(4)
        W = mc.Tensor(w.copy(), requires_grad=True)
        compiled(u, W, steps).backward()
        eps = 1e-6
        numeric = [(f(u, w + eps * e, steps) - f(u, w - eps * e, steps)) / (2 * eps) for e in np.eye(4)]
        np.testing.assert_allclose(W.grad, numeric, rtol=1e-5, atol=1e-7)


def rotation_inside_a_loop(u, v, n, m):
    for i in range(n):
        for j in range(m):
            un = u.copy()
            u[1:] = un[:-1] + 0.1 * v[1:]
            u, v = v, u
    return u, v


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_a_rotation_in_a_nested_loop_writes_both_buffers_for_the_outer_loop(backend, every_loop_a_node):
    """Found by the nested-loop generator: an inner loop rotating ``u, v`` writes both
    memories (one in odd iterations), but the outer loop saw only the write its trace
    of one inner iteration made, kept ``v`` invariant and returned it unchanged."""
    for n, m in ((3, 6), (7, 6), (4, 5)):
        rng = np.random.default_rng(0)
        got_args, want_args = [rng.standard_normal(9) for _ in range(2)], None
        want_args = [a.copy() for a in got_args]
        mc.reset()
        got, want = mc.compile(rotation_inside_a_loop, backend=backend)(*got_args, n, m), \
            rotation_inside_a_loop(*want_args, n, m)
        for g, w in zip([*got, *got_args], [*want, *want_args]):
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_a_long_loop_body_is_one_node():
    """Found by the nested-loop generator: a body long enough that FOR_ITER's jump
    needs an EXTENDED_ARG has its back edge jump to that EXTENDED_ARG, which the
    trial took for a jump out of the loop, so every long body unrolled."""
    source = "def f(u, n):\n    for i in range(n):\n" + \
        "        u = u * 0.5 + np.abs(u - 1.0) / (1.0 + u * u)\n" * 30 + "    return u\n"
    fn = build(source)
    ex = mc.explain(fn)(np.ones(4), 40)
    assert [n.op.name for n in ex.graphs[0].calls].count("loop") == 1
    np.testing.assert_allclose(mc.compile(fn, backend="cpp")(np.ones(4), 40), fn(np.ones(4), 40))


class State:
    """What a simulation object holds: arrays and a clock, as attributes."""

    def __init__(self, u, v):
        self.u, self.v, self.t = u, v, 0.5


def on_attributes(statement: str) -> str:
    """A statement of STATEMENTS written on ``s.u``/``s.t`` (attributes of an object)."""
    return re.sub(r"\bt\b", "s.t", re.sub(r"\bu\b", "s.u", statement))


ATTRIBUTE_STATEMENTS = [on_attributes(s) for s in STATEMENTS]


@SETTINGS
@given(st.lists(st.sampled_from(ATTRIBUTE_STATEMENTS), min_size=1, max_size=4),
       st.none() | st.lists(st.sampled_from(ATTRIBUTE_STATEMENTS), max_size=2), st.sampled_from([np.float32, np.float64]))
def test_random_loop_bodies_on_attributes(statements, outer, dtype):
    """Loops that rebind or write attributes of an object (``s.u = ...``, ``s.u[1:] = ...``,
    ``s.t += 0.25``), alone or inside an outer loop with statements of its own: the
    attributes are carried by the loop node, stored once after it; the object's state
    afterwards, the arrays it held and the results all match NumPy."""
    body = textwrap.indent("\n".join(statements), " " * 8)
    source = f"def f(s, v, n):\n    for i in range(n):\n{body}\n    return s.u, v, s.t\n"
    if outer is not None:  # the loop inside another, three times round
        outer_body = textwrap.indent("\n".join(re.sub(r"\bi\b", "k", o) for o in outer), " " * 8)  # its own index
        source = (f"def f(s, v, n):\n    for k in range(3):\n        for i in range(n):\n{textwrap.indent(body, '    ')}\n"
                  f"{outer_body}\n    return s.u, v, s.t\n")
    note(source)
    fn = build(source)
    rng = np.random.default_rng(0)
    u0, v0 = rng.standard_normal(9).astype(dtype), rng.standard_normal(9).astype(dtype)
    with loops_as_nodes():
        for backend in BACKENDS:
            mc.reset()
            compiled = mc.compile(fn, backend=backend)
            for n in (30, 31, 0, 2):
                s, se = State(u0.copy(), v0.copy()), State(u0.copy(), v0.copy())
                held, held_e = s.u, se.u  # the array the object held before the call
                with warnings.catch_warnings():
                    warnings.filterwarnings("error", message=FELL_BACK)
                    got = compiled(s, s.v, n)
                want = fn(se, se.v, n)
                tol = 1e-4 if dtype == np.float32 else 1e-9
                for g, w in zip([*got, s.u, s.v, s.t, held], [*want, se.u, se.v, se.t, held_e]):
                    assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
                    np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
                assert (s.u is held) == (se.u is held_e) and (got[0] is s.u) == (want[0] is se.u)


class Simulation:
    def __init__(self):
        self.u, self.t, self.dt = np.linspace(0.0, 1.0, 16), 0.0, 0.01

    def step(self):
        self.u = self.u + self.dt * np.cos(self.t) * (np.roll(self.u, 1) - self.u)
        self.u[0] = 0.0
        self.t += self.dt

    def run(self, steps):
        for _ in range(steps):
            self.step()
        return self.u


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_method_stepping_its_attributes_is_one_loop_node(backend):
    """``self.u = ...`` and ``self.t += dt`` in a loop used to unroll it ("the loop body
    changes a Python object"): they are now values the loop node carries."""
    sim = Simulation()
    ex = mc.explain(sim.run)(200)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count < 10
    assert "loop" in [n.op.name for n in ex.graphs[0].calls]
    got_sim, want_sim = Simulation(), Simulation()
    got, want = mc.compile(got_sim.run, backend=backend)(200), want_sim.run(200)
    assert got is got_sim.u and type(got_sim.t) is float
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got_sim.t == want_sim.t  # the clock, bit for bit


class Sweeps(Simulation):
    def sweeps(self, outer, inner):
        for _ in range(outer):
            for _ in range(inner):
                self.step()
            self.u = self.u - self.u.mean()
        return self.u


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("outer", [2, 20])
def test_loops_of_a_method_stepping_its_attributes_inside_a_loop(backend, outer):
    """An inner loop carrying ``self.u`` and ``self.t`` inside an outer loop that sets
    ``self.u`` too.  The body's first store of ``self.u`` replaced the outer store just
    before the loop in the log (two stores in a row of one attribute keep the last),
    so the second inner loop left ``self.u`` at a value of its body: a crash inside the
    compiled code, run as Python.  And the outer loop unrolled: the inner loop's stores
    stayed counted after it took them out of the log."""
    got_sim, want_sim = Sweeps(), Sweeps()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)
        got = mc.compile(got_sim.sweeps, backend=backend)(outer, 30)
    want = want_sim.sweeps(outer, 30)
    assert got is got_sim.u and got_sim.t == want_sim.t
    np.testing.assert_allclose(got, want, rtol=1e-12)
    ex = mc.explain(Sweeps().sweeps)(20, 30)
    assert ex.graph_count == 1 and ex.op_count < 10  # the outer loop is a node too


def test_an_array_of_the_callers_written_in_place_in_a_loop_body_stays_right():
    """An attribute or dict item first read in the body and written in place: it was a
    crash inside the compiled code (a write-back of a body's node); an attribute is
    now carried, anything else unrolls."""
    class Holder:
        def __init__(self):
            self.u = np.zeros(5)

        def run(self, n):
            for i in range(n):
                self.u[1:] += 1.0
            return self.u

    def in_dict(d, n):
        for i in range(n):
            d["u"][1:] += 1.0
        return d["u"]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to Python
        h = Holder()
        held = h.u
        assert mc.compile(h.run, backend="cpp")(20) is held
        np.testing.assert_array_equal(held, [0, 20, 20, 20, 20])
        d = {"u": np.zeros(5)}
        held = d["u"]
        assert mc.compile(in_dict, backend="cpp")(d, 20) is held
        np.testing.assert_array_equal(held, [0, 20, 20, 20, 20])


def rows_decayed(x, y):
    acc = np.zeros(x.shape[1])
    for row in x:
        acc = acc * 0.9 + row
    return acc, row  # the last row: a view of x, as eager's


def rows_zipped(x, y):
    acc = np.zeros(x.shape[1])
    for a, b in zip(x, y[::-1]):
        acc = acc + a * b
    return acc, a, b


def rows_enumerated(x, y):
    acc = np.zeros(x.shape[1])
    for i, row in enumerate(x[::2]):
        acc = acc + row * i
    return acc, i


def elements_summed(x, y):
    s = 0.0
    for v in x[:, 0]:  # NumPy scalars
        s = s + v * 2
    return s


def rows_written_through(x, y):
    for row in x:
        row *= 2  # a write through the view: the loop unrolls
    return x


def rows_while_the_array_changes(x, y):
    acc = np.zeros(x.shape[1])
    for row in x:
        x[:, 0] += 1  # eager's later rows see it: the loop unrolls
        acc = acc + row
    return acc


def last_row_written_after_the_loop(x, y):
    acc = np.zeros(x.shape[1])
    for row in x:
        acc = acc + row
    row[0] = -5.0  # reaches x, as eager's view does
    return x, acc


ROW_LOOPS = {rows_decayed: True, rows_zipped: True, rows_enumerated: True, elements_summed: True,
             rows_written_through: False, rows_while_the_array_changes: False,
             last_row_written_after_the_loop: True}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", list(ROW_LOOPS), ids=lambda f: f.__name__)
def test_a_loop_over_an_arrays_rows_is_one_node(fn, backend):
    """``for row in x``, ``zip(x, y)`` and ``enumerate(x)`` over a long first axis: one
    loop node that takes each row at the loop's index (50 rows gave 150 ops before).  A
    write through a row or to the array iterated unrolls; a row kept after the loop is
    the view of the last row that eager holds."""
    def arrays():
        return np.arange(200.0).reshape(50, 4), np.linspace(1.0, 2.0, 240).reshape(60, 4)

    graph = mc.explain(fn)(*arrays()).graphs[0]
    assert ("loop" in [n.op.name for n in graph.calls]) == ROW_LOOPS[fn]
    got_args, want_args = arrays(), arrays()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)
        got = mc.compile(fn, backend=backend)(*got_args)
    want = fn(*want_args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert type(g) is type(w)
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for g, w in zip(got_args, want_args):
        np.testing.assert_array_equal(g, w)


ROW_STATEMENTS = [
    "u = u * 0.9 + row",
    "v = v - row * 0.5 + u.mean()",
    "u = np.tanh(u + row.sum() * 0.01)",
    "u = np.where(row > 0, u, -u)",
    "t = t + 0.25",
    "u = u + prev\nprev = row",  # read before it is stored: the row of the iteration before
    "v = v + 0.01 * i * row",  # the count enumerate hands out (0 throughout without one)
]
ROW_HEADERS = {"rows": "for row in x:", "enumerate": "for i, row in enumerate(x):",
               "zip": "for row, other in zip(x, y):", "enumerate_from": "for i, row in enumerate(x, start=5):"}


@SETTINGS
@given(st.sampled_from(sorted(ROW_HEADERS)), st.lists(st.sampled_from(ROW_STATEMENTS), min_size=1, max_size=3),
       st.integers(1, 40))
def test_random_loops_over_rows(header, statements, n):
    """Random bodies over an array's rows (``for row in x``, ``enumerate``, ``zip``): one
    loop node where the rows are only read, and results, the arrays iterated and the
    last row kept after the loop agree with NumPy on every backend."""
    body = textwrap.indent("\n".join(statements), " " * 8)
    source = (f"def f(x, y):\n    u, v, t, prev, i = np.zeros(4), np.ones(4), 0.5, 0.0, 0\n    {ROW_HEADERS[header]}\n{body}\n"
              "    return u, v, t, row, i\n")
    note(source)
    fn = build(source)

    def arrays():
        rng = np.random.default_rng(n)
        return rng.standard_normal((n, 4)), rng.standard_normal((n + 3, 4))

    with loops_as_nodes():
        graph = mc.explain(fn)(*arrays()).graphs[0]
        # (prev = row, read first: the loop runs its first iteration, then unrolls)
        assert "loop" in [node.op.name for node in graph.calls] or any("prev = row" in s for s in statements)
        for backend in BACKENDS:
            mc.reset()
            got_args, want_args = arrays(), arrays()
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=FELL_BACK)
                got = mc.compile(fn, backend=backend)(*got_args)
            want = fn(*want_args)
            for g, w in zip(got, want):
                assert type(g) is type(w)
                np.testing.assert_allclose(g, w, rtol=1e-12)
            assert np.shares_memory(got[3], got_args[0]) == np.shares_memory(want[3], want_args[0])
            for g, w in zip(got_args, want_args):
                np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_taken_before_the_loop_reads_and_writes_the_carried_array(backend):
    """``v = u[1:-1]`` before a loop node, written and read in its body: every read sees the
    body's writes to u (the view was once replayed on the body's input in the graph before
    the loop: the compiled code crashed)."""
    def smooth(u):
        v = u[1:-1]
        for i in range(20):
            v[i % 6] += 1
            u[i % 7] += v[i % 6] * 0.5
        return u

    u = np.arange(8.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=FELL_BACK)
        got = mc.compile(smooth, backend=backend)(u.copy())
    np.testing.assert_array_equal(got, smooth(u.copy()))
