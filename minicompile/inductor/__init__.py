"""The inductor (our TorchInductor): ``ir.Graph`` -> fused C++/OpenMP kernels.

``compile_graph(graph, example_inputs)`` (the C++ backend's, from
``codegen/cpp/compile.py``, imported on first use) returns a
:class:`CompiledGraph`, a callable with the same results as calling the graph
(NumPy), plus the generated artifacts.  Data flows through the modules in this
order: ``decompositions.before_lowering`` (decompositions and ``ir.passes``,
graph -> simpler graph, for every backend) -> ``lowering`` (graph node ->
``loop_ir``) -> ``scheduler`` (inline, realize, fuse; the backend says which
nodes it can generate) -> ``memory`` (buffer reuse, peak bytes) ->
``codegen/cpp/kernel`` (C++) and ``codegen/cpp/wrapper`` (Python) -> ``codecache``.
"""
from typing import Any

from .codecache import CompileError, CompilerNotFound
from .compiled import CompiledGraph

__all__ = ["CompileError", "CompiledGraph", "CompilerNotFound", "compile_graph"]


def __getattr__(name: str) -> Any:
    # ``compile_graph`` is the C++ backend's: imported on first use, so that
    # importing another backend (or a shared stage) does not load the C++ generator.
    if name == "compile_graph":
        from .codegen.cpp.compile import compile_graph

        return compile_graph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
