"""Tracebacks and messages in the user's words.

An exception raised through compiled code shows the frames eager execution
would show — the user's functions under their own names and lines, the
calling line included — and none of minicompile's (``MINICOMPILE_LOGS=+internals``
shows them); a user's own error is raised as it is, with no "internal error"
warning first; guards print the user's names; a break inside a library is
reported at the user's line that called into it.
"""
from __future__ import annotations

import json
import traceback
import warnings

import numpy as np
import pytest

import minicompile as mc
from minicompile import config
from minicompile.logs import set_logs
from dynamo_testing import assert_same

pytestmark = pytest.mark.capture


def line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn`` that contains ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def helper_raises(y):
    print("in helper")
    raise ValueError("bad value")


def calls_a_helper_that_raises(x):
    y = x + 1
    return helper_raises(y)


def raises_after_its_own_break(x):
    y = np.sin(x)
    print("between")
    return y["not an index"]


def frames_of(error: BaseException) -> list[tuple[str, str, int]]:
    return [(f.filename, f.name, f.lineno) for f in traceback.extract_tb(error.__traceback__)]


def test_a_traceback_after_a_break_shows_the_users_frames_only():
    with pytest.raises(ValueError) as info:
        mc.compile(calls_a_helper_that_raises, backend="eager")(np.ones(2))
    frames = frames_of(info.value)[1:]  # after this test's own frame
    assert frames == [(__file__, "calls_a_helper_that_raises", line_of(calls_a_helper_that_raises, "return helper")),
                      (__file__, "helper_raises", line_of(helper_raises, "raise ValueError"))]


def test_an_error_after_a_break_in_the_same_function_shows_it_once():
    with pytest.raises(IndexError) as info:
        mc.compile(raises_after_its_own_break, backend="eager")(np.ones(2))
    frames = frames_of(info.value)[1:]
    assert frames == [(__file__, "raises_after_its_own_break", line_of(raises_after_its_own_break, "not an index"))]
    assert "__resume_at" not in "".join(traceback.format_exception(info.value))


def test_internals_flag_keeps_minicompiles_frames():
    set_logs("+internals")
    try:
        with pytest.raises(ValueError) as info:
            mc.compile(calls_a_helper_that_raises, backend="eager")(np.ones(2))
    finally:
        set_logs("")
    files = [f for f, _, _ in frames_of(info.value)]
    assert any("eval_frame.py" in f for f in files)


def list_plus_int(x):
    return x + 1


def array_plus_list_of_another_length(x):
    return np.ones(3) + x


def reads_an_undefined_name(x):
    return x + undefined_name  # noqa: F821


def calls_with_a_wrong_argument(x):
    return np.ones(2).reshape(x)


def raises_its_own_error(x, n):
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return x * n


USER_ERRORS = [(list_plus_int, ([1.0, 2.0],)), (array_plus_list_of_another_length, ([1.0, 2.0],)),
               (reads_an_undefined_name, (np.ones(2),)), (calls_with_a_wrong_argument, ((3, 5),)),
               (raises_its_own_error, (np.ones(2), -1))]


@pytest.mark.parametrize("fn, args", USER_ERRORS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_users_own_error_is_raised_as_it_is(fn, args, monkeypatch):
    monkeypatch.setattr(config, "strict", False)  # an internal error would warn, not raise
    with pytest.raises(Exception) as eager:
        fn(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "internal error" warning first
        with pytest.raises(type(eager.value)) as compiled:
            mc.compile(fn, backend="eager")(*args)
    assert str(compiled.value) == str(eager.value)
    assert frames_of(compiled.value)[1:] == frames_of(eager.value)[1:]


def test_a_raise_under_fullgraph_is_the_users_error():
    compiled = mc.compile(raises_its_own_error, backend="eager", fullgraph=True)
    with pytest.raises(ValueError, match="n must be >= 0"):
        compiled(np.ones(2), -1)
    reason = compiled.cache[0].capture.break_reason
    assert "ValueError: n must be >= 0, got -1" in reason.reason
    assert reason.lineno == line_of(raises_its_own_error, "raise ValueError")


def uses_item_after_a_print(x):
    y = x * 2
    print("step")
    s = y.sum().item()
    return y + s


def test_guards_print_the_users_names(capsys):
    explanation = mc.explain(uses_item_after_a_print)(np.ones(3))
    text = str(explanation)
    assert "___stack" not in text
    assert '<print("step")> is None' in text
    assert "<y.sum().item()> == 6.0" in text
    compiled = mc.compile(uses_item_after_a_print, backend="eager")
    set_logs("recompiles,guards")
    try:
        compiled(np.ones(3))
        compiled(np.full(3, 2.0))  # a new .item() value: the resume function recompiles, and says why
    finally:
        set_logs("")
    log = capsys.readouterr().err
    assert "<y.sum().item()> == 6.0: got <y.sum().item()> = 12.0" in log
    assert "# L['___stack" in log  # the guard function itself says what its parameters hold


def test_a_resume_function_reads_as_the_function_it_continues():
    compiled = mc.compile(uses_item_after_a_print, backend="eager")
    compiled(np.ones(3))
    (resume,) = compiled._handed.values()
    assert resume.fn.__code__.co_name == "uses_item_after_a_print"
    line = line_of(uses_item_after_a_print, 'print("step")')
    assert resume.fn.__qualname__ == f"uses_item_after_a_print (resumed at line {line})"


def dumps_a_config(x, cfg):
    text = json.dumps(cfg)
    return x * len(text)


def test_a_break_inside_a_library_names_the_users_line():
    x, cfg = np.ones(3), {"lr": 0.5, "layers": [1, 2]}
    explanation = mc.explain(dumps_a_config)(x, cfg)
    (reason,) = explanation.break_reasons
    assert reason.filename == __file__ and reason.lineno == line_of(dumps_a_config, "json.dumps")
    assert "json.dumps" in reason.reason
    assert not any("json" in str(g) and "__globals__" in str(g) for g in explanation.guards)
    assert_same(mc.compile(dumps_a_config, backend="eager")(x, cfg), dumps_a_config(x, cfg))
