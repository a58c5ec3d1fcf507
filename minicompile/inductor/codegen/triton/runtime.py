"""Running generated Triton kernels: on a GPU with CuPy arrays, or in Triton's interpreter with NumPy arrays.

In:  a generated module source (:mod:`.kernel`) and whether it runs on
     the GPU or in the interpreter.
Out: :func:`load` returns the imported module; :class:`Launcher` calls one of
     its kernels on arrays, picking launch settings by timing them on the GPU
     (:func:`autotune`) and remembering the winner on disk.

Triton compiles a kernel for any object with ``data_ptr()`` and a ``dtype``;
minicompile never needs torch.  A CuPy array is wrapped in
:class:`DevicePointer` to compile; launches pass its address as an ``int``.
A NumPy array is wrapped in :class:`HostPointer`,
whose ``cpu``/``untyped_storage``/``copy_``... are identities: the interpreter
"copies device tensors to the host" through them, and for a host array that is
the array itself, so kernels read and write NumPy memory in place.

The interpreter is chosen when a module is loaded: ``TRITON_INTERPRET`` is read
when ``@triton.jit`` runs, so modules are imported with it set (or cleared),
and set before Triton is first imported when no GPU is in use.  Modules are
written to ``config.cache_dir/triton/<sha256>.py`` (Triton reads kernel source
from a file) atomically, so concurrent processes share them safely.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from .... import config
from ....ir.symbolic import substitute
from . import versions
from .kernel import OUT_OF_BOUNDS, TritonKernel

_lock = threading.Lock()
_modules: dict[tuple[str, bool], ModuleType] = {}


def is_cupy(x: Any) -> bool:
    """A CuPy array?  Decided by type name so that cupy is never imported here."""
    return type(x).__module__.startswith("cupy")


def cupy_module() -> ModuleType:
    """CuPy, which the caller already imported (its arrays are why we are here)."""
    return sys.modules["cupy"]


class HostPointer:
    """A NumPy array as Triton's interpreter sees a tensor: its host copy is itself."""

    __slots__ = ("array", "dtype")

    def __init__(self, array: np.ndarray):
        self.array = array
        self.dtype = array.dtype

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    # The interpreter's device<->host copies, all identities on host memory.
    def cpu(self) -> "HostPointer":
        return self

    def untyped_storage(self) -> "HostPointer":
        return self

    def new_empty(self, *args: Any, **kwargs: Any) -> "HostPointer":
        return self

    def set_(self, *args: Any, **kwargs: Any) -> "HostPointer":
        return self

    def copy_(self, *args: Any, **kwargs: Any) -> "HostPointer":
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self, *dim: int) -> Any:
        return self.array.shape[dim[0]] if dim else self.array.shape

    def stride(self, *dim: int) -> Any:
        strides = tuple(s // self.array.itemsize for s in self.array.strides)
        return strides[dim[0]] if dim else strides


class DevicePointer:
    """A CuPy array as Triton sees a tensor: a device address and a dtype."""

    __slots__ = ("ptr", "dtype")

    def __init__(self, array: Any):
        self.ptr = array.data.ptr
        self.dtype = array.dtype

    def data_ptr(self) -> int:
        return self.ptr


def _import_triton(interpret: bool) -> None:
    if "triton" not in sys.modules and interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    import triton  # noqa: F401

    if interpret:
        versions.patch_interpreter()


def load(source: str, interpret: bool) -> ModuleType:
    """The module of ``source``, its kernels decorated for the interpreter or the GPU."""
    key = hashlib.sha256(source.encode()).hexdigest()
    with _lock:
        if (key, interpret) in _modules:
            return _modules[(key, interpret)]
        _import_triton(interpret)
        folder = Path(config.cache_dir) / "triton"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"k{key[:32]}.py"
        if not path.exists() or path.read_text() != source:
            tmp = folder / f".{path.name}.{os.getpid()}.{threading.get_ident()}"
            tmp.write_text(source)
            os.replace(tmp, path)
        saved = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
        try:
            spec = importlib.util.spec_from_file_location(f"minicompile_triton_{key[:16]}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            if saved is None:
                del os.environ["TRITON_INTERPRET"]
            else:
                os.environ["TRITON_INTERPRET"] = saved
        _modules[(key, interpret)] = module
        return module


class SharedKernel:
    """What every launcher of one kernel's code shares within a process: the
    ``@triton.jit`` function, the tuned config and the compiled binaries."""

    __slots__ = ("fn", "config", "compiled")

    def __init__(self, fn: Any):
        self.fn = fn
        self.config: dict[str, int] | None = None
        self.compiled: dict[tuple, Callable[..., None]] = {}


# (canonical kernel code, on the GPU) -> its shared state; see TritonKernel.canonical.
_shared: dict[tuple[str, bool], SharedKernel] = {}


# Triton's interpreter swaps module-level state of triton.language in and out around
# each kernel it runs, so kernels from two threads at once break each other.
INTERPRETER_LOCK = threading.Lock()


def grid_size(kernel: TritonKernel, cfg: dict[str, int], sizes: tuple[int, ...] = ()) -> int:
    """Programs to launch; a symbolic grid is evaluated at ``sizes`` (``kernel.sizes`` order)."""
    grid = kernel.grid
    if kernel.sizes:
        grid = substitute(grid, dict(zip(kernel.sizes, sizes)))
    if grid[0] == "flat":
        _, numel, block = grid
        return max(1, -(-numel // cfg[block]))
    if grid[0] == "tiles":
        _, outer, ny, nx = grid
        return outer * -(-ny // cfg["YBLOCK"]) * -(-nx // cfg["XBLOCK"])
    _, m, n, batch = grid
    return -(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"]) * batch


class Launcher:
    """Calls one kernel on arrays: ``launcher(*arrays, *sizes)`` in ``kernel.params`` order,
    then the ints of ``kernel.sizes`` (a dynamic-shape graph's sizes; the grid follows them).

    In the interpreter every call goes through ``JITFunction.__call__``.  On
    the GPU the first call times every candidate config (when there is more
    than one and no remembered choice) and keeps the fastest.  From then on
    Triton's own launch path — re-binding the arguments, computing their
    specialization, looking the kernel up, building launch metadata — is
    skipped: the kernel is compiled once per specialization key and run by its
    low-level launcher (:func:`~.versions.low_level_launch`) on CuPy's
    current stream, and after a first call on 16-byte aligned arrays
    :attr:`fast` is a generated function that does only what depends on the
    arguments: read the addresses, check their alignment and that each size
    is in the class it was compiled for (1, a multiple of 16, neither: what
    Triton specializes an int on), compute the grid from the sizes, launch.  Triton's
    launch hooks (a profiler such as proton) keep Triton's own path when they
    are registered before a kernel's first call; registered later, they do
    not see that kernel's launches.
    """

    def __init__(self, kernel: TritonKernel, fn: Any, on_gpu: bool):
        self.kernel = kernel
        self.on_gpu = on_gpu
        # A kernel with the same code as one launched before in this process (the
        # same layer in another graph) shares its function, tuning and binaries.
        self.shared = (_shared.setdefault((kernel.canonical(), on_gpu), SharedKernel(fn)) if kernel.source
                       else SharedKernel(fn))
        self.fn = self.shared.fn
        if not on_gpu:
            self.shared.config = kernel.configs[0]
        # (config, specialization key) -> the compiled kernel's launch function
        self.compiled = self.shared.compiled
        self.fast: Callable[..., None] | None = None

    @property
    def config(self) -> dict[str, int] | None:
        """The launch settings chosen (None on the GPU until the first call tunes them)."""
        return self.shared.config

    @config.setter
    def config(self, value: dict[str, int] | None) -> None:
        self.shared.config = value

    def __call__(self, *args: Any) -> None:
        fast = self.fast
        if fast is not None:
            return fast(*args)
        if self.shared.config is None:
            self.shared.config = autotune(self, args)
        self.launch(self.config, args)
        if self.on_gpu and not versions.launch_hooks_active():
            self.fast = self.fast_path(self.config, args)
        return None

    def split(self, args: tuple) -> tuple[tuple, tuple[int, ...]]:
        """(arrays, sizes) of a call's arguments."""
        n = len(self.kernel.params)
        return args[:n], tuple(int(v) for v in args[n:])

    def constexprs(self, cfg: dict[str, int]) -> list[int]:
        """The block sizes, which follow the buffers and sizes in every generated signature."""
        return [cfg[name] for name in self.fn.arg_names[len(self.kernel.params) + len(self.kernel.sizes):]]

    def launch(self, cfg: dict[str, int], args: tuple) -> None:
        arrays, sizes = self.split(args)
        grid = grid_size(self.kernel, cfg, sizes)
        if not self.on_gpu:
            # The interpreter computes masked-off lanes too (0/0 in a tail): no warnings.
            # It also patches triton.language while a kernel runs: one kernel at a time.
            with INTERPRETER_LOCK, np.errstate(all="ignore"):
                try:
                    self.fn[(grid,)](*[HostPointer(a) for a in arrays], *sizes, **cfg)
                except Exception as failed:  # a gather's index out of range: NumPy's error
                    cause = failed.__cause__ or failed  # the interpreter wraps the AssertionError
                    if not (isinstance(cause, AssertionError) and str(cause).startswith(OUT_OF_BOUNDS)):
                        raise
                    raise IndexError(str(cause)) from None
            return
        if versions.launch_hooks_active():  # a profiler listens: Triton's own path
            self.fn[(grid,)](*[DevicePointer(a) for a in arrays], *sizes, **cfg)
            return
        pointers = [a.data.ptr for a in arrays]
        run = self.compiled_launch(cfg, arrays, pointers, sizes)
        run(grid, cupy_module().cuda.get_current_stream().ptr, *pointers, *sizes, *self.constexprs(cfg))

    def compiled_launch(self, cfg: dict[str, int], arrays: tuple, pointers: list[int],
                        sizes: tuple[int, ...] = ()) -> Callable[..., None]:
        """The compiled kernel for this config and the specialization of these
        pointers and sizes (a size of another class compiles another kernel)."""
        key = (tuple(cfg.items()), versions.specialization_key(tuple(pointers), sizes))
        run = self.compiled.get(key)
        if run is None:
            grid = (grid_size(self.kernel, cfg, sizes),)
            args = [DevicePointer(a) for a in arrays] + list(sizes)
            kernel = versions.compile_only(self.fn, args, grid, cfg)
            run = self.compiled[key] = versions.low_level_launch(kernel)
        return run

    def fast_path(self, cfg: dict[str, int], args: tuple) -> Callable[..., None] | None:
        """``fast(*arrays, *sizes)`` for arrays laid out like these (all 16-byte
        aligned) and sizes of the same specialization classes, or None."""
        arrays, sizes = self.split(args)
        pointers = [a.data.ptr for a in arrays]
        if any(p % 16 for p in pointers):
            return None  # compiled for unaligned pointers: every call takes the general path
        run = self.compiled_launch(cfg, arrays, pointers, sizes)
        names = [f"a{i}" for i in range(len(arrays))]
        addresses = [f"p{i}" for i in range(len(arrays))]
        consts = "".join(f", {c}" for c in self.constexprs(cfg))
        size_names = list(self.kernel.sizes)
        lines = [f"def fast({', '.join(names + size_names)}):"]
        lines += [f"    {p} = {a}.data.ptr" for a, p in zip(names, addresses)]
        lines += [f"    if ({' | '.join(addresses)}) & 15:  # compiled for 16-byte aligned pointers",
                  f"        return slow(({', '.join(names + size_names)},))"]
        if size_names:
            # Triton compiled for each size's class: 1, a multiple of 16, or neither.
            classes = [f"({s} == 1, {s} % 16 == 0)" for s in size_names]
            compiled_for = tuple((v == 1, v % 16 == 0) for v in sizes)
            lines += [f"    if ({', '.join(classes)},) != {compiled_for!r}:  # another specialization",
                      f"        return slow(({', '.join(names + size_names)},))"]
        lines += [f"    run({self.grid_source(cfg)}, current_stream().ptr, "
                  f"{', '.join(addresses + size_names)}{consts})"]
        namespace = {"run": run, "current_stream": cupy_module().cuda.get_current_stream,
                     "slow": lambda args: self.launch(cfg, args)}
        exec(compile("\n".join(lines), f"<minicompile launch {self.kernel.name}>", "exec"), namespace)
        fast = namespace["fast"]
        fast.source = "\n".join(lines)
        return fast

    def grid_source(self, cfg: dict[str, int]) -> str:
        """The number of programs as Python: a constant, or an expression over the size names."""
        if not self.kernel.sizes:
            return str(grid_size(self.kernel, cfg))
        grid = self.kernel.grid

        def cdiv(n: Any, block: int) -> str:
            return f"(-(-({n}) // {block}))"

        if grid[0] == "flat":
            return f"max(1, {cdiv(grid[1], cfg[grid[2]])})"
        if grid[0] == "tiles":
            _, outer, ny, nx = grid
            return f"({outer}) * {cdiv(ny, cfg['YBLOCK'])} * {cdiv(nx, cfg['XBLOCK'])}"
        _, m, n, batch = grid
        return f"{cdiv(m, cfg['BLOCK_M'])} * {cdiv(n, cfg['BLOCK_N'])} * ({batch})"


# ---------------------------------------------------------------------------
# Autotuning (GPU only): CUDA events through CuPy, winners cached on disk
# ---------------------------------------------------------------------------


def gpu_time_ms(fn: Any, warmup: int = 3, reps: int = 20) -> float:
    """Median milliseconds of ``fn()`` on the current CUDA stream, by CUDA events."""
    cp = cupy_module()
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(times))


def device_name() -> str:
    cp = cupy_module()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _cache_file(kernel: TritonKernel) -> Path:
    import triton

    text = json.dumps([kernel.canonical(), device_name(), triton.__version__])
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    return Path(config.cache_dir) / "triton_autotune" / f"{kernel.name}-{key}.json"


def remembered_config(kernel: TritonKernel) -> dict[str, int] | None:
    """The config an earlier process chose for this kernel's code on this GPU, if any."""
    path = _cache_file(kernel)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())["best"]
    except (ValueError, KeyError):
        return None  # a damaged file: tune again and rewrite it


def configs_to_compile(kernel: TritonKernel) -> list[dict[str, int]]:
    """The configs the first call will compile: the remembered winner, or every candidate."""
    if len(kernel.configs) == 1:
        return kernel.configs
    remembered = remembered_config(kernel)
    return [remembered] if remembered is not None else kernel.configs


def autotune(launcher: Launcher, arrays: tuple) -> dict[str, int]:
    """The fastest of ``kernel.configs`` on these arrays (kernels only write their outputs)."""
    kernel = launcher.kernel
    if len(kernel.configs) == 1:
        return kernel.configs[0]
    remembered = remembered_config(kernel)
    if remembered is not None:
        return remembered
    path = _cache_file(kernel)
    timings = []
    for cfg in kernel.configs:
        try:
            ms = gpu_time_ms(lambda: launcher.launch(cfg, arrays))
        except Exception as why:  # out of shared memory or registers: not a candidate
            timings.append({"config": cfg, "ms": None, "error": type(why).__name__})
            continue
        timings.append({"config": cfg, "ms": ms})
    ok = [t for t in timings if t["ms"] is not None]
    if not ok:
        raise RuntimeError(f"no launch configuration of {kernel.name} runs: {timings}")
    best = min(ok, key=lambda t: t["ms"])["config"]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"kernel": kernel.name, "best": best, "timings": timings}, indent=1))
    os.replace(tmp, path)
    return best
