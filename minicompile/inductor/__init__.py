"""The inductor (our TorchInductor): ``ir.Graph`` -> fused C++/OpenMP kernels.

``compile_graph(graph, example_inputs)`` (the C++ backend's, from
``codegen/cpp/compile.py``) returns a :class:`CompiledGraph`, a callable with
the same results as calling the graph (NumPy), plus the generated artifacts.
Data flows through the modules in this order: ``decompositions`` and
``ir.passes`` (graph -> simpler graph) -> ``lowering`` (graph node ->
``loop_ir``) -> ``scheduler`` (inline, realize, fuse) -> ``memory`` (buffer
reuse, peak bytes) -> ``codegen/cpp/kernel`` (C++) and ``codegen/cpp/wrapper``
(Python) -> ``codecache``.
"""
from .codecache import CompileError, CompilerNotFound
from .codegen.cpp.compile import compile_graph
from .compiled import CompiledGraph

__all__ = ["CompileError", "CompiledGraph", "CompilerNotFound", "compile_graph"]
