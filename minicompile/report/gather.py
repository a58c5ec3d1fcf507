"""Collecting what a compiled call produced, stage by stage, for the report.

In:  a function, a backend and example calls.
Out: a :class:`Gathered`: the function's source, one :class:`Frame` per
     compiled code object (the function and each resume function), each with
     its captures, graphs, guards, compiled artifacts, the logged artifacts
     (:mod:`minicompile.logs`) and a profile of the calls.

It compiles the function afresh (a new cache), switches every log artifact on
with stderr captured — the same text ``MINICOMPILE_LOGS=all`` prints — and
reads the cache entries of every compiled function the run created.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import logs
from ..api import lookup_backend
from ..dynamo import OptimizedFunction
from ..dynamo import eval_frame
from ..dynamo.callables import resolve
from ..graph_id import GraphId
from ..profiler import Profile

_BANNER = re.compile(r"^\[minicompile:(\w+)\](?: (.+))?$", re.M)  # logs.py: name, then its graph
_EXTERN = re.compile(r"^extern (\w+) = np\.(\w+)\(", re.M)


@dataclass
class Frame:
    """One compiled code object (the user's function, or a resume function) and its entries."""

    name: str
    code: types.CodeType
    entries: list  # dynamo CacheEntry objects, in cache order


@dataclass
class Artifact:
    """One logged artifact: its name, the graph it belongs to (``graph 1 of f``, or
    "" when logged outside a compile: a recompile, a graph break), its text."""

    name: str
    graph: str
    text: str


@dataclass
class Gathered:
    fn: types.FunctionType
    backend: str
    filename: str
    first_line: int
    source_lines: list[str]
    frames: list[Frame]
    artifacts: list[Artifact]  # in the order they were logged
    profile: Profile
    results: list[Any] = field(default_factory=list)
    error: str | None = None

    def artifact(self, name: str) -> list[str]:
        return [a.text for a in self.artifacts if a.name == name]


def split_artifacts(text: str) -> list[Artifact]:
    """The ``[minicompile:NAME] GRAPH`` blocks of captured log text, in order."""
    marks = list(_BANNER.finditer(text))
    out = []
    for m, nxt in zip(marks, marks[1:] + [None]):
        body = text[m.end(): nxt.start() if nxt else len(text)]
        out.append(Artifact(m.group(1), m.group(2) or "", body.strip("\n")))
    return out


def _source(fn: types.FunctionType) -> tuple[str, int, list[str]]:
    filename = fn.__code__.co_filename
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return filename, fn.__code__.co_firstlineno, []
    return filename, first, [line.rstrip("\n") for line in lines]


def gather(fn: Callable, calls: list[tuple[tuple, dict]], backend: str | Callable = "auto") -> Gathered:
    """Compile ``fn`` afresh and run it on each ``(args, kwargs)`` of ``calls``."""
    original = fn.original if isinstance(fn, OptimizedFunction) else fn
    if isinstance(fn, OptimizedFunction) and backend == "auto":
        backend = fn.backend_name if fn.backend_name in ("eager", "aot_eager", "cpp", "triton", "spyre") else fn.backend
    target = resolve(original).fn  # a method, an object with __call__, a partial: the function traced
    backend_fn, backend_name = lookup_backend(backend)
    # Held, not only their ids: a function freed during the run could lend its id to a new one.
    existing = list(eval_frame._ALL)
    before = set(map(id, existing))
    compiled = OptimizedFunction(original, backend_fn, False, backend_name)
    previous = set(logs._enabled)
    captured = io.StringIO()
    prof = Profile()
    results, error = [], None
    logs.set_logs("all")
    try:
        with contextlib.redirect_stderr(captured), prof:
            for args, kwargs in calls:
                results.append(compiled(*args, **kwargs))
    except Exception as e:  # the page still shows every stage that was reached
        error = f"{type(e).__name__}: {e}"
    finally:
        logs._enabled = previous
    created = [f for f in list(eval_frame._ALL) if id(f) not in before]
    del existing
    created.sort(key=lambda f: (f is not compiled, f.fn.__code__.co_firstlineno, f.fn.__name__))
    frames = [Frame(f.fn.__qualname__, f.fn.__code__, list(f.cache)) for f in created if f.cache]
    filename, first, lines = _source(target)
    return Gathered(target, backend_name, filename, first, lines, frames,
                    split_artifacts(captured.getvalue()), prof, results, error)


def kernel_groups(compiled: Any) -> dict[str, str]:
    """Graph node name -> the kernel (or extern call) that computes it."""
    groups: dict[str, str] = {}
    for kernel, origins in getattr(compiled, "kernel_origins", {}).items():
        for name in origins:
            groups.setdefault(name, kernel)
    schedule = getattr(compiled, "schedule", None)
    runs = getattr(schedule, "runs", {})
    for step in getattr(schedule, "steps", []):  # a Schedule object (the Spyre backend)
        if hasattr(step, "op_name") and step.name not in runs:
            continue  # an Extern run through NumPy: named below
        for name in getattr(step, "origins", [step.name]):
            groups.setdefault(name, step.name)
    # The schedule's text names each call made through NumPy: "extern NAME = np.OP(...)".
    for m in _EXTERN.finditer(str(schedule or "")):
        groups.setdefault(m.group(1), f"extern np.{m.group(2)}")
    return groups


def compiled_graphs(entry: Any) -> list[tuple[str, GraphId | None, Any]]:
    """The inductor results inside a cache entry: (label, graph id, compiled graph)."""
    compiled = entry.compiled
    if compiled is None:
        return []
    if hasattr(compiled, "partition") and hasattr(compiled, "forward"):  # aot.AotFunction
        found = [("forward", entry.graph_id, compiled.forward)]
        if getattr(compiled, "_backward", None) is not None:
            found.append(("backward", compiled.backward_graph_id, compiled._backward))
        return [(label, gid, c) for label, gid, c in found if hasattr(c, "graph")]
    # (not the eager backend's ir.Graph)
    return [("", entry.graph_id, compiled)] if hasattr(compiled, "graph") else []


def relative(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename
