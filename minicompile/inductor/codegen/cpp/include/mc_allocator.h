// The caching allocator for NumPy arrays, compiled into the C++ runtime library
// with the GEMM (codegen/cpp/runtime.py); codegen/cpp/allocator.py installs it
// as NumPy's memory handler.
#pragma once

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
// at first: "4K aliasing"); half a page away, they never match.
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
