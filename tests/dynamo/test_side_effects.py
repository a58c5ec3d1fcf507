"""Side effects: what compiled code does to the caller's lists, dicts, objects and globals.

During a trace a mutation of an object the function did not create (``out.append``,
``cfg.steps += 1``, ``global CALLS``) changes only the interpreter's variable
trackers, so later reads in the same trace see the new value.  After the graph
has run, the compiled code *replays* them on the real objects, as the same
operations in the same order (TorchDynamo's SideEffects).  The caller must
observe exactly the state eager execution leaves behind — compared here object
by object — exactly once per call, without a graph break where nothing else is
unsupported, and with guards on no more of a list or dict than the trace read.
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


def list_remove(x, out):
    out.remove("b")
    out.remove(1)
    out.extend([1, "b"])  # so the next call finds them again
    return x * len(out)


def list_del_item_and_slice(x, out):
    del out[0]
    del out[-2:]
    return x + out[0]


def list_clear_then_append(x, out):
    out.clear()
    out.append(x * 2)
    return x * len(out)


def list_sort(x, out):
    out.sort(reverse=True)
    out.sort()
    return x * out[0]


def list_setitem_slice(x, out):
    out[1:3] = [x, "new", 7]
    return x


def list_insert_then_read(x, out):
    out.insert(0, "front")
    out.insert(100, "back")
    return x * len(out) if out[0] == "front" else x


def list_append_then_read_back(x, out):
    out.append(x * 2)
    out.append(3)
    return out[-2] + out.pop()


def list_pop_what_was_appended(x, out):
    out.append(x + 1)
    return out.pop() * 2


def dict_pop(x, d):
    a = d.pop("a")
    missing = d.pop("zz", 5)
    d["a"] = a + 1
    return x * (a + missing)


def dict_setdefault(x, d):
    old = d.setdefault("a", 100)
    new = d.setdefault("b", x * 2)
    return new + old


def dict_del(x, d):
    del d["a"]
    d["a"] = "back, last"
    return x


def dict_clear_popitem(x, d, e):
    d.clear()
    d["k"] = 1
    key, value = e.popitem()
    return x * value if key == "last" else x


def dict_update_keywords(x, d):
    d.update([("p", 1)], q=x)
    return x


def dict_membership_after_writes(x, d):
    d["new"] = 1
    del d["a"]
    seen = ("new" in d) + ("a" in d) + len(d)
    d["a"] = seen
    return x * seen


def dict_iterate_after_writes(x, d):
    d["b"] = 20
    d["c"] = 30
    total = 0
    for k, v in d.items():
        total = total + v
    return x * total


def attribute_delete(x, c):
    del c.label
    c.label = x.sum()  # for the next call to delete
    return x


def attribute_delete_then_set(x, c):
    c.count = c.count + 1
    del c.count
    c.count = 7
    return x * c.count


def global_list_extend(x):
    LOG.extend([1, 2])
    LOG.insert(0, "first")
    return x


def nested_list_of_the_callers(x, d):
    d["history"].append(x.sum())
    d["history"].pop(0)
    return x


def one_list_under_two_names_changed(x, a, b):
    a.append(1)
    b.append(2)
    return x * a[-1]


def labelled_counter() -> Counter:
    c = Counter()
    c.label = "old"
    return c


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


def pop_before_break_append_after(x, out):
    last = out.pop()
    print("popped", last)
    out.append(last * 10)
    return x * len(out)


def dict_changes_around_break(x, d):
    d.setdefault("s", 1)
    del d["a"]
    print("between", sorted(d))
    d["a"] = d.pop("b") + 1
    d["b"] = 0
    return x


def attribute_deleted_across_break(x, c):
    del c.label
    print("between")
    c.label = "new"
    return x


def list_changes_around_break(x, out):
    out.insert(1, 9)
    out.sort()
    print("between", out)
    del out[0]
    out.reverse()
    return x * out[0]


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
    Case(list_remove, lambda: (randn(2), ["a", "b", 1, "b", 1])),
    Case(list_del_item_and_slice, lambda: (randn(2), list(range(10)))),
    Case(list_clear_then_append, lambda: (randn(2), [1, 2])),
    Case(list_sort, lambda: (randn(2), [3, 1, 2])),
    Case(list_setitem_slice, lambda: (randn(2), [0, 1, 2, 3])),
    Case(list_insert_then_read, lambda: (randn(2), [1])),
    Case(list_append_then_read_back, lambda: (randn(2), ["old"])),
    Case(list_pop_what_was_appended, lambda: (randn(2), [1])),
    Case(dict_pop, lambda: (randn(2), {"a": 1, "b": 2})),
    Case(dict_setdefault, lambda: (randn(2), {"a": 1})),
    Case(dict_del, lambda: (randn(2), {"a": 1, "b": 2})),
    Case(dict_clear_popitem, lambda: (randn(2), {"a": 1}, {"first": 1, "x": 2, "y": 2, "last": 3})),
    Case(dict_update_keywords, lambda: (randn(2), {"a": 1})),
    Case(dict_membership_after_writes, lambda: (randn(2), {"a": 1, "b": 2})),
    Case(dict_iterate_after_writes, lambda: (randn(2), {"a": 1, "b": 2})),
    Case(attribute_delete, lambda: (randn(2), labelled_counter())),
    Case(attribute_delete_then_set, lambda: (randn(2), Counter())),
    Case(global_list_extend, lambda: (randn(2),)),
    Case(nested_list_of_the_callers, lambda: (randn(2), {"history": [1, 2, 3]})),
    Case(pop_before_break_append_after, lambda: (randn(2), [1, 2, 3]), breaks=1),
    Case(dict_changes_around_break, lambda: (randn(2), {"a": 1, "b": 2}), breaks=1),
    Case(attribute_deleted_across_break, lambda: (randn(2), labelled_counter()), breaks=1),
    Case(list_changes_around_break, lambda: (randn(2), [3, 1, 2]), breaks=1),
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
    compiled(randn(2), out)  # the list grew: still a cache hit (its length is not guarded)
    assert out == [1, "two", 1, "two"]
    out2 = []
    compiled(randn(2), out2)
    assert out2 == [1, "two"]
    assert len(compiled.cache) == 1


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
# Effects are replayed as operations, and guard only what the trace read
# ---------------------------------------------------------------------------

GROWING: list = []


def appends_to_a_global(x):
    GROWING.append(x.shape[0])
    return x * 2


def test_a_list_that_grows_between_calls_compiles_once():
    GROWING.clear()
    compiled = mc.compile(appends_to_a_global, backend="eager")
    for _ in range(20):
        compiled(randn(3))
    assert GROWING == [3] * 20
    assert len(compiled.cache) == 1
    guards = compiled.cache[0].guard.source
    assert "len(G['GROWING'])" not in guards and "G['GROWING'][" not in guards
    replay = compiled.cache[0].capture.break_plan.source
    assert "= G['GROWING']" in replay and ".append(" in replay  # one append per call, on the live list


def adds_one_once_it_has_history(x):
    if GROWING:
        x = x + 1
    GROWING.append(1)
    return x


def test_truth_of_a_growing_list_guards_only_its_emptiness():
    GROWING.clear()
    compiled = mc.compile(adds_one_once_it_has_history, backend="eager")
    x = randn(2)
    results = [compiled(x) for _ in range(10)]
    assert_same(results[0], x)
    assert_same(results[-1], x + 1)
    assert len(GROWING) == 10
    assert len(compiled.cache) == 2  # empty, then not empty: never one per length


def entry_of(fn: Callable, *args) -> Any:
    compiled = mc.compile(fn, backend="eager")
    compiled(*args)
    (entry,) = compiled.cache
    return entry


def test_replay_is_the_operations_not_a_rewrite():
    source = entry_of(list_insert_then_read, randn(2), [1]).capture.break_plan.source
    assert ".insert(0, 'front')" in source and ".insert(100, 'back')" in source
    assert "[:]" not in source and ".clear()" not in source
    source = entry_of(dict_del, randn(2), {"a": 1}).capture.break_plan.source
    assert "del ___" in source and "['a'] = 'back, last'" in source and ".update(" not in source


def reads_length(x, out):
    out.append(0)
    return x * len(out)


def reads_one_key(x, d):
    d["w"] = 1
    return x * d["scale"]


def test_reads_guard_what_they_read_and_no_more():
    guards = entry_of(reads_length, randn(2), [5, "five"]).guard.source
    assert "len(L['out']) == 2" in guards  # len() read the length (before the append) ...
    assert "L['out'][" not in guards  # ... and no item
    guards = entry_of(reads_one_key, randn(2), {"scale": 2.0, "other": [1]}).guard.source
    assert "'scale' in L['d']" in guards and "L['d']['scale'] == 2.0" in guards
    assert "'other'" not in guards and "tuple(L['d'])" not in guards and "'w'" not in guards


def appends_then_reads_other(x, a, b):
    a.append(1)
    return x * len(b)


def test_a_list_read_after_another_changed_must_stay_another():
    compiled = mc.compile(appends_then_reads_other, backend="eager")
    x = randn(2)
    a, b = [], []
    assert_same(compiled(x, a, b), x * 0)
    shared = []
    assert_same(compiled(x, shared, shared), x * 1)  # eager reads the append through b
    assert len(compiled.cache) == 2


def pops_then_breaks(x, out):
    top = out.pop()
    print("popped")
    return x * top


def test_value_popped_before_a_break_is_the_one_eager_popped(capsys):
    out, expected_out = [1, 2, 3], [1, 2, 3]
    x = randn(2)
    expected = pops_then_breaks(x, expected_out)
    assert_same(mc.compile(pops_then_breaks, backend="eager")(x, out), expected)
    assert out == expected_out


def test_del_of_a_missing_key_and_attribute_raise_as_eager():
    with pytest.raises(KeyError):
        mc.compile(dict_del, backend="eager")(randn(2), {"b": 1})
    with pytest.raises(AttributeError):
        mc.compile(attribute_delete, backend="eager")(randn(2), Counter())


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
