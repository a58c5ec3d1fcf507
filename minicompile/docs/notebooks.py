"""The tutorials as Jupyter notebooks, executed: what ``make tutorials`` writes and the site shows.

In:  tutorial scripts (``tutorials/NN_topic.py``, cells marked ``# %%`` and
     ``# %% [markdown]``, read by jupytext) and a folder.
Out: ``FOLDER/NN_topic.ipynb`` for each tutorial, with the outputs of its cells:
     printed text, errors, and the pictures it shows
     (:func:`minicompile.ir.drawing.show`).

Each run gets a fresh kernel (``python3``: this interpreter, through ipykernel), a
fresh working folder and a fresh ``MINICOMPILE_CACHE_DIR``, as in
``tests/test_tutorials.py``, so what a page shows is what a first run prints;
only the C++ runtime library, built once per machine by design, is shared.
Running every tutorial takes a minute or two, so an executed notebook is kept:
its metadata holds a key (a hash of the tutorial, of every source file of the
package and of the Python version) and it runs again only when that key
changes.  Up to ``jobs`` kernels run at once, the slowest tutorials (by their
last run) first.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # minicompile/
TUTORIALS = PACKAGE.parent / "tutorials"  # in a source checkout
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
CELL_TIMEOUT_S = 300  # as tests/test_tutorials.py gives a whole tutorial


def tutorials(folder: Path = TUTORIALS) -> list[Path]:
    """The numbered tutorial scripts in ``folder``, in order."""
    return sorted(folder.glob("[0-9][0-9]_*.py"))


@functools.cache
def _package_digest() -> bytes:
    digest = hashlib.sha256(f"python {sys.version_info[:2]}\n".encode())
    for path in sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".h")):
        digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.digest()


def source_key(tutorial: Path) -> str:
    """What an executed notebook of ``tutorial`` depends on, as one hash."""
    return hashlib.sha256(_package_digest() + tutorial.read_bytes()).hexdigest()


def _read(tutorial: Path):
    import jupytext

    notebook = jupytext.read(tutorial, fmt="py:percent")
    notebook.metadata["kernelspec"] = dict(KERNEL)
    return notebook


def _metadata(path: Path) -> dict:
    """The ``minicompile`` metadata of the notebook at ``path`` ({} when there is none)."""
    import nbformat

    try:
        return dict(nbformat.read(path, as_version=4).metadata.get("minicompile", {}))
    except (OSError, ValueError):
        return {}


async def _execute(tutorial: Path, target: Path, key: str, limit: asyncio.Semaphore) -> None:
    """Run ``tutorial`` in a fresh kernel and write the notebook with its outputs."""
    import nbformat
    from nbclient import NotebookClient

    from .. import config

    notebook = _read(tutorial)
    async with limit:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"minicompile-{tutorial.stem}-") as work:
            env = {**os.environ, "MINICOMPILE_CACHE_DIR": str(Path(work) / "cache"),
                   "MINICOMPILE_RUNTIME_DIR": str(config.runtime_dir),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE.parent), os.environ.get("PYTHONPATH")]))}
            env.pop("MPLBACKEND", None)  # the kernel's own (inline) backend shows figures
            client = NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL["name"],
                                    resources={"metadata": {"path": work}})
            # The kernel process's own log (not the cells' output) goes to a file.
            with open(Path(work) / "kernel.log", "w") as log:
                await client.async_execute(env=env, stdout=log, stderr=log)
        seconds = time.perf_counter() - started
    notebook.metadata["minicompile"] = {"source_key": key, "seconds": round(seconds, 1)}
    partial = target.with_suffix(".ipynb.partial")
    nbformat.write(notebook, partial)
    partial.replace(target)  # never a half-written notebook that looks executed
    print(f"  ran {tutorial.name} in {seconds:.1f} s", flush=True)


async def _execute_all(jobs: list[tuple[Path, Path, str]], parallel: int) -> list[str]:
    limit = asyncio.Semaphore(parallel)
    results = await asyncio.gather(*(_execute(t, target, key, limit) for t, target, key in jobs),
                                   return_exceptions=True)
    return [f"{tutorial.name}: {type(result).__name__}: {result}"
            for (tutorial, _, _), result in zip(jobs, results) if isinstance(result, BaseException)]


def write(scripts: list[Path], folder: Path, jobs: int | None = None) -> list[Path]:
    """Run each script as a notebook and write it, with its outputs, to ``folder/NAME.ipynb``.

    A script whose kept notebook has its current key is not run again.  ``jobs``
    kernels run at once (default: one per CPU).  Returns the notebooks' paths, in
    order; raises RuntimeError naming every tutorial that failed, with its error
    (the others are written all the same)."""
    folder.mkdir(parents=True, exist_ok=True)
    todo, kept = [], 0
    for script in scripts:
        target = folder / f"{script.stem}.ipynb"
        key = source_key(script)
        previous = _metadata(target) if target.exists() else {}
        if previous.get("source_key") == key:
            kept += 1
            continue
        todo.append((previous.get("seconds", 0.0), script, target, key))
    todo.sort(key=lambda job: -job[0])  # the longest first, so that the kernels finish together
    print(f"notebooks in {folder}: {len(todo)} to run, {kept} unchanged", flush=True)
    failures = asyncio.run(_execute_all([job[1:] for job in todo], jobs or os.cpu_count() or 1))
    if failures:
        raise RuntimeError("tutorials that failed as notebooks:\n" + "\n".join(failures))
    return [folder / f"{script.stem}.ipynb" for script in scripts]
