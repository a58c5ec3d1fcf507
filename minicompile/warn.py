"""Warnings that point at the user's line, and which files are minicompile's own.

In:  a message (and a warning category) from anywhere in minicompile.
Out: the warning, attributed to the innermost frame outside minicompile — the
     user's line that called a compiled function, ``mc.compile``, a backend or
     ``minicompile.testing`` — as a warning from NumPy points at the user's call,
     not at NumPy's own source.

``warnings.warn(..., stacklevel=n)`` counts frames from the call site, but the
depth between the user's call and a warning varies: a profiler in between, a
method bound through ``__get__``, a resume function after a graph break, a
backend called through ``auto``.  So the frame is found instead: the first one
whose file is not minicompile's (generated code, named ``<minicompile ...>``,
counts as minicompile's).  Every warning minicompile raises goes through
:func:`warn`.
"""
from __future__ import annotations

import os
import sys
import warnings

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def is_internal_file(filename: str) -> bool:
    """minicompile's own code, or code it generated (guards, binders, wrappers)."""
    return filename.startswith(_PACKAGE_DIR) or filename.startswith("<minicompile")


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue ``message`` at the innermost frame outside minicompile (filters,
    ``-W error`` and ``warnings.catch_warnings`` apply as to ``warnings.warn``).
    A call with no such frame (a thread minicompile started) warns at its caller."""
    caller = sys._getframe(1)
    frame = caller
    while frame is not None and is_internal_file(frame.f_code.co_filename):
        frame = frame.f_back
    frame = frame or caller
    # What warnings.warn itself passes for the frame it picks: the module's
    # name (what filters match) and its registry (what "once"/"default" remember).
    module_globals = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module_globals.get("__name__", "<string>"),
                           module_globals.setdefault("__warningregistry__", {}))
