"""Side effects: what compiled code does to the caller's lists, dicts, objects and globals.

During a trace a mutation of an object the function did not create (``out.append``,
``cfg.steps += 1``, ``global CALLS``) changes only the interpreter's variable
trackers, so later reads in the same trace see the new value.  After the graph
has run, the compiled code *replays* the mutations on the real objects
(TorchDynamo's SideEffects).  The caller must observe exactly the state eager
execution leaves behind — compared here object by object — exactly once per
call, and, where the function has nothing else unsupported, without a graph
break.
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import minicompile as mc
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

RNG = np.random.default_rng(3)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)



# ---------------------------------------------------------------------------
# Objects the corpus mutates
# ---------------------------------------------------------------------------


class Counter:
    def __init__(self):
        self.count = 0
        self.w = np.ones(3)


@dataclass
class Config:
    scale: float = 1.5
    history: list = field(default_factory=list)
    name: str = "cfg"


# Globals written with ``global`` (reset before each comparison)
CALLS = 0
TOTAL = None
LOG: list = []


# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------

def list_append(x, out):
    out.append(x * 2)
    return x + 1


def list_append_constants(x, out):
    out.append(1)
    out.append("two")
    return x * 3


def list_extend(x, out):
    out.extend([x, x.sum(), 3])
    return x


def list_insert(x, out):
    out.insert(0, x - 1)
    out.insert(-1, "mid")
    return x


def list_pop(x, stack):
    top = stack.pop()
    first = stack.pop(0)
    return x * top + first


def list_setitem(x, out):
    out[0] = x * 2
    out[-1] = "last"
    return x


def list_reverse(x, out):
    out.reverse()
    return x * out[0]


def list_read_after_write(x, out):
    out.append(x * 2)
    out[0] = out[0] + 1
    return out[-1] + out[0]


def list_len_after_append(x, out):
    out.append(0)
    return x * len(out)


def dict_setitem(x, d):
    d["y"] = x + 1
    d["n"] = 3
    return x


def dict_update(x, d):
    d.update({"a": 10, "z": x * 2})
    return x


def dict_overwrite_keeps_order(x, d):
    d["a"] = x
    d["new"] = 1
    d["a"] = 2
    return x


def dict_get_after_write(x, d):
    d["w"] = x + 1
    return d.get("w") * 2


def dict_subscript_after_write(x, d):
    d["w"] = x + d["w"]
    return d["w"] * 2


def attribute_write(x, c):
    c.count = c.count + 1
    c.w = c.w * x
    return c.w.sum()


def attribute_new(x, c):
    c.label = "seen"
    c.last = x * 2
    return x


def attribute_read_after_write(x, c):
    c.count = 5
    return x * c.count


def dataclass_fields(x, cfg):
    cfg.scale = cfg.scale * 2
    cfg.history.append(cfg.scale)
    cfg.name = cfg.name + "!"
    return x * cfg.scale


def global_counter(x):
    global CALLS
    CALLS = CALLS + 1
    return x * CALLS


def global_array(x):
    global TOTAL
    TOTAL = x.sum(axis=0)
    return TOTAL * 2


def global_list_append(x):
    LOG.append(x.shape)
    return x


def global_read_after_write(x):
    global CALLS
    CALLS = 10
    return x + CALLS


def created_list_not_an_effect(x):
    tmp = []
    tmp.append(x)
    tmp.append(x * 2)
    return tmp


def effects_in_a_helper(x, out):
    record(out, x * 2)
    return x


def record(out, value):
    out.append(value)


def effects_in_a_method(x, c):
    c.bump()
    return x * c.count


def _bump(self):
    self.count = self.count + 1


Counter.bump = _bump


def several_containers(x, a, b, d):
    a.append(1)
    b.append(2)
    d["k"] = a[-1] + b[-1]
    return x


# Effects combined with graph breaks ---------------------------------------------------

def effect_before_break(x, out):
    out.append(x * 2)
    print("logged")
    return x + 1


def effect_after_break(x, out):
    y = x * 2
    print("logged")
    out.append(y)
    return y


def attribute_around_break(x, c):
    c.count = c.count + 1
    print("between")
    c.count = c.count + 1
    return x * c.count


def global_around_break(x):
    global CALLS
    CALLS = CALLS + 1
    print("between")
    CALLS = CALLS + 1
    return x * CALLS


@dataclass
class Case:
    fn: Callable
    make_args: Callable[[], tuple]
    breaks: int = 0
    id: str = ""
    marks: tuple = ()

    def __post_init__(self):
        self.id = self.id or self.fn.__name__


CORPUS = [
    Case(list_append, lambda: (randn(3), [])),
    Case(list_append_constants, lambda: (randn(2), ["zero"])),
    Case(list_extend, lambda: (randn(2), [0])),
    Case(list_insert, lambda: (randn(2), [1, 2])),
    Case(list_pop, lambda: (randn(2), [1, 2, 3, 4, 5, 6, 7])),
    Case(list_setitem, lambda: (randn(2), [0, 1, 2])),
    Case(list_reverse, lambda: (randn(2), [1, 2, 3])),
    Case(list_read_after_write, lambda: (randn(2), [5])),
    Case(list_len_after_append, lambda: (randn(2), [1, 2])),
    Case(dict_setitem, lambda: (randn(2), {"a": 1})),
    Case(dict_update, lambda: (randn(2), {"a": 1, "b": 2})),
    Case(dict_overwrite_keeps_order, lambda: (randn(2), {"b": 0, "a": 1})),
    Case(dict_get_after_write, lambda: (randn(2), {})),
    Case(dict_subscript_after_write, lambda: (randn(2), {"w": 0})),
    Case(attribute_write, lambda: (randn(3), Counter())),
    Case(attribute_new, lambda: (randn(3), Counter())),
    Case(attribute_read_after_write, lambda: (randn(3), Counter())),
    Case(dataclass_fields, lambda: (randn(2), Config())),
    Case(global_counter, lambda: (randn(2),)),
    Case(global_array, lambda: (randn(3, 2),)),
    Case(global_list_append, lambda: (randn(3, 2),)),
    Case(global_read_after_write, lambda: (randn(2),)),
    Case(created_list_not_an_effect, lambda: (randn(2),)),
    Case(effects_in_a_helper, lambda: (randn(2), [])),
    Case(effects_in_a_method, lambda: (randn(2), Counter())),
    Case(several_containers, lambda: (randn(2), [0], [], {})),
    Case(effect_before_break, lambda: (randn(2), []), breaks=1),
    Case(effect_after_break, lambda: (randn(2), []), breaks=1),
    Case(attribute_around_break, lambda: (randn(2), Counter()), breaks=1),
    Case(global_around_break, lambda: (randn(2),), breaks=1),
]

GLOBALS = ("CALLS", "TOTAL", "LOG")


def reset_globals() -> None:
    global CALLS, TOTAL, LOG
    CALLS, TOTAL = 0, None
    LOG[:] = []


def global_state() -> dict:
    return {name: copy.deepcopy(globals()[name]) for name in GLOBALS}


def run_three_times(fn: Callable, args: tuple, capsys) -> tuple[list, Any, dict, str]:
    """Three calls on the same argument objects: results, the arguments and globals after."""
    reset_globals()
    results = [fn(*args) for _ in range(3)]
    return results, args, global_state(), capsys.readouterr().out


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CORPUS])
def test_caller_sees_what_eager_leaves(case, capsys):
    args = case.make_args()
    # Calling three times on the same objects shows that effects happen once per call.
    expected = run_three_times(case.fn, copy.deepcopy(args), capsys)
    compiled = mc.compile(case.fn, backend="eager")
    got = run_three_times(compiled, copy.deepcopy(args), capsys)
    reset_globals()
    assert_same(got[0], expected[0], "results")
    assert_same(got[1], expected[1], "arguments")
    assert_same(got[2], expected[2], "globals")
    assert got[3] == expected[3], "printed output"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CORPUS])
def test_effects_need_no_graph_break(case, capsys):
    explanation = mc.explain(case.fn)(*case.make_args())
    reset_globals()
    assert explanation.graph_break_count == case.breaks, [str(r) for r in explanation.break_reasons]


def test_first_call_and_cache_hit_replay_the_same_effects():
    out = []
    compiled = mc.compile(list_append_constants, backend="eager")
    compiled(randn(2), out)
    compiled(randn(2), out)  # the list grew: a new guard fails, a new entry replays it too
    assert out == [1, "two", 1, "two"]
    out2 = []
    compiled(randn(2), out2)  # same length as the first call: a cache hit
    assert out2 == [1, "two"]


def test_effects_keep_the_callers_objects():
    out, d, c = [], {"a": 1}, Counter()
    ids = (id(out), id(d), id(c), id(c.w))
    mc.compile(list_append, backend="eager")(randn(2), out)
    mc.compile(dict_setitem, backend="eager")(randn(2), d)
    mc.compile(attribute_write, backend="eager")(randn(3), c)
    assert (id(out), id(d), id(c)) == ids[:3]  # mutated in place, never replaced
    assert len(out) == 1 and set(d) == {"a", "y", "n"} and c.count == 1


def test_global_written_is_read_by_the_next_call():
    reset_globals()
    compiled = mc.compile(global_counter, backend="eager")
    results = [compiled(np.ones(2)) for _ in range(3)]
    assert [r[0] for r in results] == [1.0, 2.0, 3.0]
    assert CALLS == 3
    reset_globals()


def test_replayed_values_are_computed_before_any_write():
    # d["k"] reads a[-1] and b[-1] as the trace saw them, before the lists are replaced.
    a, b, d = [0], [], {}
    mc.compile(several_containers, backend="eager")(randn(2), a, b, d)
    assert (a, b, d) == ([0, 1], [2], {"k": 3})


def test_fullgraph_accepts_side_effects():
    out = []
    compiled = mc.compile(list_append, backend="eager", fullgraph=True)
    x = randn(3)
    assert_same(compiled(x, out), x + 1)
    assert_same(out, [x * 2])


# ---------------------------------------------------------------------------
# Reads of what the trace itself wrote
# ---------------------------------------------------------------------------


def dict_item_after_write(x, d):
    d["w"] = x + 1
    return d["w"] * 2


def test_dict_subscript_after_write_needs_no_break():
    explanation = mc.explain(dict_item_after_write)(randn(2), {})
    assert explanation.graph_break_count == 0


# ---------------------------------------------------------------------------
# Known gaps
# ---------------------------------------------------------------------------


def list_in_place_add(x, out):
    out += [x]
    return x


def test_list_in_place_add_extends_the_callers_list():
    out, expected = [1], [1]
    x = randn(2)
    list_in_place_add(x, expected)
    mc.compile(list_in_place_add, backend="eager")(x, out)
    assert_same(out, expected)


def append_around_break(x, out):
    out.append("before")
    print("between")
    out.append("after")
    return x


def test_list_mutated_on_both_sides_of_a_break(capsys):
    out = []
    mc.compile(append_around_break, backend="eager")(randn(2), out)
    assert out == ["before", "after"]


def returns_its_list(x, out):
    out.append(1)
    return out


def test_returned_list_argument_is_the_same_object():
    out = []
    assert mc.compile(returns_its_list, backend="eager")(randn(2), out) is out


def writes_one_reads_other(x, c, d):
    c.count = 5
    return x * d.count


def test_one_object_under_two_names():
    c = Counter()
    x = randn(2)
    assert_same(mc.compile(writes_one_reads_other, backend="eager")(x, c, c), x * 5)


def dict_read_then_written_after_break(x, d):
    scale = d["scale"]
    print("between")
    d["seen"] = scale
    return x * scale


def test_dict_read_before_a_break_is_written_after_it(capsys):
    d, expected = {"scale": 2.0}, {"scale": 2.0}
    dict_read_then_written_after_break(randn(2), expected)
    mc.compile(dict_read_then_written_after_break, backend="eager")(randn(2), d)
    assert d == expected  # {"scale": 2.0, "seen": 2.0}


def appends_while_iterating(x, items):
    for v in items:
        if len(items) < 4:
            items.append(v)
        x = x + v
    return x


def test_loop_sees_items_appended_during_the_loop():
    x = randn(2)
    expected_items, items = [1, 2], [1, 2]
    expected = appends_while_iterating(x, expected_items)  # x + 1 + 2 + 1 + 2
    got = mc.compile(appends_while_iterating, backend="eager")(x, items)
    assert items == expected_items
    assert_same(got, expected)


def pops_from(x, items):
    return x * items.pop()


def test_pop_from_empty_list_is_eagers_error(monkeypatch):
    from minicompile import config

    monkeypatch.setattr(config, "strict", False)
    compiled = mc.compile(pops_from, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "internal error" warning
        with pytest.raises(IndexError):
            compiled(randn(2), [])
