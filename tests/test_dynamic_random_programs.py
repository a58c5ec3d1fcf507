"""Random programs (from test_random_programs.py) compiled with symbolic sizes.

``dynamic=True`` makes every axis of size >= 2 of a C-contiguous input a symbol,
so each op of the table meets symbolic sizes: its rule handles them, or the
sizes it needs become guarded plain ints.  The result must be NumPy's, the
guards must hold for the very inputs they were made from (a second call is a
cache hit), and the capture must stay one graph.  Then the same program is
called again and again with sizes changed in every input (automatic dynamic
shapes, or dynamic=True; the calls drawn by ``minicompile.testing.shape_sequences``):
each call must give NumPy's answer.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.testing import shape_sequences
from test_random_programs import SETTINGS, Program, assert_matches, programs, quietly

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def check_dynamic(program: Program, backend: str) -> None:
    note(repr(program))
    fn = program.function()
    expected = quietly(fn, *program.arguments())
    compiled = mc.compile(fn, backend=backend, dynamic=True)
    assert_matches(quietly(compiled, *program.arguments()), expected)
    assert_matches(quietly(compiled, *program.arguments()), expected)
    assert len(compiled.cache) == 1
    assert compiled.cache[0].capture.break_reason is None, compiled.cache[0].capture.break_reason


@settings(max_examples=100, **SETTINGS)
@given(programs())
def test_random_programs_symbolic_eager(program):
    check_dynamic(program, "eager")


@settings(max_examples=25, **SETTINGS)
@given(programs())
def test_random_programs_symbolic_cpp(program):
    check_dynamic(program, "cpp")


@st.composite
def programs_and_calls(draw):
    """A program, and the argument sets of 3 to 5 calls: its own arguments, then
    arrays like them with sizes changed (``minicompile.testing.shape_sequences``)."""
    program = draw(programs())
    return program, draw(shape_sequences(*program.arguments(), min_calls=3, max_calls=5, max_side=6))


def check_resized_calls(program: Program, calls: list, backend: str, dynamic: bool | None) -> None:
    fn = program.function()
    compiled = mc.compile(fn, backend=backend, dynamic=dynamic)
    for n, args in enumerate(calls):
        note(f"call {n + 1}: shapes {[np.shape(a) for a in args]}")
        try:
            expected = quietly(fn, *args)
        except Exception:
            continue  # NumPy refuses the program at these sizes
        assert_matches(quietly(compiled, *args), expected)


@settings(max_examples=60, **SETTINGS)
@given(programs_and_calls(), st.sampled_from([None, True]))
def test_random_programs_changing_sizes_eager(drawn, dynamic):
    note(repr(drawn[0]))
    check_resized_calls(*drawn, "eager", dynamic)


@settings(max_examples=20, **SETTINGS)
@given(programs_and_calls(), st.sampled_from([None, True]))
def test_random_programs_changing_sizes_cpp(drawn, dynamic):
    note(repr(drawn[0]))
    check_resized_calls(*drawn, "cpp", dynamic)


@settings(max_examples=15, **SETTINGS)
@given(programs_and_calls(), st.sampled_from([None, True]))
def test_random_programs_changing_sizes_triton(drawn, dynamic):
    """Triton's interpreter: kernels taking the sizes as arguments, one compile for every size."""
    pytest.importorskip("triton")
    note(repr(drawn[0]))
    check_resized_calls(*drawn, "triton", dynamic)
