"""``make clean`` removes what the checkout's commands write and nothing of the
user's; ``make clean-cache`` removes the compile cache, wherever the settings put it.

Run on a copy of the Makefile in an empty directory, with ``HOME`` pointing
at a directory of the test's own, so no real file is at stake.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")

WRITTEN = [".venv/bin/python", ".venv312/bin/python", ".venv313/bin/python", "build/bench.json",
           "build/notebooks/01.ipynb", "dist/minicompile.whl", "minicompile.egg-info/PKG-INFO",
           "bench.json", "bench_gpu.json", ".pytest_cache/README.md", ".hypothesis/examples/x",
           "minicompile/__pycache__/api.cpython-311.pyc", "tests/ir/__pycache__/t.pyc"]
KEPT = ["README.md", "minicompile/api.py", "tests/ir/test_graph.py", "f_report.html"]


def _make(target: str, checkout: Path, home: Path, **env: str) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MINICOMPILE_")}
    environ.update(HOME=str(home), **env)
    subprocess.run(["make", "--no-print-directory", target], cwd=checkout, env=environ, check=True,
                   capture_output=True, timeout=60)


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy(ROOT / "Makefile", root)
    for name in WRITTEN + KEPT:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    return root


def test_clean_removes_what_is_written_and_keeps_the_cache(checkout, tmp_path):
    cache = tmp_path / "home" / ".cache" / "minicompile"
    (cache / "runtime").mkdir(parents=True)
    (cache / "abc.so").write_text("a compiled kernel")
    _make("clean", checkout, tmp_path / "home")
    assert [name for name in WRITTEN if (checkout / name).exists()] == []
    assert not list(checkout.rglob("__pycache__"))
    assert all((checkout / name).exists() for name in KEPT + ["Makefile"])
    assert (cache / "abc.so").exists()  # shared with every checkout: only clean-cache removes it


def test_clean_cache_removes_the_default_cache(checkout, tmp_path):
    cache = tmp_path / "home" / ".cache" / "minicompile"
    (cache / "runtime").mkdir(parents=True)
    (cache / "abc.so").write_text("a compiled kernel")
    _make("clean-cache", checkout, tmp_path / "home")
    assert not cache.exists() and (tmp_path / "home" / ".cache").exists()
    assert all((checkout / name).exists() for name in WRITTEN + KEPT)


def test_clean_cache_follows_the_settings(checkout, tmp_path):
    default = tmp_path / "home" / ".cache" / "minicompile"
    default.mkdir(parents=True)
    chosen, runtime = tmp_path / "kernels", tmp_path / "runtime"
    for directory in (chosen, runtime):
        directory.mkdir()
        (directory / "abc.so").write_text("a compiled kernel")
    _make("clean-cache", checkout, tmp_path / "home",
          MINICOMPILE_CACHE_DIR=str(chosen), MINICOMPILE_RUNTIME_DIR=str(runtime))
    assert not chosen.exists() and not runtime.exists()
    assert default.exists()  # not the cache in use
