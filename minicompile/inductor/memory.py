"""Memory planning: which buffer each step writes into, and the peak it needs.

In:  a :class:`~.scheduler.Schedule` and each kernel's pointer arguments.
Out: a :class:`MemoryPlan` — for every buffer a kernel writes, either a fresh
     allocation or the name of a dead buffer it reuses, and the peak number of
     bytes held by intermediates (buffers that are neither inputs nor outputs).

A buffer is *dead* after the last step that reads it — or that reads an
Extern result computed from it, which may be a view of it — unless the caller
sees it: graph outputs, bases of output views and Extern results (NumPy owns
those) are never reused.  A new buffer takes over a dead one of exactly the same
byte size, so reuse costs at most a ``view``/``reshape`` of the old array.
Only kernel outputs are planned: an Extern allocates its own result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import get_op
from ..ir.symbolic import size_hint
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
        written = [s.buffer for s in step.stores] if isinstance(step, Kernel) else []
        for name in written:
            if name in pinned:
                continue
            result.intermediates.append(name)
            # Same bytes and same item size: reuse is then a reshape/view that always works
            # (a dtype-changing view of a 0-d or oddly sized array is refused by NumPy).
            match = next((f for f in free if nbytes[f] == nbytes[name] and itemsize[f] == itemsize[name]), None)
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
