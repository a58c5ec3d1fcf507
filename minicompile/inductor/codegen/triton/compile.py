"""The ``triton`` backend's entry point: ``ir.Graph`` -> a callable launching Triton kernels.

In:  a graph and its example inputs — all NumPy arrays (kernels run in
     Triton's interpreter on the CPU) or all CuPy arrays (kernels run on the
     GPU; nothing is copied to the host).
Out: :func:`compile_graph` returns a :class:`TritonCompiledGraph`, called like
     the graph; it returns arrays of the kind it was given.

The pipeline is every backend's up to the schedule (the graph passes of
:func:`~..decompositions.before_lowering`, with matmul and mean kept whole:
:data:`OWN_FORMS`; lowering, inlining, fusion), nodes whose ops have no exact
Triton form becoming Externs (:func:`schedule_for_triton`); then matmuls become
templates with their epilogues fused (:mod:`.matmul`), kernels over the same
rows become one persistent kernel (:mod:`.rows`), kernels are generated (:func:`generate`: the
template, the row groups, the loop kernels of :mod:`.kernel`, short reductions written out by
:mod:`.unrolled`) and a Python
wrapper is written (:mod:`.wrapper`) that allocates every buffer (``np.empty`` or
``cupy.empty``), launches the kernels in order and runs Externs.  An Extern
is the op's NumPy reference, written for any array module: given CuPy arrays,
NumPy hands the call to CuPy (``__array_ufunc__``/``__array_function__``), so
an Extern does on the GPU exactly what the same NumPy code does on CuPy arrays
eagerly, raising CuPy's own error for a function CuPy lacks.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .... import ir, logs
from ....ir.dtypes import short_name
from ....ir.symbolic import SymbolicUnsupported, has_division, input_symbols
from ... import loop_ir as L
from ... import loops, scheduler
from ...compiled import CompiledGraph
from ...decompositions import before_lowering
from ...scheduler import Kernel, Schedule
from . import kernel as tg, runtime, versions, workers
from .ops import PRELUDE, unsupported_node
from .kernel import (TritonKernel, TritonModule, is_persistent, kernel_name, pointwise_kernel,
                     reduction_kernel, size_params, tile_axes, tiled_pointwise_kernel)
from ...fuse_attention import fuse_attention
from .attention import AttentionTemplate, attention_kernel, attention_templates, template_for
from .attention_backward import AttentionGradTemplate, attention_grad_kernel, backward_template_for
from .matmul import MatmulTemplate, fuse_matmul_epilogues, matmul_kernel
from .rows import RowGroup, fuse_rows, row_kernel, step_reads
from .scatter import ScatterTemplate, scatter_add_templates, scatter_kernel
from .unrolled import unrolled_reduction_kernel, unrolls
from .wrapper import WrapperWriter


# Composite ops this generator has a form of its own for, left undecomposed:
# a batched matmul is one template (reshaped to 2-D, its operand would be a view,
# which the template leaves to BLAS), and a mean one reduction (a sum and a
# division would store the sum as well: a loop kernel stores every reduction).
OWN_FORMS = ("matmul", "mean")


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
    if not runtime.is_cupy(x):
        return x
    base = np.empty(1, x.dtype)
    return np.lib.stride_tricks.as_strided(base, x.shape, x.strides)


def schedule_for_triton(graph: ir.Graph, example_inputs: list, on_gpu: bool = False) -> scheduler.Schedule:
    """The scheduler's plan, with every node Triton cannot compute exactly as an Extern
    (one reduction pass per kernel: rows are fused afterwards, by :mod:`.rows`).

    On the GPU, a node no input reaches (``np.triu_indices(3)``, made from Python
    values only) is an Extern too: NumPy computes it on the host, as eager NumPy
    does beside CuPy arrays, so it comes back a NumPy array.  A creation given
    ``like=`` an input is reached by that input, and made on the device."""
    host_only = _made_from_constants(graph) if on_gpu else set()

    def cannot_generate(node: L.Pointwise | L.Reduction) -> str | None:
        if node.name in host_only:
            return "made from Python values only: a NumPy array on the host, as eagerly"
        return scheduler.complex_values(node) or unsupported_node(node)

    return scheduler.schedule(graph, example_inputs, row_fusion=False, cannot_generate=cannot_generate)


def _made_from_constants(graph: ir.Graph) -> set[str]:
    """The names of the call nodes that no placeholder reaches."""
    reached: set[ir.Node] = set(graph.placeholders)
    for node in graph.calls:
        if any(i in reached for i in node.inputs):
            reached.add(node)
    return {n.name for n in graph.calls if n not in reached}


def compile_graph(graph: ir.Graph, example_inputs: list, sizes_as_args: bool = False) -> TritonCompiledGraph:
    """Compile ``graph`` to Triton for inputs laid out like ``example_inputs``;
    ``sizes_as_args``: a dynamic-shape graph's kernels take its sizes as int
    arguments (raises :class:`SymbolicUnsupported` where they cannot)."""
    if graph.is_dynamic and not sizes_as_args:
        raise SymbolicUnsupported("symbolic sizes need sizes_as_args=True")
    if loops.has_loops(graph):  # a host loop launches the body's kernels once per iteration
        return loops.compile_with_loops(graph, example_inputs, compile_graph)
    on_gpu = any(runtime.is_cupy(x) for x in example_inputs)
    if on_gpu and not all(runtime.is_cupy(x) for x in example_inputs):
        return _op_by_op(graph, example_inputs)
    graph = fuse_attention(before_lowering(graph, keep=OWN_FORMS))
    if sizes_as_args and any(has_division(n.meta.shape) for n in graph.nodes if n.meta is not None):
        raise SymbolicUnsupported("a size divides (a strided slice)")
    sched = schedule_for_triton(graph, [_stand_in(x) for x in example_inputs], on_gpu)
    sched = fuse_rows(fuse_matmul_epilogues(attention_templates(scatter_add_templates(sched),
                                                               (template_for, backward_template_for))))
    module = generate(sched)
    readable = input_symbols([p.meta.shape for p in sched.graph.placeholders])
    for k in module.kernels.values() if sizes_as_args else ():
        used = set(re.findall(r"\bs\d+\b", re.sub(r"#.*", "", k.source)))
        if used - set(k.sizes) or set(k.sizes) - set(readable):
            raise SymbolicUnsupported(f"{k.name}: a size symbol that is no kernel argument or input size")
    wrapper_source = WrapperWriter(sched, module, on_gpu).generate()
    logs.log("output_code", lambda: f"{module.source}\n# wrapper\n{wrapper_source}")
    xp = runtime.cupy_module() if on_gpu else np
    namespace: dict[str, Any] = {"np": np, "_xp": xp, "_empty": xp.empty,
                                 "nan": float("nan"), "inf": float("inf")}
    for buf in sched.buffers.values():
        namespace[f"_{short_name(buf.dtype)}"] = buf.dtype
    for node in sched.graph.calls:
        namespace[f"_op_{node.op.name}"] = node.op.impl
    launchers: dict[str, runtime.Launcher] = {}
    if module.kernels:
        loaded = runtime.load(module.source, interpret=not on_gpu)
        for k in module.kernels.values():
            launcher = launchers[k.same_as] if k.same_as else runtime.Launcher(k, getattr(loaded, k.name), on_gpu)
            namespace[k.name] = launchers[k.name] = launcher
    if on_gpu and module.kernels:
        jobs = precompile_jobs(sched, module, launchers, loaded.__file__, example_inputs)
        if len(jobs) > 1:  # one compile is no faster on a worker
            workers.precompile(jobs)
    exec(compile(wrapper_source, "<minicompile triton wrapper>", "exec"), namespace)
    names = [k.name for k in module.kernels.values()]
    kernel_source = module.source if module.kernels else ""
    description = _describe(sched, module)
    logs.log("schedule", description)
    compiled = TritonCompiledGraph(graph, namespace["call"], names, kernel_source, wrapper_source, [], description)
    compiled.device = "cuda" if on_gpu else "interpreter"
    compiled.module = module
    compiled.scheduled = sched
    compiled.launchers = launchers
    compiled.kernel_origins = {module.kernels[id(s)].name: list(s.origins) for s in sched.steps
                               if id(s) in module.kernels}
    return compiled


def _op_by_op(graph: ir.Graph, example_inputs: list) -> CompiledGraph:
    """Inputs that mix CuPy and NumPy arrays: no kernel can take both, so the graph
    runs op by op as the NumPy code would, each op on the arrays it is given —
    ops of one kind run, an op mixing the two raises CuPy's own TypeError (and
    the frame then runs as Python, raising it at the user's line)."""
    host = [i for i, x in enumerate(example_inputs) if not runtime.is_cupy(x)]
    reason = (f"inputs {', '.join(graph.placeholders[i].name for i in host)} are NumPy arrays, "
              f"the others CuPy arrays: the graph runs op by op, uncompiled")
    logs.log("graph_breaks", lambda: f"backend='triton': {reason}")
    return CompiledGraph(graph, graph, [], "", "", [], f"(op by op: {reason})", reason)


