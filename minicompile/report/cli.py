"""``python -m minicompile report FILE.py:FUNCTION``: the compile report of a function in a file.

Example inputs come from the module that defines the function, first found of:

1. ``FUNCTION_example_inputs()`` — returns a tuple of positional arguments for
   one call, or a list of such tuples for several calls (a second shape shows
   a recompile and its reason);
2. ``example_inputs()`` — the same, shared by the module's functions;
3. ``example_input()`` — one argument (the built-in examples provide it).

The provider is called ``--repeat`` times (default 3) and every call made, so
the timings show warm calls after the first, compiling one.

``FILE.py`` may also be a module name (``minicompile.examples.gelu_layernorm``).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import Any


class ReportUsageError(Exception):
    pass


def load_module(spec: str) -> types.ModuleType:
    if spec.endswith(".py") or os.path.sep in spec:
        if not os.path.isfile(spec):
            raise ReportUsageError(f"no such file: {spec}")
        name = "__minicompile_report__" + os.path.splitext(os.path.basename(spec))[0]
        module_spec = importlib.util.spec_from_file_location(name, spec)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        sys.path.insert(0, os.path.dirname(os.path.abspath(spec)))
        try:
            module_spec.loader.exec_module(module)
        finally:
            sys.path.pop(0)
        return module
    try:
        return importlib.import_module(spec)
    except ImportError as e:
        raise ReportUsageError(f"cannot import {spec}: {e}") from None


def example_calls(module: types.ModuleType, function: str) -> list[tuple[tuple, dict]]:
    """The calls to make, from the module's example-input convention (see the module doc)."""
    for name, single in ((f"{function}_example_inputs", False), ("example_inputs", False), ("example_input", True)):
        provider = getattr(module, name, None)
        if callable(provider):
            value = provider()
            if single:
                return [((value,), {})]
            if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
                return [(v, {}) for v in value]
            if isinstance(value, tuple):
                return [(value, {})]
            raise ReportUsageError(f"{name}() must return a tuple of arguments or a list of tuples, "
                                   f"got {type(value).__name__}")
    raise ReportUsageError(
        f"{module.__name__} has no example inputs for {function}: define "
        f"`def {function}_example_inputs(): return (x, ...)` (a tuple of arguments, or a list of "
        f"tuples for several calls) in the same file")


def main(target: str, output: str | None, backend: str, repeat: int = 3) -> int:
    from . import gather, write_page

    if ":" not in target:
        print(f"minicompile report: expected FILE.py:FUNCTION, got {target!r}", file=sys.stderr)
        return 2
    spec, function = target.rsplit(":", 1)
    try:
        module = load_module(spec)
        fn: Any = getattr(module, function, None)
        if fn is None:
            raise ReportUsageError(f"{spec} has no function {function!r}")
        # Fresh inputs for every round: warm calls are timed, nothing is mutated twice.
        calls = [call for _ in range(max(repeat, 1)) for call in example_calls(module, function)]
    except ReportUsageError as e:
        print(f"minicompile report: {e}", file=sys.stderr)
        return 2
    path = output or f"{function}_report.html"
    g = gather(fn, calls, backend)
    write_page(g, path)
    print(f"wrote {path} ({len(g.frames)} compiled code object(s), "
          f"{sum(len(f.entries) for f in g.frames)} cache entries); open it in a browser")
    if g.error:
        print(f"minicompile report: the call raised {g.error}", file=sys.stderr)
        return 1
    return 0
