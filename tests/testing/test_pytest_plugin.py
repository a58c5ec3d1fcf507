"""--minicompile-backend sets the backend of minicompile.testing's checks; without it nothing changes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
from minicompile.testing import DEFAULTS

def test_probe():
    print("BACKEND", DEFAULTS["backend"], DEFAULTS["backends"])
'''


def run_pytest(tmp_path, *options):
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # The plugin by its module, and not again by the entry point an install registers.
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:minicompile",
                           "-p", "minicompile_pytest",
                           "-p", "no:cacheprovider", "-s", "-o", "addopts=", *options, "test_probe.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_the_option_sets_the_default_backend(tmp_path):
    out = run_pytest(tmp_path, "--minicompile-backend=eager")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BACKEND eager ('eager',)" in out.stdout and "minicompile.testing backend: eager" in out.stdout


def test_without_the_option_the_defaults_stay(tmp_path):
    out = run_pytest(tmp_path)
    assert "BACKEND auto ('eager', 'cpp')" in out.stdout, out.stdout + out.stderr


def test_an_unknown_backend_is_a_usage_error(tmp_path):
    out = run_pytest(tmp_path, "--minicompile-backend=nope")
    assert out.returncode != 0 and "unknown backend" in out.stderr


def test_loading_the_plugin_imports_nothing_of_minicompile(tmp_path):
    """Installed plugins load before any conftest.py, which may still be setting the
    environment minicompile reads when it is first imported."""
    (tmp_path / "conftest.py").write_text("import sys\nassert 'minicompile' not in sys.modules, 'imported early'\n")
    out = run_pytest(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
