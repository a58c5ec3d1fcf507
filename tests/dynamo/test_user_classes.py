"""The Python people write around their arrays, captured with no graph break.

Objects called through ``__call__``, user classes made inside traced code
(``__init__`` inlined, the object built after the graph where it outlives the
trace), named tuples and dataclasses (``_replace``, ``dataclasses.replace``),
``super()``, inherited and overridden methods, properties, class and static
methods, ``isinstance``/``issubclass``/``type(x) is``, builtins over Python
values, dict views, ``with np.errstate(...)`` and Python context managers,
``try/except/finally`` when nothing is raised, and ``assert``.  Each program is
one graph without a break (``mc.explain``), and compiled equals eager on the
eager and cpp backends: results, arguments afterwards, objects' state.  A
property test draws class hierarchies and ways of calling them.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from dynamo_testing import assert_same, run_against_eager

pytestmark = pytest.mark.capture


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


# -- the classes the programs use ---------------------------------------------------------------

class Linear:
    def __init__(self, w, b=None):
        self.w = w
        self.b = b if b is not None else np.zeros(w.shape[1])

    def __call__(self, x):
        return x @ self.w + self.b


class Stack:
    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = np.tanh(layer(x))
        return x


LAYER = Linear(rand(4, 3), rand(3))


class Scaler:
    def __init__(self, k, offset=0.0):
        self.k = k
        self.offset = offset

    def apply(self, x):
        return x * self.k + self.offset


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm(self):
        return np.sqrt(self.x * self.x + self.y * self.y)


class State(NamedTuple):
    h: np.ndarray
    c: np.ndarray
    step: int = 0

    def total(self):
        return self.h + self.c


@dataclass
class Config:
    scale: float
    shift: float = 0.0
    tags: list = field(default_factory=list)

    def __post_init__(self):
        self.tags.append("made")


@dataclass(frozen=True)
class Frozen:
    a: np.ndarray
    k: float = 2.0


class Base:
    kind = "base"

    def __init__(self, k):
        self.k = k

    def f(self, x):
        return x * self.k

    def g(self, x):
        return self.f(x) + 1

    @property
    def twice(self):
        return self.k * 2

    @classmethod
    def build(cls, k):
        return cls(k)

    @staticmethod
    def shift(x):
        return x - 1


class Middle(Base):
    def __init__(self, k):
        super().__init__(k + 1)
        self.m = 0.5

    def f(self, x):
        return super().f(x) + self.m


class Leaf(Middle):
    kind = "leaf"

    def f(self, x):
        return super().f(x) * 2


class Box:
    def __init__(self, value):
        self._value = value

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, new):
        self._value = new * 1.0


class Lazy:
    def __init__(self):
        self.known = 1.0

    def __getattr__(self, name):
        return len(name) * 1.0


class Timer:
    def __init__(self):
        self.entered = 0
        self.exited = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        self.exited += 1
        return False


# -- the programs ---------------------------------------------------------------------------------

def calls_a_global_layer(x):
    return LAYER(x) + 1


def calls_layers_in_a_list(model, x):
    return model(x)


def makes_an_object_it_uses(x):
    scaler = Scaler(2.0, offset=1.0)
    return scaler.apply(x)


def returns_a_new_object(x):
    return Point(x * 2, x + 1)


def stores_new_objects_in_an_argument(x, out):
    out.append(Point(x, -x))
    out.append(Point(x, -x).norm())
    return x


def one_object_twice(x):
    p = Point(x * 2, x)
    return p, [p, x]


def makes_a_named_tuple(x):
    return State(np.tanh(x), x * 2)


def named_tuple_methods(x, s):
    t = State(x, x + 1, step=s.step + 1)
    u = t._replace(c=t.c * 3)
    h, c, step = u
    d = s._asdict()
    return (u.total() + s.total() + d["h"] + h * step, len(u), u[1], State._make([c, h, 0]),
            isinstance(u, tuple), type(u) is State, s._replace(step=5).step)


def makes_dataclasses(x):
    c = Config(2.0)
    d = dataclasses.replace(c, shift=1.0)
    f = Frozen(x)
    g = dataclasses.replace(f, k=3.0)
    return x * c.scale + d.shift, c.tags, g.a * g.k, g


def replaces_a_dataclass_argument(x, cfg):
    new = dataclasses.replace(cfg, scale=cfg.scale * 2)
    return x * new.scale + new.shift, new


def super_and_overrides(x):
    leaf = Leaf(1.0)
    middle = Middle.build(2.0)
    return leaf.f(x), leaf.g(x), middle.f(x), Base(3.0).g(x)


def properties_class_and_static_methods(x, obj):
    box = Box(x)
    box.value = x + 1
    return (box.value + obj.twice + obj.shift(x) + Base.shift(x) + obj.build(2.0).f(x),
            obj.kind, Leaf.kind)


def types_of_things(x, obj, items):
    checks = (isinstance(obj, Base), isinstance(obj, Middle), issubclass(Leaf, Base), type(obj) is Leaf,
              isinstance(x, np.ndarray), isinstance(items, list), type(items) is list,
              isinstance(State(x, x), tuple), isinstance(Config(1.0), Config), type(x) is np.ndarray)
    return x * sum(checks), checks


def builtins_over_python_values(x, weights):
    total = 0.0
    for i, (a, b) in enumerate(zip(weights, reversed(weights)), start=1):
        total += i * a * b
    order = sorted(weights, reverse=True)
    flags = any(w > 2 for w in weights), all(w > 0 for w in weights)
    return x * total + min(weights) + max(weights) + sum(weights), order, flags


def dict_views(x, table):
    scaled = {k: v * 2 for k, v in table.items()}
    keys = [k for k in table.keys() if k != "skip"]
    return x * sum(scaled.values()) + len(keys), sorted(scaled), list(table.values())


def with_errstate(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) / x
    return y


def with_a_python_context_manager(x, timer):
    with timer as t:
        y = x * 2
    with Timer() as inner:
        y = y + inner.entered
    return y, t is timer


def try_except_finally(x):
    done = []
    try:
        y = x + 1
    except ValueError:
        y = x
    else:
        y = y * 2
    finally:
        done.append(1)
    return y, done


def asserts_on_python_values(x, n, names):
    assert n > 0, "n must be positive"
    assert isinstance(names, list) and names
    return x * n


def getattr_fallback(x, lazy):
    return x * lazy.known + lazy.abc


def calls_a_partial_and_a_compiled_function(x):
    return SCALE_BY_3(x) + COMPILED_DOUBLE(x)


def scale(x, k):
    return x * k


SCALE_BY_3 = functools.partial(scale, k=3.0)
COMPILED_DOUBLE = mc.compile(lambda x: x * 2, backend="eager")
SCALER = Scaler(0.5, offset=2.0)
APPLY = SCALER.apply  # a bound method held as a value
APPLY_LATER = functools.partial(Scaler(4.0).apply)


def calls_bound_methods_held_as_values(x):
    return APPLY(x) + APPLY_LATER(x)

PROGRAMS = {
    "calls_a_global_layer": (calls_a_global_layer, lambda: (rand(2, 4),)),
    "calls_layers_in_a_list": (calls_layers_in_a_list,
                               lambda: (Stack(Linear(rand(4, 5)), Linear(rand(5, 3))), rand(2, 4))),
    "makes_an_object_it_uses": (makes_an_object_it_uses, lambda: (rand(3),)),
    "returns_a_new_object": (returns_a_new_object, lambda: (rand(3),)),
    "stores_new_objects_in_an_argument": (stores_new_objects_in_an_argument, lambda: (rand(3), [1])),
    "one_object_twice": (one_object_twice, lambda: (rand(3),)),
    "makes_a_named_tuple": (makes_a_named_tuple, lambda: (rand(3),)),
    "named_tuple_methods": (named_tuple_methods, lambda: (rand(3), State(rand(3, seed=1), rand(3, seed=2), 4))),
    "makes_dataclasses": (makes_dataclasses, lambda: (rand(3),)),
    "replaces_a_dataclass_argument": (replaces_a_dataclass_argument, lambda: (rand(3), Config(1.5, 0.5))),
    "super_and_overrides": (super_and_overrides, lambda: (rand(3),)),
    "properties_class_and_static_methods": (properties_class_and_static_methods,
                                            lambda: (rand(3), Leaf(2.0))),
    "types_of_things": (types_of_things, lambda: (rand(3), Leaf(1.0), [1, 2])),
    "builtins_over_python_values": (builtins_over_python_values, lambda: (rand(3), [1.0, 3.0, 2.0])),
    "dict_views": (dict_views, lambda: (rand(3), {"a": 1.0, "skip": 2.0, "b": 0.5})),
    "with_errstate": (with_errstate, lambda: (np.array([0.0, 1.0, -1.0, 2.0]),)),
    "with_a_python_context_manager": (with_a_python_context_manager, lambda: (rand(3), Timer())),
    "try_except_finally": (try_except_finally, lambda: (rand(3),)),
    "asserts_on_python_values": (asserts_on_python_values, lambda: (rand(3), 2, ["a"])),
    "getattr_fallback": (getattr_fallback, lambda: (rand(3), Lazy())),
    "calls_a_partial_and_a_compiled_function": (calls_a_partial_and_a_compiled_function, lambda: (rand(3),)),
    "calls_bound_methods_held_as_values": (calls_bound_methods_held_as_values, lambda: (rand(3),)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_captured_whole(name):
    fn, make_args = PROGRAMS[name]
    explanation = mc.explain(fn)(*make_args())
    assert explanation.graph_break_count == 0, str(explanation)
    assert explanation.graph_count == 1, str(explanation)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_compiled_matches_eager(name, backend):
    fn, make_args = PROGRAMS[name]
    compiled = run_against_eager(lambda: fn, make_args, backend)
    assert len(compiled.cache) == 1


def test_a_new_object_is_built_once_and_shared():
    p, (q, _) = mc.compile(one_object_twice, backend="eager")(rand(3))
    assert p is q and type(p) is Point


def test_a_frozen_dataclass_made_in_the_trace_is_frozen():
    *_, g = mc.compile(makes_dataclasses, backend="eager")(rand(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.k = 1.0


def test_the_objects_a_with_block_uses_change_as_eager():
    timer = Timer()
    mc.compile(with_a_python_context_manager, backend="eager")(rand(3), timer)
    assert (timer.entered, timer.exited) == (1, 1)


# -- identity of the caller's objects ------------------------------------------------------------

def same_object(a, b, x):
    return x + 1 if a is b else x - 1


def test_is_between_arguments_is_guarded():
    compiled = mc.compile(same_object, backend="eager")
    one, other, x = Point(1, 2), Point(1, 2), rand(3)
    for a, b in [(one, other), (one, one), (one, other), (other, other)]:
        assert_same(compiled(a, b, x), same_object(a, b, x))
    assert len(compiled.cache) == 2


# -- what is still refused, with the reason ------------------------------------------------------

class WithNew:
    def __new__(cls, *args):
        return super().__new__(cls)

    def __init__(self, x):
        self.x = x


def makes_a_class_with_its_own_new(x):
    return WithNew(x).x + 1


def raises_under_errstate(x):
    with np.errstate(divide="raise"):
        return 1.0 / x


@pytest.mark.parametrize("fn, why", [(makes_a_class_with_its_own_new, "defines __new__"),
                                     (raises_under_errstate, "would raise")])
def test_what_cannot_be_followed_breaks_with_a_reason(fn, why):
    x = np.array([1.0, 2.0])
    explanation = mc.explain(fn)(x)
    assert explanation.graph_break_count >= 1
    assert why in explanation.break_reasons[0].reason
    assert explanation.break_reasons[0].filename == __file__
    assert_same(mc.compile(fn, backend="eager")(x), fn(x))


def test_raise_under_errstate_still_raises():
    with pytest.raises(FloatingPointError):
        mc.compile(raises_under_errstate, backend="eager")(np.array([0.0]))


def divides(x, y):
    return x / y + np.log(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore:minicompile:UserWarning")
@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_a_call_while_numpy_errors_raise_runs_as_python(backend):
    """np.seterr(all="raise") around a call: NumPy raises FloatingPointError, which
    compiled kernels never do (they gave inf and NaN); such a call runs as Python,
    and the compiled code serves the calls made in NumPy's default state."""
    compiled = mc.compile(divides, backend=backend)
    x, y = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    assert_same(compiled(x, y), divides(x, y))  # compiled first, in the default state
    for settings in ({"all": "raise"}, {"divide": "raise"}):
        with np.errstate(**settings), pytest.raises(FloatingPointError):
            compiled(x, y)
    calls = []
    with np.errstate(all="call", call=lambda *error: calls.append(error)):
        assert_same(compiled(x, y), divides(x, y))
    assert len(calls) == 4  # NumPy's callback, called for compiled and eager calls alike
    with np.errstate(all="raise"):
        assert_same(compiled(x + 1, y + 1), divides(x + 1, y + 1))  # no error: NumPy's answer
    assert len(compiled.cache) == 1
    with np.errstate(all="raise"), pytest.raises(mc.GraphBreakError, match="error state raises"):
        mc.compile(divides, backend=backend, fullgraph=True)(x + 1, y + 1)
    with mc.profile(), np.errstate(all="raise"), pytest.raises(FloatingPointError):
        compiled(x, y)  # a profiled call too: the profile's own path checks the error state first


