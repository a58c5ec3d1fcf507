"""``mc.compile`` of any callable, as torch.compile compiles a module.

Functions, bound methods, objects with ``__call__`` (traced as
``type(obj).__call__`` with ``self`` bound), ``functools.partial``,
classmethods, staticmethods, builtins and ufuncs each compile, capture with no
graph break, and give eager's results on the eager and cpp backends — results,
arguments and the object's own state afterwards.  The compiled callable looks
like the original (name, docstring, bound, attributes read through), and
arrays read from ``self`` are guarded like torch's parameters: on type, shape,
dtype and layout, never on identity or values.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from dynamo_testing import assert_same, run_against_eager

pytestmark = pytest.mark.capture

BACKENDS = ["eager", "cpp"]


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


class Dense:
    """A dense layer."""

    def __init__(self, n_in=4, n_out=3, seed=0):
        self.w = rand(n_in, n_out, seed=seed)
        self.b = rand(n_out, seed=seed + 1)
        self.scale = 2.0
        self.history = []

    def __call__(self, x):
        """Apply the layer."""
        self.history.append(self.scale)  # state the traced code changes: replayed on the object
        return np.tanh(x @ self.w + self.b) * self.scale

    def forward(self, x, shift=0.0):
        return x @ self.w + shift

    @classmethod
    def make(cls, x):
        return x * cls.FACTOR

    @staticmethod
    def double(x):
        return x * 2

    FACTOR = 3.0


def affine(x, a, b=1.0):
    return x * a + b


CALLABLES = {
    "function": (lambda: affine, lambda: (rand(3, 4), 2.0)),
    "bound method": (lambda: Dense().forward, lambda: (rand(2, 4),)),
    "object with __call__": (lambda: Dense(), lambda: (rand(2, 4),)),
    "partial": (lambda: functools.partial(affine, b=3.0), lambda: (rand(3), 0.5)),
    "partial of a method": (lambda: functools.partial(Dense().forward, shift=1.0), lambda: (rand(2, 4),)),
    "classmethod": (lambda: Dense.make, lambda: (rand(3),)),
    "staticmethod": (lambda: Dense.double, lambda: (rand(3),)),
    "staticmethod object": (lambda: Dense.__dict__["double"], lambda: (rand(3),)),
    "ufunc": (lambda: np.exp, lambda: (rand(5),)),
    "builtin": (lambda: abs, lambda: (rand(5),)),
    "numpy function": (lambda: np.sum, lambda: (rand(5, 2),)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", list(CALLABLES))
def test_every_callable_compiles_and_matches_eager(kind, backend):
    make_callable, make_args = CALLABLES[kind]
    compiled = run_against_eager(make_callable, make_args, backend)
    assert len(compiled.cache) == 1  # the second call hit the first entry


@pytest.mark.parametrize("kind", list(CALLABLES))
def test_every_callable_is_one_graph_without_breaks(kind):
    make_callable, make_args = CALLABLES[kind]
    explanation = mc.explain(make_callable())(*make_args())
    assert explanation.graph_break_count == 0, str(explanation)
    assert explanation.graph_count == 1, str(explanation)


def test_a_compiled_object_looks_like_the_object():
    layer = Dense()
    compiled = mc.compile(layer, backend="eager")
    assert compiled.__doc__ == Dense.__doc__
    assert compiled.w is layer.w and compiled.scale == 2.0  # attributes read through
    layer.scale = 5.0
    assert compiled.scale == 5.0  # never a stale copy
    with pytest.raises(AttributeError):
        compiled.__name__  # the object has none either
    assert compiled.__wrapped__ is layer


def test_a_compiled_method_stays_bound_and_named():
    layer = Dense()
    compiled = mc.compile(layer.forward, backend="eager")
    assert compiled.__name__ == "forward" and compiled.__qualname__ == "Dense.forward"
    assert compiled.__self__ is layer and compiled.__func__ is Dense.forward
    assert inspect.signature(compiled) == inspect.signature(layer.forward)
    x = rand(2, 4)
    assert_same(compiled(x, shift=1.0), layer.forward(x, shift=1.0))


def test_a_builtin_keeps_its_name_and_doc():
    compiled = mc.compile(np.exp, backend="eager")
    assert compiled.__name__ == "exp" and compiled.__doc__ == np.exp.__doc__


def test_compiling_a_compiled_callable_traces_the_original():
    layer = Dense()
    twice = mc.compile(mc.compile(layer, backend="eager"), backend="eager")
    x = rand(2, 4)
    assert_same(twice(x), Dense()(x))
    assert twice.original is layer


class WithCompiledMethod:
    def __init__(self):
        self.w = rand(4, 2)

    @mc.compile(backend="eager")
    def forward(self, x):
        return x @ self.w


def test_a_compiled_function_on_a_class_is_a_method():
    model, x = WithCompiledMethod(), rand(3, 4)
    assert_same(model.forward(x), x @ model.w)
    other = WithCompiledMethod()
    other.w = rand(4, 2, seed=7)
    assert_same(other.forward(x), x @ other.w)  # the other instance's own weight
    assert len(WithCompiledMethod.forward.cache) == 1


def test_a_replaced_weight_of_the_same_shape_does_not_recompile():
    layer = Dense()
    compiled = mc.compile(layer, backend="eager")
    x = rand(2, 4)
    compiled(x)
    layer.w = rand(4, 3, seed=11)  # a new array, same shape, dtype and layout
    layer.b += 1.0  # changed in place
    expected = np.tanh(x @ layer.w + layer.b) * layer.scale
    assert_same(compiled(x), expected)
    assert len(compiled.cache) == 1


def test_a_weight_of_another_shape_or_dtype_recompiles():
    layer = Dense()
    compiled = mc.compile(layer, backend="eager", dynamic=False)
    compiled(rand(2, 4))
    layer.w = rand(4, 3).astype(np.float32)
    assert_same(compiled(rand(2, 4)), np.tanh(rand(2, 4) @ layer.w + layer.b) * layer.scale)
    assert len(compiled.cache) == 2
    assert "L['self'].w" in compiled.why_miss({"self": Dense(), "x": rand(2, 4)}, globals())


def test_a_python_attribute_is_guarded_on_its_value():
    layer = Dense()
    compiled = mc.compile(layer, backend="eager")
    x = rand(2, 4)
    compiled(x)
    layer.scale = 0.5
    assert_same(compiled(x), np.tanh(x @ layer.w + layer.b) * 0.5)
    assert len(compiled.cache) == 2
    guards = [str(g) for g in compiled.cache[0].capture.guards.guards]
    assert any("L['self'].scale == 2.0" in g for g in guards)
    assert not any("L['self'].w is" in g for g in guards)  # parameters: never by identity


def test_the_objects_state_changes_as_eager_changes_it():
    layer = Dense()
    compiled = mc.compile(layer, backend="eager")
    for _ in range(3):
        compiled(rand(2, 4))
    assert layer.history == [2.0, 2.0, 2.0]


class Counter:
    def __init__(self):
        self.steps = 0

    def __call__(self, x):
        self.steps += 1
        return x * 2


def test_a_step_counter_on_the_object_compiles_a_bounded_number_of_times():
    counter = Counter()
    compiled = mc.compile(counter, backend="eager")
    for step in range(1, 11):
        assert_same(compiled(rand(3)), rand(3) * 2)
        assert counter.steps == step
    # 0 and 1 are specialized; from 2 on the count is a symbol (automatic dynamic).
    assert len(compiled.cache) <= 3


def test_a_classmethod_object_is_refused_with_a_hint():
    with pytest.raises(TypeError, match="through its class"):
        mc.compile(classmethod(affine))


def test_something_not_callable_is_refused():
    with pytest.raises(TypeError, match="expects a callable"):
        mc.compile(3)


# -- property test: how a callable's arguments are split between it and its caller ---------------

def five(a, b, c=1.0, *, d=2.0, e=3.0):
    return (a * 2 + b) * c - d * e


class Five:
    def __init__(self, k):
        self.k = k

    def __call__(self, a, b, c=1.0, *, d=2.0, e=3.0):
        return five(a, b, c, d=d, e=e) * self.k

    def method(self, a, b, c=1.0, *, d=2.0, e=3.0):
        return five(a, b, c, d=d, e=e) + self.k


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["function", "object", "method"]), bound=st.integers(0, 3),
       bound_keywords=st.sets(st.sampled_from(["d", "e"])), positional=st.integers(0, 3),
       caller_keywords=st.sets(st.sampled_from(["d", "e"])), k=st.sampled_from([0.5, -2.0]))
def test_arguments_split_between_a_partial_and_its_caller(kind, bound, bound_keywords, positional,
                                                           caller_keywords, k):
    """A partial binds the first ``bound`` of a, b, c and some keywords; the caller
    passes ``positional`` of the rest by position, the others by keyword."""
    values = {"a": rand(3), "b": rand(3, seed=1), "c": 1.5, "d": -1.0, "e": 4.0}
    target = {"function": five, "object": Five(k), "method": Five(k).method}[kind]
    partial = functools.partial(target, *[values[n] for n in "abc"[:bound]],
                                **{n: values[n] * 2 for n in bound_keywords})
    rest = list("abc"[bound:])
    args = [values[n] for n in rest[:positional]]
    kwargs = {**{n: values[n] for n in rest[positional:]}, **{n: values[n] for n in caller_keywords}}
    expected = partial(*args, **kwargs)
    compiled = mc.compile(partial, backend="eager")
    assert_same(compiled(*args, **kwargs), expected)
    assert mc.explain(partial)(*args, **kwargs).graph_break_count == 0
