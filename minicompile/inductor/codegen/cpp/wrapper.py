"""The wrapper: the Python function that runs a schedule.

In:  a :class:`~...scheduler.Schedule` and each kernel's pointer arguments.
Out: :func:`generate` writes the source of ``def call(<inputs>)``, which
     allocates every buffer with ``np.empty``, calls the kernels through
     ctypes in order, runs Externs, and returns the outputs in graph order;
     :func:`build` execs it against a loaded library.

All analysis happens here, once: the generated function does nothing per call
but allocate, fetch data pointers and call.  Outputs that are graph inputs are
returned as the very object passed in; an output that is a view
(transpose/reshape) is returned as a NumPy view of its base buffer, as eager
NumPy would; a 0-d ufunc or reduction result is returned as a NumPy scalar,
again as eager NumPy does.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

import numpy as np

from .... import config
from ....ir.dtypes import short_name
from ....ir.graph import format_value
from ....ir.symbolic import input_symbols, is_symbolic
from ... import loop_ir as L
from ... import memory
from . import allocator, attention, matmul
from ..common import Names, extern_call
from .ops import ARRAY_DATA_OFFSET
from ...scheduler import Kernel, Schedule


def _data_field_is_where_expected() -> bool:
    """Whether an ndarray's data pointer sits at ARRAY_DATA_OFFSET in the object.

    NumPy's ``PyArrayObject`` starts with the object header and then ``data``;
    the generated ``_obj`` entries read it there.  Checked once on a real
    array, so another layout falls back to passing ``.ctypes.data``.
    """
    probe = np.arange(3.0)[1:]
    return ctypes.c_void_p.from_address(id(probe) + ARRAY_DATA_OFFSET).value == probe.ctypes.data


ARRAYS_BY_OBJECT = _data_field_is_where_expected()


def _dtype_global(dtype: np.dtype) -> str:
    return f"_{short_name(dtype)}"


class _WrapperWriter:
    def __init__(self, schedule: Schedule, kernel_args: dict[str, list[str]], plan: memory.MemoryPlan):
        self.s = schedule
        self.plan = plan
        self.kernel_args = kernel_args
        self.lines: list[str] = []
        self.globals_used: dict[str, str] = {}  # global name -> what it is (for the namespace)
        reserved = {"np", "nan", "inf", "_np", "_empty", "_kept"} | {k.name for k in schedule.kernels} | set(kernel_args)
        reserved |= {f"_op_{n.op.name}" for n in schedule.graph.calls}
        reserved |= {_dtype_global(b.dtype) for b in schedule.buffers.values()}
        # Size symbols (dynamic shapes): read off the inputs on entry, passed to every kernel.
        self.symbols = input_symbols([p.meta.shape for p in schedule.graph.placeholders])
        reserved |= set(self.symbols)
        self.names = Names(reserved)
        self.var: dict[str, str] = {}  # buffer/view/input name -> local variable
        self.kernel_read = {b for args in kernel_args.values() for b in args}
        self.kept = kept_buffers(schedule, kernel_args, plan) if config.keep_intermediates else set()

    def allocate(self, name: str, shape: tuple, dtype: np.dtype) -> str:
        """The expression allocating buffer ``name``: a fresh array, or the
        array this thread kept from the last call (see kept_buffers)."""
        if name in self.kept:
            return f"_kept({name!r}, {shape!r}, {_dtype_global(dtype)})"
        return f"_empty({shape!r}, {_dtype_global(dtype)})"

    def emit(self, text: str) -> None:
        self.lines.append("    " + text)

    def array(self, name: str) -> str:
        """The local holding node ``name`` as an array, emitting a view if needed."""
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
        graph = self.s.graph
        params = []
        for layout in self.s.inputs:
            local = self.names.new(layout.name)
            params.append(local)
            self.var[layout.name] = local
        header = f"def call({', '.join(params)}):"
        for sym, (i, axis) in self.symbols.items():
            self.emit(f"{sym} = {params[i]}.shape[{axis}]")
        for layout, param in zip(self.s.inputs, params):
            if layout.needs_array:
                buf = self.s.buffers[layout.name]
                local = self.names.new(f"{layout.name}_c")
                self.emit(f'{local} = _np.asarray({param}, dtype={_dtype_global(buf.dtype)}, order="C")')
                self.var[layout.name] = local
        for step in self.s.steps:
            if isinstance(step, Kernel):
                self._kernel(step)
            else:
                self._extern(step)
        results = []
        for out in graph.outputs:
            if out.kind == "placeholder":
                results.append(params[[p.name for p in self.s.inputs].index(out.name)])
                continue
            expr = self.array(out.name)
            scalar_ops = out.op.kind == "reduction" or out.op.ufunc is not None
            if out.shape == () and scalar_ops and self.s.buffers.get(out.name, None) is not None \
                    and self.s.buffers[out.name].kind == "kernel":
                expr += "[()]"  # eager NumPy returns a scalar here
            results.append(expr)
        ret = "(" + ", ".join(results) + ("," if len(results) == 1 else "") + ")"
        self.emit(f"return {ret}")
        return "\n".join([header] + self.lines) + "\n"

    def _kernel(self, kernel: Kernel) -> None:
        for name in memory.stored(kernel, self.kernel_args):
            buf = self.s.buffers[name]
            old = self.plan.reuse.get(name)
            if old is not None and self.s.buffers[old].shape == buf.shape and self.s.buffers[old].dtype == buf.dtype:
                self.var[name] = self.var[old]  # the same array, its value is dead
                self.emit(f"# {name} reuses the storage of {old}")
                continue
            local = self.names.new(f"buf_{name}")
            self.var[name] = local
            old_buf = self.s.buffers.get(old) if old is not None else None
            nbytes = buf.numel * buf.dtype.itemsize
            if old_buf is not None and not is_symbolic(nbytes) and not is_symbolic(old_buf.numel) \
                    and (old_buf.numel * old_buf.dtype.itemsize, old_buf.dtype.itemsize) != (nbytes, buf.dtype.itemsize):
                # a larger dead buffer (memory.plan): a view of its first bytes
                self.emit(f"{local} = {self.var[old]}.reshape(-1).view(_np.uint8)[:{nbytes}]"
                          f".view({_dtype_global(buf.dtype)}).reshape({buf.shape!r})  # reuses {old}")
            elif old is not None:
                self.emit(f"{local} = {self.var[old]}.view({_dtype_global(buf.dtype)}).reshape({buf.shape!r})"
                          f"  # reuses {old}")
            else:
                self.emit(f"{local} = {self.allocate(name, buf.shape, buf.dtype)}")
        if 0 in kernel.ranges:
            self.emit(f"# {kernel.name}: nothing to compute (empty output)")
            return
        # Arrays go to the kernel's _obj entry as objects, which reads their
        # data pointers in C; ``.ctypes.data`` costs ~0.7 us per array.
        suffix = "" if ARRAYS_BY_OBJECT else ".ctypes.data"
        ptrs = ", ".join([f"{self.var[b]}{suffix}" for b in self.kernel_args[kernel.name]] + list(self.symbols))
        self.emit(f"{kernel.name}({ptrs})")

    def _extern(self, ext: L.Extern) -> None:
        generated = generated_entry(ext, self.s, self.kernel_args)
        if generated is not None:
            self._generated_extern(ext, generated)
            return
        call = extern_call(ext, self.array)
        local = self.names.new(f"buf_{ext.name}")
        self.var[ext.name] = local
        if ext.name in self.kernel_read:
            # Kernels read it with baked-in contiguous strides and its dtype.
            call = f'_np.asarray({call}, dtype={_dtype_global(ext.dtype)}, order="C")'
        self.emit(f"{local} = {call}  # {ext.reason}")


    def _generated_extern(self, ext: L.Extern, kernel: str) -> None:
        """An extern the C++ backend generated (a float32 matmul, an attention): its
        result allocated here, then its operands — for a matmul as C-contiguous arrays
        (a no-op for the buffers the wrapper made); an attention reads buffers at their
        own strides, and only a view it could not read so is made contiguous — unless
        the kernel of its epilogue computes it, later."""
        out = self.names.new(f"buf_{ext.name}")
        self.var[ext.name] = out
        self.emit(f"{out} = {self.allocate(ext.name, ext.shape, ext.dtype)}")
        if not self.kernel_args[kernel]:
            self.emit(f"# {ext.name} is computed by the kernel that runs its epilogue")
            return
        operands = []
        for name in self.kernel_args[kernel][:-1]:
            local = self.array(name)
            buf = self.s.buffers.get(name)
            at_strides = ext.op_name == "attention" and buf is not None
            if not at_strides and (buf is None or buf.strides != L.contiguous_strides(buf.shape)):
                local = f"_np.ascontiguousarray({local})"
            operands.append(local)
        suffix = "" if ARRAYS_BY_OBJECT else ".ctypes.data"
        args = [f"{a}{suffix}" for a in operands + [out]] + list(self.symbols)
        self.emit(f"{kernel}({', '.join(args)})  # generated, not {'BLAS' if ext.op_name == 'matmul' else 'NumPy'}")


def generated_entry(ext: L.Extern, schedule: Schedule, kernel_args: dict[str, list[str]]) -> str | None:
    """The generated C++ function that computes Extern ``ext`` instead of NumPy (a
    matmul's GEMM, an attention kernel), or None when NumPy runs it."""
    for name in (matmul.kernel_name(ext, schedule), attention.kernel_name(ext, schedule)):
        if name in kernel_args:
            return name
    return None


def kept_buffers(schedule: Schedule, kernel_args: dict[str, list[str]], plan: memory.MemoryPlan) -> set[str]:
    """Buffers whose arrays a thread keeps from one call to the next.

    A fresh ``np.empty`` of a large array costs a page fault per 4 KiB page on
    first touch, every call (glibc returns allocations above 32 MiB to the
    system when they are freed).  Keeping the arrays — as torch's caching
    allocator keeps its blocks — avoids it.  Only arrays that cannot reach the caller are kept:
    intermediates the memory plan allocates fresh (never outputs, bases of
    views, or storage handed on) and products of generated matmuls that are
    not outputs, and of those only ones that no NumPy call reads, since a NumPy
    function may return its argument itself.  Each thread keeps its own, so
    concurrent calls never share them."""
    seen_by_numpy = {n.name for n in schedule.graph.outputs} | {i.name for v in schedule.views.values() for i in v.inputs}
    products = set()
    for step in schedule.steps:
        if not isinstance(step, L.Extern):
            continue
        if generated_entry(step, schedule, kernel_args) is not None:
            products.add(step.name)
        else:
            seen_by_numpy |= set(step.inputs)
    # A buffer the plan hands on (plan.reuse) shares its array with those that take it over.
    root: dict[str, str] = {}
    for b in plan.intermediates:
        old = plan.reuse.get(b)
        root[b] = root.get(old, old) if old is not None else b
    shared_with_numpy = {root.get(b, b) for b in seen_by_numpy}
    fresh = {b for b in plan.intermediates if b not in plan.reuse}
    return (fresh | products) - seen_by_numpy - shared_with_numpy


def _keeper() -> Callable[[str, tuple, np.dtype], np.ndarray]:
    """``_kept(name, shape, dtype)``: this thread's array for buffer ``name``,
    allocated on first use (or when the shape changed: dynamic shapes)."""
    local = threading.local()

    def kept(name: str, shape: tuple, dtype: np.dtype) -> np.ndarray:
        arrays = local.__dict__.setdefault("arrays", {})
        array = arrays.get(name)
        if array is None or array.shape != shape or array.dtype != dtype:
            array = arrays[name] = np.empty(shape, dtype)
        return array

    return kept


def generate(schedule: Schedule, kernel_args: dict[str, list[str]], plan: memory.MemoryPlan | None = None) -> str:
    """The source of the wrapper function ``call``."""
    plan = plan if plan is not None else memory.plan(schedule, kernel_args)
    return _WrapperWriter(schedule, kernel_args, plan).generate()


def build(source: str, schedule: Schedule, kernel_args: dict[str, list[str]], lib: ctypes.CDLL | None) -> Callable[..., tuple]:
    """Exec the wrapper source; kernels are bound as ctypes functions once, here."""
    namespace: dict[str, Any] = {
        "_np": np, "np": np, "_empty": np.empty, "_kept": _keeper(), "nan": float("nan"), "inf": float("inf"),
    }
    for buf in schedule.buffers.values():
        namespace[_dtype_global(buf.dtype)] = buf.dtype
    for node in schedule.graph.calls:
        namespace[f"_op_{node.op.name}"] = node.op.impl
    symbols = input_symbols([p.meta.shape for p in schedule.graph.placeholders])
    for kernel in schedule.kernels:
        fn = lib[kernel.name + ("_obj" if ARRAYS_BY_OBJECT else "")]
        fn.argtypes = [ctypes.py_object if ARRAYS_BY_OBJECT else ctypes.c_void_p] * len(kernel_args[kernel.name]) \
            + [ctypes.c_int64] * len(symbols)
        fn.restype = None
        namespace[kernel.name] = fn
    for ext in schedule.steps:
        name = generated_entry(ext, schedule, kernel_args) if isinstance(ext, L.Extern) else None
        if kernel_args.get(name):  # an empty list: the matmul runs inside its epilogue's kernel
            fn = lib[name + ("_obj" if ARRAYS_BY_OBJECT else "")]
            fn.argtypes = [ctypes.py_object if ARRAYS_BY_OBJECT else ctypes.c_void_p] * len(kernel_args[name]) \
                + [ctypes.c_int64] * len(symbols)
            fn.restype = None
            namespace[name] = fn
    exec(compile(source, "<minicompile wrapper>", "exec"), namespace)
    call = namespace["call"]
    return allocator.allocating_from_cache(call) if allocates_large_arrays(schedule) else call


def allocates_large_arrays(schedule: Schedule) -> bool:
    """Whether a call may allocate an array big enough for the caching allocator
    (a size known only at run time may be)."""
    for buf in schedule.buffers.values():
        if buf.kind != "input":
            if any(is_symbolic(d) for d in buf.shape):
                return True
            if buf.numel * buf.dtype.itemsize >= allocator.MIN_CACHED_BYTES:
                return True
    return False

