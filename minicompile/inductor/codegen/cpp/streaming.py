"""Streaming (non-temporal) stores for kernels that write more than the cache holds.

In:  a kernel and the layout of its buffers.
Out: :func:`flat_loop` — the loop of a one-loop pointwise kernel whose stores
     can stream, and :func:`row_stores` — whether a row kernel's last pass can
     stream its rows (or None / False); :data:`PRELUDE`, the C++ they call
     (``mc_stream_out``, ``mc_stream_head``, ``mc_stream_vector``).

An ordinary store to a line that is not in the cache first reads the line
(the core must own it before it writes part of it), so writing ``n`` bytes
moves ``2n`` through the memory bus.  A streaming store (``movntdq``) writes
whole lines straight to memory without reading them: Adam's update over 4M
float32 parameters reads 64 MB and writes 48 MB, which ordinary stores make
160 MB of traffic and streaming stores 112.  Measured on a 2-core AVX2
machine (the bench's Adam kernel, median of 30 calls, three rounds):
5.4–6.0 ms with ordinary stores, 3.6–3.7 ms streaming.  torch.compile does
not stream on the CPU.

GCC has no way to ask for streaming stores in a loop it vectorizes (it
ignores ``omp simd nontemporal``), so the vectorized loop writes a chunk of
``CHUNK_BYTES`` per output into an L1 buffer of its own, and
``mc_stream_out`` streams the buffer out with AVX stores (a head and tail
that are not whole vectors, and arrays not aligned to an element, use plain
stores).  Chunks of 1 KB measured best (3.6 ms; 2 KB 4.0–4.7, 4 KB 4.4–4.7,
8 KB 4.5–4.8).  Most kernels skip the buffer: a row kernel whose last pass
stores one output (softmax, layer norm), and a one-loop kernel whose outputs
share an element size (Adam), write a plain head up to the first 32-byte
boundary, then each vector's elements into a local array of one vector,
which GCC keeps in a register and ``mc_stream_vector`` stores (``vmovntdq``
straight after the computation), then a plain tail.  Softmax over 4096 x
1024 float32 took 12.4 against 14.4 cycles per vector that way, layer norm
4.6 against 5.8 (medians of 8-10 alternated runs, two threads), Adam's
kernel 3.6-4.2 against 4.8-5.5 ms.  Outputs of a one-loop kernel need the
same address modulo 32 for a common boundary (the caching allocator gives
them that); where they differ the loop stores plainly.
Streaming stores are weakly ordered: each thread ends with
``sfence`` before the team's barrier, so the results are visible to whoever
reads them next.

The catch is that streamed lines are not in the cache afterwards.  That
costs nothing when the data would not have stayed there anyway, so only a
kernel that stores at least ``MIN_BYTES`` (half the last-level cache of a
typical desktop or server core complex) streams.  And streaming only helps a
kernel that waits on memory: one that evaluates a transcendental function per
element (``COMPUTE_BOUND_OPS``) is bound by that instead, and the detour
through the L1 buffer is a small loss (GELU over 4M float32: 3.65/4.06 ms
plain, 3.87/3.79 ms streamed, in alternate runs).

A kernel whose sizes are known only at run time (dynamic shapes) holds both
versions, the streaming loop and the plain one (for a row kernel, both
versions of its last pass), and a test of the stored bytes picks one per
call.  Without it a graph recompiled with a symbolic batch size lost what it
had gained: layer norm over 4096 x 1024, 2.6 against 1.3 ms.
"""
from __future__ import annotations

import functools
import operator

from .... import config
from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...scheduler import Buffer, Kernel

MIN_BYTES = 16 << 20
CHUNK_BYTES = 1024
COMPUTE_BOUND_OPS = frozenset({"exp", "log", "tanh", "sin", "cos", "power"})

