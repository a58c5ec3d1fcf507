"""minicompile's docstrings as autodoc reads them: a Sphinx extension.

In:  the docstring lines Sphinx's autodoc is about to render (event
     ``autodoc-process-docstring``), for any module, class, function or value.
Out: the same lines in reStructuredText, rewritten in place.

The package's docstrings are plain text with reStructuredText roles
(``:func:`name```, double backquotes) and two habits of their own:

* ``In:`` and ``Out:`` paragraphs say what a module or function takes and
  returns; they become a field list (their continuation lines stay indented);
* a module-level value (a setting of ``minicompile.config``, a table such as
  ``minicompile.testing.TOLERANCE``) is documented by the ``#`` comment block
  right above its assignment.  That comment replaces what autodoc would show
  otherwise: the docstring of the value's type (``int``'s, ``dict``'s).
"""
from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import types
from typing import Any

FIELD = re.compile(r"^(In|Out):\s+")


def fields(lines: list[str]) -> list[str]:
    """``In: text`` / ``Out: text`` at the left margin -> ``:In: text`` (a field list)."""
    return [FIELD.sub(lambda m: f":{m.group(1)}: ", line) for line in lines]


@functools.cache
def comments(module: types.ModuleType) -> dict[str, list[str]]:
    """Each name assigned at the top level of ``module``'s source -> the ``#`` comment lines right above it."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    found: dict[str, list[str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        first = node.lineno - 1  # the assignment's line, 0-based
        while first > 0 and lines[first - 1].lstrip().startswith("#"):
            first -= 1
        comment = [re.sub(r"^\s*#:?\s?", "", line) for line in lines[first:node.lineno - 1]]
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        found.update((t.id, comment) for t in targets if isinstance(t, ast.Name))
    return found


def value_comment(qualified: str, value: Any) -> list[str]:
    """The comment documenting ``qualified`` (``package.NAME``), found where NAME is assigned.

    A package often re-exports a value from one of its modules, so every loaded
    module of the package that holds the same object under that name is read."""
    package, _, name = qualified.rpartition(".")
    candidates = [package] + sorted(m for m in sys.modules if m.startswith(package + "."))
    for module_name in candidates:
        module = sys.modules.get(module_name)
        if module is None or getattr(module, name, None) is not value:
            continue
        if name in comments(module):
            return comments(module)[name]
    return []


def process(app, what: str, name: str, obj: Any, options, lines: list[str]) -> None:
    """autodoc-process-docstring: rewrite ``lines`` in place (see the module docstring)."""
    if what == "data" and name.startswith("minicompile."):
        # A comment is plain text: its bars are |x| in a formula, no substitution.
        lines[:] = [line.replace("|", "\\|") for line in value_comment(name, obj)]
    lines[:] = fields(lines)


def setup(app) -> dict:
    app.connect("autodoc-process-docstring", process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
