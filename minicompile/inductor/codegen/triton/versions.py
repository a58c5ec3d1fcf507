"""What differs between the Triton versions minicompile runs on, in one table.

In:  the installed ``triton.__version__`` (read lazily: importing this module
     does not import Triton).
Out: :func:`feature` answers one question about the installed version.

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

Launching without ``JITFunction.__call__``: :func:`compile_only` compiles a
kernel for given arguments without running it, :func:`low_level_launch` returns
the compiled kernel's own launcher with everything that does not depend on the
arguments bound in.  ``CompiledKernel.run(gridX, gridY, gridZ, stream,
function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args)`` is
the same in 3.6 and 3.9; below it, 3.6's generated C launcher takes
``(grid, stream, function, cooperative, pdl, global_scratch, profile_scratch,
packed_metadata, launch_metadata, enter_hook, exit_hook, *args)`` and later
versions one generic launcher with the arguments as a tuple, so only 3.6 is
called at that level (3.9's path is read from its source, not yet run on a
GPU here).  The C launchers of 3.6 and 3.9 both take a pointer argument as a
plain ``int`` (they then skip the ``data_ptr()`` call and the driver's pointer
check) and no launch hook as ``None``.  Triton specializes a pointer on 16-byte alignment and an integer on
being 1 or a multiple of 16 (:func:`specialization_key`).

Version-independent facts the code relies on: ``TRITON_INTERPRET=1`` is read
when a kernel is decorated (so each module is loaded with it set or unset);
``tl.device_assert`` does nothing unless compiled with ``debug`` (off for the
GPU here) or, in the interpreter, unless its builder's options say ``debug``
(:func:`patch_interpreter` sets it);
``triton.language.extra.libdevice`` is empty in the interpreter (tanh is
written with ``tl.exp``); ``tl.exp`` and friends reject float16 (kernels
compute in float32); ``triton.testing.do_bench`` imports torch (the autotuner
times with CUDA events through CuPy instead).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import numpy as np

FEATURES: dict[str, tuple[int, int]] = {
    "driver_without_torch": (3, 7),
    "interpreter_numpy_2_4": (3, 7),
    "input_precision": (3, 0),
}


@lru_cache(maxsize=None)
def version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def feature(name: str) -> bool:
    """Whether the installed Triton has ``name`` (a key of :data:`FEATURES`)."""
    return version() >= FEATURES[name]


def patch_interpreter() -> None:
    """Turn the interpreter's ``device_assert`` on (a gather's bounds check raises
    there, as NumPy does), and make an old interpreter's ``tensor.__index__``
    work with numpy >= 2.4.  Idempotent."""
    import dataclasses

    import triton.runtime.interpreter as interpreter

    builder = interpreter.interpreter_builder
    if not builder.options.debug:  # the interpreter's own switch for device_assert;
        # its overflow checks would refuse the wraparound NumPy's integers do
        builder.options = dataclasses.replace(builder.options, debug=True, sanitize_overflow=False)
    numpy_version = tuple(int(p) for p in np.__version__.split(".")[:2])
    if feature("interpreter_numpy_2_4") or numpy_version < (2, 4):
        return

    original = interpreter._patch_lang_tensor
    if getattr(original, "squeezes_index", False):
        return

    def patched(tensor, *args, **kwargs):
        original(tensor, *args, **kwargs)
        tensor.__index__ = lambda self: int(np.asarray(self.handle.data).reshape(-1)[0])

    patched.squeezes_index = True
    interpreter._patch_lang_tensor = patched


# ---------------------------------------------------------------------------
# Launching a compiled kernel directly
# ---------------------------------------------------------------------------


def specialization_key(pointers: tuple[int, ...], ints: tuple[int, ...] = ()) -> tuple:
    """What Triton specializes a kernel on: each pointer's 16-byte alignment
    ("D" or None), each integer argument being 1 ("1"), a multiple of 16 ("D")
    or neither (None).  Two calls with equal keys run the same compiled kernel."""
    return (tuple("D" if p % 16 == 0 else None for p in pointers)
            + tuple("1" if i == 1 else ("D" if i % 16 == 0 else None) for i in ints))


def compile_only(fn: Any, args: list, grid: tuple, options: dict[str, int]) -> Any:
    """The compiled kernel of ``fn`` for these arguments (objects with
    ``data_ptr()`` and ``dtype``), from Triton's cache or compiled now, not run."""
    kernel = fn.warmup(*args, grid=grid, **options)
    if hasattr(kernel, "result"):  # an asynchronous compile hands back a future
        kernel = kernel.result()
    return kernel


def launch_hooks_active() -> bool:
    """Whether a profiler registered Triton launch hooks (they need the slow path)."""
    from triton import knobs

    hook = knobs.runtime.launch_enter_hook
    return hook is not None and bool(getattr(hook, "calls", True))


def low_level_launch(kernel: Any) -> Callable[..., None]:
    """``launch(grid, stream, *args)``: run the compiled ``kernel`` on ``grid``
    programs, ``args`` in the kernel's parameter order (constexprs included).

    Loads the binary first, so a kernel that needs more shared memory or
    threads than the device has raises Triton's ``OutOfResources`` here."""
    run = kernel.run  # a property: loads the module, checks resources
    function, packed = kernel.function, kernel.packed_metadata
    c_launch = getattr(run, "launch", None)
    direct = (version() == (3, 6) and c_launch is not None
              and not run.global_scratch_size and not run.profile_scratch_size
              and not getattr(kernel.metadata, "tensordesc_meta", None))
    if direct:
        cooperative, pdl = run.launch_cooperative_grid, run.launch_pdl

        def launch(grid: int, stream: int, *args: Any) -> None:
            c_launch(grid, 1, 1, stream, function, cooperative, pdl, None, None, packed, None, None, None, *args)
    else:
        def launch(grid: int, stream: int, *args: Any) -> None:
            run(grid, 1, 1, stream, function, packed, None, None, None, *args)
    return launch
