"""The ``triton`` backend's entry point: ``ir.Graph`` -> a callable launching Triton kernels.

In:  a graph and its example inputs — all NumPy arrays (kernels run in
     Triton's interpreter on the CPU) or all CuPy arrays (kernels run on the
     GPU; nothing is copied to the host).
Out: :func:`compile_graph` returns a :class:`TritonCompiledGraph`, called like
     the graph; it returns arrays of the kind it was given.

The pipeline is the C++ backend's up to the schedule (lowering, inlining,
fusion), then: nodes whose ops have no exact Triton form become Externs
(:func:`schedule_for_triton`), matmuls become templates with their epilogues
fused (:mod:`.triton_matmul`), kernels over the same rows become one
persistent kernel (:mod:`.triton_rows`), kernels are generated (:mod:`.codegen.triton`)
and a Python wrapper is written that allocates every buffer (``np.empty`` or
``cupy.empty``), launches the kernels in order and runs Externs.  An Extern
is the op's NumPy reference; given CuPy arrays, NumPy hands the call to CuPy
(``__array_ufunc__``/``__array_function__``), and an op CuPy lacks is refused
when compiling, with its name.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import ir, logs
from ..ir.dtypes import short_name
from ..ir.graph import format_value
from ..ir.symbolic import SymbolicUnsupported, has_division, input_symbols
from . import loop_ir as L
from . import scheduler, triton_runtime
from .codegen import triton as tg
from .codegen.common import Names, extern_call
from .compiled import CompiledGraph
from .lowering import lower_extern
from .triton_matmul import MatmulTemplate, fuse_matmul_epilogues
from .triton_rows import RowGroup, fuse_rows


class TritonCompiledGraph(CompiledGraph):
    """A compiled graph whose kernels are Triton; ``device`` is ``"cuda"`` or ``"interpreter"``."""

    device: str = "interpreter"

    def __str__(self) -> str:
        return "\n".join([
            f"# compiled graph: {len(self.kernels)} Triton kernel(s) on {self.device}",
            "# ---- graph ----", self.graph.python_code(),
            "# ---- schedule ----", str(self.schedule),
            "# ---- kernels (Triton) ----", self.kernel_source or "(none)",
            "# ---- wrapper (Python) ----", self.wrapper_source or "(none)",
        ])


def _stand_in(x: Any) -> Any:
    """A NumPy array with a CuPy array's shape, dtype and strides, for the scheduler
    (which reads only those).  Its memory is one element and is never read."""
    if not triton_runtime.is_cupy(x):
        return x
    base = np.empty(1, x.dtype)
    return np.lib.stride_tricks.as_strided(base, x.shape, x.strides)


def schedule_for_triton(graph: ir.Graph, example_inputs: list) -> scheduler.Schedule:
    """The scheduler's plan, with every node Triton cannot compute exactly as an Extern."""
    # The scheduler takes no "which ops can you generate" predicate yet, so the
    # lowered table is adjusted between its construction and its run.
    s = scheduler._Scheduler(graph, example_inputs)
    for node in graph.calls:
        low = s.lowered[node.name]
        if isinstance(low, (L.Pointwise, L.Reduction)):
            why = tg.unsupported_node(low)
            if why is not None:
                s.lowered[node.name] = lower_extern(node, f"fallback: {why}")
    return s.run()


