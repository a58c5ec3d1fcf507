"""Random programs (from test_random_programs.py) compiled with every size symbolic.

``dynamic=True`` makes every axis of size >= 2 of a C-contiguous input a symbol,
so each op of the table meets symbolic sizes: its rule handles them, or the
sizes it needs become guarded plain ints.  The result must be NumPy's, the
guards must hold for the very inputs they were made from (a second call is a
cache hit), and the capture must stay one graph.
"""
from __future__ import annotations

import pytest
from hypothesis import given, note, settings

import minicompile as mc
from test_random_programs import SETTINGS, Program, assert_matches, programs, quietly

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def check_dynamic(program: Program, backend: str) -> None:
    note(repr(program))
    fn = program.function()
    expected = quietly(fn, *program.fresh_args())
    compiled = mc.compile(fn, backend=backend, dynamic=True)
    assert_matches(quietly(compiled, *program.fresh_args()), expected)
    assert_matches(quietly(compiled, *program.fresh_args()), expected)
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