def precompile_jobs(sched: Schedule, module: TritonModule, launchers: dict[str, runtime.Launcher],
                    path: str, example_inputs: list) -> list[workers.Job]:
    """Every kernel and config the first call will compile (the autotuning candidates,
    or the winner an earlier process remembered) that neither this process nor a
    worker of an earlier one compiled, for the argument types that call will pass: buffer dtypes, each input's
    alignment (the buffers this graph allocates are aligned), the sizes."""
    inputs = {layout.name: x for layout, x in zip(sched.inputs, example_inputs) if not layout.needs_array}
    symbols = input_symbols([p.meta.shape for p in sched.graph.placeholders])
    size_of = {sym: example_inputs[i].shape[axis] for sym, (i, axis) in symbols.items()}
    jobs = []
    for k in module.kernels.values():
        launcher = launchers[k.name]
        if k.same_as:
            continue  # compiled as the kernel it repeats
        aligned = [inputs[b].data.ptr % 16 == 0 if b in inputs else True for b in k.params]
        pointers = tuple((sched.buffers[b].dtype.name, a) for b, a in zip(k.params, aligned))
        sizes = tuple(size_of[s] for s in k.sizes)
        spec = versions.specialization_key(tuple(0 if a else 4 for a in aligned), sizes)
        for cfg in runtime.configs_to_compile(k):
            if (tuple(cfg.items()), spec) in launcher.compiled:
                continue
            job = workers.Job(path, k.name, pointers, sizes, runtime.grid_size(k, cfg, sizes), tuple(cfg.items()))
            if not workers.compiled_before(job):
                jobs.append(job)
    return jobs