class _WrapperWriter:
    def __init__(self, s: scheduler.Schedule, module: tg.TritonModule, on_gpu: bool):
        self.s, self.module, self.on_gpu = s, module, on_gpu
        self.lines: list[str] = []
        reserved = {"np", "nan", "inf", "_xp", "_empty"} | {k.name for k in module.kernels.values()}
        reserved |= {f"_op_{n.op.name}" for n in s.graph.calls}
        reserved |= {f"_{short_name(b.dtype)}" for b in s.buffers.values()}
        # Size symbols (dynamic shapes): read off the inputs on entry, passed to every kernel.
        self.symbols = input_symbols([p.meta.shape for p in s.graph.placeholders])
        reserved |= set(self.symbols)
        self.names = Names(reserved)
        self.var: dict[str, str] = {}
        self.kernel_read = {b for k in module.kernels.values() for b in k.params}

    def emit(self, text: str) -> None:
        self.lines.append("    " + text)

    def array(self, name: str) -> str:
        if name in self.var:
            return self.var[name]
        node = self.s.views[name]
        base = self.array(node.inputs[0].name)
        consts = ", ".join(format_value(a) for a in node.args[1:])
        local = self.names.new(name)
        self.emit(f"{local} = _op_{node.op.name}({base}, {consts})  # view")
        self.var[name] = local
        return local

    def generate(self) -> str:
        params = []
        for layout in self.s.inputs:
            local = self.names.new(layout.name)
            params.append(local)
            self.var[layout.name] = local
        for sym, (i, axis) in self.symbols.items():
            self.emit(f"{sym} = {params[i]}.shape[{axis}]")
        for layout, param in zip(self.s.inputs, params):
            if layout.needs_array:
                dtype = f"_{short_name(self.s.buffers[layout.name].dtype)}"
                local = self.names.new(f"{layout.name}_c")
                self.emit(f"{local} = _xp.asarray({param}, dtype={dtype}, order=\"C\")")
                self.var[layout.name] = local
        for step in self.s.steps:
            if isinstance(step, (scheduler.Kernel, MatmulTemplate, RowGroup)):
                self._kernel(step)
            else:
                self._extern(step)
        results = []
        for out in self.s.graph.outputs:
            if out.kind == "placeholder":
                results.append(params[[p.name for p in self.s.inputs].index(out.name)])
                continue
            expr = self.array(out.name)
            scalar = out.op.kind == "reduction" or out.op.ufunc is not None
            buf = self.s.buffers.get(out.name)
            if not self.on_gpu and out.shape == () and scalar and buf is not None and buf.kind == "kernel":
                expr += "[()]"  # eager NumPy returns a scalar here
            results.append(expr)
        ret = "(" + ", ".join(results) + ("," if len(results) == 1 else "") + ")"
        self.emit(f"return {ret}")
        return "\n".join([f"def call({', '.join(params)}):"] + self.lines) + "\n"

    def _kernel(self, step: Any) -> None:
        stores = step.stores if isinstance(step, (MatmulTemplate, RowGroup)) else [st.buffer for st in step.stores]
        for name in stores:
            buf = self.s.buffers[name]
            local = self.names.new(f"buf_{name}")
            self.var[name] = local
            self.emit(f"{local} = _empty({buf.shape!r}, _{short_name(buf.dtype)})")
        kernel = self.module.kernels.get(id(step))
        if kernel is None:
            self.emit("# nothing to compute (empty output)")
            return
        self.emit(f"{kernel.name}({', '.join([self.var[b] for b in kernel.params] + kernel.sizes)})")

    def _extern(self, ext: L.Extern) -> None:
        call = extern_call(ext, self.array)
        local = self.names.new(f"buf_{ext.name}")
        self.var[ext.name] = local
        if ext.name in self.kernel_read:
            # Kernels read it with baked-in contiguous strides and its dtype.
            call = f"_xp.asarray({call}, dtype=_{short_name(ext.dtype)}, order=\"C\")"
        self.emit(f"{local} = {call}  # {ext.reason}")


def _check_gpu_externs(s: scheduler.Schedule) -> None:
    cp = triton_runtime.cupy_module()
    for step in s.steps:
        if isinstance(step, L.Extern) and not hasattr(cp, step.op_name) \
                and not ir.get_op(step.op_name).extra.get("array_api"):
            raise NotImplementedError(
                f"backend='triton' on CuPy arrays: {step.name} = np.{step.op_name}(...) has no Triton "
                f"kernel ({step.reason}) and CuPy has no {step.op_name}; pass NumPy arrays or use another backend")