# -- property test: class hierarchies and ways of calling them -----------------------------------

LEVEL_KINDS = ("inherit", "extend", "replace")  # f inherited, f = super().f(x) + ..., f rewritten
CALL_SHAPES = ("construct", "argument", "method", "compiled_object", "bound_method")


def hierarchy_source(levels: list[tuple[str, bool, bool]]) -> str:
    """A chain of classes C0 <- C1 <- ...; level i may override f (and how), give an
    attribute in __init__ (calling super().__init__), and a property."""
    lines = ["import numpy as np",
             "class C0:",
             "    def __init__(self, k):",
             "        self.k0 = k",
             "    def f(self, x):",
             "        return x * self.k0",
             "    def __call__(self, x):",
             "        return self.f(x) + self.bonus()",
             "    def bonus(self):",
             "        return 0.0"]
    for i, (kind, has_init, has_property) in enumerate(levels, start=1):
        lines.append(f"class C{i}(C{i - 1}):")
        if has_init:
            lines += ["    def __init__(self, k):", f"        super().__init__(k + {i})",
                      f"        self.k{i} = {i} * 0.5"]
        if kind == "extend":
            lines += ["    def f(self, x):", f"        return super().f(x) + {i}.0"]
        elif kind == "replace":
            lines += ["    def f(self, x):", f"        return np.tanh(x) * {i}.0 + self.k0"]
        if has_property:
            attr = f"self.k{i}" if has_init else "self.k0"
            lines += ["    @property", f"    def p{i}(self):", f"        return {attr} * 2",
                      "    def bonus(self):", f"        return super().bonus() + self.p{i}"]
        lines.append("    pass")
    return "\n".join(lines)


