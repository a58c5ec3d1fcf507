"""A caching allocator for the arrays a compiled graph returns (NumPy's memory-handler API).

In:  a compiled graph's ``call`` whose arrays are large (:func:`allocating_from_cache`).
Out: the same ``call``, but every NumPy array allocated while it runs (its
     outputs, and the results of NumPy calls inside it) takes its memory from
     a cache of blocks that earlier arrays gave back when they were freed.

Why: a fresh large array costs a page fault per page on first touch, and the
kernel zeroes each page before handing it over.  glibc returns big blocks to
the system when they are freed, so a graph returning 48 MB (Adam's new
parameters and moments for 4M parameters) pays that every call: about as long
as the kernel itself.  torch keeps freed device memory in its caching
allocator for the same reason.  Here the blocks go back to the cache when
NumPy frees the array, through the allocator NumPy recorded for it.

How: NumPy (since 1.22) lets a program choose, per thread and context, the
functions that allocate array data: a ``PyDataMem_Handler`` (a name, a
version, and malloc/calloc/realloc/free) in a capsule, installed with
``PyDataMem_SetHandler``.  Each array remembers the handler it was allocated
with, so arrays allocated here are freed here, whoever frees them and when;
arrays own their data as usual (``flags.owndata``).  The handler's functions
are C, in the C++ runtime library (:mod:`.runtime`); blocks of at least
``MIN_CACHED_BYTES`` are whole ``mmap`` mappings (huge pages where the system
allows), cached up to ``config.allocator_cache_bytes`` in all and reused by
best fit up to twice the size asked for; smaller ones are plain ``malloc``.
:func:`empty_cache` returns every cached block to the system, like
``torch.cuda.empty_cache()``.  Without a C++ compiler, graphs allocate as
NumPy does.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any, Callable

import numpy as np

from .... import config

MIN_CACHED_BYTES = 1 << 20  # smaller blocks are malloc'ed: glibc reuses those itself

ALLOCATOR_SOURCE = r"""
// ---- caching allocator for NumPy arrays (see minicompile/inductor/codegen/cpp/allocator.py) ----
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>
#include <sys/mman.h>

// NumPy's PyDataMem_Handler, version 1 (numpy/ndarraytypes.h), declared
// here so that the runtime needs neither NumPy's nor Python's headers.
struct mc_numpy_allocator {
    void* ctx;
    void* (*malloc)(void* ctx, size_t size);
    void* (*calloc)(void* ctx, size_t nelem, size_t elsize);
    void* (*realloc)(void* ctx, void* ptr, size_t new_size);
    void (*free)(void* ctx, void* ptr, size_t size);
};
struct mc_numpy_handler {
    char name[127];
    uint8_t version;
    mc_numpy_allocator allocator;
};