PRELUDE = r"""
// Streaming stores (see minicompile/inductor/codegen/cpp/streaming.py): copy n
// elements from an L1 buffer to dst, whole 32-byte vectors with non-temporal
// stores, the unaligned head and the tail with plain ones.  Compiler builtins,
// not <immintrin.h>: that header alone takes most of a second to compile.
#if defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
typedef long long mc_v4i __attribute__((vector_size(32)));
typedef long long mc_v4i_u __attribute__((vector_size(32), aligned(1)));
#define MC_STREAMING 1
#endif
template <typename T> static inline void mc_stream_out(T* __restrict dst, const T* __restrict src, int64_t n) {
    char* d = reinterpret_cast<char*>(dst);
    const char* s = reinterpret_cast<const char*>(src);
    int64_t bytes = n * (int64_t)sizeof(T);
#ifdef MC_STREAMING
    const int64_t head = (int64_t)((32 - ((uintptr_t)d & 31)) & 31);
    if (head % (int64_t)sizeof(T) == 0 && bytes >= head + 32) {
        __builtin_memcpy(d, s, head);
        d += head; s += head; bytes -= head;
        const int64_t whole = bytes & ~(int64_t)31;
        for (int64_t b = 0; b < whole; b += 32) {
            const mc_v4i v = *reinterpret_cast<const mc_v4i_u*>(s + b);
#ifdef __clang__
            __builtin_nontemporal_store(v, reinterpret_cast<mc_v4i*>(d + b));
#else
            __builtin_ia32_movntdq256(reinterpret_cast<mc_v4i*>(d + b), v);
#endif
        }
        d += whole; s += whole; bytes -= whole;
    }
#endif
    __builtin_memcpy(d, s, bytes);
}
// A row pass that streams its one output writes it directly: a plain head
// loop up to dst's first 32-byte boundary (mc_stream_head elements: all n where
// dst is not aligned to its element, or streaming is not available), then
// one 32-byte vector at a time (mc_stream_vector), then a plain tail.
template <typename T> static inline int64_t mc_stream_head(const T* dst, int64_t n) {
#ifdef MC_STREAMING
    const uintptr_t a = (uintptr_t)dst;
    if (a % sizeof(T) == 0) {
        const int64_t head = (int64_t)(((32 - (a & 31)) & 31) / sizeof(T));
        return head < n ? head : n;
    }
#endif
    return n;
}
// The same for several outputs indexed alike: their common head, or n where
// they are not all at the same address modulo 32 (no common boundary).
template <typename T, typename... R> static inline int64_t mc_stream_head_all(int64_t n, const T* first, const R*... rest) {
    const uintptr_t phase = (uintptr_t)first & 31;
    return ((((uintptr_t)rest & 31) == phase) && ...) ? mc_stream_head(first, n) : n;
}
template <typename T> static inline void mc_stream_vector(T* __restrict dst, const T* __restrict src) {
#ifdef MC_STREAMING
    mc_v4i v;
    __builtin_memcpy(&v, src, 32);
#ifdef __clang__
    __builtin_nontemporal_store(v, reinterpret_cast<mc_v4i*>(dst));
#else
    __builtin_ia32_movntdq256(reinterpret_cast<mc_v4i*>(dst), v);
#endif
#else
    __builtin_memcpy(dst, src, 32);
#endif
}
// Streaming stores are weakly ordered: a thread fences once it has written its last chunk.
static inline void mc_stream_fence() {
#ifdef MC_STREAMING
    __builtin_ia32_sfence();
#endif
}
"""


def stored_buffers(kernel: Kernel, internal: frozenset[str]) -> list[str]:
    """The buffers ``kernel`` writes to memory, each once, in store order."""
    return list(dict.fromkeys(s.buffer for s in kernel.stores if s.buffer not in internal))


def _memory_bound(bodies: list[L.Value], computed_before: frozenset = frozenset()) -> bool:
    """No transcendental per element, except in values an earlier pass computed
    (the row kernel keeps those in a row buffer, see ``cpp._plan_row_scratch``)."""
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
