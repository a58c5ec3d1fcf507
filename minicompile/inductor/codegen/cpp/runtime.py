"""The C++ runtime library: code every generated kernel library may call.

In:  a kernel library (``ctypes.CDLL``) just loaded by :mod:`...codecache`.
Out: :func:`bind` hands it the runtime's entry points — the packed
     float32 GEMM of :mod:`.matmul` and the attention kernels of :mod:`.attention` —
     through the ``mc_bind_*`` setters the library exports (a library without
     them needs nothing).
     :func:`library` is the runtime itself, which also holds the caching
     allocator's C functions (``include/mc_allocator.h``; :mod:`.allocator`
     installs them as NumPy's memory handler).

Why a library of its own: the GEMM and the attention kernel are the same for every
graph (only their arguments differ), and compiling either takes about a second —
as long as a whole graph's kernels.  It is compiled
once per machine (and compiler, flags, CPU: the same cache key as kernels) into
a directory of its own (``config.runtime_dir``), so that pointing
``config.cache_dir`` somewhere empty to time a cold graph compile (as
``make bench`` does) still finds it, as torch.compile's cold compile finds ATen.
``python -m minicompile runtime`` builds it ahead of time
(``make`` does).  Handing over a function pointer instead of linking keeps the
kernel libraries free of link-time dependencies on a path.
"""
from __future__ import annotations

import ctypes
import threading

from .... import config
from ... import codecache
from . import attention, matmul
from .ops import includes

# The GEMM, the attention kernels, and the caching allocator's functions (why and
# how: :mod:`.allocator`, which installs them), in one library.
ALLOCATOR_HEADER = "mc_allocator.h"
SOURCE = includes([matmul.RUNTIME_HEADER, ALLOCATOR_HEADER, attention.RUNTIME_HEADER]) + "\n"

_lock = threading.Lock()
_gemm: int | None = None
_attention: tuple[int, int] | None = None


def library() -> ctypes.CDLL:
    """The runtime library, compiled on first use (raises what ``codecache.load`` raises)."""
    lib, _, _ = codecache.load(SOURCE, cache_dir=config.runtime_dir)
    return lib


def gemm_address() -> int:
    """The address of ``mc_gemm_f32``, compiling the runtime on first use."""
    global _gemm
    with _lock:
        if _gemm is None:
            _gemm = ctypes.cast(library().mc_gemm_f32, ctypes.c_void_p).value
        return _gemm


def attention_addresses() -> tuple[int, int]:
    """The addresses of ``mc_attention_f32`` and ``mc_attention_f64``, compiling the runtime on first use."""
    global _attention
    with _lock:
        if _attention is None:
            lib = library()
            _attention = tuple(ctypes.cast(fn, ctypes.c_void_p).value
                               for fn in (lib.mc_attention_f32, lib.mc_attention_f64))
        return _attention


def bind(lib: ctypes.CDLL) -> None:
    """Give ``lib`` the runtime functions it declares."""
    for setter_name, addresses in (("mc_bind_gemm", lambda: (gemm_address(),)),
                                   ("mc_bind_attention", attention_addresses)):
        try:
            setter = getattr(lib, setter_name)
        except AttributeError:
            continue
        values = addresses()
        setter.argtypes = [ctypes.c_void_p] * len(values)
        setter.restype = None
        setter(*values)


def build() -> int:
    """Build (or find) the runtime now; 0 either way, with one line saying which."""
    try:
        gemm_address()
        print(f"minicompile C++ runtime ready in {config.runtime_dir}")
    except (codecache.CompilerNotFound, codecache.CompileError) as why:
        print(f"minicompile C++ runtime not built ({why}); graphs with matmuls will fall back to NumPy")
    return 0
