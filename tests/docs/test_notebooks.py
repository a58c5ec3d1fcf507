"""Tutorials become executed notebooks: outputs and pictures kept, reruns only on change, failures named."""
from __future__ import annotations

import textwrap

import pytest

from minicompile.docs import notebooks

for module in ("jupytext", "nbclient", "ipykernel", "nbformat"):
    pytest.importorskip(module, reason="pip install -e '.[notebooks]'")

import nbformat  # noqa: E402

# A picture that needs no Graphviz.
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><circle r="4" cx="4" cy="4"/></svg>'

DRAWS = textwrap.dedent('''\
    # %% [markdown]
    # # 01 — draws
    # %%
    from pathlib import Path
    from minicompile.ir import drawing
    Path("dot.svg").write_text({svg!r})
    print("drawn")
    drawing.show("dot.svg")
''').format(svg=SVG)

FAILS = textwrap.dedent('''\
    # %% [markdown]
    # # 02 — fails
    # %%
    assert 1 + 1 == 3, "arithmetic"
''')


def test_outputs_and_pictures_are_kept_and_a_failure_is_named(tmp_path, capsys):
    scripts = tmp_path / "tutorials"
    scripts.mkdir()
    (scripts / "01_draws.py").write_text(DRAWS)
    (scripts / "02_fails.py").write_text(FAILS)
    out = tmp_path / "notebooks"
    with pytest.raises(RuntimeError) as failed:
        notebooks.write(notebooks.tutorials(scripts), out, jobs=2)
    assert "02_fails.py" in str(failed.value) and "arithmetic" in str(failed.value)
    assert "01_draws" not in str(failed.value)
    assert not (out / "02_fails.ipynb").exists()  # nothing that looks like a finished run

    drawn = nbformat.read(out / "01_draws.ipynb", as_version=4)
    outputs = [o for cell in drawn.cells if cell.cell_type == "code" for o in cell.outputs]
    assert any(o.get("text") == "drawn\n" for o in outputs)
    assert any("<circle" in o.get("data", {}).get("image/svg+xml", "") for o in outputs)
    assert drawn.metadata.minicompile.source_key == notebooks.source_key(scripts / "01_draws.py")
    assert drawn.metadata.kernelspec.name == "python3"

    capsys.readouterr()
    before = (out / "01_draws.ipynb").stat().st_mtime_ns
    notebooks.write([scripts / "01_draws.py"], out)  # unchanged: kept, not run again
    assert "0 to run, 1 unchanged" in capsys.readouterr().out
    assert (out / "01_draws.ipynb").stat().st_mtime_ns == before


def test_the_key_follows_the_tutorial(tmp_path):
    script = tmp_path / "01_draws.py"
    script.write_text(DRAWS)
    key = notebooks.source_key(script)
    assert notebooks.source_key(script) == key
    script.write_text(DRAWS.replace("drawn", "drawn again"))
    assert notebooks.source_key(script) != key


def test_the_command_line_refuses_a_tutorial_that_is_not_there(tmp_path):
    from minicompile.docs.__main__ import main

    with pytest.raises(SystemExit, match="99"):
        main(["notebooks", str(tmp_path), "--only", "01", "99"])
    assert not any(tmp_path.iterdir())
