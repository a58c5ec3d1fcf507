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

Each named backend states whether it takes a graph with symbolic sizes
(compiled once, the sizes as arguments) or needs one compile per shape, and
the float precision its results carry (``spyre``: fp16);
:func:`lookup_backend` wraps it accordingly (:class:`~minicompile.per_shape.Backend`),
so dynamo calls every backend the same way.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import ir
from .dynamo import OptimizedFunction, explain, reset_all
from .per_shape import Backend, custom_backend


def _eager(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    return graph


def _cpp(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    from .inductor.codegen.cpp.compile import compile_graph  # imported lazily: capture alone needs no compiler

    return compile_graph(graph, example_inputs)


def _triton(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    from .inductor.codegen.triton.compile import compile_graph  # imported lazily: needs triton

    return compile_graph(graph, example_inputs, sizes_as_args=graph.is_dynamic)


def _triton_pre_grad(graph: ir.Graph, example_inputs: list) -> ir.Graph:
    from .inductor.fuse_attention import fuse_attention  # attention's backward is a kernel too

    return fuse_attention(graph)


def _spyre(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    from .inductor.codegen.spyre.compile import compile_graph  # imported lazily: the simulator is large

    return compile_graph(graph, example_inputs)


def _auto(graph: ir.Graph, example_inputs: list) -> Callable[..., tuple]:
    return BACKENDS["triton" if _on_gpu(example_inputs) else "cpp"](graph, example_inputs)


def _on_gpu(example_inputs: list) -> bool:
    # CuPy arrays (GPU) go to triton; the type's module says so without importing cupy.
    return any(type(x).__module__.startswith("cupy") for x in example_inputs)


def _auto_pre_grad(graph: ir.Graph, example_inputs: list) -> ir.Graph:
    return _triton_pre_grad(graph, example_inputs) if _on_gpu(example_inputs) else graph


# Each backend says here how it takes a graph with symbolic sizes (see per_shape.Backend):
# True, compiled once with the sizes as arguments; False, compiled once per shape; and
# the float precision it computes in, where that is narrower than each value's dtype.
BACKENDS: dict[str, Callable[[ir.Graph, list], Callable[..., tuple]]] = {
    "eager": Backend(_eager, "eager", symbolic_sizes=True),  # NumPy runs the graph at any size
    # With mc.Tensor inputs every backend compiles a joint forward/backward pair;
    # aot_eager runs that pair through NumPy.
    "aot_eager": Backend(_eager, "aot_eager", symbolic_sizes=True),
    "cpp": Backend(_cpp, "cpp", symbolic_sizes=True),  # kernels take int64_t s0
    "triton": Backend(_triton, "triton", symbolic_sizes=True,  # kernels take s0 as an int argument
                      pre_grad=_triton_pre_grad),
    # The card's programs are planned for sizes; its DRAM holds floats as fp16.
    "spyre": Backend(_spyre, "spyre", symbolic_sizes=False, precision=np.float16),
    "auto": Backend(_auto, "auto", symbolic_sizes=None, pre_grad=_auto_pre_grad),  # as cpp or triton, whichever it picks
}
PLANNED: tuple[str, ...] = ()
MODES = ("default", "reduce-overhead")  # torch.compile's modes that minicompile has


def lookup_backend(backend: str | Callable) -> tuple[Callable, str]:
    """The backend dynamo calls, and its name.  How it compiles a graph with
    symbolic sizes (once, or once per shape) is decided here and only here."""
    if callable(backend):
        name = getattr(backend, "__name__", "custom")
        return custom_backend(backend, name), name
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
    mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> Any:
    """Compile ``fn``; usable as ``@compile``, ``@compile(...)`` or ``compile(fn, ...)``.

    ``dynamic``: ``None`` (default) compiles static shapes first and makes an
    array axis symbolic once a call changes its size; ``True`` makes every
    axis of size >= 2 symbolic from the start; ``False`` never (see
    :mod:`minicompile.dynamo.dynamic_shapes`).  ``options={"freezing": True}`` treats read-only input
    arrays as constants: batch norm is folded into frozen weights and what they
    alone determine is computed once (:mod:`minicompile.ir.freezing`).
    ``mode="reduce-overhead"`` (also ``options={"mode": ...}``), as torch.compile's:
    on CuPy arrays each graph's launches are recorded once into a CUDA graph and
    replayed per call (:mod:`minicompile.inductor.codegen.triton.cudagraphs` says what a caller
    may keep); ``"default"`` launches kernel by kernel.
    """
    backend_fn, name = lookup_backend(backend)
    options = dict(options or {})
    if mode is not None and "mode" in options:
        raise ValueError("minicompile.compile: give mode= or options={'mode': ...}, not both")
    mode = options.pop("mode", mode) or "default"
    if mode not in MODES:
        raise ValueError(f"minicompile.compile: unknown mode {mode!r}; use one of {', '.join(map(repr, MODES))}")
    if options.pop("freezing", False):
        from .ir.freezing import freezing_backend

        backend_fn = freezing_backend(backend_fn)
    if mode == "reduce-overhead":
        from .inductor.codegen.triton.cudagraphs import cudagraph_backend

        backend_fn = cudagraph_backend(backend_fn)
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