def generate(schedule: Schedule) -> TritonModule:
    """The module source of every kernel in ``schedule`` (after the matmul and row passes):
    each step goes to the writer of its kind (template, row group, loop kernel).  A kernel
    whose code equals an earlier one's but for its name and its buffers' names (the
    same layer again) is written once: it is compiled, tuned and launched as that one."""
    op_of = {n.name: n.op.name for n in schedule.graph.calls}
    kept = schedule.never_stored(step_reads)  # values no other step reads: in registers only
    prefix = schedule.name_prefix  # the graph's (graph_id.py)
    kernels: dict[int, TritonKernel] = {}
    seen: dict[str, TritonKernel] = {}  # canonical code -> its first kernel (a model's layers repeat)
    index = 0
    for step in schedule.steps:
        if isinstance(step, MatmulTemplate):
            tk = matmul_kernel(step, kernel_name("tem", index, step.origins, op_of, prefix), schedule.buffers)
        elif isinstance(step, ScatterTemplate):
            tk = scatter_kernel(step, kernel_name("sca", index, step.origins, op_of, prefix), schedule.buffers)
        elif isinstance(step, AttentionTemplate):
            tk = attention_kernel(step, kernel_name("att", index, step.origins, op_of, prefix), schedule.buffers)
        elif isinstance(step, AttentionGradTemplate):
            tk = attention_grad_kernel(step, kernel_name("att", index, step.origins, op_of, prefix),
                                       schedule.buffers)
        elif isinstance(step, RowGroup):
            tk = row_kernel(step, kernel_name("per", index, step.origins, op_of, prefix), schedule.buffers)
        elif isinstance(step, Kernel):
            if 0 in step.ranges:
                continue  # an empty output: nothing to compute
            if step.reductions and unrolls(step, schedule.buffers):
                tk = unrolled_reduction_kernel(step, kernel_name("unr", index, step.origins, op_of, prefix),
                                               schedule.buffers, kept[step.name])
            elif step.reductions:
                kind = "per" if is_persistent(math.prod(step.reduction_ranges)) else "red"
                tk = reduction_kernel(step, kernel_name(kind, index, step.origins, op_of, prefix), schedule.buffers,
                                      kept[step.name])
            else:
                name = kernel_name("poi", index, step.origins, op_of, prefix)
                axes = tile_axes(step, schedule.buffers)
                tk = (tiled_pointwise_kernel(step, name, schedule.buffers, axes, kept[step.name]) if axes
                      else pointwise_kernel(step, name, schedule.buffers, kept[step.name]))
        else:
            continue
        tk.sizes = size_params(schedule.buffers)
        tk.dtypes = tuple(schedule.buffers[b].dtype.str for b in tk.params)
        first = seen.setdefault(tk.canonical(), tk)
        if first is not tk:
            tk.same_as = first.name
        kernels[id(step)] = tk
        index += 1
    header = "# Generated by minicompile's inductor (Triton backend).\n"
    source = header + PRELUDE + "".join(
        f"\n\n# {k.name}: the code of {k.same_as}, on other buffers\n" if k.same_as else f"\n\n{k.source}\n"
        for k in kernels.values())
    return TritonModule(source, kernels)


