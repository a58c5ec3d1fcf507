"""The on-disk cache: corrupt libraries are rebuilt, concurrent compiles are
safe, a missing compiler degrades to NumPy with one warning, a ``CXX`` that does
not run is passed over with one, the directory an unusable cache falls back to
goes at exit, and editing an included header compiles again."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from minicompile import config, ir
from minicompile.inductor import codecache, compile_graph
from minicompile.inductor.codegen.cpp import compile as cpp_compile
from minicompile.ir import TensorMeta

REPO = Path(__file__).resolve().parents[2]


def small_graph(scale: float = 2.0) -> ir.Graph:
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3, 4), np.dtype(np.float64)))
    g.output([g.call("sum", g.call("tanh", g.call("multiply", x, scale)), axis=1)])
    return g


X = np.linspace(-1, 1, 12).reshape(3, 4)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache directory and an empty in-process cache."""
    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(codecache, "_loaded", {})
    return tmp_path / "cache"


def only_library(cache: Path) -> Path:
    (lib,) = cache.glob("*.so")
    return lib


def replace_file(path: Path, data: bytes) -> None:
    """Swap in new contents (a new inode: the loaded library stays mapped intact)."""
    tmp = path.with_name("replacement")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_cached_library_is_reused(fresh_cache, monkeypatch):
    g = small_graph()
    compile_graph(g, [X])
    lib = only_library(fresh_cache)
    stamp = lib.stat().st_mtime_ns
    monkeypatch.setattr(codecache, "_loaded", {})

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled although the library was cached")

    monkeypatch.setattr(codecache, "_compile", no_compiler)
    np.testing.assert_allclose(compile_graph(g, [X])(X)[0], g(X)[0], atol=1e-12)
    assert lib.stat().st_mtime_ns == stamp


