"""More capture: the Python around the NumPy calls — loops, functions, classes, strings.

The functions here are the kind of plain Python a user wraps around array code:
``for`` loops over ranges, lists, ``zip`` and ``dict.items()``; ``while`` loops on
Python counters; nested functions, closures, lambdas and comprehensions;
``*args``/``**kwargs`` and defaults; methods, static and class methods and
properties of user classes; dataclass and named-tuple fields; starred unpacking;
string formatting; builtins.  The symbolic interpreter runs all of that at
trace time (loops unroll, calls inline, strings are computed), so each function
must compile to exactly one graph — or none when it has no array op — with no
graph break, and give eager's values, dtypes and types (``backend="eager"``).
"""
from __future__ import annotations

import math
import types
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import minicompile as mc
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture

RNG = np.random.default_rng(11)


def randn(*shape: int, dtype=np.float64) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)



# ---------------------------------------------------------------------------
# for loops (unrolled at trace time)
# ---------------------------------------------------------------------------

def loop_over_range(x, n):
    acc = x
    for i in range(n):
        acc = acc * 0.5 + i
    return acc


def loop_over_range_step(x):
    total = 0
    for i in range(10, 0, -3):
        total = total + x * i
    return total


def loop_over_list_of_arrays(x, weights):
    for w in weights:
        x = np.tanh(x @ w)
    return x


def loop_over_tuple_of_scales(x):
    out = x
    for s in (1.0, 2.0, 0.5):
        out = out + s * x
    return out


def loop_with_zip(x, weights, biases):
    for w, b in zip(weights, biases):
        x = np.maximum(x @ w + b, 0.0)
    return x


def loop_with_enumerate(x, scales):
    out = x * 0
    for i, s in enumerate(scales, start=1):
        out = out + x * s * i
    return out


def loop_over_dict_items(x, params):
    for name, value in params.items():
        if name.startswith("shift"):
            x = x + value
        else:
            x = x * value
    return x


def loop_over_dict_keys_and_values(x, params):
    names = [k for k in params.keys()]
    total = sum(params.values())
    return x * total, names


def loop_over_reversed(x, layers):
    for w in reversed(layers):
        x = x @ w.T
    return x


def loop_with_continue_and_break(x):
    for i in range(10):
        if i % 2:
            continue
        if i > 6:
            break
        x = x + i
    return x


# ---------------------------------------------------------------------------
# while loops on Python values
# ---------------------------------------------------------------------------

def while_counter(x, n):
    i = 0
    while i < n:
        x = x * 2 - 1
        i += 1
    return x


def while_halving(x, size):
    steps = 0
    while size > 1:
        size //= 2
        steps += 1
    return x + steps


# ---------------------------------------------------------------------------
# Functions: nested, closures, lambdas, comprehensions, *args, **kwargs, defaults
# ---------------------------------------------------------------------------

def nested_function(x):
    def gelu_ish(v):
        return v * 0.5 * (1.0 + np.tanh(v))

    return gelu_ish(x) + gelu_ish(x * 2)


def closure_over_local(x, k):
    offset = k * 2

    def shift(v):
        return v + offset

    return shift(x) * k


def closure_factory(x):
    def make_scaler(s):
        def scale(v):
            return v * s
        return scale

    double, triple = make_scaler(2.0), make_scaler(3.0)
    return double(x) + triple(x)


def lambda_applied(x):
    square = lambda v: v * v  # noqa: E731
    return square(x) + square(x + 1)


def lambda_with_default(x):
    f = lambda v, p=3: v ** p  # noqa: E731
    return f(x), f(x, 2)


def list_comprehension(x):
    parts = [x * i for i in range(1, 4)]
    return np.maximum(parts[0], parts[1]) + parts[2]


def dict_comprehension(x):
    table = {f"p{i}": x + i for i in range(3)}
    return table["p2"] - table["p0"], sorted(table)


def comprehension_with_condition(x):
    scales = [s for s in (0.5, 1.0, 1.5, 2.0) if s != 1.0]
    return sum([x * s for s in scales]) + len(scales) * x


def dict_comprehension_items(x):
    table = {name: x * i for i, name in enumerate(("a", "b", "c"))}
    return [value + 1 for key, value in table.items() if key != "b"]


def generator_expression(x):
    return sum(x * s for s in (1.0, 2.0))


def takes_star_args(x, *rest):
    total = x
    for r in rest:
        total = total + r
    return total, len(rest)


def takes_kwargs(x, **options):
    scale = options.get("scale", 1.0)
    return x * scale + options["shift"], sorted(options)


def forwards_star_args(x, y):
    def combine(*arrays, weight=1.0):
        return sum(arrays) * weight

    return combine(x, y, x, weight=0.5)


