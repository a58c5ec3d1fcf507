"""The C++ backend's entry point: ``ir.Graph`` -> a callable running generated C++.

In:  a graph and example inputs (their shapes, dtypes and strides are what
     every later call will pass; the caller guards that).
Out: a :class:`CompiledGraph`, called like the graph itself.

The pipeline, one module per stage: decompositions (``inductor.decompositions``) ->
constant folding, simplification, CSE and dead-code elimination (``ir.passes``) ->
softmax attention made one node (``inductor.fuse_attention``; :mod:`.attention` generates it) ->
lowering to loop IR (``inductor.lowering``) -> scheduling and fusion
(``inductor.scheduler``) -> C++ (``kernel``) and the Python wrapper (``wrapper``)
-> compiled and loaded through the cache (``inductor.codecache``).  When no C++ compiler is available,
or compiling fails, the result runs the graph through NumPy instead and says
why, once per process.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .... import ir, logs
from ....ir import symbolic
from ....warn import warn
from ... import codecache, decompositions, loop_ir as L, loops, memory, scheduler
from ...fuse_attention import fuse_attention
from . import attention, kernel as cpp, loop_driver, matmul, runtime, wrapper
from ...compiled import CompiledGraph


_warned = False


def _fallback(graph: ir.Graph, reason: str, schedule: str = "") -> CompiledGraph:
    global _warned
    if not _warned:
        _warned = True
        warn(f"minicompile: no compiled kernels, running the graph through NumPy: {reason}")
    return CompiledGraph(graph, graph, [], "", "", [], schedule or f"(NumPy fallback: {reason})", reason)


def _first_lines(text: str, n: int = 12) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:n] + (["..."] if len(lines) > n else []))


def compile_graph(graph: ir.Graph, example_inputs: list[np.ndarray], row_fusion: bool = True) -> CompiledGraph:
    """Compile ``graph`` for inputs laid out like ``example_inputs``
    (``row_fusion=False``: no multi-pass row kernels, for comparison).
    A graph with symbolic sizes gets kernels taking the sizes as arguments;
    where the loops cannot express them this raises ``SymbolicUnsupported``
    (the backend lookup then compiles once per shape: ``minicompile.per_shape``)."""
    if loops.has_loops(graph):  # segments around each loop; the body compiled once (inductor/loops.py)
        return loops.compile_with_loops(graph, example_inputs, lambda g, ex: _compile(g, ex, row_fusion),
                                        lambda body, ex, carried: _compile_body(body, ex, carried, row_fusion))
    return _compile(graph, example_inputs, row_fusion, sizes_as_args=graph.is_dynamic)


def _compile_body(body: ir.Graph, example_inputs: list, carried: int,
                  row_fusion: bool) -> tuple[CompiledGraph, Any]:
    """A loop's body, and how the loop runs it: the generated C++ loop (loop_driver.py)
    where the body is kernels alone, else a host loop calling the compiled body."""
    if loops.has_loops(body):  # a nested loop: its own C++ loop, inside a host loop over this one
        compiled = compile_graph(body, example_inputs, row_fusion)
        compiled.schedule += "\n(the outer loop runs in Python: its body holds a loop)"
        return compiled, loops.host_loop(compiled, loops.stacked_row_metas(body, carried))
    compiled = _compile(body, example_inputs, row_fusion, loop_carried=carried)
    run, unfit = getattr(compiled, "loop_run", None), getattr(compiled, "loop_unfit", compiled.fallback_reason)
    if run is not None:
        compiled.schedule += "\n(the loop runs in C++: mc_loop calls these kernels n times)"
        return compiled, run
    compiled.schedule += f"\n(the loop runs in Python, calling the compiled body: {unfit})"
    logs.log("schedule", lambda: f"loop body as a host loop: {unfit}")
    return compiled, loops.host_loop(compiled, loops.stacked_row_metas(body, carried))


def _compile(graph: ir.Graph, example_inputs: list, row_fusion: bool, sizes_as_args: bool = False,
             loop_carried: int | None = None) -> CompiledGraph:
    """``loop_carried``: the graph is a loop's body with that many carried values (its
    kernels are also driven by a generated C++ loop, where the body fits one)."""
    graph = fuse_attention(decompositions.before_lowering(graph))
    if sizes_as_args and any(symbolic.has_division(n.meta.shape) for n in graph.nodes if n.meta is not None):
        raise symbolic.SymbolicUnsupported("a size divides (a strided slice)")
    sched = scheduler.schedule(graph, list(example_inputs), row_fusion=row_fusion)
    source, kernel_args = cpp.generate(sched)
    driver, unfit = None, "not a loop body"
    if loop_carried is not None:
        unfit = loop_driver.unfit(sched, kernel_args, loop_carried) or (None if kernel_args else "no kernels")
        if unfit is None:
            text, driver = loop_driver.generate(sched, kernel_args, loop_carried)
            source += "\n" + text
    epilogues = matmul.epilogues(sched)  # (cpp.generate made the same choice)
    # What runs, as the wrapper runs it: generated GEMMs, values kept in registers.
    sched.runs.update(matmul.describe(sched, kernel_args, epilogues))
    sched.runs.update(attention.describe(sched, kernel_args))
    sched.decisions.update(attention.view_decisions(sched, kernel_args))
    schedule_text = sched.describe(sched.never_stored())
    logs.log("schedule", schedule_text)
    plan = memory.plan(sched, kernel_args)
    wrapper_source = wrapper.generate(sched, kernel_args, plan)
    lib, flags = None, []
    if kernel_args:  # loop kernels, or matmuls generated as kernels
        try:
            lib, _, flags = codecache.load(source)
            runtime.bind(lib)  # the GEMM of matmuls generated as C++
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
    compiled.loop_run = loop_driver.runner(lib, driver) if driver is not None and lib is not None else None
    compiled.loop_unfit = unfit
    for kernel, ext in epilogues.items():  # the kernel computes the product too
        compiled.kernel_origins[kernel] = [ext.name] + compiled.kernel_origins[kernel]
    # Matmuls and attentions generated as C++ with an entry of their own (one run inside its epilogue has none).
    compiled.extern_kernels = [name for name, args in kernel_args.items()
                               if name not in compiled.kernel_origins and args]
    for ext in sched.steps:
        entry = wrapper.generated_entry(ext, sched, kernel_args) if isinstance(ext, L.Extern) else None
        if entry in compiled.extern_kernels:
            compiled.kernel_origins[entry] = [ext.name]
    return compiled
