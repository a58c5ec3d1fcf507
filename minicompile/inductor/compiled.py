"""The compiled-graph type: what the inductor's backends hand back.

In:  a graph, the callable that runs it, and what compiling it produced (the
     kernel source, the Python wrapper, the compiler flags, the schedule).
Out: :class:`CompiledGraph`, called like the graph itself; ``str()`` shows
     every artifact.  The C++ backend (:mod:`.codegen.cpp.compile`) returns one, the
     Triton backend a subclass (:mod:`.codegen.triton.compile`).
"""
from __future__ import annotations

from typing import Any, Callable

from .. import ir


class CompiledGraph:
    """A compiled graph: ``compiled(*arrays) -> tuple`` in ``graph.outputs`` order.

    ``kernels`` names the generated C++ kernels; ``kernel_source`` is the
    translation unit, ``wrapper_source`` the Python that calls it,
    ``compile_flags`` the compiler command (without files), ``schedule`` the
    fused groups, ``peak_intermediate_bytes`` the most memory held at once by
    buffers that are neither inputs nor outputs.  ``fallback_reason`` is set when the graph runs through NumPy.
    ``kernel_origins`` maps each kernel's name to the graph nodes it computes (for pictures and provenance).
    ``extern_kernels`` names the Externs generated as C++ instead of called
    through NumPy (small float32 matmuls, :mod:`.codegen.cpp.matmul`): the
    wrapper calls them by these names, like ``kernels``.
    """

    def __init__(
        self,
        graph: ir.Graph,
        call: Callable[..., tuple],
        kernels: list[str],
        kernel_source: str,
        wrapper_source: str,
        compile_flags: list[str],
        schedule: str,
        fallback_reason: str | None = None,
        peak_intermediate_bytes: int = 0,
    ):
        self.graph = graph
        self._call = call
        self.kernels = kernels
        self.kernel_source = kernel_source
        self.wrapper_source = wrapper_source
        self.compile_flags = compile_flags
        self.schedule = schedule
        self.fallback_reason = fallback_reason
        self.peak_intermediate_bytes = peak_intermediate_bytes
        self.kernel_origins: dict[str, list[str]] = {}
        self.extern_kernels: list[str] = []

    def __call__(self, *inputs: Any) -> tuple:
        return self._call(*inputs)

    def __str__(self) -> str:
        parts = [f"# compiled graph: {len(self.kernels)} kernel(s), "
                 f"peak intermediate bytes {self.peak_intermediate_bytes}"]
        if self.fallback_reason:
            parts.append(f"# running through NumPy: {self.fallback_reason}")
        parts += [
            "# ---- graph ----", self.graph.python_code(),
            "# ---- schedule ----", str(self.schedule),
            "# ---- compile flags ----", " ".join(self.compile_flags) or "(none)",
            "# ---- kernels (C++) ----", self.kernel_source or "(none)",
            "# ---- wrapper (Python) ----", self.wrapper_source or "(none)",
        ]
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"<CompiledGraph {len(self.kernels)} kernels: {', '.join(self.kernels)}>"
