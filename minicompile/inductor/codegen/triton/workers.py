"""Compiling Triton kernels in parallel: worker processes that fill Triton's disk cache.

In:  :class:`Job` s — a generated module file, one kernel in it, the launch
     settings to try and the arguments' types (pointer dtypes and 16-byte
     alignment, integer sizes), exactly as the first call will pass them.
Out: :func:`precompile` runs the jobs on a pool of worker processes
     (``python -m minicompile.inductor.codegen.triton.workers``) and returns
     when all are done; each worker compiles its kernel with
     ``JITFunction.warmup`` — nothing is launched — which writes the binary
     to Triton's disk cache.  When the first call then tunes and compiles the
     kernel in this process, Triton finds every binary there.

A job compiled once is recorded on disk (:func:`compiled_before`), so a second
process with the same graphs starts no workers: Triton's cache has the binaries.

Why: Triton compiles one kernel and one config at a time, about a second
each on the CPU (LLVM, then ``ptxas``), and tuning a model's kernels asks
for hundreds; TorchInductor runs the same compiles on a pool of compile
workers.  Workers are plain subprocesses speaking JSON lines over their
standard input and output, not ``multiprocessing``: that would start each
worker by importing the user's main script again.  A job that fails in a
worker (a config that needs more shared memory than the GPU has, a worker
that dies) costs nothing but its time: this process compiles that kernel
itself, as it would have without workers, and reports what it finds.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .... import config

# Print progress when precompiling has taken longer than this.
PROGRESS_AFTER_S = 5.0


@dataclass(frozen=True)
class Job:
    path: str                 # the generated module's file
    kernel: str               # the kernel's name in it
    pointers: tuple           # (dtype name, 16-byte aligned) per buffer parameter
    sizes: tuple              # the integer arguments after the buffers
    grid: int                 # programs launched (part of what Triton specializes on: nothing, but warmup asks)
    options: tuple            # the config's (name, value) pairs: block sizes, num_warps, num_stages


class _Worker:
    """One worker process; ``job`` is what it is compiling now, or None."""

    def __init__(self) -> None:
        # The worker imports this package from where this process did.
        root = os.path.dirname(os.path.dirname(os.path.abspath(config.__file__)))
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": path}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.job: Job | None = None

    def send(self, job: Job) -> None:
        self.job = job
        self.process.stdin.write(json.dumps(asdict(job)) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()


_lock = threading.Lock()
_pool: list[_Worker] = []


def pool_size() -> int:
    """Workers to use: ``config.triton_compile_workers``, or one per CPU (at most 16)."""
    wanted = config.triton_compile_workers
    return wanted if wanted >= 0 else min(16, os.cpu_count() or 1)


def _workers(n: int) -> list[_Worker]:
    alive = [w for w in _pool if w.process.poll() is None]
    _pool[:] = alive
    while len(_pool) < n:
        _pool.append(_Worker())
    return _pool[:n]


@atexit.register
def shutdown() -> None:
    """Stop every worker (they also stop by themselves when this process ends)."""
    for w in _pool:
        w.close()
    _pool.clear()


def _marker(job: Job) -> Path:
    """Where a compiled job is recorded: by the job (the module file's name is the
    hash of its source), the Triton version and the GPU compiled for."""
    import triton

    from .runtime import device_name

    text = json.dumps([Path(job.path).name, asdict(job) | {"path": None}, triton.__version__, device_name()])
    return Path(config.cache_dir) / "triton_compiled" / hashlib.sha256(text.encode()).hexdigest()[:32]


def compiled_before(job: Job) -> bool:
    """Whether a worker compiled this job in an earlier process on this machine, so that
    Triton's disk cache holds its binary (if the cache was emptied since, this process
    compiles it itself: slower, never wrong)."""
    return _marker(job).exists()


def precompile(jobs: list[Job], label: str = "Triton kernels") -> dict[Job, str | None]:
    """Run ``jobs`` on the pool; returns each job's error (None: compiled).  Jobs
    of one kernel are independent, so they spread over the workers freely.  A
    compiled job is recorded (:func:`compiled_before`) for later processes."""
    jobs = list(dict.fromkeys(jobs))
    n = min(pool_size(), len(jobs))
    if n == 0:
        return {}
    results: dict[Job, str | None] = {}
    with _lock:  # one batch at a time: two threads compiling share the workers
        start = time.perf_counter()
        workers = _workers(n)
        todo = list(reversed(jobs))
        selector = selectors.DefaultSelector()
        for w in workers:
            selector.register(w.process.stdout, selectors.EVENT_READ, w)
            w.send(todo.pop())
        busy, said = len(workers), False
        while busy:
            for key, _ in selector.select(timeout=1.0):
                w: _Worker = key.data
                line = w.process.stdout.readline()
                if not line:  # the worker died: its job failed, the others go on
                    results[w.job] = "worker exited"
                    selector.unregister(w.process.stdout)
                    busy -= 1
                    continue
                results[w.job] = json.loads(line).get("error")
                if todo:
                    w.send(todo.pop())
                else:
                    w.job = None
                    busy -= 1
            if time.perf_counter() - start > PROGRESS_AFTER_S and not said:
                said = True
                print(f"minicompile: compiling {len(jobs)} {label} configurations on {n} processes "
                      f"({len(results)} done)...", file=sys.stderr, flush=True)
        selector.close()
        for job, error in results.items():
            if error is None:
                marker = _marker(job)
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
        if said:
            failed = sum(r is not None for r in results.values())
            print(f"minicompile: compiled {len(jobs) - failed} of {len(jobs)} configurations in "
                  f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return results


# ---------------------------------------------------------------------------
# The worker process
# ---------------------------------------------------------------------------


class _Pointer:
    """A buffer argument as ``warmup`` sees it: an address of the right alignment and a dtype."""

    def __init__(self, dtype: str, aligned: bool):
        import numpy as np

        self.dtype = np.dtype(dtype)
        self._ptr = (1 << 20) + (0 if aligned else self.dtype.itemsize)

    def data_ptr(self) -> int:
        return self._ptr


def compile_job(job: dict[str, Any], modules: dict[str, Any]) -> None:
    """Compile one job's kernel into Triton's cache (in a worker process)."""
    import importlib.util

    from . import versions

    path = job["path"]
    if path not in modules:
        spec = importlib.util.spec_from_file_location(f"minicompile_triton_worker_{len(modules)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[path] = module
    fn = getattr(modules[path], job["kernel"])
    args = [_Pointer(dtype, aligned) for dtype, aligned in job["pointers"]] + list(job["sizes"])
    versions.compile_only(fn, args, (job["grid"],), dict(job["options"]))


def main() -> None:
    modules: dict[str, Any] = {}
    for line in sys.stdin:
        job = json.loads(line)
        try:
            compile_job(job, modules)
            reply = {"error": None}
        except BaseException as why:  # noqa: BLE001 - any failure is the job's, reported back
            reply = {"error": f"{type(why).__name__}: {why}"[:500]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
