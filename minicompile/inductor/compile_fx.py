"""The inductor's entry point: ``ir.Graph`` -> a callable running generated C++.

In:  a graph and example inputs (their shapes, dtypes and strides are what
     every later call will pass; the caller guards that).
Out: a :class:`CompiledGraph`, called like the graph itself.

The pipeline, one module per stage: decompositions (``decompositions``) ->
constant folding, simplification, CSE and dead-code elimination (``ir.passes``) ->
lowering to loop IR (``lowering``) -> scheduling and fusion (``scheduler``) ->
C++ (``codegen.cpp``) and the Python wrapper (``wrapper``) -> compiled and
loaded through the cache (``codecache``).  When no C++ compiler is available,
or compiling fails, the result runs the graph through NumPy instead and says
why, once per process.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .. import ir, logs
from ..ir import passes, symbolic
from . import codecache, cpp_runtime, decompositions, dynamic, memory, scheduler, wrapper
from .codegen import cpp


class CompiledGraph:
    """A compiled graph: ``compiled(*arrays) -> tuple`` in ``graph.outputs`` order.

    ``kernels`` names the generated C++ kernels; ``kernel_source`` is the
    translation unit, ``wrapper_source`` the Python that calls it,
    ``compile_flags`` the compiler command (without files), ``schedule`` the
    fused groups, ``peak_intermediate_bytes`` the most memory held at once by
    buffers that are neither inputs nor outputs.  ``fallback_reason`` is set when the graph runs through NumPy.
    ``kernel_origins`` maps each kernel's name to the graph nodes it computes (for pictures and provenance).
    ``extern_kernels`` names the Externs generated as C++ instead of called
    through NumPy (small float32 matmuls, :mod:`.codegen.cpp_matmul`): the
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


_warned = False


def _fallback(graph: ir.Graph, reason: str, schedule: str = "") -> CompiledGraph:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"minicompile: no compiled kernels, running the graph through NumPy: {reason}", stacklevel=3)
    return CompiledGraph(graph, graph, [], "", "", [], schedule or f"(NumPy fallback: {reason})", reason)


def _first_lines(text: str, n: int = 12) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:n] + (["..."] if len(lines) > n else []))


def compile_graph(graph: ir.Graph, example_inputs: list[np.ndarray], row_fusion: bool = True) -> CompiledGraph:
    """Compile ``graph`` for inputs laid out like ``example_inputs``
    (``row_fusion=False``: no multi-pass row kernels, for comparison).
    A graph with symbolic sizes gets kernels taking the sizes as arguments,
    or, where the loops cannot express them, one compile per shape."""
    if graph.is_dynamic:
        def static(g: ir.Graph, inputs: list) -> CompiledGraph:
            return compile_graph(g, inputs, row_fusion)

        def symbolic_sizes(g: ir.Graph, inputs: list) -> CompiledGraph:
            return _compile(g, inputs, row_fusion, sizes_as_args=True)

        return dynamic.compile_dynamic(graph, example_inputs, symbolic_sizes, static, "cpp")
    return _compile(graph, example_inputs, row_fusion)


def _compile(graph: ir.Graph, example_inputs: list, row_fusion: bool, sizes_as_args: bool = False) -> CompiledGraph:
    graph = passes.optimize(decompositions.decompose(graph))
    if sizes_as_args and any(symbolic.has_division(n.meta.shape) for n in graph.nodes if n.meta is not None):
        raise symbolic.SymbolicUnsupported("a size divides (a strided slice)")
    sched = scheduler.schedule(graph, list(example_inputs), row_fusion=row_fusion)
    source, kernel_args = cpp.generate(sched)
    epilogues = cpp.matmul_epilogues(sched)  # (cpp.generate made the same choice)
    matmul_lines = cpp.describe_matmuls(sched, kernel_args, epilogues)
    if matmul_lines:
        logs.log("schedule", lambda: "\n".join(matmul_lines))
    schedule_text = "\n".join([str(sched)] + matmul_lines)
    plan = memory.plan(sched, kernel_args)
    wrapper_source = wrapper.generate(sched, kernel_args, plan)
    lib, flags = None, []
    if kernel_args:  # loop kernels, or matmuls generated as kernels
        try:
            lib, _, flags = codecache.load(source)
            cpp_runtime.bind(lib)  # the GEMM of matmuls generated as C++
        except codecache.CompilerNotFound as why:
            return _fallback(graph, str(why), schedule_text)
        except codecache.CompileError as why:
            if sizes_as_args:
                raise symbolic.SymbolicUnsupported(f"the C++ compiler refused it: {_first_lines(str(why), 3)}")
            return _fallback(graph, _first_lines(str(why)), schedule_text)
    logs.log("output_code", lambda: f"# compile: {' '.join(flags)}\n{source}\n# wrapper\n{wrapper_source}")
    call = wrapper.build(wrapper_source, sched, kernel_args, lib)
    kernel_source = source if kernel_args else ""
    compiled = CompiledGraph(graph, call, [k.name for k in sched.kernels], kernel_source, wrapper_source, flags,
                             schedule_text, peak_intermediate_bytes=plan.peak_intermediate_bytes)
    compiled.kernel_origins = {k.name: list(k.origins) for k in sched.kernels}
    for kernel, ext in epilogues.items():  # the kernel computes the product too
        compiled.kernel_origins[kernel] = [ext.name] + compiled.kernel_origins[kernel]
    # Matmuls generated as C++ with an entry of their own (one run inside its epilogue has none).
    compiled.extern_kernels = [name for name, args in kernel_args.items()
                               if name not in compiled.kernel_origins and args]
    return compiled
