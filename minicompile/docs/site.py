"""The documentation site: README, architecture, API reference and executed tutorials, as HTML.

In:  the source checkout (``README.md``, ``tutorials/``, this folder's
     ``architecture.md`` and ``conf.py``), a notebook folder, and the
     tutorials to show (all of them, or a few for a quick look).
Out: static HTML in the output folder (``index.html`` is the README), built by
     Sphinx with MyST-NB; its sources are staged beside it in ``OUT-src/``.

The pages, as staged:

* ``index.md`` — the README, with the site's table of contents;
* ``architecture.md`` — the pipeline, the layout and the stage contracts;
* ``api/*.md`` — autodoc directives for the public names (:mod:`.api`);
* ``tutorials/index.md`` — ``tutorials/README.md``, its links to the scripts
  pointing at their pages (a tutorial the site leaves out keeps its title, unlinked);
* ``tutorials/NN_topic.ipynb`` — the notebooks of :mod:`.notebooks`, executed,
  with their outputs and pictures.

Sphinx renders the notebooks as they are (``nb_execution_mode = "off"``):
running them is :mod:`.notebooks`' job, which keeps them between builds.
Every warning is an error, so a broken reference or docstring fails the build.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import api, notebooks

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]  # the source checkout
TUTORIAL_LINK = re.compile(r"\[([^\]]+)\]\((\d\d_\w+)\.py\)")  # [title](NN_topic.py) in tutorials/README.md

INDEX_TOC = """

```{toctree}
:hidden:

architecture
api/index
tutorials/index
```
"""
TUTORIALS_TOC = """

```{toctree}
:hidden:
:glob:

[0-9][0-9]_*
```
"""


def stage(src: Path, notebook_paths: list[Path]) -> None:
    """Write the site's sources into ``src`` (emptied first)."""
    shutil.rmtree(src, ignore_errors=True)
    (src / "tutorials").mkdir(parents=True)
    (src / "index.md").write_text((ROOT / "README.md").read_text() + INDEX_TOC)
    shutil.copy(HERE / "architecture.md", src / "architecture.md")
    for name, text in api.pages().items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    shown = {path.stem for path in notebook_paths}

    def page_link(link: re.Match) -> str:
        title, stem = link.groups()
        return f"[{title}]({stem}.ipynb)" if stem in shown else title

    tutorials_index = TUTORIAL_LINK.sub(page_link, (ROOT / "tutorials" / "README.md").read_text())
    (src / "tutorials" / "index.md").write_text(tutorials_index + TUTORIALS_TOC)
    for path in notebook_paths:
        shutil.copy(path, src / "tutorials" / path.name)


def build(out: Path, notebook_dir: Path, tutorials: list[Path] | None = None, jobs: int | None = None) -> Path:
    """Build the site into ``out``; returns ``out/index.html``.

    ``tutorials`` are the scripts shown (default: all), executed by
    :func:`.notebooks.write`, which keeps the notebooks in ``notebook_dir``
    between builds.  Raises RuntimeError when a tutorial fails or Sphinx warns."""
    scripts = notebooks.tutorials() if tutorials is None else tutorials
    notebook_paths = notebooks.write(scripts, notebook_dir, jobs=jobs)
    src = out.with_name(out.name + "-src")
    stage(src, notebook_paths)
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-W", "--keep-going",
               "-c", str(HERE), "-d", str(src / ".doctrees"), str(src), str(out)]
    done = subprocess.run(command, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build failed (exit {done.returncode}): its warnings are above")
    return out / "index.html"
