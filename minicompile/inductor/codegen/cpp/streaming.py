"""Streaming (non-temporal) stores for kernels that write more than the cache holds.

In:  a kernel, the layout of its buffers, and the :class:`~.kernel.KernelWriter`
     writing it.
Out: the decisions — :func:`flat_loop` (the loop of a one-loop pointwise
     kernel whose stores can stream) and :func:`row_stores` (whether a row
     kernel's last pass can stream its rows), each True, False/None, or a C
     condition on sizes known only at run time — and the loops they choose:
     :func:`write_flat_loop`, :func:`write_row_pass`.  Their C++ helpers
     (``mc_stream_out``, ``mc_stream_head``, ``mc_stream_vector``,
     ``mc_stream_fence``) are in ``include/mc_streaming.h`` (:data:`HEADER`).

Why: an ordinary store to a line that is not in the cache first reads the
line, so writing ``n`` bytes moves ``2n`` through the memory bus; a streaming
store (``movntdq``) writes whole lines without reading them.  (torch.compile
does not stream on the CPU.)

How: GCC cannot be asked for streaming stores in a loop it vectorizes (it
ignores ``omp simd nontemporal``).  So a loop writes a plain head up to the
outputs' first 32-byte boundary, then one vector at a time, each output's
lanes into a local array of one vector (which GCC keeps in a register) that
``mc_stream_vector`` stores right after the computation, then a plain tail
(:func:`_stream_vectors`).  Several outputs share that boundary only at the
same address modulo 32 (the caching allocator gives them that; elsewhere the
loop stores plainly).  Outputs of mixed element sizes, and a row pass with
several outputs, go through an L1 buffer of ``CHUNK_BYTES`` per output instead,
which ``mc_stream_out`` streams out.  Streaming stores are weakly ordered:
each thread ends with ``sfence`` before the team's barrier.

When: streamed lines are not in the cache afterwards, which costs nothing only
when they would not have stayed there anyway: so only a kernel that stores at
least ``MIN_BYTES`` (half the last-level cache of a typical core complex)
streams.  And only a kernel that waits on memory: one that evaluates a
transcendental per element (``COMPUTE_BOUND_OPS``) is bound by that instead.
A kernel whose sizes are known only at run time holds both versions, and a
test of the stored bytes picks one per call.
"""
from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Callable

from .... import config
from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...scheduler import Buffer, Kernel
from .ops import ctype

if TYPE_CHECKING:
    from .kernel import KernelWriter

HEADER = "mc_streaming.h"
MIN_BYTES = 16 << 20
CHUNK_BYTES = 1024
COMPUTE_BOUND_OPS = frozenset({"exp", "log", "tanh", "sin", "cos", "power"})


def stored_buffers(kernel: Kernel, internal: frozenset[str]) -> list[str]:
    """The buffers ``kernel`` writes to memory, each once, in store order."""
    return list(dict.fromkeys(s.buffer for s in kernel.stores if s.buffer not in internal))


def _memory_bound(bodies: list[L.Value], computed_before: frozenset = frozenset()) -> bool:
    """No transcendental per element, except in values an earlier pass computed
    (the row kernel keeps those in a row buffer, see ``KernelWriter._plan_row_scratch``)."""
    def compute_bound(v: L.Value) -> bool:
        if v in computed_before:
            return False
        if isinstance(v, L.Op):
            return v.name in COMPUTE_BOUND_OPS or any(compute_bound(a) for a in v.args)
        return isinstance(v, L.Cast) and compute_bound(v.value)
    return not any(compute_bound(b) for b in bodies)


def _big_enough(buffers: dict[str, Buffer], stored: list[str]) -> bool | str:
    """Whether the stored bytes reach MIN_BYTES; for sizes known only at run
    time, the C condition that says it."""
    if not config.cpp_streaming_stores or not stored:
        return False
    total = functools.reduce(operator.add, [buffers[b].numel * buffers[b].dtype.itemsize for b in stored])
    return f"{total} >= {MIN_BYTES}" if is_symbolic(total) else total >= MIN_BYTES


