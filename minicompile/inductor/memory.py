"""Memory planning: which buffer each step writes into, and the peak it needs.

In:  a :class:`~.scheduler.Schedule` and each kernel's pointer arguments.
Out: a :class:`MemoryPlan` — for every buffer a kernel writes, either a fresh
     allocation or the name of a dead buffer it reuses, and the peak number of
     bytes held by intermediates (buffers that are neither inputs nor outputs).

A buffer is *dead* after the last step that reads it — or that reads an
Extern result computed from it, which may be a view of it — unless the caller
sees it: graph outputs, bases of output views and Extern results (NumPy owns
those) are never reused.  A new buffer takes over a dead one of exactly the same
byte size (reuse costs at most a ``view``/``reshape`` of the old array), else
the smallest dead one up to twice its size (a view of the first bytes).
Only kernel outputs are planned: an Extern allocates its own result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import get_op
from ..ir.symbolic import is_symbolic, size_hint
from .scheduler import Kernel, Schedule

# Op kinds whose NumPy implementation may return a view of an input.
VIEW_KINDS = frozenset({"view", "index", "layout"})


@dataclass
class MemoryPlan:
    reuse: dict[str, str] = field(default_factory=dict)  # new buffer -> dead buffer it takes over
    peak_intermediate_bytes: int = 0
    intermediates: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"peak intermediate bytes: {self.peak_intermediate_bytes}"]
        lines += [f"    {new} reuses {old}" for new, old in self.reuse.items()]
        return "\n".join(lines)


def _reads(step, kernel_args: dict[str, list[str]]) -> list[str]:
    if isinstance(step, Kernel):
        written = step.buffers_written
        return [b for b in kernel_args[step.name] if b not in written]
    return list(step.inputs)


def stored(kernel: Kernel, kernel_args: dict[str, list[str]]) -> list[str]:
    """The buffers ``kernel`` writes to memory: those it takes as arguments (a
    value it keeps in registers, :meth:`~.scheduler.Schedule.never_stored`,
    has no buffer at all)."""
    args = set(kernel_args[kernel.name])
    return [s.buffer for s in kernel.stores if s.buffer in args]


def _best_fit(name: str, free: list[str], nbytes: dict, itemsize: dict) -> str | None:
    """The dead allocation ``name`` takes over: one of exactly its bytes and
    item size (the wrapper's reuse is then a reshape/view), else the smallest
    one of at least its bytes and at most twice them (the wrapper views a
    prefix of its bytes; a bigger one would sit mostly idle while ``name``
    lives).  Sizes only known at run time (dynamic shapes) must be equal."""
    need = nbytes[name]
    exact = next((f for f in free if nbytes[f] == need and itemsize[f] == itemsize[name]), None)
    if exact is not None or is_symbolic(need) or need == 0:
        return exact
    larger = [f for f in free if not is_symbolic(nbytes[f]) and need <= nbytes[f] <= 2 * need]
    return min(larger, key=lambda f: nbytes[f]) if larger else None


def plan(schedule: Schedule, kernel_args: dict[str, list[str]]) -> MemoryPlan:
    """Assign storage to every kernel-written buffer, reusing dead ones."""
    graph = schedule.graph
    pinned = {n.name for n in graph.outputs}
    for view in schedule.views.values():  # a view's base must outlive the view
        pinned |= {i.name for i in view.inputs}
    last_read: dict[str, int] = {}
    for i, step in enumerate(schedule.steps):
        for b in _reads(step, kernel_args):
            last_read[b] = i
    # An Extern view op's result may be a view of its inputs (np.broadcast_to, a
    # basic index): its inputs live as long as it does.  Later steps first, so that
    # chains of views extend all the way back.
    for step in reversed(schedule.steps):
        if isinstance(step, Kernel) or get_op(step.op_name).kind not in VIEW_KINDS:
            continue
        if step.name in pinned:  # returned to the caller: so may be what it views
            pinned |= set(step.inputs)
        if step.name in last_read:
            for b in step.inputs:
                last_read[b] = max(last_read.get(b, -1), last_read[step.name])
    nbytes = {b.name: b.numel * b.dtype.itemsize for b in schedule.buffers.values()}
    itemsize = {b.name: b.dtype.itemsize for b in schedule.buffers.values()}
    result = MemoryPlan()
    storage: dict[str, str] = {}  # intermediate buffer -> the allocation it lives in
    in_use: set[str] = set()      # allocations holding a live buffer
    free: list[str] = []          # allocations whose buffer is dead
    for i, step in enumerate(schedule.steps):
        written = stored(step, kernel_args) if isinstance(step, Kernel) else []
        for name in written:
            if name in pinned:
                continue
            result.intermediates.append(name)
            match = _best_fit(name, free, nbytes, itemsize)
            if match is not None:
                free.remove(match)
                result.reuse[name] = match
            storage[name] = match if match is not None else name
            in_use.add(storage[name])
        live = sum(size_hint(nbytes[a]) for a in in_use)  # the example's sizes: a statistic
        result.peak_intermediate_bytes = max(result.peak_intermediate_bytes, live)
        dying = [b for b in _reads(step, kernel_args) if last_read.get(b) == i]
        dying += [b for b in written if b not in last_read]  # written, never read
        for b in dying:
            alloc = storage.get(b)
            if alloc is not None and alloc in in_use:
                in_use.discard(alloc)
                free.append(alloc)
    return result
