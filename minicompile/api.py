"""The public entry points: ``compile``, ``explain``, ``reset``, and backend lookup.

A backend is any callable ``(graph: ir.Graph, example_inputs: list) -> callable``
(the compiled callable takes the graph's inputs and returns its outputs as a
tuple).  Named backends:

* ``"eager"`` — the graph itself, run through NumPy (checks capture alone);
* ``"cpp"``   — the inductor with the C++/OpenMP code generator;
* ``"triton"`` — the inductor with the Triton code generator (GPU for CuPy
  arrays, Triton's interpreter for NumPy arrays);
* ``"spyre"`` — the inductor with the Spyre code generator, run in the
  simulated card (``.program``, ``.report`` on the compiled callable);
* ``"auto"``  — ``cpp`` for NumPy arrays, ``triton`` for CuPy arrays.
"""
from __future__ import annotations

from typing import Any, Callable

from . import ir
from .dynamo import OptimizedFunction, explain, reset_all


def _eager(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    return graph


def _cpp(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    from .inductor import compile_graph  # imported lazily: capture alone needs no compiler

    return compile_graph(graph, example_inputs)


def _triton(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    from .inductor.codegen.triton.compile import compile_graph  # imported lazily: needs triton

    if not graph.is_dynamic:
        return compile_graph(graph, example_inputs)
    from .per_shape import compile_dynamic

    def symbolic_sizes(g: ir.Graph, inputs: list) -> Callable[..., tuple]:
        return compile_graph(g, inputs, sizes_as_args=True)  # kernels take the sizes as ints

    return compile_dynamic(graph, example_inputs, symbolic_sizes, compile_graph, "triton")


def _spyre(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    from .inductor.codegen.spyre.compile import compile_graph  # imported lazily: the simulator is large

    return _per_shape(compile_graph, graph, example_inputs, "spyre")


def _per_shape(compile_fn: Callable, graph: ir.Graph, example_inputs: list, name: str) -> Callable[..., tuple]:
    """These backends plan for concrete sizes: a dynamic-shape graph is compiled per shape."""
    if not graph.is_dynamic:
        return compile_fn(graph, example_inputs)
    from .per_shape import compile_dynamic

    return compile_dynamic(graph, example_inputs, None, compile_fn, name)


def _auto(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    # CuPy arrays (GPU) go to triton; the type's module says so without importing cupy.
    if any(type(x).__module__.startswith("cupy") for x in example_inputs):
        return _triton(graph, example_inputs)
    return _cpp(graph, example_inputs)


BACKENDS: dict[str, Callable[[ir.Graph, list], Callable[..., tuple]]] = {
    "eager": _eager,
    # With mc.Tensor inputs every backend compiles a joint forward/backward pair;
    # aot_eager runs that pair through NumPy.
    "aot_eager": _eager,
    "cpp": _cpp,
    "triton": _triton,
    "spyre": _spyre,
    "auto": _auto,
}
PLANNED: tuple[str, ...] = ()


def lookup_backend(backend: str | Callable) -> tuple[Callable, str]:
    if callable(backend):
        return backend, getattr(backend, "__name__", "custom")
    if backend in BACKENDS:
        return BACKENDS[backend], backend
    if backend in PLANNED:
        raise ValueError(f"minicompile backend {backend!r} is not available yet; use one of {sorted(BACKENDS)}")
    raise ValueError(f"unknown minicompile backend {backend!r}; use one of {sorted(BACKENDS)} or a callable")


def compile(
    fn: Callable | None = None,
    *,
    backend: str | Callable = "auto",
    fullgraph: bool = False,
    dynamic: bool | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """Compile ``fn``; usable as ``@compile``, ``@compile(...)`` or ``compile(fn, ...)``.

    ``dynamic``: ``None`` (default) compiles static shapes first and makes an
    array axis symbolic once a call changes its size; ``True`` makes every
    axis of size >= 2 symbolic from the start; ``False`` never (see
    :mod:`minicompile.dynamo.dynamic_shapes`).  ``options={"freezing": True}`` treats read-only input
    arrays as constants: batch norm is folded into frozen weights and what they
    alone determine is computed once (:mod:`minicompile.ir.freezing`).
    """
    backend_fn, name = lookup_backend(backend)
    options = dict(options or {})
    if options.pop("freezing", False):
        from .ir.freezing import freezing_backend

        backend_fn = freezing_backend(backend_fn)
    if options:
        raise ValueError(f"minicompile.compile: unknown options {sorted(options)}")

    def wrap(f: Callable) -> OptimizedFunction:
        return OptimizedFunction(f, backend_fn, fullgraph, name, dynamic)

    return wrap if fn is None else wrap(fn)


def reset() -> None:
    """Forget every compiled cache entry of every compiled function."""
    reset_all()


def empty_cache() -> None:
    """Return to the system the memory that freed arrays of compiled graphs left
    in minicompile's caching allocator (``torch.cuda.empty_cache()``'s twin;
    see ``minicompile.inductor.codegen.cpp.allocator``)."""
    from .inductor.codegen.cpp import allocator
    allocator.empty_cache()


__all__ = ["compile", "explain", "reset", "empty_cache", "lookup_backend", "BACKENDS"]
