"""Every warning minicompile raises points at the user's line (minicompile/warn.py).

Each place in the package that warns has a trigger here, called from this
file; the warning's file must be this one and its line the one marked
``# warns here`` — the user's call, never minicompile's own source, however
many of minicompile's frames lie between (a profiler, a backend picked by
``auto``, a per-shape backend).  A scan of the package keeps every warning
going through ``minicompile.warn.warn`` and every place that calls it triggered here.
"""
from __future__ import annotations

import ast
import linecache
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minicompile as mc
from minicompile import config
from minicompile.dynamo.symbolic_convert import InstructionTranslator
from minicompile.inductor import codecache
from minicompile.inductor.codegen.cpp import compile as cpp_compile

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "minicompile"
HELPER = PACKAGE / "warn.py"
HAS_CXX = any(shutil.which(name) for name in codecache.CANDIDATES)


def scale(x):
    return x * 2.0 + 1.0


def generator(x):
    yield x * 2


def raising_backend(graph, example_inputs):
    def run(*inputs):
        raise RuntimeError("a backend's bug")
    return run


def per_shape_backend(graph, example_inputs):
    return graph


per_shape_backend.symbolic_sizes = False  # one compile per shape (per_shape.py)


def python_only(monkeypatch, tmp_path):
    list(mc.compile(generator, backend="eager")(np.ones(3)))  # warns here


def recompile_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "recompile_limit", 1)
    f = mc.compile(scale, backend="eager", dynamic=False)
    f(np.ones(2))
    f(np.ones(3))  # warns here


def recompile_limit_under_the_profiler(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "recompile_limit", 1)
    f = mc.compile(scale, backend="eager", dynamic=False)
    f(np.ones(2))
    with mc.profile():
        f(np.ones(3))  # warns here


def internal_error(monkeypatch, tmp_path):
    def broken(self):
        raise RuntimeError("an internal bug")
    monkeypatch.setattr(config, "strict", False)
    monkeypatch.setattr(InstructionTranslator, "run", broken)
    mc.compile(scale, backend="eager")(np.ones(2))  # warns here


def compiled_code_raised(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "strict", False)
    mc.compile(scale, backend=raising_backend)(np.ones(2))  # warns here


def per_shape_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "recompile_limit", 1)
    f = mc.compile(scale, backend=per_shape_backend, dynamic=True)
    for n in (2, 3):
        f(np.ones(n))  # warns here


def no_compiler(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cxx", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setattr(cpp_compile, "_warned", False)
    mc.compile(scale, backend="cpp")(np.ones(2))  # warns here


def unusable_cache_dir(monkeypatch, tmp_path):
    (tmp_path / "a_file").write_text("where the cache directory should be")
    monkeypatch.setattr(config, "cache_dir", tmp_path / "a_file" / "cache")
    monkeypatch.setattr(codecache, "_loaded", {})
    monkeypatch.setattr(codecache, "_private", None)
    mc.compile(scale, backend="auto")(np.ones(2))  # warns here


def cxx_passed_over(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cxx", str(tmp_path / "no-such-g++"))
    monkeypatch.setattr(codecache, "_passed_over", set())
    mc.compile(scale, backend="cpp")(np.ones(2))  # warns here


def cudagraph_refused(monkeypatch, tmp_path):
    import fake_cupy

    from minicompile.inductor.codegen.triton import cudagraphs

    def refuse(compiled, inputs):
        raise RuntimeError("operation not permitted when stream is capturing")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy.module)
    monkeypatch.setattr(cudagraphs, "_capture", refuse)
    f = mc.compile(scale, backend="eager", mode="reduce-overhead")
    x = fake_cupy.module.asarray(np.ones(2))
    f(x)  # a warm-up, then the recording the driver refuses
    f(x)  # warns here


# The place that warns ("file:function") -> its trigger and the message's words.
TRIGGERS = {
    "dynamo/eval_frame.py:_run_as_python": (python_only, "runs as Python, uncompiled"),
    "dynamo/eval_frame.py:_compile": (recompile_limit, "hit the recompile limit"),
    "dynamo/convert_frame.py:_capture_once": (internal_error, "internal error while capturing"),
    "dynamo/convert_frame.py:_run_as_python": (compiled_code_raised, "ran it as Python instead"),
    "per_shape.py:__call__": (per_shape_limit, "running new shapes through NumPy"),
    "inductor/codegen/cpp/compile.py:_fallback": (no_compiler, "no compiled kernels"),
    "inductor/codecache.py:_private_dir": (unusable_cache_dir, "cannot use the compile cache directory"),
    "inductor/codecache.py:find_compiler": (cxx_passed_over, "no-such-g++"),
    "inductor/codegen/triton/cudagraphs.py:_record": (cudagraph_refused, "runs without CUDA graphs"),
}
CASES = list(TRIGGERS.values()) + [(recompile_limit_under_the_profiler, "hit the recompile limit")]
NEEDS_CXX = {unusable_cache_dir, cxx_passed_over}


@pytest.mark.parametrize("trigger, words", CASES, ids=[t.__name__ for t, _ in CASES])
def test_the_warning_points_at_the_users_line(trigger, words, monkeypatch, tmp_path):
    if trigger in NEEDS_CXX and not HAS_CXX:
        pytest.skip("no C++ compiler")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger(monkeypatch, tmp_path)
    ours = [w for w in caught if str(w.message).startswith("minicompile:")]
    assert [words in str(w.message) for w in ours] == [True], [str(w.message) for w in ours]
    where = ours[0]
    assert where.filename == __file__, f"{where.filename}:{where.lineno}"
    assert linecache.getline(where.filename, where.lineno).rstrip().endswith("# warns here")


def _calls(tree: ast.AST):
    """(innermost enclosing function, call node) for every call in ``tree``."""
    scope = {}
    for function in ast.walk(tree):  # outer functions first: an inner one overwrites
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope.update((id(node), function.name) for node in ast.walk(function))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield scope.get(id(node), "<module>"), node


def _package_sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def test_no_warning_bypasses_the_helper():
    """``warnings.warn``/``warn_explicit`` (or ``from warnings import warn``) only in minicompile/warn.py."""
    bare = []
    for path, tree in _package_sources():
        if path == HELPER:
            continue
        for node in ast.walk(tree):
            imported = isinstance(node, ast.ImportFrom) and node.module == "warnings" \
                and any(a.name.startswith("warn") for a in node.names)
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("warn", "warn_explicit") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "warnings"
            if imported or called:
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bare, f"warnings that bypass minicompile.warn.warn: {bare}"


def test_every_place_that_warns_is_triggered_here():
    sites = set()
    for path, tree in _package_sources():
        for function, call in _calls(tree):
            if isinstance(call.func, ast.Name) and call.func.id == "warn" and path != HELPER:
                sites.add(f"{path.relative_to(PACKAGE).as_posix()}:{function}")
    assert sites == set(TRIGGERS), "a place that warns without a trigger here (or a stale one): " \
                                   f"{sorted(sites ^ set(TRIGGERS))}"
