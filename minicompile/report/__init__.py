"""``mc.report(fn, path)(*args)``: one self-contained HTML page about compiling ``fn``.

The page shows every stage for this call: the source with graph-break and
guard lines highlighted, original and transformed bytecode, each captured
graph (as Python and as a picture), guards and recompile reasons, the joint
graph and its min-cut when training, the fused schedule (one colour per
kernel), each generated kernel linked back to the source lines it came from,
the wrapper, and timings.  ``python -m minicompile report FILE.py:FUNCTION``
does the same from the command line (see :mod:`.cli`).
"""
from __future__ import annotations

from typing import Any, Callable

from .gather import Gathered, gather
from .html import render_page, write_page


def report(fn: Callable, path: str = "minicompile_report.html", backend: str | Callable = "auto",
           repeat: int = 1) -> Callable[..., Any]:
    """``report(fn, path)(*args, **kwargs)`` compiles ``fn`` afresh, calls it, writes the page
    to ``path`` and returns ``fn``'s (last) result; the page is written even if the call raises.

    ``repeat=N`` calls it N times with the same arguments, so the timings show warm
    calls (kernels) after the first one (which compiles); a function that mutates
    its arguments then mutates them N times."""
    if repeat < 1:
        raise ValueError(f"minicompile.report: repeat must be at least 1, got {repeat}")

    def run(*args: Any, **kwargs: Any) -> Any:
        g = gather(fn, [(args, kwargs)] * repeat, backend)
        write_page(g, path)
        if g.error is not None:
            raise RuntimeError(f"minicompile.report: {g.error} (report written to {path})")
        return g.results[-1]

    return run


__all__ = ["report", "gather", "Gathered", "render_page", "write_page"]
