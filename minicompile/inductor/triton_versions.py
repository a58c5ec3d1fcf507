"""What differs between the Triton versions minicompile runs on, in one table.

In:  the installed ``triton.__version__`` (read lazily: importing this module
     does not import Triton).
Out: :func:`feature` answers one question about the installed version;
     :data:`DOT_IEEE` is the ``tl.dot`` keyword that asks for exact float32
     products.

Known differences, newest first (versions as ``(major, minor)``):

==========================  =======  =============================================
feature                     since    why it matters here
==========================  =======  =============================================
``driver_without_torch``    3.7      3.6 finds its CUDA driver (and current stream)
                                     through torch, so torch must be importable on
                                     the GPU machine; later versions need no torch
``interpreter_numpy_2_4``   3.7      3.6's interpreter turns a tensor into a loop
                                     bound with ``int(array)``, which numpy >= 2.4
                                     refuses for a 1-element 1-d array;
                                     :func:`patch_interpreter` squeezes it first
``input_precision``         3.0      ``tl.dot(..., input_precision="ieee")``; before
                                     3.0 the spelling was ``allow_tf32=False``
==========================  =======  =============================================

Version-independent facts the code relies on: ``TRITON_INTERPRET=1`` is read
when a kernel is decorated (so each module is loaded with it set or unset);
``triton.language.extra.libdevice`` is empty in the interpreter (tanh is
written with ``tl.exp``); ``tl.exp`` and friends reject float16 (kernels
compute in float32); ``triton.testing.do_bench`` imports torch (the autotuner
times with CUDA events through CuPy instead).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

FEATURES: dict[str, tuple[int, int]] = {
    "driver_without_torch": (3, 7),
    "interpreter_numpy_2_4": (3, 7),
    "input_precision": (3, 0),
}

# Triton >= 3.0 everywhere we run; the table entry documents the older spelling.
DOT_IEEE = 'input_precision="ieee"'


@lru_cache(maxsize=None)
def version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def feature(name: str) -> bool:
    """Whether the installed Triton has ``name`` (a key of :data:`FEATURES`)."""
    return version() >= FEATURES[name]


def patch_interpreter() -> None:
    """Make an old interpreter's ``tensor.__index__`` work with numpy >= 2.4 (idempotent)."""
    numpy_version = tuple(int(p) for p in np.__version__.split(".")[:2])
    if feature("interpreter_numpy_2_4") or numpy_version < (2, 4):
        return
    import triton.runtime.interpreter as interpreter

    original = interpreter._patch_lang_tensor
    if getattr(original, "squeezes_index", False):
        return

    def patched(tensor, *args, **kwargs):
        original(tensor, *args, **kwargs)
        tensor.__index__ = lambda self: int(np.asarray(self.handle.data).reshape(-1)[0])

    patched.squeezes_index = True
    interpreter._patch_lang_tensor = patched
