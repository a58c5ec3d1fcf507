"""Random programs (from test_random_programs.py) compiled with symbolic sizes.

``dynamic=True`` makes every axis of size >= 2 of a C-contiguous input a symbol,
so each op of the table meets symbolic sizes: its rule handles them, or the
sizes it needs become guarded plain ints.  The result must be NumPy's, the
guards must hold for the very inputs they were made from (a second call is a
cache hit), and the capture must stay one graph.  Then the same program is
called again and again with one size changed in every input (automatic
dynamic shapes, or dynamic=True): each call must give NumPy's answer.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

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


def resized(arr: np.ndarray, old: int, new: int) -> np.ndarray:
    """An array like ``arr`` with every axis of size ``old`` of size ``new``."""
    shape = tuple(new if d == old else d for d in arr.shape)
    rng = np.random.default_rng(len(shape) + new)
    if arr.dtype == np.bool_:
        return rng.random(shape) > 0.5
    if arr.dtype.kind in "iu":
        return rng.integers(0, 5, shape).astype(arr.dtype)
    return rng.standard_normal(shape).astype(arr.dtype)


def check_resized_calls(program: Program, backend: str, sizes: list[int], dynamic: bool | None) -> None:
    fn = program.function()
    dims = sorted({d for a in program.inputs for d in np.shape(a) if d >= 2})
    if not dims:
        return
    old = dims[0]
    compiled = mc.compile(fn, backend=backend, dynamic=dynamic)
    for new in [old] + sizes:
        args = [resized(np.asarray(a), old, new) if isinstance(a, np.ndarray) else a for a in program.inputs]
        note(f"size {old} -> {new}")
        try:
            expected = quietly(fn, *args)
        except Exception:
            continue  # NumPy refuses the program at this size
        assert_matches(quietly(compiled, *args), expected)


@settings(max_examples=60, **SETTINGS)
@given(programs(), st.lists(st.integers(2, 6), min_size=2, max_size=4), st.sampled_from([None, True]))
def test_random_programs_changing_sizes_eager(program, sizes, dynamic):
    note(repr(program))
    check_resized_calls(program, "eager", sizes, dynamic)


@settings(max_examples=20, **SETTINGS)
@given(programs(), st.lists(st.integers(2, 6), min_size=2, max_size=4), st.sampled_from([None, True]))
def test_random_programs_changing_sizes_cpp(program, sizes, dynamic):
    note(repr(program))
    check_resized_calls(program, "cpp", sizes, dynamic)


@settings(max_examples=15, **SETTINGS)
@given(programs(), st.lists(st.integers(2, 6), min_size=2, max_size=4), st.sampled_from([None, True]))
def test_random_programs_changing_sizes_triton(program, sizes, dynamic):
    """Triton's interpreter: kernels taking the sizes as arguments, one compile for every size."""
    pytest.importorskip("triton")
    note(repr(program))
    check_resized_calls(program, "triton", sizes, dynamic)