namespace {
// The array's data follows this header, 64-byte aligned.
struct alignas(64) mc_block {
    size_t mapped;     // length of the mmap'ed block (header included); 0: a small malloc'ed block
    size_t requested;  // bytes the array asked for
};
constexpr size_t kHeader = sizeof(mc_block);
constexpr size_t kPage = 4096;
constexpr size_t kHuge = size_t(2) << 20;
// In a mapping the data starts kDataOffset bytes in, half a page away from
// where glibc puts the data of a block it maps on its own (and so, usually,
// NumPy's own large arrays): 16 bytes past a page boundary.  A kernel that reads such an array
// and writes one whose address is a little higher modulo 4096 stalls its
// loads on its earlier stores (the core compares only the low 12 address bits
// at first: "4K aliasing").  With the data 64 bytes in, 48 past NumPy's, layer
// norm's kernel over 4096 x 1024 float32 measured 2.9-3.0 ms against 1.1-1.2
// with the output half a page away (one process, the same kernel and input).
constexpr size_t kDataOffset = kPage / 2;
constexpr size_t kLead = kDataOffset - kHeader;  // mapping start to header
void* mc_mapping(mc_block* b) { return reinterpret_cast<char*>(b) - kLead; }

std::mutex mc_lock;
std::vector<mc_block*> mc_cached;  // freed mappings kept for reuse, oldest first
size_t mc_cached_bytes = 0;
size_t mc_limit = size_t(1) << 30;
size_t mc_min_cached = size_t(1) << 20;
uint64_t mc_hits = 0, mc_misses = 0;

void* mc_data(mc_block* b) { return reinterpret_cast<char*>(b) + kHeader; }
mc_block* mc_header(void* p) { return reinterpret_cast<mc_block*>(static_cast<char*>(p) - kHeader); }

// A cached mapping of at least `length` bytes and at most twice that (best fit), or null.
mc_block* mc_take(size_t length) {
    std::lock_guard<std::mutex> guard(mc_lock);
    size_t best = mc_cached.size();
    for (size_t i = 0; i < mc_cached.size(); ++i) {
        const size_t m = mc_cached[i]->mapped;
        if (m >= length && m / 2 <= length && (best == mc_cached.size() || m < mc_cached[best]->mapped)) best = i;
    }
    if (best == mc_cached.size()) { ++mc_misses; return nullptr; }
    mc_block* b = mc_cached[best];
    mc_cached.erase(mc_cached.begin() + best);
    mc_cached_bytes -= b->mapped;
    ++mc_hits;
    return b;
}

void* mc_allocate(size_t size, bool* fresh) {
    *fresh = true;
    if (size > SIZE_MAX - kDataOffset - kHuge) return nullptr;
    const size_t total = size + kHeader;
    if (total < mc_min_cached) {
        mc_block* b = static_cast<mc_block*>(std::aligned_alloc(kHeader, (total + kHeader - 1) / kHeader * kHeader));
        if (!b) return nullptr;
        b->mapped = 0;
        b->requested = size;
        *fresh = false;  // malloc'ed memory is not known to be zero
        return mc_data(b);
    }
    const size_t length = (size + kDataOffset + kPage - 1) / kPage * kPage;
    mc_block* b = mc_take(length);
    if (b) {
        *fresh = false;
    } else {
        void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
        if (length >= kHuge) madvise(p, length, MADV_HUGEPAGE);
#endif
        b = reinterpret_cast<mc_block*>(static_cast<char*>(p) + kLead);
        b->mapped = length;
    }
    b->requested = size;
    return mc_data(b);
}

void mc_release(mc_block* b) {
    if (b->mapped == 0) { std::free(b); return; }
    std::vector<mc_block*> unmap;
    {
        std::lock_guard<std::mutex> guard(mc_lock);
        if (b->mapped > mc_limit) {
            unmap.push_back(b);
        } else {
            while (mc_cached_bytes + b->mapped > mc_limit) {  // evict the oldest
                unmap.push_back(mc_cached.front());
                mc_cached_bytes -= mc_cached.front()->mapped;
                mc_cached.erase(mc_cached.begin());
            }
            mc_cached.push_back(b);
            mc_cached_bytes += b->mapped;
        }
    }
    for (mc_block* u : unmap) munmap(mc_mapping(u), u->mapped);
}

void* mc_np_malloc(void*, size_t size) {
    bool fresh;
    return mc_allocate(size, &fresh);
}

void* mc_np_calloc(void*, size_t nelem, size_t elsize) {
    if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
    bool fresh;
    void* p = mc_allocate(nelem * elsize, &fresh);
    if (p && !fresh) std::memset(p, 0, nelem * elsize);  // a new mapping is zero already
    return p;
}

void mc_np_free(void*, void* ptr, size_t) {
    if (ptr) mc_release(mc_header(ptr));  // the size NumPy passes is not needed: the header has it
}

void* mc_np_realloc(void*, void* ptr, size_t new_size) {
    if (!ptr) return mc_np_malloc(nullptr, new_size);
    mc_block* old = mc_header(ptr);
    bool fresh;
    void* p = mc_allocate(new_size, &fresh);
    if (!p) return nullptr;  // realloc's contract: the old block stays valid
    std::memcpy(p, ptr, old->requested < new_size ? old->requested : new_size);
    mc_release(old);
    return p;
}

mc_numpy_handler mc_handler = {
    "minicompile_cache", 1, {nullptr, mc_np_malloc, mc_np_calloc, mc_np_realloc, mc_np_free}};
}  // namespace

extern "C" void* mc_allocator_handler() { return &mc_handler; }

