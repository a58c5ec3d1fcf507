"""minicompile.testing.programs: what each option draws, and check running drawn programs."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from minicompile.ir import passes
from minicompile.testing import assert_same, check, programs

WRITES = [" += ", " -= ", " *= ", "] = ", "out=", "np.copyto(", ".at(", ".fill(", ".sort("]
BREAK_CALLS = ["print(", "float(", ".item()", "bump(", "twice(", "peek("]


def drawn(strategy, n=60):
    found = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(strategy)
    def collect(program):
        found.append(program)

    collect()
    return found


def argument_arrays(program):
    args = program.arguments()
    found = []
    for a in args:
        items = vars(a).values() if hasattr(a, "__dict__") else a.values() if isinstance(a, dict) else \
            a if isinstance(a, list) else [a]
        found.append([x for x in items if isinstance(x, np.ndarray)])
    return found


def aliases(program) -> bool:
    """Do two arguments (or their members) share memory?"""
    groups = argument_arrays(program)
    return any(np.shares_memory(x, y) for i, g in enumerate(groups) for h in groups[i + 1:] for x in g for y in h)


def test_by_default_a_program_is_calls_over_independent_arrays():
    found = drawn(programs())
    for program in found:
        assert not any(w in program.source for w in WRITES + BREAK_CALLS), program
        assert not aliases(program) and all(isinstance(a, np.ndarray) for a in program.arguments())
        before = [a.copy() for a in program.arguments()]
        args = program.arguments()
        result = program.function()(*args)
        assert isinstance(result, tuple) and len(result) == 2
        for a, b in zip(args, before):  # nothing written
            np.testing.assert_array_equal(a, b)
    text = "\n".join(p.source for p in found)
    assert all(op in text for op in ["axis=", "keepdims=True", " + ", "np.concatenate("]), text


@pytest.mark.parametrize("option,marks,other", [("mutation", WRITES, "graph_breaks"),
                                                ("graph_breaks", BREAK_CALLS, "mutation")])
def test_each_option_draws_what_it_names_and_only_then(option, marks, other):
    with_it = "\n".join(p.source for p in drawn(programs(**{option: True}), 80))
    for mark in marks:
        assert mark in with_it, f"programs({option}=True) never draws {mark!r}"
    without = "\n".join(p.source for p in drawn(programs(**{other: True}), 80))
    assert not [m for m in marks if m in without], without


def test_aliasing_draws_arguments_that_share_memory_and_only_then():
    assert any(aliases(p) for p in drawn(programs(mutation=True, aliasing=True)))
    assert not any(aliases(p) for p in drawn(programs(mutation=True, graph_breaks=True)))


def test_printed_a_program_is_its_function_and_arguments():
    program = drawn(programs(mutation=True, aliasing=True, graph_breaks=True), 5)[-1]
    text = str(program)
    assert "def f(" in text and "def make_args():" in text
    namespace = {"np": np}
    exec("\n".join(line for line in text.splitlines() if not line.startswith("#")), namespace)
    assert callable(namespace["f"]) and len(namespace["make_args"]()[0]) == len(program.params)


def add_to_subtract(graph, example_inputs):
    return passes.rewrite(graph, lambda g, node, outputs: g.call("subtract", *node.args)
                          if node.op.name == "add" else None)


def changed_by_the_bug(program) -> bool:
    try:
        assert_same(program.function(), *program.arguments(), backend=add_to_subtract)
    except AssertionError:
        return True
    return False


def test_check_runs_drawn_programs_and_reproduces_a_failure():
    check(programs(), backends=("eager", "cpp"), max_examples=3, seed=0)
    check(programs(mutation=True, aliasing=True, graph_breaks=True), backends=("eager",), max_examples=10, seed=0)
    # A program the planted bug changes (check would find one too, and shrink it at length).
    adding = next(p for p in drawn(programs(), 40) if " + " in p.source and changed_by_the_bug(p))
    with pytest.raises(AssertionError) as info:
        check(st.just(adding), backends=(add_to_subtract,), max_examples=1)
    reproducer = str(info.value).split("Reproducer:\n")[1]
    assert adding.source in reproducer and "args, _ = make_args()" in reproducer
    with pytest.raises(AssertionError, match="differs from eager NumPy"):
        exec(reproducer, {"add_to_subtract": add_to_subtract})
    with pytest.raises(TypeError, match="draws the arguments too"):
        check(programs(), programs())
