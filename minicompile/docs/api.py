"""The API reference pages: the public names of each public module, for autodoc to render.

In:  the public modules (:data:`PAGES`) as imported now.
Out: :func:`pages` returns ``{"api/NAME.md": Markdown}``; each page holds
     autodoc directives (rendered by Sphinx from the docstrings, see
     :mod:`.docstrings`), one per public name.

A module's public names are its ``__all__`` (``minicompile``, ``minicompile.testing``),
else what it defines without a leading underscore (``minicompile.config``'s
settings), so a new public name gets its entry without touching this file.  A
module among the public names (``mc.ir``) gets a section of its own.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

# (page, title, what it says first, the modules it documents in full,
#  and single entry points: "module:name").
PAGES = [
    ("minicompile", "`import minicompile as mc`",
     "Everything a user calls: compiling, explaining, training, profiling and reporting.",
     ["minicompile"], []),
    ("config", "`minicompile.config`",
     "Settings: change them at run time (`minicompile.config.NAME = value`) or from the "
     "environment (`MINICOMPILE_NAME`).",
     ["minicompile.config"], []),
    ("testing", "`minicompile.testing`",
     "Checks of compiled code against eager NumPy, for your own functions and backends.",
     ["minicompile.testing"], []),
    ("backends", "Backends",
     "`mc.compile(fn, backend=...)` takes a name or any callable `(graph, example_inputs) -> "
     "callable`. Each named backend of the inductor has one entry point, `compile_graph`.",
     [], ["minicompile.api:lookup_backend",
          "minicompile.inductor.codegen.cpp.compile:compile_graph",
          "minicompile.inductor.codegen.triton.compile:compile_graph",
          "minicompile.inductor.codegen.spyre.compile:compile_graph"]),
]


def public_names(module: Any) -> list[str]:
    """``module.__all__``, else the names its source defines without a leading underscore, in order."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    names = []
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            continue
        names += [name for name in found if not name.startswith("_") and name not in names]
    return names


def _directive(qualified: str, value: Any) -> str:
    """The autodoc directive for one public value."""
    if inspect.isclass(value):
        return f".. autoclass:: {qualified}\n   :members:\n"
    if inspect.isroutine(value):
        return f".. autofunction:: {qualified}\n"
    # A path is where it was when the site was built: the setting's comment says what it is.
    no_value = "   :no-value:\n" if isinstance(value, Path) else ""
    return f".. autodata:: {qualified}\n{no_value}"


def _module_section(name: str, heading: str | None) -> list[str]:
    module = importlib.import_module(name)
    lines = [f"## {heading}\n"] if heading else []
    lines.append(f"```{{eval-rst}}\n.. automodule:: {name}\n   :no-members:\n```\n")
    entries, submodules = [], []
    for attr in public_names(module):
        value = getattr(module, attr)
        if inspect.ismodule(value):
            submodules.append(value.__name__)
        else:
            entries.append(_directive(f"{name}.{attr}", value))
    if entries:
        lines.append("```{eval-rst}\n" + "\n".join(entries) + "```\n")
    for sub in submodules:
        lines += _module_section(sub, f"`{sub}`")
    return lines


def _entry_point(spec: str) -> list[str]:
    module, _, attr = spec.partition(":")
    value = getattr(importlib.import_module(module), attr)
    return [f"## `{module}`\n",
            f"```{{eval-rst}}\n.. automodule:: {module}\n   :no-members:\n\n"
            f"{_directive(f'{module}.{attr}', value)}```\n"]


def pages() -> dict[str, str]:
    """``{"api/index.md": ..., "api/NAME.md": ...}``: the reference, one page per entry of :data:`PAGES`."""
    out = {"api/index.md": "# API reference\n\n"
           "Generated from the docstrings of the public API.\n\n"
           "```{toctree}\n" + "\n".join(page for page, *_ in PAGES) + "\n```\n"}
    for page, title, intro, modules, entry_points in PAGES:
        lines = [f"# {title}\n", intro + "\n"]
        for module in modules:
            lines += _module_section(module, None)
        for spec in entry_points:
            lines += _entry_point(spec)
        out[f"api/{page}.md"] = "\n".join(lines)
    return out