def _describe(s: scheduler.Schedule, module: tg.TritonModule) -> str:
    lines = []
    kept = s.never_stored(step_reads)
    held = "; kept in registers, never stored"
    for step in s.steps:
        k = module.kernels.get(id(step))
        if isinstance(step, MatmulTemplate):
            lines.append(f"{k.name}  template matmul [{', '.join(map(str, step.shape))}] x [{step.k}]"
                         + (" + epilogue" if step.epilogue else ""))
            for name in step.origins:
                why = "template: tl.dot tiles, float32 accumulator" if name == step.name else s.decisions[name]
                lines.append(f"    {name:<16} {why}{held if name in step.kept else ''}")
        elif isinstance(step, AttentionTemplate):
            mask = ", masked" if step.mask is not None else ""
            lines.append(f"{k.name}  template flash attention [{', '.join(map(str, step.batch_shape))}] x "
                         f"[{step.m}, {step.d}] x [{step.n}, {step.dv}]{mask}")
            lines.append(f"    {step.name:<16} {s.decisions[step.name]}")
        elif isinstance(step, AttentionGradTemplate):
            mask = ", masked" if step.mask is not None else ""
            lines.append(f"{k.name}  template flash attention backward ({step.wrt}) "
                         f"[{', '.join(map(str, step.batch_shape))}] x [{step.m}, {step.d}] x [{step.n}, {step.dv}]{mask}")
            lines.append(f"    {step.name:<16} {s.decisions[step.name]}")
        elif isinstance(step, ScatterTemplate):
            lines.append(f"{k.name}  template scatter-add [{', '.join(map(str, step.domain))}] updates into "
                         f"[{', '.join(map(str, step.shape))}]")
            lines.append(f"    {step.name:<16} {s.decisions[step.name]}")
        elif isinstance(step, RowGroup):
            lines.append(f"{k.name}  rows [{', '.join(map(str, step.rows))}] x [{step.cols}], "
                         f"{len(step.kernels)} kernels fused row by row")
            written = {st.buffer for kk in step.kernels for st in kk.stores}
            for name in step.origins:
                note = held if name in written and name not in step.stores else ""
                lines.append(f"    {name:<16} {s.decisions[name]}{note}")
        elif isinstance(step, scheduler.Kernel):
            loops = f"[{', '.join(map(str, step.ranges))}]"
            if step.reductions:
                loops += f" x [{', '.join(map(str, step.reduction_ranges))}]"
            lines.append(f"{k.name if k else '(empty)'}  loops {loops}")
            for name in step.origins:
                lines.append(f"    {name:<16} {s.decisions[name]}{held if name in kept[step.name] else ''}")
        else:
            lines.append(f"extern {step.name} = np.{step.op_name}(...)  {step.reason}")
    return "\n".join(lines) if lines else "(no computation: outputs are inputs)"
