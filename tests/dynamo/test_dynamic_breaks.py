"""Dynamic shapes survive graph breaks.

A function with a graph break is a graph, a transformed function and resume
functions.  When sizes change, each of them becomes dynamic on its own, as any
frame does: the graph before the break keeps its symbolic sizes (the code
after it reads the sizes it needs from the frame), and each resume function is
a frame whose own sizes go symbolic after its own size change.  So ten batch
sizes compile at most twice per frame and never hit the recompile limit; and
a number the break hands on (``print(loss.item())``) is guarded only if the
code after the break reads it.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.logs import set_logs
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

SIZES = range(3, 13)


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


def print_between(x, w):
    h = np.tanh(x @ w)
    print("between")
    return (h * 2).sum(axis=1), x.shape


def branch_on_data(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def helper_that_prints(h):
    print("in helper")
    return np.exp(h)


def breaks_in_a_helper(x):
    return helper_that_prints(x + 1) * 2


def logs_a_loss(x, w):
    loss = ((x @ w) ** 2).mean()
    print("loss", loss.item())
    return x - loss


def breaks_in_a_loop(x):
    for i in range(2):
        x = x + i
        print(i)
    return x


def all_frames(compiled) -> list:
    """The compiled function and every function its breaks handed work to."""
    frames, todo = [], [compiled]
    while todo:
        f = todo.pop()
        frames.append(f)
        todo.extend(f._handed.values())
    return frames


@pytest.mark.parametrize("backend", ["eager", "cpp"])
@pytest.mark.parametrize("fn, make_args", [
    (print_between, lambda n: (rand(n, 4), rand(4, 4, seed=1))),
    (branch_on_data, lambda n: (rand(n) + (1 if n % 2 else -1) * 10,)),
    (breaks_in_a_helper, lambda n: (rand(n, 2),)),
    (logs_a_loss, lambda n: (rand(n, 3), rand(3, 2, seed=2))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_ten_sizes_compile_each_frame_at_most_twice(fn, make_args, backend, capsys):
    compiled = mc.compile(fn, backend=backend)
    set_logs("recompiles")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # never the recompile limit
            for n in SIZES:
                args = make_args(n)
                assert_same(compiled(*args), fn(*args))
    finally:
        set_logs("")
    log = capsys.readouterr().err
    assert "symbolic sizes dropped" not in log
    frames = all_frames(compiled)
    assert len(frames) >= 2  # the function and at least one resume function or callee
    for frame in frames:
        assert len(frame.cache) <= 2, (frame, [str(e.capture.guards) for e in frame.cache])
    assert compiled.cache[-1].capture.break_plan is not None  # still resumes after the break
    assert any(e.capture.graph is not None and e.capture.graph.is_dynamic for f in frames for e in f.cache)


def test_the_graph_before_a_break_is_symbolic():
    compiled = mc.compile(print_between, backend="eager")
    for n in (3, 4):
        compiled(rand(n, 4), rand(4, 4))
    graph = compiled.cache[-1].capture.graph
    assert graph.is_dynamic and 'x: "f64[s0, 4]"' in str(graph)


def test_dynamic_true_makes_resume_functions_dynamic_from_the_start():
    compiled = mc.compile(print_between, backend="eager", dynamic=True)
    for n in SIZES:
        compiled(rand(n, 4), rand(4, 4))
    assert all(len(f.cache) == 1 for f in all_frames(compiled))


def test_a_value_only_passed_on_is_not_guarded():
    compiled = mc.compile(logs_a_loss, backend="eager")
    w = rand(3, 2)
    for seed in range(5):  # a different loss every call
        x = rand(4, 3, seed=seed)
        assert_same(compiled(x, w), logs_a_loss(x, w))
    resumes = [f for f in all_frames(compiled) if f.is_resume]
    # print(..., loss.item()) takes the value as it is; the code after reads the
    # NumPy scalar `loss`, a graph input: no resume function depends on the value.
    assert all(len(f.cache) == 1 for f in resumes)


def test_a_frame_that_runs_as_python_keeps_symbolic_guards():
    compiled = mc.compile(breaks_in_a_loop, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in SIZES:
            x = rand(n)
            assert_same(compiled(x), breaks_in_a_loop(x))
    assert len(compiled.cache) == 2
    assert compiled.cache[-1].capture.not_resumable  # a loop body: the frame runs as Python


def test_a_resume_function_is_shared_by_the_recompiles_of_its_function():
    compiled = mc.compile(print_between, backend="eager")
    for n in (3, 4, 5):
        compiled(rand(n, 4), rand(4, 4))
    resumes = [plan.namespace[k] for e in compiled.cache if (plan := e.capture.break_plan)
               for k in plan.namespace if k.startswith("___resume_at_")]
    assert len(resumes) == 2 and resumes[0] is resumes[1]


# -- property test: any sequence of sizes through a function with breaks --------------------------

@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=12),
       fn=st.sampled_from([print_between, branch_on_data, breaks_in_a_helper, logs_a_loss]))
def test_any_sequence_of_sizes_matches_eager(sizes, fn):
    makers = {print_between: lambda n: (rand(n, 4), rand(4, 4, seed=1)),
              branch_on_data: lambda n: (rand(n) + (1 if n % 2 else -1) * 10,),
              breaks_in_a_helper: lambda n: (rand(n, 2),),
              logs_a_loss: lambda n: (rand(n, 3), rand(3, 2, seed=2))}
    compiled = mc.compile(fn, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own, eager and compiled alike
        for n in sizes:
            args = makers[fn](n)
            assert_same(compiled(*args), fn(*args))
    # Sizes 1 (and 0) stay specialized; any other sizes share one dynamic entry.
    assert len(compiled.cache) <= 2 + len({n for n in sizes if n < 2})
