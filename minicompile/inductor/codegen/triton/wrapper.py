"""The Triton backend's wrapper: the Python function that runs a schedule.

In:  a schedule after the Triton passes, the generated :class:`~.kernel.TritonModule`
     and whether the arrays are CuPy (GPU) or NumPy (Triton's interpreter).
Out: :meth:`WrapperWriter.generate` writes the source of ``def call(<inputs>)``,
     which allocates every buffer (``np.empty`` or ``cupy.empty``), launches the
     kernels in order, runs Externs (their NumPy reference, which CuPy arrays
     hand to CuPy) and returns the outputs in graph order.
"""
from __future__ import annotations

from typing import Any

from ....ir.dtypes import short_name
from ....ir.graph import format_value
from ....ir.symbolic import input_symbols
from ... import loop_ir as L
from ... import scheduler
from ..common import Names, extern_call
from . import kernel as tg
from .attention import AttentionTemplate
from .attention_backward import AttentionGradTemplate
from .matmul import MatmulTemplate
from .scatter import ScatterTemplate
from .rows import RowGroup


# Steps that are one kernel with a ``stores`` list of their own (besides scheduler.Kernel).
TEMPLATES = (MatmulTemplate, RowGroup, ScatterTemplate, AttentionTemplate, AttentionGradTemplate)

class WrapperWriter:
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
            if isinstance(step, (scheduler.Kernel, *TEMPLATES)):
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
        kernel = self.module.kernels.get(id(step))
        # What the kernel writes to memory (a value it keeps in registers has no buffer;
        # a scatter writes into the buffer the copy before it made).
        stores = kernel.writes if kernel is not None else \
            step.stores if isinstance(step, TEMPLATES) \
            else [st.buffer for st in step.stores]
        for name in stores:
            buf = self.s.buffers[name]
            local = self.names.new(f"buf_{name}")
            self.var[name] = local
            self.emit(f"{local} = _empty({buf.shape!r}, _{short_name(buf.dtype)})")
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