def forwards_kwargs(x):
    def affine(v, scale=1.0, shift=0.0):
        return v * scale + shift

    options = {"scale": 2.0, "shift": -1.0}
    return affine(x, **options)


def default_arguments(x, power=2, eps=1e-3, axis=-1):
    return (x ** power + eps).sum(axis=axis)


def keyword_only_arguments(x, *, axis=0, keepdims=False):
    return x.mean(axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------
# User classes: methods, staticmethod, classmethod, property; dataclass, namedtuple
# ---------------------------------------------------------------------------

class Linear:
    scale = 2.0  # a class constant

    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        return x @ self.w + self.b

    @staticmethod
    def activation(v):
        return np.maximum(v, 0.0)

    @classmethod
    def fan_in_scale(cls, n):
        return 2.0 / math.sqrt(n)

    @classmethod
    def class_scale(cls):
        return cls.scale

    @property
    def out_features(self):
        return self.w.shape[1]


def method_call(layer, x):
    return layer.forward(x)


def static_and_class_methods(layer, x):
    return layer.activation(layer.forward(x)) * layer.fan_in_scale(x.shape[-1])


def classmethod_reads_class_attribute(layer, x):
    return layer.forward(x) * layer.class_scale()


def static_and_class_methods_on_the_class(layer, x):
    return Linear.activation(layer.forward(x)) * Linear.fan_in_scale(x.shape[-1])


def property_read(layer, x):
    return layer.forward(x).reshape(-1, layer.out_features) * layer.scale


@dataclass
class NormConfig:
    eps: float = 1e-5
    axis: int = -1
    scale: float = 1.0
    tags: list = field(default_factory=list)


def dataclass_attributes(x, cfg):
    mu = x.mean(axis=cfg.axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=cfg.axis, keepdims=True)
    return (x - mu) / np.sqrt(var + cfg.eps) * cfg.scale


Params = namedtuple("Params", ["w", "b", "alpha"])


def namedtuple_attributes(x, p):
    h = x @ p.w + p.b
    return np.where(h > 0, h, p.alpha * h)


def namedtuple_unpacked(x, p):
    w, b, alpha = p
    return (x @ w + b) * alpha


# ---------------------------------------------------------------------------
# Unpacking, strings, builtins, module attributes
# ---------------------------------------------------------------------------

def starred_unpacking(x):
    first, *middle, last = (1, 2, 3, 4)
    return x * first + sum(middle) - last, middle


def starred_in_call(x, shape):
    return x.reshape(*shape), np.maximum(*[x, 0.0])


def swap_and_nested_unpacking(x, y):
    (a, b), c = (x, y), x + y
    a, b = b, a
    return a - b + c


def string_formatting(x, n, name):
    label = f"{name}[{n:02d}] {x.dtype} {x.shape!r}"
    old = "%s has %d rows" % (name, x.shape[0])
    fmt = "{}x{}".format(*x.shape)
    return x * n, label, old, fmt


def string_methods(x, mode):
    if mode.lower().startswith("sc"):
        return x * 2, mode.upper()
    return x, mode.split("_")


def builtin_calls(x, values):
    n = len(values) + len(x)
    lo, hi = min(values), max(values)
    return x * abs(lo) + sum(values) + hi, n, isinstance(x, np.ndarray), list(range(3))


def getattr_on_objects(x, layer):
    w = getattr(layer, "w")
    missing = getattr(layer, "not_there", 1.5)
    return x @ w * missing, getattr(x, "ndim")


def isinstance_dispatch(x, other):
    if isinstance(other, (int, float)):
        return x + other
    if isinstance(other, tuple):
        return x.reshape(other)
    return x * other


def numpy_module_attributes(x):
    return x.astype(np.float32) * np.float32(2), np.pi * x, x.dtype == np.float64


def math_module(x, n):
    return x * math.pi + math.sqrt(n) + math.log(n), math.floor(2.7)


def python_scalar_math(x, n):
    k = (n ** 2 + n // 3) % 7
    r = round(2.567, 2)
    return x * k + r, divmod(n, 4), pow(2, n)


def dtype_checks(x):
    if x.dtype.kind == "f" and x.dtype.itemsize == 4:
        return x.astype(np.float64)
    return x.astype(np.float32)


def early_returns(x, mode):
    if mode == "relu":
        return np.maximum(x, 0)
    elif mode == "tanh":
        return np.tanh(x)
    if x.ndim > 1:
        return x.sum(axis=-1)
    return x


def none_defaults(x, bias=None, scale=None):
    if scale is not None:
        x = x * scale
    if bias is None:
        return x
    return x + bias


def conditional_expression(x, flag):
    y = x + 1 if flag else x - 1
    return y * (2 if x.ndim == 1 else 3)


def boolean_logic(x, a, b):
    if (a and not b) or (x.shape[0] > 2 and b):
        return x * 2
    return x


def membership_tests(x, names):
    scale = 2.0 if "double" in names else 1.0
    shift = 1.0 if "shift" not in names else -1.0
    return x * scale + shift


def no_array_op(x, n):
    return x.shape, n * 2, f"{n}"


def returns_dict(x):
    return {"sum": x.sum(axis=0), "max": x.max(axis=0), "shape": x.shape}


# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------

@dataclass
class Case:
    fn: Callable
    make_args: Callable[[], tuple]
    kwargs: dict = field(default_factory=dict)
    id: str = ""

    def __post_init__(self):
        self.id = self.id or self.fn.__name__


def layers(n, d=3):
    return [randn(d, d) for _ in range(n)]


def linear():
    return Linear(randn(3, 4), randn(4))


def params():
    return Params(randn(3, 4), randn(4), 0.1)


f32 = np.float32

CORPUS = [
    Case(loop_over_range, lambda: (randn(3), 4)),
    Case(loop_over_range_step, lambda: (randn(2),)),
    Case(loop_over_list_of_arrays, lambda: (randn(2, 3), layers(3))),
    Case(loop_over_tuple_of_scales, lambda: (randn(4),)),
    Case(loop_with_zip, lambda: (randn(2, 3), layers(2), [randn(3), randn(3)])),
    Case(loop_with_enumerate, lambda: (randn(3), [0.5, 2.0, 3])),
    Case(loop_over_dict_items, lambda: (randn(3), {"scale": 2.0, "shift": randn(3), "gain": 3})),
    Case(loop_over_dict_keys_and_values, lambda: (randn(2), {"a": 1, "b": 2.5})),
    Case(loop_over_reversed, lambda: (randn(2, 3), layers(2))),
    Case(loop_with_continue_and_break, lambda: (randn(3),)),
    Case(while_counter, lambda: (randn(3), 3)),
    Case(while_halving, lambda: (randn(3), 37)),
    Case(nested_function, lambda: (randn(3),)),
    Case(closure_over_local, lambda: (randn(3), 3)),
    Case(closure_factory, lambda: (randn(3),)),
    Case(lambda_applied, lambda: (randn(3),)),
    Case(lambda_with_default, lambda: (randn(3),)),
    Case(list_comprehension, lambda: (randn(3),)),
    Case(dict_comprehension, lambda: (randn(3),)),
    Case(comprehension_with_condition, lambda: (randn(3),)),
    Case(dict_comprehension_items, lambda: (randn(3),)),
    Case(generator_expression, lambda: (randn(3),)),
    Case(takes_star_args, lambda: (randn(3), randn(3), 2.0)),
    Case(takes_star_args, lambda: (randn(3),), id="takes_star_args-none"),
    Case(takes_kwargs, lambda: (randn(3),), {"shift": 1, "scale": 0.5}),
    Case(takes_kwargs, lambda: (randn(3),), {"shift": randn(3)}, id="takes_kwargs-array"),
    Case(forwards_star_args, lambda: (randn(3), randn(3))),
    Case(forwards_kwargs, lambda: (randn(3),)),
    Case(default_arguments, lambda: (randn(2, 3),)),
    Case(default_arguments, lambda: (randn(2, 3),), {"power": 3, "axis": 0}, id="default_arguments-given"),
    Case(keyword_only_arguments, lambda: (randn(2, 3),), {"keepdims": True}),
    Case(method_call, lambda: (linear(), randn(2, 3))),
    Case(static_and_class_methods, lambda: (linear(), randn(2, 3))),
    Case(static_and_class_methods_on_the_class, lambda: (linear(), randn(2, 3))),
    Case(classmethod_reads_class_attribute, lambda: (linear(), randn(2, 3))),
    Case(property_read, lambda: (linear(), randn(2, 3))),
    Case(dataclass_attributes, lambda: (randn(2, 5), NormConfig(scale=0.5))),
    Case(namedtuple_attributes, lambda: (randn(2, 3), params())),
    Case(namedtuple_unpacked, lambda: (randn(2, 3), params())),
    Case(starred_unpacking, lambda: (randn(3),)),
    Case(starred_in_call, lambda: (randn(6), (2, 3))),
    Case(swap_and_nested_unpacking, lambda: (randn(3), randn(3))),
    Case(string_formatting, lambda: (randn(2, 3), 7, "w")),
    Case(string_methods, lambda: (randn(2), "scale_up"), id="string_methods-scale"),
    Case(string_methods, lambda: (randn(2), "keep_as_is"), id="string_methods-keep"),
    Case(builtin_calls, lambda: (randn(3), [3, -4.5, 2])),
    Case(getattr_on_objects, lambda: (randn(2, 3), linear())),
    Case(isinstance_dispatch, lambda: (randn(6), 2), id="isinstance_dispatch-int"),
    Case(isinstance_dispatch, lambda: (randn(6), (2, 3)), id="isinstance_dispatch-tuple"),
    Case(isinstance_dispatch, lambda: (randn(6), randn(6)), id="isinstance_dispatch-array"),
    Case(numpy_module_attributes, lambda: (randn(3),)),
    Case(math_module, lambda: (randn(3), 5)),
    Case(python_scalar_math, lambda: (randn(3), 11)),
    Case(dtype_checks, lambda: (randn(3, dtype=f32),), id="dtype_checks-f32"),
    Case(dtype_checks, lambda: (randn(3),), id="dtype_checks-f64"),
    Case(early_returns, lambda: (randn(2, 3), "relu"), id="early_returns-relu"),
    Case(early_returns, lambda: (randn(2, 3), "tanh"), id="early_returns-tanh"),
    Case(early_returns, lambda: (randn(2, 3), "sum"), id="early_returns-2d"),
    Case(early_returns, lambda: (randn(3), "none"), id="early_returns-1d"),
    Case(none_defaults, lambda: (randn(3),), id="none_defaults-none"),
    Case(none_defaults, lambda: (randn(3), randn(3), 2.0), id="none_defaults-given"),
    Case(conditional_expression, lambda: (randn(3), True), id="conditional_expression-true"),
    Case(conditional_expression, lambda: (randn(2, 2), False), id="conditional_expression-false"),
    Case(boolean_logic, lambda: (randn(3), True, False), id="boolean_logic-a"),
    Case(boolean_logic, lambda: (randn(3), False, True), id="boolean_logic-b"),
    Case(boolean_logic, lambda: (randn(2), False, True), id="boolean_logic-neither"),
    Case(membership_tests, lambda: (randn(3), ("double",))),
    Case(no_array_op, lambda: (randn(3), 4)),
    Case(returns_dict, lambda: (randn(2, 3),)),
]


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_compiled_matches_eager(case):
    args = case.make_args()
    expected = case.fn(*args, **case.kwargs)
    compiled = mc.compile(case.fn, backend="eager")
    assert_same(compiled(*args, **case.kwargs), expected, "first call")
    assert_same(compiled(*args, **case.kwargs), expected, "second call (cache hit)")
    assert len(compiled.cache) == 1


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CORPUS])
def test_one_graph_without_breaks(case):
    explanation = mc.explain(case.fn)(*case.make_args(), **case.kwargs)
    assert explanation.break_reasons == [], [str(r) for r in explanation.break_reasons]
    assert explanation.graph_break_count == 0
    assert explanation.graph_count == (1 if explanation.op_count else 0)