@settings(max_examples=30, deadline=None)
@given(levels=st.lists(st.tuples(st.sampled_from(LEVEL_KINDS), st.booleans(), st.booleans()), max_size=4),
       shape=st.sampled_from(CALL_SHAPES), k=st.sampled_from([0.5, 2.0, -1.5]))
def test_random_class_hierarchies_match_eager(levels, shape, k):
    namespace: dict = {"__name__": "hierarchy"}
    exec(compile(hierarchy_source(levels), "<hypothesis hierarchy>", "exec"), namespace)
    leaf = namespace[f"C{len(levels)}"]
    x = rand(3)
    if shape == "construct":
        namespace["Leaf"], namespace["K"] = leaf, k
        exec(compile("def run(x):\n    return Leaf(K)(x)", "<hypothesis call>", "exec"), namespace)
        fn, args = namespace["run"], (x,)
    elif shape == "argument":
        fn, args = (lambda obj, x: obj(x)), (leaf(k), x)
    elif shape == "method":
        fn, args = (lambda obj, x: obj.f(x) + obj.bonus()), (leaf(k), x)
    elif shape == "compiled_object":
        fn, args = leaf(k), (x,)
    else:
        fn, args = leaf(k).f, (x,)
    expected = fn(*args)
    explanation = mc.explain(fn)(*args)
    assert explanation.graph_break_count == 0, str(explanation)
    assert_same(mc.compile(fn, backend="eager")(*args), expected)


def closure_returning_its_objects():
    point, items = Point(1.0, 2.0), [1.0]

    def returns_them(x):
        return x + 1, point, items

    return returns_them, point, items


def test_objects_from_a_closure_are_returned_as_themselves():
    fn, point, items = closure_returning_its_objects()
    compiled = mc.compile(fn, backend="eager")
    for _ in range(2):
        _, got_point, got_items = compiled(rand(3))
        assert got_point is point and got_items is items  # (it raised NameError: CLOSURE)