def test_truncated_library_is_rebuilt(fresh_cache, monkeypatch):
    g = small_graph()
    compile_graph(g, [X])
    lib = only_library(fresh_cache)
    good = lib.read_bytes()
    replace_file(lib, good[: len(good) // 3])
    monkeypatch.setattr(codecache, "_loaded", {})
    np.testing.assert_allclose(compile_graph(g, [X])(X)[0], g(X)[0], atol=1e-12)
    assert lib.read_bytes() == good or codecache._sha256_file(lib) == lib.with_suffix(".sha256").read_text()


def test_unloadable_library_with_matching_checksum_is_rebuilt(fresh_cache, monkeypatch):
    g = small_graph()
    compile_graph(g, [X])
    lib = only_library(fresh_cache)
    replace_file(lib, b"not a shared library")
    lib.with_suffix(".sha256").write_text(codecache._sha256_file(lib))
    monkeypatch.setattr(codecache, "_loaded", {})
    np.testing.assert_allclose(compile_graph(g, [X])(X)[0], g(X)[0], atol=1e-12)
    assert lib.read_bytes() != b"not a shared library"


def test_two_processes_compile_the_same_graph_at_once(tmp_path):
    script = textwrap.dedent(
        """
        import numpy as np
        from minicompile import ir
        from minicompile.inductor import compile_graph
        from minicompile.ir import TensorMeta
        g = ir.Graph()
        x = g.placeholder("x", TensorMeta((64,), np.dtype(np.float32)))
        g.output([g.call("exp", g.call("multiply", x, 0.5))])
        a = np.arange(64, dtype=np.float32)
        compiled = compile_graph(g, [a])
        assert compiled.kernels and compiled.fallback_reason is None
        np.testing.assert_allclose(compiled(a)[0], g(a)[0], rtol=1e-6)
        print("ok")
        """
    )
    env = {**os.environ, "MINICOMPILE_CACHE_DIR": str(tmp_path / "shared"), "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    assert len(list((tmp_path / "shared").glob("*.so"))) == 1
    assert not list((tmp_path / "shared").glob("*tmp*"))


def test_missing_compiler_falls_back_with_one_warning(fresh_cache, monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cxx", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setattr(cpp_compile, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = compile_graph(small_graph(2.0), [X])
        second = compile_graph(small_graph(3.0), [X])
    assert len(caught) == 1
    assert "no-such-compiler" in str(caught[0].message)
    for compiled, scale in ((first, 2.0), (second, 3.0)):
        assert compiled.kernels == [] and compiled.fallback_reason
        np.testing.assert_allclose(compiled(X)[0], small_graph(scale)(X)[0], atol=1e-12)
        assert "NumPy" in str(compiled)


def test_compile_error_falls_back_and_shows_the_compiler_output(fresh_cache, monkeypatch):
    monkeypatch.setattr(codecache, "compile_flags", lambda: ["-shared", "--no-such-flag"])
    monkeypatch.setattr(cpp_compile, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = compile_graph(small_graph(), [X])
    assert len(caught) == 1 and "no-such-flag" in str(caught[0].message)
    np.testing.assert_allclose(compiled(X)[0], small_graph()(X)[0], atol=1e-12)


def test_unusable_cache_directory_compiles_into_a_private_one(tmp_path, monkeypatch):
    """A cache path that cannot be a directory (a file is in the way) warns once and still compiles."""
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setattr(config, "cache_dir", blocker / "cache")
    monkeypatch.setattr(codecache, "_loaded", {})
    monkeypatch.setattr(codecache, "_private", None)
    with pytest.warns(UserWarning, match="cannot use the compile cache directory"):
        compiled = compile_graph(small_graph(), [X])
    assert compiled.fallback_reason is None
    np.testing.assert_allclose(compiled(X)[0], small_graph()(X)[0], atol=1e-12)
    assert blocker.read_text().startswith("a file")  # nothing of the user's was touched
    assert list(codecache._private.glob("*.so"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second graph says nothing more
        compile_graph(small_graph(3.0), [X])


def test_the_private_directory_is_removed_at_exit(tmp_path):
    """The directory an unusable cache falls back to lives as long as the process
    that made it, and no longer: not when a forked child exits, but when it does."""
    script = textwrap.dedent(
        """
        import os, sys, warnings
        import numpy as np
        from minicompile import ir
        from minicompile.inductor import codecache, compile_graph
        from minicompile.ir import TensorMeta
        g = ir.Graph()
        x = g.placeholder("x", TensorMeta((4,), np.dtype(np.float64)))
        g.output([g.call("exp", x)])
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            assert compile_graph(g, [np.ones(4)]).kernels
        private = codecache._private
        assert list(private.glob("*.so"))
        child = os.fork()
        if child == 0:
            sys.exit(0)  # a normal exit: atexit handlers run, in the child
        os.waitpid(child, 0)
        assert list(private.glob("*.so")), "a forked child removed its parent's directory"
        print(private)
        """
    )
    (tmp_path / "a_file").write_text("where the cache directory should be")
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "MINICOMPILE_CACHE_DIR": str(tmp_path / "a_file" / "cache"), "TMPDIR": str(temp),
           "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    private = Path(proc.stdout.strip())
    assert private.parent == temp and private.name.startswith("minicompile-")
    assert not private.exists() and not list(temp.iterdir())


@pytest.mark.parametrize("kind", ["missing", "not runnable"])
def test_a_cxx_that_does_not_run_is_passed_over_with_one_warning(fresh_cache, monkeypatch, tmp_path, kind):
    """``CXX=/nonexistent/g++`` (or a file that is no program) is never silently
    replaced: one warning names it and the compiler used instead."""
    bad = tmp_path / "g++"
    if kind == "not runnable":
        bad.write_text("no program, no interpreter line\n")
        bad.chmod(0o755)
    monkeypatch.setattr(config, "cxx", str(bad))
    monkeypatch.setattr(codecache, "_passed_over", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = compile_graph(small_graph(2.0), [X])
        second = compile_graph(small_graph(3.0), [X])
    assert first.kernels and second.kernels  # compiled by the compiler on PATH
    used = codecache.find_compiler()
    assert Path(used).name in codecache.CANDIDATES
    (warning,) = caught
    message = str(warning.message)
    assert str(bad) in message and f"using {used} instead" in message
    assert ("is not found" in message) == (kind == "missing")


def test_editing_an_included_header_compiles_again(fresh_cache, tmp_path):
    """The key covers the contents of the headers a source includes by path,
    and of those they include in turn."""
    inner = tmp_path / "inner.h"
    outer = tmp_path / "outer.h"
    outer.write_text('#include "inner.h"\n')  # a header's own include: relative to it
    source = f'#include "{outer}"\nextern "C" int answer() {{ return ANSWER; }}\n'
    answers = []
    for value in (41, 42):
        inner.write_text(f"#define ANSWER {value}\n")
        lib, path, _ = codecache.load(source)
        answers.append((lib.answer(), path.name))
    assert [a for a, _ in answers] == [41, 42] and answers[0][1] != answers[1][1]


def preludes(cache: Path) -> list[Path]:
    return sorted(cache.glob("pch/*/prelude.h.gch"))


def test_units_read_their_headers_precompiled(fresh_cache):
    """The first unit builds the precompiled header of its includes; a second unit
    with the same includes uses it as it is, and means what it meant without it."""
    compile_graph(small_graph(2.0), [X])
    (gch,) = preludes(fresh_cache)
    stamp = gch.stat().st_mtime_ns
    g = small_graph(3.0)
    np.testing.assert_allclose(compile_graph(g, [X])(X)[0], g(X)[0], atol=1e-12)
    assert preludes(fresh_cache) == [gch] and gch.stat().st_mtime_ns == stamp
    units = list(fresh_cache.glob("*.cpp"))
    assert len(units) == 2 and all((gch.parent / "prelude.h").read_text() in u.read_text() for u in units)


def test_a_damaged_precompiled_header_is_compiled_without_and_removed(fresh_cache):
    compile_graph(small_graph(2.0), [X])
    (gch,) = preludes(fresh_cache)
    replace_file(gch, gch.read_bytes()[:100_000])  # a .gch cut short: GCC stops on it
    g = small_graph(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to NumPy
        np.testing.assert_allclose(compile_graph(g, [X])(X)[0], g(X)[0], atol=1e-12)
    assert preludes(fresh_cache) == []


def test_a_prelude_that_does_not_build_leaves_plain_compiles(fresh_cache, monkeypatch):
    from minicompile.inductor import precompiled_headers

    def broken(*args):
        raise RuntimeError("no room for it")

    monkeypatch.setattr(precompiled_headers, "_build", broken)
    monkeypatch.setattr(precompiled_headers, "_failed", set())
    g = small_graph(7.0)
    np.testing.assert_allclose(compile_graph(g, [X])(X)[0], g(X)[0], atol=1e-12)
    assert preludes(fresh_cache) == []


def test_headers_without_include_guards_are_not_precompiled(fresh_cache, tmp_path):
    header = tmp_path / "unguarded.h"
    header.write_text("static int twice() { return 2; }\n")
    lib, _, _ = codecache.load(f'#include "{header}"\nextern "C" int answer() {{ return twice(); }}\n')
    assert lib.answer() == 2 and not (fresh_cache / "pch").exists()