extern "C" void mc_allocator_configure(uint64_t limit, uint64_t min_cached) {
    std::lock_guard<std::mutex> guard(mc_lock);
    mc_limit = limit;
    mc_min_cached = min_cached;
}

// Cached blocks, cached bytes, allocations served from the cache, mappings made.
extern "C" void mc_allocator_stats(uint64_t* out) {
    std::lock_guard<std::mutex> guard(mc_lock);
    out[0] = mc_cached.size();
    out[1] = mc_cached_bytes;
    out[2] = mc_hits;
    out[3] = mc_misses;
}

extern "C" void mc_allocator_empty_cache() {
    std::vector<mc_block*> unmap;
    {
        std::lock_guard<std::mutex> guard(mc_lock);
        unmap.swap(mc_cached);
        mc_cached_bytes = 0;
    }
    for (mc_block* u : unmap) munmap(mc_mapping(u), u->mapped);
}
"""

# Slots of NumPy's C-API table (numpy/__multiarray_api.h); the table only
# ever grows, so they hold for every NumPy from 1.22 on.
_SET_HANDLER_SLOT = 304


class _Handler:
    """The runtime's handler as a capsule, and NumPy's ``PyDataMem_SetHandler``."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        lib.mc_allocator_handler.restype = ctypes.c_void_p
        lib.mc_allocator_configure.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
        lib.mc_allocator_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
        self.configure()
        # The capsule keeps a pointer to its name: the buffer lives as long as this object (forever).
        self._name = ctypes.create_string_buffer(b"mem_handler")
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        new_capsule.restype = ctypes.py_object
        self.capsule = new_capsule(lib.mc_allocator_handler(), ctypes.addressof(self._name), None)
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        get_pointer.restype = ctypes.c_void_p
        table = get_pointer(np._core._multiarray_umath._ARRAY_API, None)
        slot = ctypes.c_void_p.from_address(table + _SET_HANDLER_SLOT * ctypes.sizeof(ctypes.c_void_p)).value
        self.set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(slot)

    def configure(self) -> None:
        """Apply ``config.allocator_cache_bytes`` (blocks beyond it are released as they come back)."""
        self.lib.mc_allocator_configure(int(config.allocator_cache_bytes), MIN_CACHED_BYTES)

    def works(self) -> bool:
        """Whether installing the capsule makes NumPy allocate through it."""
        previous = self.set_handler(self.capsule)
        try:
            return np._core.multiarray.get_handler_name() == "minicompile_cache"
        finally:
            self.set_handler(previous)


_lock = threading.Lock()
_handler: _Handler | None | bool = False  # False: not looked for yet; None: unavailable


def handler() -> _Handler | None:
    """The handler, built on first use; None without a C++ compiler (or a NumPy without handlers)."""
    global _handler
    with _lock:
        if _handler is False:
            from ... import codecache
            from . import runtime
            try:
                candidate = _Handler(runtime.library())
                _handler = candidate if candidate.works() else None
            except (codecache.CompilerNotFound, codecache.CompileError, AttributeError, OSError):
                _handler = None
        return _handler


def allocating_from_cache(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call``, with NumPy allocating through the caching handler while it runs."""
    h = handler() if config.cached_allocator else None
    if h is None:
        return call
    set_handler, capsule = h.set_handler, h.capsule

    @functools.wraps(call)
    def call_from_cache(*args: Any) -> Any:
        previous = set_handler(capsule)
        try:
            return call(*args)
        finally:
            set_handler(previous)

    return call_from_cache


def stats() -> dict[str, int]:
    """Blocks and bytes the cache holds; allocations it served and mappings it made."""
    h = _handler or None  # never builds the runtime just to report that it is empty
    if h is None:
        return {"cached_blocks": 0, "cached_bytes": 0, "hits": 0, "misses": 0}
    out = (ctypes.c_uint64 * 4)()
    h.lib.mc_allocator_stats(out)
    return dict(zip(("cached_blocks", "cached_bytes", "hits", "misses"), map(int, out)))


def empty_cache() -> None:
    """Return every cached block to the system (arrays still alive are untouched)."""
    if _handler:
        _handler.lib.mc_allocator_empty_cache()