def test_function_without_array_ops_has_no_graph():
    assert mc.explain(no_array_op)(randn(3), 4).graph_count == 0


def test_loops_unroll_into_one_graph():
    explanation = mc.explain(loop_over_list_of_arrays)(randn(2, 3), layers(3))
    assert explanation.ops_per_graph == [["matmul", "tanh"] * 3]


def test_capture_corpus_has_at_least_80_functions():
    import test_capture  # the first half of the corpus, next to this file

    functions = {c.fn for c in CORPUS} | {c.fn for c in test_capture.CORPUS}
    assert len(functions) >= 80


def dict_of_arrays(x, weights):
    return x @ weights["w"] + weights["b"]


def test_dict_of_arrays_subscript_is_one_graph():
    weights = {"w": randn(3, 2), "b": randn(2)}
    explanation = mc.explain(dict_of_arrays)(randn(4, 3), weights)
    assert explanation.graph_break_count == 0


def test_dict_of_arrays_subscript_matches_eager():
    weights, x = {"w": randn(3, 2), "b": randn(2)}, randn(4, 3)
    assert_same(mc.compile(dict_of_arrays, backend="eager")(x, weights), dict_of_arrays(x, weights))


SETTINGS = types.ModuleType("settings")  # a user's module of settings
SETTINGS.SCALE = 2.0


def scaled_by_module_setting(x):
    return x * SETTINGS.SCALE


def test_changed_module_attribute_is_not_stale():
    compiled = mc.compile(scaled_by_module_setting, backend="eager")
    x = randn(3)
    assert_same(compiled(x), x * 2.0)
    try:
        SETTINGS.SCALE = 3.0
        assert_same(compiled(x), scaled_by_module_setting(x))
    finally:
        SETTINGS.SCALE = 2.0