def chunk_elements(kernel: Kernel, buffers: dict[str, Buffer], internal: frozenset[str]) -> int:
    """Elements per chunk: ``CHUNK_BYTES`` of the widest stored element type."""
    return max(CHUNK_BYTES // max(buffers[b].dtype.itemsize for b in stored_buffers(kernel, internal)), 1)


def flat_loop(kernel: Kernel, buffers: dict[str, Buffer], out_vars: list[L.Var],
              internal: frozenset[str]) -> tuple[L.Var, bool | str] | None:
    """The loop of a pointwise kernel over one loop that stores every output at
    the loop index itself (so a chunk of the loop is a chunk of each output),
    and True when the kernel stores enough to stream, or the C condition for
    it when its size is known only at run time; else None."""
    if kernel.reductions or kernel.row_pointwise or len(out_vars) != 1:
        return None
    var = out_vars[0]
    stored = stored_buffers(kernel, internal)
    identity = L.loop_index("x", kernel.ranges)
    for b in stored:
        offset = L.linearize(identity, buffers[b].strides)
        if offset.const != 0 or offset.terms != ((var, 1),):
            return None
    if not _memory_bound([s.body for s in kernel.pointwise]):
        return None
    big = _big_enough(buffers, stored)
    return (var, big) if big else None


def row_stores(kernel: Kernel, buffers: dict[str, Buffer], out_vars: list[L.Var], red_vars: list[L.Var],
               internal: frozenset[str]) -> bool | str:
    """Whether a row kernel's last pass (its row stores) can stream: one
    reduction loop of a size known now, every row store contiguous along it,
    and enough bytes stored (with a number of rows known only at run time,
    the C condition for that)."""
    if not out_vars or len(red_vars) != 1 or not kernel.row_pointwise or is_symbolic(red_vars[0].size):
        return False
    if any(s.buffer in internal or L.linearize(s.index, buffers[s.buffer].strides).coeff(red_vars[0]) != 1
           for s in kernel.row_pointwise):
        return False
    earlier = frozenset(v for stage in kernel.stages for st in stage for v in L.walk(st.body))
    if not _memory_bound([s.body for s in kernel.row_pointwise], earlier):
        return False
    return red_vars[0].size >= 32 and _big_enough(buffers, stored_buffers(kernel, internal))


def write_flat_loop(w: KernelWriter, var: L.Var) -> None:
    """A one-loop pointwise kernel (:func:`flat_loop`) with streamed stores:
    outputs of one element size straight from the computation, each part of
    the loop shared among the threads; otherwise in chunks, each output's
    chunk written to an L1 buffer by the vectorized loop and streamed out."""
    k, n = w.kernel, var.size
    c = chunk_elements(k, w.buffers, w.internal)
    stored = stored_buffers(k, w.internal)
    w.streams = True
    sizes = {w.buffers[b].dtype.itemsize for b in stored}
    if len(sizes) == 1:
        v = var.name
        w.line(f"const int64_t {v}_h = mc_stream_head_all({n}, {', '.join(f'out_{b}' for b in stored)});")
        w.open_block(w.parallel_region())
        _stream_vectors(w, v, n, {b: f"out_{b}" for b in stored}, w.store_pointwise, c)
        w.line("mc_stream_fence();")
        w.close_loops(1)
        return
    w.open_block(w.parallel_region())
    w.line("#pragma omp for")
    w.open_block(f"for (int64_t {var.name}_c = 0; {var.name}_c < {n}; {var.name}_c += {c})")
    for b in stored:
        w.line(f"alignas(64) {ctype(w.buffers[b].dtype)} so_{b}[{c}];")
        w.store_to[b] = f"so_{b}[{var.name} - {var.name}_c]"
    w.line(f"const int64_t {var.name}_e = {var.name}_c + {c} < {n} ? {var.name}_c + {c} : {n};")
    w.line("#pragma omp simd")
    w.open_block(f"for (int64_t {var.name} = {var.name}_c; {var.name} < {var.name}_e; ++{var.name})")
    w.store_pointwise()
    w.close_loops(1)
    for b in stored:
        w.line(f"mc_stream_out(out_{b} + {var.name}_c, so_{b}, {var.name}_e - {var.name}_c);")
    w.close_loops(1)
    w.line("mc_stream_fence();")
    w.close_loops(1)
    w.store_to = {}


def write_row_pass(w: KernelWriter, red_vars: list[L.Var], parallel: bool, pass_index: int) -> None:
    """A row kernel's last pass (:func:`row_stores`) with streamed stores: its
    one row store straight from the computation, or several through a row
    buffer each in L1, streamed out after the pass."""
    row_pointwise = w.kernel.row_pointwise
    w.streams = True
    if not parallel and len(row_pointwise) == 1:
        store, = row_pointwise
        r = red_vars[0]
        b, n = store.buffer, r.size
        w.line(f"{ctype(w.buffers[b].dtype)}* so_{b};")
        w.line(f"{{ const int64_t {r.name} = 0; so_{b} = &out_{b}[{w.offset(b, store.index)}]; }}")
        w.line(f"const int64_t {r.name}_h = mc_stream_head(so_{b}, {n});")

        def body() -> None:
            w.enter_pass(pass_index)
            w.store(b, store.index, w.value(store.body), store.body.dtype)

        _stream_vectors(w, r.name, n, {b: f"so_{b}"}, body)
        return
    with w.scope():
        rows = {s.buffer: s.index for s in row_pointwise}
        for b in rows:  # one reduction loop (see row_stores)
            w.line(f"alignas(64) {ctype(w.buffers[b].dtype)} so_{b}[{red_vars[0].size}];")
            w.store_to[b] = f"so_{b}[{red_vars[0].name}]"
        w.row_loop(red_vars, parallel, pass_index)
        for b, index in rows.items():
            w.line("{")
            w.depth += 1
            w.line(f"const int64_t {red_vars[0].name} = 0;  // the row starts where the store's index has it 0")
            w.line(f"mc_stream_out(&out_{b}[{w.offset(b, index)}], so_{b}, {red_vars[0].size});")
            w.close_loops(1)
        w.store_to = {}


def _stream_vectors(w: KernelWriter, v: str, n: int | str, dst: dict[str, str], body: Callable[[], None],
                    chunk: int | None = None) -> None:
    """Streaming stores straight from the computation: a plain head loop up
    to ``{v}_h`` (the outputs' first 32-byte boundary, declared by the
    caller), then one vector of ``32 / itemsize`` elements at a time, each
    output's lanes written to a local array the compiler keeps in a register
    and streamed to ``dst`` (``mc_stream_vector``), then a plain tail.
    ``body()`` writes one element's stores (to the local arrays, through
    ``store_to``, in the vector loop); with ``chunk``, each part is shared by
    the team (``omp for nowait``), the vectors in chunks of ``chunk`` elements."""
    lanes = 32 // w.buffers[next(iter(dst))].dtype.itemsize
    w.line(f"const int64_t {v}_m = {v}_h + ({n} - {v}_h) / {lanes} * {lanes};")

    def element(targets: dict[str, str]) -> None:
        with w.scope():
            w.store_to = targets
            body()
            w.store_to = {}

    for start, end in ((0, f"{v}_h"), (f"{v}_m", n)):
        if start:  # the vectors between head and tail
            if chunk:
                w.line("#pragma omp for nowait")
                w.open_block(f"for (int64_t {v}_c = {v}_h; {v}_c < {v}_m; {v}_c += {chunk})")
                w.line(f"const int64_t {v}_e = {v}_c + {chunk} < {v}_m ? {v}_c + {chunk} : {v}_m;")
                w.open_block(f"for (int64_t {v}_v = {v}_c; {v}_v < {v}_e; {v}_v += {lanes})")
            else:
                w.open_block(f"for (int64_t {v}_v = {v}_h; {v}_v < {v}_m; {v}_v += {lanes})")
            for b in dst:
                w.line(f"alignas(32) {ctype(w.buffers[b].dtype)} sv_{b}[{lanes}];")
            w.line("#pragma omp simd")
            w.open_block(f"for (int64_t {v}_j = 0; {v}_j < {lanes}; ++{v}_j)")
            w.line(f"const int64_t {v} = {v}_v + {v}_j;")
            element({b: f"sv_{b}[{v}_j]" for b in dst})
            w.close_loops(1)
            for b, d in dst.items():
                w.line(f"mc_stream_vector(&{d}[{v}_v], sv_{b});")
            w.close_loops(2 if chunk else 1)
        w.line("#pragma omp for simd nowait" if chunk else "#pragma omp simd")
        w.open_block(f"for (int64_t {v} = {start}; {v} < {end}; ++{v})")
        element({})
        w.close_loops(1)
