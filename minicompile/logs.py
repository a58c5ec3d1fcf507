"""Artifact logging, switched on per artifact with ``MINICOMPILE_LOGS``.

``MINICOMPILE_LOGS=graph,guards,recompiles,graph_breaks,bytecode,loops,output_code``
prints each artifact to stderr as the stage that produces it finishes, the way
``TORCH_LOGS`` does for torch.compile.  ``MINICOMPILE_LOGS=all`` turns on all.
An artifact logged while a graph compiles names it after its banner
(``[minicompile:schedule] graph 1 of f``, see :mod:`.graph_id`), as torch's
logs carry a compile id.

``+internals`` (a flag, not an artifact; ``all`` leaves it off) keeps
minicompile's own frames in the tracebacks of errors raised through compiled
code, which otherwise show only the user's frames (dynamo/user_code.py).
"""
from __future__ import annotations

import os
import sys
from typing import Callable

from . import graph_id

ARTIFACTS = (
    "graph",         # the captured ir.Graph, printed as Python
    "guards",        # the guard function of each cache entry
    "recompiles",    # which guard failed and why a function is compiled again
    "graph_breaks",  # where capture stopped and why
    "bytecode",      # the function's bytecode as the interpreter reads it
    "loops",         # each counted loop: one loop node, or unrolled, and why
    "decomp",        # graphs before and after decomposition into primitives
    "patterns",      # each pattern a backend replaces by a template (attention), or why not
    "aot",           # the joint forward/backward graph
    "partition",     # what the partitioner saves and recomputes
    "schedule",      # the fused kernels chosen by the inductor scheduler
    "output_code",   # generated kernels and wrapper
    "cudagraphs",    # mode="reduce-overhead": each CUDA graph recorded, or why a graph runs without one
    "spyre",         # the Spyre backend's programs, per core, and its host fallbacks
)
FLAGS = (
    "internals",     # tracebacks keep minicompile's own frames
)


def _parse(spec: str) -> set[str]:
    names = {part.strip().lstrip("+") for part in spec.split(",") if part.strip()}
    flags = names & set(FLAGS)
    if "all" in names:
        return set(ARTIFACTS) | flags
    unknown = names - set(ARTIFACTS) - flags
    if unknown:
        print(
            f"minicompile: unknown MINICOMPILE_LOGS entries {sorted(unknown)}; "
            f"known: {', '.join(ARTIFACTS)}, +{', +'.join(FLAGS)}",
            file=sys.stderr,
        )
    return names & (set(ARTIFACTS) | flags)


_enabled: set[str] = _parse(os.environ.get("MINICOMPILE_LOGS", ""))


def set_logs(spec: str) -> None:
    """Replace the enabled artifacts, e.g. ``set_logs("graph,guards")``."""
    global _enabled
    _enabled = _parse(spec)


def enabled(artifact: str) -> bool:
    return artifact in _enabled


def log(artifact: str, text: str | Callable[[], str]) -> None:
    """Print ``text`` under a banner if ``artifact`` is switched on.

    ``text`` may be a zero-argument callable so that expensive printing only
    happens when somebody asked for it.
    """
    if artifact not in _enabled:
        return
    body = text() if callable(text) else text
    print(f"[minicompile:{artifact}]{banner_label()}\n{body}\n", file=sys.stderr)


def banner_label() -> str:
    """After an artifact's banner: the graph being compiled (``graph_id``), so
    that the artifacts of several graphs of one function can be told apart."""
    graph = graph_id.current()
    return f" {graph}" if graph is not None else ""