def compile_graph(graph: ir.Graph, example_inputs: list, sizes_as_args: bool = False) -> TritonCompiledGraph:
    """Compile ``graph`` to Triton for inputs laid out like ``example_inputs``;
    ``sizes_as_args``: a dynamic-shape graph's kernels take its sizes as int
    arguments (raises :class:`SymbolicUnsupported` where they cannot)."""
    if graph.is_dynamic and not sizes_as_args:
        raise SymbolicUnsupported("symbolic sizes need sizes_as_args=True")
    on_gpu = any(triton_runtime.is_cupy(x) for x in example_inputs)
    if on_gpu and not all(triton_runtime.is_cupy(x) for x in example_inputs):
        raise TypeError("backend='triton': inputs mix CuPy (GPU) and NumPy (host) arrays")
    graph = ir.dead_code_elimination(graph)
    if sizes_as_args and any(has_division(n.meta.shape) for n in graph.nodes if n.meta is not None):
        raise SymbolicUnsupported("a size divides (a strided slice)")
    sched = schedule_for_triton(graph, [_stand_in(x) for x in example_inputs])
    sched = fuse_rows(fuse_matmul_epilogues(sched))
    if on_gpu:
        _check_gpu_externs(sched)
    module = tg.generate(sched)
    readable = input_symbols([p.meta.shape for p in sched.graph.placeholders])
    for k in module.kernels.values() if sizes_as_args else ():
        used = set(re.findall(r"\bs\d+\b", re.sub(r"#.*", "", k.source)))
        if used - set(k.sizes) or set(k.sizes) - set(readable):
            raise SymbolicUnsupported(f"{k.name}: a size symbol that is no kernel argument or input size")
    wrapper_source = _WrapperWriter(sched, module, on_gpu).generate()
    logs.log("output_code", lambda: f"{module.source}\n# wrapper\n{wrapper_source}")
    xp = triton_runtime.cupy_module() if on_gpu else np
    namespace: dict[str, Any] = {"np": np, "_xp": xp, "_empty": xp.empty,
                                 "nan": float("nan"), "inf": float("inf")}
    for buf in sched.buffers.values():
        namespace[f"_{short_name(buf.dtype)}"] = buf.dtype
    for node in sched.graph.calls:
        namespace[f"_op_{node.op.name}"] = node.op.impl
    launchers: dict[str, triton_runtime.Launcher] = {}
    if module.kernels:
        loaded = triton_runtime.load(module.source, interpret=not on_gpu)
        for k in module.kernels.values():
            namespace[k.name] = launchers[k.name] = triton_runtime.Launcher(k, getattr(loaded, k.name), on_gpu)
    exec(compile(wrapper_source, "<minicompile triton wrapper>", "exec"), namespace)
    names = [k.name for k in module.kernels.values()]
    kernel_source = module.source if module.kernels else ""
    compiled = TritonCompiledGraph(graph, namespace["call"], names, kernel_source, wrapper_source, [], _describe(sched, module))
    compiled.device = "cuda" if on_gpu else "interpreter"
    compiled.module = module
    compiled.launchers = launchers
    compiled.kernel_origins = {module.kernels[id(s)].name: list(s.origins) for s in sched.steps
                               if id(s) in module.kernels}
    return compiled


def _describe(s: scheduler.Schedule, module: tg.TritonModule) -> str:
    lines = []
    for step in s.steps:
        k = module.kernels.get(id(step))
        if isinstance(step, MatmulTemplate):
            lines.append(f"{k.name}  template matmul [{', '.join(map(str, step.shape))}] x [{step.k}]"
                         + (" + epilogue" if step.epilogue else ""))
            for name in step.origins:
                why = "template: tl.dot tiles, float32 accumulator" if name == step.name else s.decisions[name]
                lines.append(f"    {name:<16} {why}")
        elif isinstance(step, RowGroup):
            lines.append(f"{k.name}  rows [{', '.join(map(str, step.rows))}] x [{step.cols}], "
                         f"{len(step.kernels)} kernels fused row by row")
            for name in step.origins:
                kept = "" if name not in {st.buffer for kk in step.kernels for st in kk.stores} or \
                    name in step.stores else "; kept in registers"
                lines.append(f"    {name:<16} {s.decisions[name]}{kept}")
        elif isinstance(step, scheduler.Kernel):
            loops = f"[{', '.join(map(str, step.ranges))}]"
            if step.reductions:
                loops += f" x [{', '.join(map(str, step.reduction_ranges))}]"
            lines.append(f"{k.name if k else '(empty)'}  loops {loops}")
            for name in step.origins:
                lines.append(f"    {name:<16} {s.decisions[name]}")
        else:
            lines.append(f"extern {step.name} = np.{step.op_name}(...)  {step.reason}")
    return "\n".join(lines) if lines else "(no computation: outputs are inputs)"
