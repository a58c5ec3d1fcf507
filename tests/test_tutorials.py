"""Every tutorial runs start to finish and its assertions hold."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, tmp_path):
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "MINICOMPILE_CACHE_DIR": str(tmp_path), "MPLBACKEND": "Agg",
           "PYTHONPATH": pythonpath}
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def test_readme_lists_every_tutorial_in_order():
    readme = (ROOT / "tutorials" / "README.md").read_text()
    positions = [readme.find(f"({path.name})") for path in TUTORIALS]
    missing = [p.name for p, at in zip(TUTORIALS, positions) if at < 0]
    assert not missing, f"tutorials/README.md does not link {missing}"
    assert positions == sorted(positions)


def test_tutorials_become_notebooks():
    jupytext = pytest.importorskip("jupytext")
    for path in TUTORIALS:
        notebook = jupytext.read(path, fmt="py:percent")
        kinds = {cell.cell_type for cell in notebook.cells}
        assert kinds == {"markdown", "code"}, path.name
        assert notebook.cells[0].cell_type == "markdown" and notebook.cells[0].source.startswith("# "), path.name
