"""The C++ backend's loop: the body's kernels run ``n`` times from generated C++.

In:  a loop body's schedule, each kernel's pointer arguments (``kernel.generate``)
     and how many of the body's inputs and outputs are carried.
Out: :func:`generate` — the source of ``extern "C" void mc_loop(void** p, n,
     start, step, rows, reverse)``, appended to the body's translation unit —
     and :func:`runner`, which calls it.

The generated function is the loop itself: per iteration ``k`` it stores the
index into its 0-d buffer, copies the carried values a stacked output keeps
(a carry's history, row ``k``), and calls the body's kernels in schedule
order; then it rotates the carried buffers.  Each carried value has two
buffers, ``A`` and ``B``: the first iteration reads the loop's inputs and
writes ``A``, the second reads ``A`` and writes ``B``, the third reads ``B``
and writes ``A`` ... so no kernel ever writes what the same iteration reads,
and the inputs are never written.  A sliced input is read at row ``k``: its
pointer moves on by ``rows[j]`` bytes per iteration (0 for an invariant).
Intermediates of the body get one buffer each, allocated once per call of
the loop.  No Python runs between iterations.

Only a body of kernels alone fits (:func:`unfit` says why not): no NumPy call
(Extern), each carried output a buffer a kernel stores, none an input or a
view, and each stacked output a carried input (a history).  Other bodies run
as a host loop calling the compiled body (inductor/loops.py).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ...loops import fresh_results
from ...scheduler import Kernel, Schedule
from .ops import ctype, input_ctype

ENTRY = "mc_loop"


def unfit(sched: Schedule, kernel_args: dict[str, list[str]], carried: int) -> str | None:
    """Why this body cannot run as one C++ loop (None: it can)."""
    if any(not isinstance(s, Kernel) for s in sched.steps):
        return "the body calls NumPy (an extern)"
    outputs, stacked = sched.graph.outputs[:carried], sched.graph.outputs[carried:]
    names = [o.name for o in outputs]
    if len(set(names)) != len(names):
        return "two carried values are one buffer"
    for o in outputs:
        buf = sched.buffers.get(o.name)
        if o.kind == "placeholder" or o.name in sched.views or buf is None or buf.kind != "kernel":
            return f"the carried value {o.name} is not a buffer a kernel stores"
        if not any(o.name in kernel_args.get(k.name, ()) for k in sched.kernels):
            return f"the carried value {o.name} is stored by no kernel argument"
    if any(o not in sched.graph.placeholders[:carried] for o in stacked):
        return "a stacked output is computed by the body (only a carry's history is copied in C++)"
    return None


class Layout:
    """Where each buffer's pointer sits in ``p``: carries' A and B, histories, inputs,
    intermediates."""

    def __init__(self, sched: Schedule, kernel_args: dict[str, list[str]], carried: int):
        self.placeholders = [p.name for p in sched.graph.placeholders]
        names = [o.name for o in sched.graph.outputs]
        self.outputs, self.stacked = names[:carried], names[carried:]
        self.carried_inputs = self.placeholders[:carried]
        self.read = self.placeholders[carried:-1]  # invariant and sliced, in order
        used = [b for k in sched.kernels for b in kernel_args[k.name]]
        self.temps = [b for b in dict.fromkeys(used) if b not in self.placeholders and b not in self.outputs]
        slots = ([f"A:{o}" for o in self.outputs] + [f"B:{o}" for o in self.outputs]
                 + [f"H:{j}" for j in range(len(self.stacked))] + self.placeholders + self.temps)
        self.slot = {name: i for i, name in enumerate(slots)}
        self.buffers = sched.buffers

    def nbytes(self, name: str) -> int:
        return self.buffers[name].numel * np.dtype(self.buffers[name].dtype).itemsize


def generate(sched: Schedule, kernel_args: dict[str, list[str]], carried: int) -> tuple[str, Layout]:
    layout = Layout(sched, kernel_args, carried)
    index = layout.placeholders[-1]
    lines = [f'extern "C" void {ENTRY}(void** p, int64_t n, int64_t start, int64_t step, '
             "const int64_t* rows, int64_t reverse)", "{"]
    # cur_j: what the iteration reads for carried value j; nxt_j: where it writes it.
    for j, (inp, out) in enumerate(zip(layout.carried_inputs, layout.outputs)):
        lines += [f"    char* cur{j} = (char*)p[{layout.slot[inp]}];",
                  f"    char* nxt{j} = (char*)p[{layout.slot['A:' + out]}];",
                  f"    char* spare{j} = (char*)p[{layout.slot['B:' + out]}];"]
    lines.append(f"    int64_t* index = (int64_t*)p[{layout.slot[index]}];")
    lines.append("    for (int64_t it = 0; it < n; ++it) {")
    lines.append("        const int64_t k = reverse ? n - 1 - it : it;")
    lines.append("        index[0] = start + k * step;")
    for h, name in enumerate(layout.stacked):  # a carry's history: row k is what iteration k starts from
        j, size = layout.carried_inputs.index(name), layout.nbytes(name)
        lines.append(f"        __builtin_memcpy((char*)p[{layout.slot[f'H:{h}']}] + k * {size}, cur{j}, {size});")
    where = {inp: f"cur{j}" for j, inp in enumerate(layout.carried_inputs)}
    where.update({out: f"nxt{j}" for j, out in enumerate(layout.outputs)})
    where.update({name: f"((char*)p[{layout.slot[name]}] + k * rows[{m}])" for m, name in enumerate(layout.read)})
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
        lines.append(f"        {{ char* t = cur{j}; cur{j} = nxt{j}; nxt{j} = it == 0 ? spare{j} : t; }}")
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n", layout


def runner(lib: Any, layout: Layout):
    """``run(n, start, step, carried, invariant, sliced, reverse)`` calling the generated loop."""
    fn = lib[ENTRY]
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                   ctypes.c_void_p, ctypes.c_int64]
    fn.restype = None
    buffers = layout.buffers
    count = len(layout.slot)

    def run(n: int, start: int, step: int, carried: list, invariant: list, sliced: list = (),
            reverse: bool = False) -> tuple:
        arrays: dict[str, np.ndarray] = {}
        for out in layout.outputs:
            buf = buffers[out]
            arrays["A:" + out] = np.empty(buf.shape, buf.dtype)
            arrays["B:" + out] = np.empty(buf.shape, buf.dtype)
        stacked = [np.empty((n, *buffers[name].shape), buffers[name].dtype) for name in layout.stacked]
        arrays.update((f"H:{h}", a) for h, a in enumerate(stacked))
        sliced = [np.asarray(v, order="C") for v in sliced]
        inputs = [np.asarray(v, order="C") for v in (*carried, *invariant)] + sliced + [np.zeros((), np.int64)]
        arrays.update(zip(layout.placeholders, inputs))
        # Bytes a read input's pointer moves on per iteration: a row of a sliced one.
        rows = np.array([0] * len(invariant) + [a.strides[0] for a in sliced] + [0], np.int64)
        for t in layout.temps:
            arrays[t] = np.empty(buffers[t].shape, buffers[t].dtype)
        pointers = (ctypes.c_void_p * count)()
        for name, i in layout.slot.items():
            pointers[i] = arrays[name].ctypes.data
        fn(pointers, n, start, step, rows.ctypes.data, int(reverse))
        if n == 0:
            return fresh_results(list(carried), carried, invariant) + tuple(stacked)
        which = "A:" if n % 2 == 1 else "B:"
        return tuple(arrays[which + out] for out in layout.outputs) + tuple(stacked)

    return run
