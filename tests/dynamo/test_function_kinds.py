"""Functions whose call returns a suspended frame keep their kind when compiled.

A generator, coroutine (``async def``) or async generator function is not
traced: compiled, it runs as Python and returns what eager returns — a real
generator, coroutine or async generator — with one warning naming why;
``explain`` reports it with no graph and a reason naming its kind;
``fullgraph=True`` raises.  Generators *inside* traced code (generator
expressions, comprehensions) are still inlined.
"""
from __future__ import annotations

import asyncio
import inspect
import warnings

import numpy as np
import pytest

import minicompile as mc
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture


def generator(x):
    yield x * 2
    yield x + 1


async def coroutine(x):
    return x * 3


async def async_generator(x):
    yield x - 1
    yield x * 4


async def drain(agen) -> list:
    return [v async for v in agen]


KINDS = [
    (generator, inspect.isgenerator, list, "a generator function"),
    (coroutine, inspect.iscoroutine, asyncio.run, "an async function"),
    (async_generator, inspect.isasyncgen, lambda g: asyncio.run(drain(g)), "an async generator function"),
]


@pytest.mark.parametrize("fn, is_kind, run, kind", KINDS, ids=lambda v: getattr(v, "__name__", None))
def test_kind_is_kept_with_one_warning(fn, is_kind, run, kind):
    compiled = mc.compile(fn, backend="eager")
    x = np.arange(3.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [compiled(x) for _ in range(2)]
    assert all(is_kind(r) for r in results)
    for r in results:
        assert_same(run(r), run(fn(x)))
    messages = [str(w.message) for w in caught]
    assert messages == [f"minicompile: {fn.__name__} is {kind}" + messages[0].split(kind, 1)[1]]
    assert "runs as Python, uncompiled" in messages[0]
    assert compiled.cache == []


@pytest.mark.parametrize("fn, is_kind, run, kind", KINDS, ids=lambda v: getattr(v, "__name__", None))
def test_explain_names_the_kind(fn, is_kind, run, kind):
    explanation = mc.explain(fn)(np.ones(2))
    assert explanation.graph_count == 0
    assert explanation.python_only.startswith(kind)
    (reason,) = explanation.break_reasons
    assert kind in reason.reason and fn.__name__ in reason.reason
    assert reason.lineno == fn.__code__.co_firstlineno
    assert kind in str(explanation)


def test_fullgraph_refuses_a_generator_function():
    with pytest.raises(mc.GraphBreakError, match="generator function"):
        mc.compile(generator, backend="eager", fullgraph=True)(np.ones(2))


def returns_a_generator(x):
    return (v * 2 for v in (x, x + 1))


def sums_a_generator_expression(x):
    return sum(v * 2 for v in (x, x + 1)) + sum([v for v in (x, x)])


def test_generators_inside_traced_code_still_trace():
    x = np.arange(3.0)
    got = mc.compile(returns_a_generator, backend="eager")(x)
    assert inspect.isgenerator(got)
    assert_same(list(got), list(returns_a_generator(x)))
    explanation = mc.explain(sums_a_generator_expression)(x)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    assert_same(mc.compile(sums_a_generator_expression, backend="eager")(x), sums_a_generator_expression(x))


def yields_after_print(x):
    print("inside")
    yield x * 2


def calls_a_generator_that_breaks(x):
    return list(yields_after_print(x))


def test_a_generator_function_called_at_a_break_gives_its_items(capsys):
    x = np.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # minicompile called it for the user: no warning
        got = mc.compile(calls_a_generator_that_breaks, backend="eager")(x)
    assert_same(got, calls_a_generator_that_breaks(x))
