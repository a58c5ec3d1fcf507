"""The C++ backend's loop: the body's kernels run ``n`` times from generated C++.

In:  a loop body's schedule and each kernel's pointer arguments (``kernel.generate``).
Out: :func:`generate` — the source of ``extern "C" void mc_loop(void** p, n, start, step)``,
     appended to the body's translation unit — and :func:`runner`, which calls it.

The generated function is the loop itself: per iteration it stores the index
into its 0-d buffer and calls the body's kernels in schedule order; then it
rotates the carried buffers.  Each carried value has two buffers, ``A`` and
``B``: iteration 0 reads the loop's inputs and writes ``A``, iteration 1 reads
``A`` and writes ``B``, iteration 2 reads ``B`` and writes ``A`` ... so no
kernel ever writes what the same iteration reads, and the inputs are never
written.  Intermediates of the body get one buffer each, allocated once per
call of the loop.  No Python runs between iterations.

Only a body of kernels alone fits (:func:`unfit` says why not): no NumPy call
(Extern), each output a buffer a kernel stores, none an input or a view.
Other bodies run as a host loop calling the compiled body (inductor/loops.py).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ...loops import fresh_results
from ...scheduler import Kernel, Schedule
from .ops import ctype, input_ctype

ENTRY = "mc_loop"


def unfit(sched: Schedule, kernel_args: dict[str, list[str]]) -> str | None:
    """Why this body cannot run as one C++ loop (None: it can)."""
    if any(not isinstance(s, Kernel) for s in sched.steps):
        return "the body calls NumPy (an extern)"
    outs = [o.name for o in sched.graph.outputs]
    if len(set(outs)) != len(outs):
        return "two carried values are one buffer"
    for o in sched.graph.outputs:
        buf = sched.buffers.get(o.name)
        if o.kind == "placeholder" or o.name in sched.views or buf is None or buf.kind != "kernel":
            return f"the carried value {o.name} is not a buffer a kernel stores"
        if not any(o.name in kernel_args.get(k.name, ()) for k in sched.kernels):
            return f"the carried value {o.name} is stored by no kernel argument"
    return None


class Layout:
    """Where each buffer's pointer sits in ``p``: carries' A and B, inputs, intermediates."""

    def __init__(self, sched: Schedule, kernel_args: dict[str, list[str]]):
        self.placeholders = [p.name for p in sched.graph.placeholders]
        self.outputs = [o.name for o in sched.graph.outputs]
        carried = len(self.outputs)
        self.carried_inputs = self.placeholders[:carried]
        used = [b for k in sched.kernels for b in kernel_args[k.name]]
        self.temps = [b for b in dict.fromkeys(used) if b not in self.placeholders and b not in self.outputs]
        names = ([f"A:{o}" for o in self.outputs] + [f"B:{o}" for o in self.outputs]
                 + self.placeholders + self.temps)
        self.slot = {name: i for i, name in enumerate(names)}
        self.buffers = sched.buffers


def generate(sched: Schedule, kernel_args: dict[str, list[str]]) -> tuple[str, Layout]:
    layout = Layout(sched, kernel_args)
    index = layout.placeholders[-1]
    lines = [f'extern "C" void {ENTRY}(void** p, int64_t n, int64_t start, int64_t step)', "{"]
    # cur_j: what iteration k reads for carried value j; nxt_j: where it writes it.
    for j, (inp, out) in enumerate(zip(layout.carried_inputs, layout.outputs)):
        lines += [f"    char* cur{j} = (char*)p[{layout.slot[inp]}];",
                  f"    char* nxt{j} = (char*)p[{layout.slot['A:' + out]}];",
                  f"    char* spare{j} = (char*)p[{layout.slot['B:' + out]}];"]
    lines.append(f"    int64_t* index = (int64_t*)p[{layout.slot[index]}];")
    lines.append("    for (int64_t k = 0; k < n; ++k) {")
    lines.append("        index[0] = start + k * step;")
    where = {inp: f"cur{j}" for j, inp in enumerate(layout.carried_inputs)}
    where.update({out: f"nxt{j}" for j, out in enumerate(layout.outputs)})
    for k in sched.kernels:
        if 0 in k.ranges:
            continue  # nothing to compute (the wrapper skips it too)
        stored = {s.buffer for s in k.stores}
        args = []
        for b in kernel_args[k.name]:
            dtype = layout.buffers[b].dtype
            cast = f"{ctype(dtype)}*" if b in stored else f"const {input_ctype(dtype)}*"
            args.append(f"({cast})" + (where[b] if b in where else f"p[{layout.slot[b]}]"))
        lines.append(f"        {k.name}({', '.join(args)});")
    for j in range(len(layout.outputs)):
        lines.append(f"        {{ char* t = cur{j}; cur{j} = nxt{j}; nxt{j} = k == 0 ? spare{j} : t; }}")
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n", layout


def runner(lib: Any, layout: Layout):
    """``run(n, start, step, carried, invariant)`` calling the generated loop."""
    fn = lib[ENTRY]
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    fn.restype = None
    buffers = layout.buffers
    count = len(layout.slot)

    def run(n: int, start: int, step: int, carried: list, invariant: list) -> tuple:
        arrays: dict[str, np.ndarray] = {}
        for out in layout.outputs:
            buf = buffers[out]
            arrays["A:" + out] = np.empty(buf.shape, buf.dtype)
            arrays["B:" + out] = np.empty(buf.shape, buf.dtype)
        inputs = [np.asarray(v, order="C") for v in (*carried, *invariant)] + [np.zeros((), np.int64)]
        arrays.update(zip(layout.placeholders, inputs))
        for t in layout.temps:
            arrays[t] = np.empty(buffers[t].shape, buffers[t].dtype)
        pointers = (ctypes.c_void_p * count)()
        for name, i in layout.slot.items():
            pointers[i] = arrays[name].ctypes.data
        fn(pointers, n, start, step)
        if n == 0:
            return fresh_results(list(carried), carried, invariant)
        which = "A:" if n % 2 == 1 else "B:"
        return tuple(arrays[which + out] for out in layout.outputs)

    return run
