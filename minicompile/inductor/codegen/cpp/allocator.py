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
