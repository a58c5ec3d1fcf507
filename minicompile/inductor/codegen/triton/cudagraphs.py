"""``mode="reduce-overhead"``: a compiled graph's launches recorded once into a CUDA graph.

torch.compile's twin is Inductor's CUDA graph trees (``torch/_inductor/cudagraph_trees.py``).
A small compiled graph on the GPU spends more time in Python launching kernels than
the GPU spends running them: the GPU idles between tiny kernels.  Stream capture
records every launch of one call (Triton kernels, CuPy externs, cuBLAS) into a CUDA
graph; replaying it is one launch from the host, whatever the number of kernels.

In:  a compiled graph (any backend's ``compiled(*inputs) -> tuple``) and its inputs.
Out: :class:`CUDAGraphRunner`, called like the compiled graph.  Per input signature
     (shapes, strides, dtypes, Python values) it

     1. runs the first call plainly (a warm-up: Triton compiles and autotunes, CuPy
        builds its kernels and cuBLAS its handle: none of that may happen in a capture);
     2. records the second call on a stream of its own, its buffers taken from a
        memory pool private to that recording (they must outlive the recording: the
        replays write them);
     3. replays from then on: inputs copied into the recording's input buffers,
        one graph launch, outputs copied out.  A call whose arguments are the last
        replay's again (the same weight arrays, new token ids of the same shape)
        skips the lookup: the host's work is the guards, the copies and the launch.

What a caller may keep, and why it stays right:

* **Inputs** that were the same arrays at the warm-up and the recording (weights,
  optimizer state) are read in place: the graph holds their addresses.  Others
  (activations, token ids) get a buffer of the recording and are copied in on
  each call.  An input read in place and then replaced by another array makes a
  new recording in which it is copied.
* **Outputs are the caller's**: each replay copies them out of the recording's
  buffers into new arrays (one device copy per output), so a result kept across
  calls is never overwritten by a later replay.  torch's trees hand out the
  static buffers and raise on a stale read; a CuPy array cannot detect one, so
  the copy is what keeps a kept result right.
* Graph outputs that are inputs passed through come back as the caller's arrays.

Not recorded (the call runs plainly, and ``logs`` artifact ``cudagraphs`` or one
warning says why): NumPy inputs (nothing to launch), an input that is neither
contiguous nor read in place, an output that aliases an input, and a call that
cannot be captured (an op that reads a value back to the host, such as a
data-dependent shape).  Guards run before any of this, as they do without the
mode; a new size is a new signature, so it warms up and records anew.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from .... import logs
from ....warn import warn
from . import runtime

MAX_RECORDINGS = 16  # per compiled graph: more signatures than this run plainly


def cudagraph_backend(backend: Callable[..., Callable[..., tuple]]) -> Callable[..., Callable[..., tuple]]:
    """``backend`` whose graphs over CuPy inputs replay from CUDA graphs; over NumPy
    inputs (the CPU backends, Triton's interpreter) it is ``backend`` itself."""

    def compile_with_cudagraphs(graph: Any, example_inputs: list) -> Callable[..., tuple]:
        compiled = backend(graph, example_inputs)
        if not any(runtime.is_cupy(x) for x in example_inputs):
            logs.log("cudagraphs", "no CuPy inputs: the graph runs without CUDA graphs")
            return compiled
        return CUDAGraphRunner(compiled, dynamic=graph.is_dynamic)

    compile_with_cudagraphs.__name__ = f"cudagraphs_{getattr(backend, '__name__', 'backend')}"
    compile_with_cudagraphs.pre_grad = getattr(backend, "pre_grad", None)  # type: ignore[attr-defined]
    return compile_with_cudagraphs


def _signature(x: Any) -> tuple:
    """What a recording is specialised on: an array's shape, strides and dtype; a
    Python value itself (kernels take it as an argument baked into the graph)."""
    if runtime.is_cupy(x):
        return ("array", x.shape, x.strides, x.dtype.str)
    try:
        hash(x)
        return ("value", type(x), x)
    except TypeError:
        return ("object", id(x))


def _address(x: Any) -> int | None:
    return x.data.ptr if runtime.is_cupy(x) else None


def _capture(compiled: Callable[..., tuple], inputs: tuple) -> tuple[Callable[[], None], tuple, Any]:
    """Record ``compiled(*inputs)`` into a CUDA graph without running it.

    Out: the graph's launch on the current stream, the outputs (buffers the
    launches write), and what must stay alive with the graph: its memory pool,
    which owns every buffer allocated in the capture (the replays write them)."""
    cp = runtime.cupy_module()
    pool = cp.cuda.MemoryPool()
    stream = cp.cuda.Stream(non_blocking=True)
    with cp.cuda.using_allocator(pool.malloc), stream:
        stream.begin_capture(mode=cp.cuda.runtime.streamCaptureModeRelaxed)
        try:
            outputs = compiled(*inputs)
        finally:
            graph = stream.end_capture()
    return lambda: graph.launch(cp.cuda.get_current_stream()), outputs, (pool, stream, graph)


def _buffer_like(x: Any) -> Any:
    """A buffer of the recording for a copied-in input: its shape, strides and dtype."""
    return runtime.cupy_module().empty_like(x)


def _copy_in(dst: Any, src: Any) -> None:
    """``dst[...] = src`` for two arrays of one contiguous layout: one memcpy on the current stream."""
    if src.nbytes:
        dst.data.copy_from_device_async(src.data, src.nbytes, runtime.cupy_module().cuda.get_current_stream())


def _after(previous: Any) -> None:
    """Order this replay after ``previous`` (the event the last replay recorded): a
    replay on another stream (another thread's) must not overlap it, as both write
    the same buffers.  On one stream the order is the stream's own."""
    if previous is not None:
        runtime.cupy_module().cuda.get_current_stream().wait_event(previous)


def _mark(event: Any) -> Any:
    """``event`` (made on first use) recorded on the current stream after a replay's last
    copy.  Waiting on an event waits for its latest record, so one event per recording
    serves every replay: the next replay waits on it before recording it again."""
    if event is None:
        event = runtime.cupy_module().cuda.Event(disable_timing=True)
    event.record()
    return event


def _copy_out(buffer: Any) -> Any:
    """A new array holding ``buffer``'s values: one device memcpy for a contiguous
    buffer (an elementwise copy kernel otherwise)."""
    if not buffer.flags.c_contiguous:
        return buffer.copy(order="K")
    cp = runtime.cupy_module()
    out = cp.empty(buffer.shape, buffer.dtype)
    if buffer.nbytes:
        out.data.copy_from_device_async(buffer.data, buffer.nbytes, cp.cuda.get_current_stream())
    return out


def _same_memory(a: Any, b: Any) -> bool:
    """Whether two device arrays view one allocation."""
    return a.data.mem is b.data.mem


class _Recording:
    """One captured call: its CUDA graph, the input buffers it reads and the outputs it writes."""

    def __init__(self, compiled: Callable[..., tuple], inputs: tuple, in_place: set[int], key: tuple):
        self.key = key  # the inputs' signatures
        self.addresses = {i: _address(inputs[i]) for i in in_place}
        self.copied = [i for i, x in enumerate(inputs) if runtime.is_cupy(x) and i not in in_place]
        self.copied_set = frozenset(self.copied)
        self.inputs = tuple(_buffer_like(x) if i in self.copied else x for i, x in enumerate(inputs))
        self.launch, outputs, self.keepalive = _capture(compiled, self.inputs)
        self.done = None  # the event the last replay recorded (one event, recorded again by each replay)
        # Each output: ("input", i) for a pass-through, ("array", buffer), or ("value", v).
        self.outputs: list[tuple[str, Any]] = []
        for out in outputs:
            passed = [i for i, x in enumerate(self.inputs) if out is x]
            if passed:
                self.outputs.append(("input", passed[0]))
            elif runtime.is_cupy(out):
                if any(runtime.is_cupy(x) and _same_memory(out, x) for x in self.inputs):
                    raise _NotRecordable("an output is a view of an input")
                self.outputs.append(("array", out))
            elif out is None or isinstance(out, (bool, int, float, complex, str)):
                self.outputs.append(("value", out))
            else:
                raise _NotRecordable(f"an output of type {type(out).__name__} is read back to the host")

    def fits(self, inputs: tuple) -> bool:
        return all(_address(inputs[i]) == a for i, a in self.addresses.items())

    def repeats(self, previous: tuple, inputs: tuple, dynamic: bool) -> bool:
        """Whether ``inputs`` fit this recording because they are ``previous`` (inputs that
        fitted it) again: each the same object, or a copied-in array of the same signature.
        An array that is the same object has the same address; its dtype, and its shape
        where the graph is static, are what the guards checked (a dynamic graph's are
        compared here: NumPy and CuPy let ``a.shape = ...`` reshape an array in place), and
        an array's strides change only with its shape.  This is the replay's fast path: no
        signature or address of the arrays read in place."""
        if len(inputs) != len(previous):
            return False
        for i, (x, before) in enumerate(zip(inputs, previous)):
            if x is before:
                if dynamic and i in self.addresses and x.shape != self.key[i][1]:
                    return False
            elif i not in self.copied_set or _signature(x) != self.key[i]:
                return False
        return True

    def replay(self, inputs: tuple) -> tuple:
        _after(self.done)
        for i in self.copied:
            _copy_in(self.inputs[i], inputs[i])
        self.launch()
        outputs = tuple(inputs[v] if kind == "input" else _copy_out(v) if kind == "array" else v
                        for kind, v in self.outputs)
        self.done = _mark(self.done)
        return outputs


class _NotRecordable(Exception):
    """Why a call cannot be replayed from a CUDA graph; it then runs plainly."""


class CUDAGraphRunner:
    """A compiled graph on CuPy arrays, replayed from CUDA graphs (see the module
    docstring).  Attributes of the compiled graph (``schedule``, ``kernels``, the
    sources) read through, so ``explain`` and the report see the same graph."""

    def __init__(self, compiled: Callable[..., tuple], dynamic: bool = True):
        self.compiled = compiled
        # A static graph's guards pin every input's shape; a dynamic one's let a new shape
        # through, so the fast path compares the shapes of the arrays read in place too.
        self.dynamic = dynamic
        self.warm: dict[tuple, list[int | None]] = {}   # signature -> addresses at the warm-up
        self.recordings: dict[tuple, list[_Recording]] = {}
        self.plain: dict[tuple, str] = {}               # signature -> why it runs plainly
        self.replays = 0
        self.last: tuple[tuple, _Recording] | None = None  # the last replay's inputs and recording
        self.lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        if name == "compiled":
            raise AttributeError(name)
        return getattr(self.compiled, name)

    def __call__(self, *inputs: Any) -> tuple:
        with self.lock:  # threads: one recording per signature, one replay at a time
            last = self.last
            if last is not None and last[1].repeats(last[0], inputs, self.dynamic):  # the inputs of the last replay again
                return self._replay(last[1], inputs)
            if any(isinstance(x, np.ndarray) for x in inputs):  # mixed NumPy and CuPy: nothing to record
                return self.compiled(*inputs)
            return self._call(inputs)

    def _call(self, inputs: tuple) -> tuple:
        key = tuple(_signature(x) for x in inputs)
        if key in self.plain:
            return self.compiled(*inputs)
        recordings = self.recordings.get(key)
        if recordings is None and key not in self.warm:
            self.warm[key] = [_address(x) for x in inputs]
            return self.compiled(*inputs)
        for recording in recordings or ():
            if recording.fits(inputs):
                return self._replay(recording, inputs)
        return self._record(key, inputs)

    def _replay(self, recording: _Recording, inputs: tuple) -> tuple:
        self.replays += 1
        self.last = (inputs, recording)
        return recording.replay(inputs)

    def _record(self, key: tuple, inputs: tuple) -> tuple:
        """Record a call whose signature has warmed up, then replay it."""
        recordings = self.recordings.setdefault(key, [])
        before = recordings[-1].addresses if recordings else dict(enumerate(self.warm[key]))
        in_place = {i for i, a in before.items() if a is not None and _address(inputs[i]) == a}
        contiguous = lambda x: x.flags.c_contiguous or x.flags.f_contiguous  # noqa: E731
        strided = [i for i, x in enumerate(inputs) if runtime.is_cupy(x) and i not in in_place and not contiguous(x)]
        reason = None
        if strided:
            reason = f"input {strided[0]} is neither contiguous nor the same array on every call"
        elif sum(len(r) for r in self.recordings.values()) >= MAX_RECORDINGS:
            reason = f"more than {MAX_RECORDINGS} recordings of one graph"
        else:
            try:
                recordings.append(_Recording(self.compiled, inputs, in_place, key))
            except Exception as e:  # a capture the driver refused, or _NotRecordable
                reason = f"the call cannot be captured ({type(e).__name__}: {e})"
                _discard_capture_error()
        if reason is not None:
            self.plain[key] = reason
            logs.log("cudagraphs", f"runs without CUDA graphs: {reason}")
            if len(self.plain) == 1:  # once per graph
                warn(f"minicompile: mode='reduce-overhead': this graph runs without CUDA graphs: {reason}")
            return self.compiled(*inputs)
        logs.log("cudagraphs", lambda: f"recorded a CUDA graph: {len(inputs)} inputs, "
                                       f"{len(in_place)} read in place, {len(recordings[-1].copied)} copied in")
        return self._replay(recordings[-1], inputs)


def _discard_capture_error() -> None:
    """A failed capture can leave its error for the next CUDA call to report; read it off."""
    cp = runtime.cupy_module()
    try:
        cp.cuda.runtime.getLastError()
    except Exception:
        pass
