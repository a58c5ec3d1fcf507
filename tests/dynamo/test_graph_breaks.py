"""Graph breaks: compiled code that stops, runs Python for real, and resumes.

Every function in ``CORPUS`` breaks the graph somewhere — a ``print``, a call
minicompile does not know, ``.item()``, a branch on an array value, an in-place
update through a view — and each line that breaks carries a ``# BREAK`` marker.
Each function runs plain and compiled (``backend="eager"``, and ``"cpp"`` for
a subset), twice, and the two runs must agree on:

* the return value (type, dtype, shape, values),
* the arguments afterwards (an array updated in place before or after a break,
  a list appended to),
* what was printed (a side effect happens once per call, not once more
  while tracing).

``mc.explain`` must report a break at every ``# BREAK`` line and nowhere else;
where the frame can be resumed the code after the break gets a graph of its
own, and where it cannot (a loop body, a try/with block) the frame runs
eagerly and says so.  ``fullgraph=True`` refuses the first break instead.
"""
from __future__ import annotations

import copy
import dis
import inspect
import sys
import threading
import types
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import minicompile as mc
from minicompile.logs import set_logs
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

RNG = np.random.default_rng(7)


# ---------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------



def marked_lines(fn: Callable, marker: str = "# BREAK") -> list[int]:
    """Absolute line numbers of the lines of ``fn``'s source that carry ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    return [first + i for i, text in enumerate(lines) if marker in text]


def randn(*shape: int, dtype=np.float64) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def positive(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, shape)


# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------

# print or an unknown call in the middle ---------------------------------------

def print_in_middle(x):
    y = x * 2
    print("y =", y)  # BREAK
    return np.tanh(y) + 1


def unknown_call_in_middle(x, word):
    y = np.exp(x)
    code = ord(word)  # BREAK
    return y * code


def unknown_call_then_reduce(x):
    y = x + 1
    h = hash((1, 2))  # BREAK
    return (y * (h % 7)).sum(axis=0)


def prints_twice_same_line(x):
    y = x - 1
    print(y.shape, y.dtype)  # BREAK
    return y


# Values that leave the graph -----------------------------------------------------

def item_then_array_work(x):
    total = x.sum().item()  # BREAK
    return x * total + 1


def item_in_python_arithmetic(x):
    total = x.sum()
    return total.item() + 1  # BREAK


def tolist_returned(x):
    return (x * 2).tolist()  # BREAK


def tolist_then_len(x):
    values = (x + 1).tolist()  # BREAK
    return x * len(values)


def float_of_reduction(x):
    m = float(x.max())  # BREAK
    return x / m


# Branches on array values ---------------------------------------------------------

def branch_returns(x):
    y = x * 2
    if y.sum() > 0:  # BREAK
        return y + 1
    return y - 1


def branch_merges(x):
    y = np.exp(x)
    if x.mean() > 0:  # BREAK
        y = y * 2
    else:
        y = y / 2
    return y.sum(axis=-1)


def branch_on_comparison_and_flag(x, flag):
    y = x + 1
    if flag and (y.max() > 1):  # BREAK
        return y
    return -y


def loops_on_array_value(x):
    while x.sum() < 100:  # BREAK
        x = x * 2
    return x


def for_loop_with_print(x):
    for i in range(3):
        x = x + i
        print("step", i)  # BREAK
    return x


# In-place updates of arrays, around a break and as the break ---------------------------

def in_place_add_argument(x):
    y = x * 2
    x += 1
    print("updated")  # BREAK
    return x + y


def in_place_on_local(x):
    y = x * 2
    print("before")  # BREAK
    y *= x
    return y - 1


def setitem_argument(x):
    y = x * 3
    x[0] = 5
    print("set")  # BREAK
    return x + y


def setitem_local_after_break(x):
    y = np.exp(x)
    print("before")  # BREAK
    y[1] = 0.0
    x[-1] = y[0]
    return y * 2


def in_place_through_a_view(x):
    v = x[1:]
    v += 1  # a write through a view: captured, no break
    print("wrote")  # BREAK
    v[0] = -1.0  # v is rebuilt as a view of x after the break
    return x * 2


def overlapping_assignment(x):
    x[1:] = x[:-1]
    print("shifted")  # BREAK
    x[:-1] = x[1:]
    return x + 1


def ternary_on_array_value(x):
    return x + 1 if x.sum() > 0 else -x  # BREAK


def short_circuit_on_arrays(x):
    return (x.sum() > 0) and (x.max() < 10)  # BREAK


# Values left on the stack at the break -------------------------------------------------

def pair(a, b):
    return a, b


def break_inside_call_arguments(x, y):
    return pair(x * 2, print(y))  # BREAK


def break_inside_list_display(a, b, c):
    return [a * 2, print(b), c + 1]  # BREAK


def break_inside_tuple_display(a, b):
    return (a + 1, ord("z"), b * 3)  # BREAK


def break_inside_dict_display(a, b):
    return {"a": a * 2, "n": ord("a"), "b": b - 1}  # BREAK


def break_inside_numpy_call(x, y):
    return np.add(x * 2, float(y.sum()))  # BREAK


def break_inside_expression(x):
    return x * 2 + ord("b") * x  # BREAK


# Breaks in callees ---------------------------------------------------------------------

def broken_helper(z):
    w = z + 1
    print("in helper")  # BREAK
    return w * 2


def calls_broken_helper(x):
    a = np.exp(x)
    b = broken_helper(a)
    return b - 1


class Layer:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        y = x @ self.w
        print("layer")  # BREAK
        return np.maximum(y, 0)


def calls_broken_method(layer, x):
    h = layer.forward(x * 2)
    return h.sum(axis=1)


# Several breaks -------------------------------------------------------------------------

def three_breaks(x):
    a = x + 1
    print("a")  # BREAK
    b = a * 2
    print("b")  # BREAK
    c = b - 3
    print("c")  # BREAK
    return c


def break_then_branch(x):
    y = x * 2
    print("y")  # BREAK
    if y.sum() > 0:  # BREAK
        return y
    return -y


def two_prints_on_one_line(x):
    y = x + 1
    print("a"); print("b")  # BREAK
    return y * 2


def deleted_local_before_break(x):
    y = x * 2
    z = y + 1
    del y
    print("deleted")  # BREAK
    return z


class Model:
    def __init__(self, w):
        self.w = w

    def outer(self, x):
        return self.inner(x * 2) + 1

    def inner(self, x):
        print("deep")  # BREAK
        return x * self.w


def calls_nested_methods(model, x):
    return model.outer(x) - 1


# Breaks where the frame cannot resume -------------------------------------------------

def make_closure():
    k = 3.0

    def closure_with_print(x):
        y = x * k
        print("closure")  # BREAK
        return y + 1

    return closure_with_print


closure_with_print = make_closure()


def break_in_lambda(x):
    f = lambda v: print("lambda") or v * 2  # BREAK  # noqa: E731
    return f(x) + 1


def break_in_comprehension(x):
    return [print(i) or x * i for i in range(2)]  # BREAK

def break_in_try(x):
    try:
        y = x * 2
        print("try")  # BREAK
    except ValueError:
        y = x
    return y + 1


# A context manager written in C (a Python one is traced: tests/dynamo/test_user_classes.py).
CONTEXT = threading.Lock()


def break_at_with(x):
    with CONTEXT:  # BREAK
        y = x * 2
    return y + 1


# Return paths after a break -------------------------------------------------------------

def early_return_after_break(x, flag):
    y = x * 2
    print("checking")  # BREAK
    if flag:
        return y
    z = y + 1
    return z * 3


def returns_from_both_arms(x):
    y = np.tanh(x)
    if y.max() > 0.5:  # BREAK
        return "big", y * 2
    return "small", y


# Keywords, *args and **kwargs at the broken call ---------------------------------------

def keywords_at_break(x):
    y = x * 2
    print("shape", y.shape, sep="|", end="!\n")  # BREAK
    return y + 1


def star_args_at_break(x, *args, **kwargs):
    y = x * 2
    print(*args, **kwargs)  # BREAK
    return y + len(args)


def unpacked_list_at_break(x, words):
    y = x - 1
    print(*words, sep=",")  # BREAK
    return y


# Side effects on the caller's objects around a break -------------------------------------

def appends_around_break(x, out):
    y = x * 2
    out.append("before")
    print("middle")  # BREAK
    out.append("after")
    return y


def appends_array_then_break(x, out):
    out.append(x + 1)
    print("logged")  # BREAK
    return x * 2


@dataclass
class Case:
    fn: Callable
    make_args: Callable[[], tuple]
    kwargs: dict = field(default_factory=dict)
    graphs: int | None = None  # expected explain().graph_count, where it is version-independent
    resumes: bool | None = True  # False: the frame that breaks runs eagerly
    cpp: bool = False          # also run through the cpp backend
    id: str = ""
    compare_marks: tuple = ()  # on the tests that compare with eager
    explain_marks: tuple = ()  # on the tests of what explain reports

    def __post_init__(self):
        self.id = self.id or self.fn.__name__

    def break_lines(self) -> list[int]:
        # A break in a callee is marked in the callee; the caller's break is reported there too.
        fns = [self.fn] + [v for v in self.fn.__globals__.values()
                           if isinstance(v, types.FunctionType) and v.__name__ in self.fn.__code__.co_names]
        if "layer" in inspect.signature(self.fn).parameters:
            fns.append(Layer.forward)
        if "model" in inspect.signature(self.fn).parameters:
            fns.append(Model.inner)
        return sorted({line for f in fns for line in marked_lines(f)})


CORPUS = [
    Case(print_in_middle, lambda: (randn(3),), graphs=2, cpp=True),
    Case(unknown_call_in_middle, lambda: (randn(4), "a"), graphs=2),
    Case(unknown_call_then_reduce, lambda: (randn(3, 2),), graphs=2, cpp=True),
    Case(prints_twice_same_line, lambda: (randn(2, 2),), graphs=1),
    Case(item_then_array_work, lambda: (randn(5),), graphs=2),
    Case(item_in_python_arithmetic, lambda: (randn(5),), graphs=1),
    Case(tolist_returned, lambda: (randn(3),), graphs=1),
    Case(tolist_then_len, lambda: (randn(3),), graphs=2),
    Case(float_of_reduction, lambda: (positive(4),), graphs=2),
    Case(branch_returns, lambda: (positive(3),), graphs=2, id="branch_returns-true", cpp=True),
    Case(branch_returns, lambda: (-positive(3),), graphs=2, id="branch_returns-false"),
    Case(branch_merges, lambda: (positive(2, 3),), graphs=2, id="branch_merges-true"),
    Case(branch_merges, lambda: (-positive(2, 3),), graphs=2, id="branch_merges-false", cpp=True),
    Case(branch_on_comparison_and_flag, lambda: (positive(3), True), id="branch_and_flag-true"),
    Case(branch_on_comparison_and_flag, lambda: (randn(3) - 5, True), id="branch_and_flag-false"),
    # 3.11 tests a while condition once before the loop (that test resumes); the test at the
    # bottom of the loop body, and 3.12+'s only test, run the frame eagerly.
    Case(loops_on_array_value, lambda: (positive(3),), resumes=None),
    Case(for_loop_with_print, lambda: (randn(3),), graphs=0, resumes=False),
    Case(in_place_add_argument, lambda: (randn(3),), graphs=2, cpp=True),
    Case(in_place_on_local, lambda: (randn(3),), graphs=2),
    Case(setitem_argument, lambda: (randn(3),), graphs=2),
    Case(setitem_local_after_break, lambda: (randn(3),), graphs=2),
    Case(in_place_through_a_view, lambda: (randn(4),), graphs=2, cpp=True),
    Case(overlapping_assignment, lambda: (randn(5),), graphs=2),
    Case(ternary_on_array_value, lambda: (positive(3),), graphs=2, id="ternary-true"),
    Case(ternary_on_array_value, lambda: (-positive(3),), graphs=2, id="ternary-false"),
    # 3.11 spells `and` with JUMP_IF_FALSE_OR_POP (the frame runs eagerly); 3.12+ resumes.
    Case(short_circuit_on_arrays, lambda: (positive(3),), resumes=None, id="short_circuit-true"),
    Case(short_circuit_on_arrays, lambda: (-positive(3),), resumes=None, id="short_circuit-false"),
    Case(break_inside_call_arguments, lambda: (randn(2), randn(2)), graphs=1),
    Case(break_inside_list_display, lambda: (randn(2), randn(2), randn(2)), graphs=2),
    Case(break_inside_tuple_display, lambda: (randn(2), randn(2)), graphs=2),
    Case(break_inside_dict_display, lambda: (randn(2), randn(2)), graphs=2),
    Case(break_inside_numpy_call, lambda: (randn(3), randn(3)), graphs=2),
    Case(break_inside_expression, lambda: (randn(3),), graphs=2),
    Case(calls_broken_helper, lambda: (randn(3),), graphs=4),
    Case(calls_broken_method, lambda: (Layer(randn(3, 2)), randn(4, 3)), graphs=4, cpp=True),
    Case(three_breaks, lambda: (randn(3),), graphs=3),
    Case(break_then_branch, lambda: (positive(3),), graphs=2, id="break_then_branch-true"),
    Case(break_then_branch, lambda: (-positive(3),), graphs=3, id="break_then_branch-false"),
    Case(two_prints_on_one_line, lambda: (randn(2),), graphs=2),
    Case(deleted_local_before_break, lambda: (randn(2),), graphs=1),
    Case(calls_nested_methods, lambda: (Model(randn(2)), randn(2)), graphs=4, cpp=True),
    Case(closure_with_print, lambda: (randn(2),), graphs=0, resumes=False),
    Case(break_in_lambda, lambda: (randn(2),), graphs=0, resumes=False),
    Case(break_in_comprehension, lambda: (randn(2),), graphs=0, resumes=False),
    Case(break_in_try, lambda: (randn(3),), graphs=0, resumes=False),
    Case(break_at_with, lambda: (randn(3),), graphs=0, resumes=False),
    Case(early_return_after_break, lambda: (randn(3), True), graphs=1, id="early_return-true"),
    Case(early_return_after_break, lambda: (randn(3), False), graphs=2, id="early_return-false"),
    Case(returns_from_both_arms, lambda: (randn(4) + 3,), graphs=2, id="both_arms-big"),
    Case(returns_from_both_arms, lambda: (randn(4) - 3,), graphs=1, id="both_arms-small"),
    Case(keywords_at_break, lambda: (randn(2),), graphs=2),
    Case(star_args_at_break, lambda: (randn(2), 1, "two"), {"sep": "-", "end": "."}, graphs=2),
    Case(unpacked_list_at_break, lambda: (randn(2), ["a", "b"]), graphs=1),
    Case(appends_around_break, lambda: (randn(2), []), graphs=1),
    Case(appends_array_then_break, lambda: (randn(2), [1]), graphs=2),
]


def run_twice(fn: Callable, args: tuple, kwargs: dict, capsys) -> tuple[list, list, str]:
    """Two calls on fresh copies of ``args``: (results, arguments afterwards, stdout)."""
    results, after = [], []
    for _ in range(2):
        call_args = copy.deepcopy(args)
        results.append(fn(*call_args, **kwargs))
        after.append(list(call_args))
    return results, after, capsys.readouterr().out


def case_params(cases, backend=None, compare=False, explain=False):
    return [pytest.param(c, id=c.id, marks=(c.compare_marks if compare else ())
                         + (c.explain_marks if explain else ()))
            for c in cases if backend is None or c.cpp]


@pytest.mark.parametrize("case", case_params(CORPUS, compare=True))
def test_compiled_matches_eager(case, capsys):
    args = case.make_args()
    expected, expected_args, expected_out = run_twice(case.fn, args, case.kwargs, capsys)
    compiled = mc.compile(case.fn, backend="eager")
    got, got_args, got_out = run_twice(compiled, args, case.kwargs, capsys)
    assert_same(got, expected, "results")
    assert_same(got_args, expected_args, "arguments after the call")
    assert got_out == expected_out  # printed once per call, never while tracing
    assert len(compiled.cache) == 1  # the second call hit the cache


@pytest.mark.parametrize("case", case_params(CORPUS, "cpp", compare=True))
def test_cpp_backend_matches_eager(case, capsys):
    args = case.make_args()
    expected, expected_args, expected_out = run_twice(case.fn, args, case.kwargs, capsys)
    compiled = mc.compile(case.fn, backend="cpp")
    got, got_args, got_out = run_twice(compiled, args, case.kwargs, capsys)
    assert_same(got, expected, "results")
    assert_same(got_args, expected_args, "arguments after the call")
    assert got_out == expected_out


@pytest.mark.parametrize("case", case_params(CORPUS, explain=True))
def test_explain_reports_every_break_line(case, capsys):
    explanation = mc.explain(case.fn)(*case.make_args(), **case.kwargs)
    reported = sorted({r.lineno for r in explanation.break_reasons})
    assert reported == case.break_lines(), [str(r) for r in explanation.break_reasons]
    assert explanation.graph_break_count == len(explanation.break_reasons) >= 1
    assert all(r.filename == __file__ for r in explanation.break_reasons)
    if case.graphs is not None:
        assert explanation.graph_count == case.graphs, str(explanation)


@pytest.mark.parametrize("case", case_params(CORPUS))
def test_resume_or_eager_fallback_is_as_expected(case, capsys):
    compiled = mc.compile(case.fn, backend="eager")
    compiled(*case.make_args(), **case.kwargs)
    capture = compiled.cache[0].capture
    assert capture.break_reason is not None
    if case.resumes is None:
        return
    if case.resumes:
        assert capture.break_plan is not None and capture.not_resumable is None
    else:
        assert capture.break_plan is None and capture.not_resumable


def test_corpus_is_large_enough():
    assert len({c.fn for c in CORPUS}) >= 30


@pytest.mark.parametrize("case", case_params(CORPUS))
def test_fullgraph_names_the_first_break(case):
    compiled = mc.compile(case.fn, backend="eager", fullgraph=True)
    with pytest.raises(mc.GraphBreakError) as info:
        compiled(*case.make_args(), **case.kwargs)
    # The first break the trace meets is the first marked line in execution order:
    # in the callee for a helper, else the earliest line of the function.
    assert info.value.reason.lineno in case.break_lines()
    first_frame = {calls_broken_helper: broken_helper, calls_broken_method: Layer.forward,
                   calls_nested_methods: Model.inner}.get(case.fn, case.fn)
    assert info.value.reason.lineno == min(marked_lines(first_frame))
    assert f":{info.value.reason.lineno}" in str(info.value)


# ---------------------------------------------------------------------------
# What a break produces
# ---------------------------------------------------------------------------


def test_code_after_the_break_has_its_own_graph():
    explanation = mc.explain(print_in_middle)(randn(3))
    assert explanation.ops_per_graph == [["multiply"], ["tanh", "add"]]


def test_both_sides_of_a_branch_compile_lazily():
    compiled = mc.compile(branch_returns, backend="eager")
    x = positive(3)
    assert_same(compiled(x), branch_returns(x))
    resume = compiled.cache[0].capture.break_plan.namespace
    fns = {name: f for name, f in resume.items() if name.startswith("___resume_at_")}
    assert len(fns) == 2  # one resume function per side
    assert sorted(len(f.cache) for f in fns.values()) == [0, 1]  # only the side taken is traced
    assert_same(compiled(-x), branch_returns(-x))
    assert sorted(len(f.cache) for f in fns.values()) == [1, 1]
    assert len(compiled.cache) == 1  # the branch itself costs no recompile


def test_transformed_function_source_calls_graph_then_resume():
    compiled = mc.compile(print_in_middle, backend="eager")
    compiled(randn(3))
    source = compiled.cache[0].capture.break_plan.source
    assert source.startswith("def transformed(L, G):")
    assert "___graph(" in source and "___resume_at_" in source
    assert source.index("___graph(") < source.index("___resume_at_")


def test_resume_function_is_real_bytecode_of_the_original():
    compiled = mc.compile(print_in_middle, backend="eager")
    compiled(randn(3))
    namespace = compiled.cache[0].capture.break_plan.namespace
    (resume,) = [f for name, f in namespace.items() if name.startswith("___resume_at_")]
    code = resume.fn.__code__
    assert code.co_filename == print_in_middle.__code__.co_filename
    ops = [i.opname for i in dis.get_instructions(code)]
    assert ops[0] == "RESUME" and "JUMP_FORWARD" in ops
    # Its parameters: every local of the original frame, then the stack slots.
    assert code.co_varnames[:2] == print_in_middle.__code__.co_varnames[:2]


def test_broken_method_is_compiled_on_its_own():
    layer, x = Layer(randn(3, 2)), randn(4, 3)
    explanation = mc.explain(calls_broken_method)(layer, x)
    ops = [op for graph in explanation.ops_per_graph for op in graph]
    assert "matmul" in ops and "maximum" in ops  # the method's own graphs
    assert explanation.graph_count >= 2


def test_broken_helper_is_compiled_on_its_own():
    explanation = mc.explain(calls_broken_helper)(randn(3))
    ops = [op for graph in explanation.ops_per_graph for op in graph]
    assert ops.count("add") == 1 and "exp" in ops and "subtract" in ops


@pytest.mark.parametrize("fn", [for_loop_with_print, pytest.param(
    loops_on_array_value)])
def test_loop_break_is_reported_as_eager_frame(fn, capsys):
    set_logs("graph_breaks")
    try:
        x = positive(3)
        assert_same(mc.compile(fn, backend="eager")(x.copy()), fn(x.copy()))
    finally:
        set_logs("")
    log = capsys.readouterr().err
    assert "running the function eagerly" in log and "loop" in log


def grows_until_large(x):
    while x.sum() < 1e6:
        x = x * 1.01
    return x


def resume_depth(compiled) -> int:
    """How many resume functions deep the cache of ``compiled`` goes."""
    depth, frontier = 0, [compiled]
    while frontier:
        depth += 1
        frontier = [fn for f in frontier for entry in f.cache if entry.capture.break_plan
                    for name, fn in entry.capture.break_plan.namespace.items()
                    if name.startswith("___resume_at_")]
    return depth


def test_while_loop_on_array_value_does_not_nest_a_resume_per_iteration():
    x = np.full(3, 3e5)  # about ten iterations
    compiled = mc.compile(grows_until_large, backend="eager")
    assert_same(compiled(x), grows_until_large(x))
    assert resume_depth(compiled) <= 2


def test_in_place_update_mutates_the_callers_array_each_call():
    x = np.zeros(3)
    compiled = mc.compile(in_place_add_argument, backend="eager")
    r1 = compiled(x)
    r2 = compiled(x)
    np.testing.assert_array_equal(x, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(r1, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(r2, [4.0, 4.0, 4.0])


def test_setitem_is_visible_through_a_view():
    base = np.arange(6.0)
    view = base[1:4]
    compiled = mc.compile(setitem_argument, backend="eager")
    expected_base = base.copy()
    setitem_argument(expected_base[1:4])
    compiled(view)
    np.testing.assert_array_equal(base, expected_base)


def test_new_branch_value_recompiles_nothing_but_the_resume():
    compiled = mc.compile(item_then_array_work, backend="eager")
    for x in (np.ones(3), np.full(3, 2.0), np.ones(3)):
        assert_same(compiled(x), item_then_array_work(x))
    assert len(compiled.cache) == 1
    namespace = compiled.cache[0].capture.break_plan.namespace
    (resume,) = [f for name, f in namespace.items() if name.startswith("___resume_at_")]
    assert len(resume.cache) == 2  # the .item() value is a guarded constant of the resume


def normalize_with_log(x):
    total = x.sum()
    print("normalizing")
    return x / total


def test_reduction_live_across_a_break_is_not_specialized_on_its_value(capsys):
    compiled = mc.compile(normalize_with_log, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no recompile-limit warning
        for _ in range(10):
            x = positive(3)
            assert_same(compiled(x), normalize_with_log(x))
    namespace = compiled.cache[0].capture.break_plan.namespace
    (resume,) = [f for name, f in namespace.items() if name.startswith("___resume_at_")]
    assert len(resume.cache) == 1


# ---------------------------------------------------------------------------
# fullgraph=True
# ---------------------------------------------------------------------------


def test_fullgraph_error_names_the_first_of_several_breaks():
    compiled = mc.compile(three_breaks, backend="eager", fullgraph=True)
    with pytest.raises(mc.GraphBreakError) as info:
        compiled(randn(3))
    first = marked_lines(three_breaks)[0]
    assert info.value.reason.lineno == first
    assert "print" in info.value.reason.reason


def test_fullgraph_runs_nothing_before_raising(capsys):
    out = []
    compiled = mc.compile(appends_around_break, backend="eager", fullgraph=True)
    with pytest.raises(mc.GraphBreakError):
        compiled(randn(2), out)
    assert out == [] and capsys.readouterr().out == ""


def test_fullgraph_still_compiles_a_function_without_breaks():
    def clean(x):
        return np.tanh(x) * 2

    x = randn(3)
    assert_same(mc.compile(clean, backend="eager", fullgraph=True)(x), clean(x))


# ---------------------------------------------------------------------------
# Known gaps with silently different results
# ---------------------------------------------------------------------------


def reads_list_then_breaks(x, out):
    n = len(out)
    print("n =", n)  # BREAK
    out.append(n)
    return x * 2


def test_list_read_before_the_break_is_mutated_after_it(capsys):
    expected_out, got_out = [1, 2], [1, 2]
    reads_list_then_breaks(randn(2), expected_out)
    mc.compile(reads_list_then_breaks, backend="eager")(randn(2), got_out)
    assert got_out == expected_out  # [1, 2, 2]


def keeps_list_identity(x, out):
    alias = out
    print("alias")  # BREAK
    return alias is out


def test_list_identity_survives_the_break(capsys):
    assert mc.compile(keeps_list_identity, backend="eager")(randn(2), [1]) is True
