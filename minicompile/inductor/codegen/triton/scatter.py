"""``np.add.at`` and ``np.subtract.at`` as Triton kernels with atomic adds.

In:  a :class:`~...scheduler.Schedule` in which every ``ufunc.at`` is an Extern.
Out: :func:`scatter_add_templates` returns a schedule where each eligible
     ``add_at``/``subtract_at`` is two steps: a pointwise kernel that copies ``a``
     into the result's buffer (``ufunc.at`` updates a copy: the graph is
     functional), then a :class:`ScatterTemplate` whose kernel :func:`scatter_kernel`
     runs over the updates — one program element per element of ``b`` broadcast
     to the indexed shape — and adds each into its destination with
     ``tl.atomic_add``.  An embedding's gradient (``np.add.at(zeros, tokens, g)``)
     is the classic case: many tokens repeat, and every repeat must add.

Eligible: the key is one integer index array (rows of ``a``) or a tuple of them
(``a``'s leading axes, broadcast together as NumPy broadcasts them); ``b`` is an
array of ``a``'s dtype or a Python number; the dtype is float32, float64,
int32, int64, uint32 or uint64 (what ``tl.atomic_add`` adds).  Anything else
stays NumPy's (or CuPy's) ``ufunc.at``.

Semantics against NumPy: an index counts from the end when negative; one out
of range raises IndexError in Triton's interpreter (``device_assert``) and, on
the GPU where the assert is off, wraps around as CuPy's gathers do.  Integer
results are exact.  Float results are NumPy's up to the order of the adds:
NumPy adds the updates of one element in index order, atomics in whatever
order the GPU runs them, so a float sum of repeated indices can differ from
NumPy's in its last bits (as CuPy's own ``add.at`` does); subtraction adds
``-b``, which IEEE arithmetic makes the same as subtracting ``b``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import numpy as np

from ... import loop_ir as L
from ...lowering import _index_read, _position, broadcast_index
from ...scheduler import Buffer, Kernel, Schedule, Store
from . import kernel as tg
from .ops import full

ATOMIC_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64))
SIGNS = {"add_at": 1, "subtract_at": -1}


@dataclass
class ScatterTemplate:
    """``out[keys..., rest] += sign * b`` over ``domain`` (the keys' broadcast shape,
    then ``out``'s remaining axes); ``out`` already holds a copy of ``a``."""

    name: str                       # the ufunc.at node, and the buffer it updates
    keys: tuple[Buffer, ...]        # one index array per leading axis of out
    value: Buffer | int | float     # b: a buffer, or a Python number
    sign: int
    domain: tuple[int, ...]
    shape: tuple[int, ...]          # out's
    dtype: np.dtype
    origins: list[str] = field(default_factory=list)

    @property
    def stores(self) -> list[str]:
        return []  # the copy kernel before it allocated and wrote ``name``


def _template_for(ext: L.Extern, buffers: dict[str, Buffer]) -> ScatterTemplate | None:
    if ext.op_name not in SIGNS or len(ext.args) != 3:
        return None
    a, key, b = ext.args
    if not isinstance(a, L.BufferRef) or a.name not in buffers or ext.dtype not in ATOMIC_DTYPES:
        return None
    base = buffers[a.name]
    refs = key if isinstance(key, tuple) else (key,)
    if not refs or len(refs) > len(base.shape) or not all(
            isinstance(r, L.BufferRef) and r.name in buffers and buffers[r.name].dtype.kind in "iu" for r in refs):
        return None
    keys = tuple(buffers[r.name] for r in refs)
    shapes = [k.shape for k in keys] + [base.shape]
    if not all(isinstance(n, int) for s in shapes for n in s) or base.dtype != ext.dtype:
        return None
    try:
        indexed = np.broadcast_shapes(*(k.shape for k in keys))
    except ValueError:
        return None  # NumPy raises; its own call says so
    domain = tuple(indexed) + tuple(base.shape[len(keys):])
    if isinstance(b, L.BufferRef):
        value = buffers.get(b.name)
        if value is None or value.dtype != ext.dtype or not _broadcasts(value.shape, domain):
            return None
    elif type(b) is float and ext.dtype.kind == "f":
        value = b
    elif type(b) is int and (ext.dtype.kind == "f" or np.iinfo(ext.dtype).min <= b <= np.iinfo(ext.dtype).max):
        value = b  # a Python int NumPy takes in the array's dtype (one out of range it refuses)
    else:
        return None
    return ScatterTemplate(ext.name, keys, value, SIGNS[ext.op_name], domain, tuple(base.shape), ext.dtype, [ext.name])


def _broadcasts(shape: tuple, to: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False


def scatter_add_templates(schedule: Schedule) -> Schedule:
    """Replace each eligible ``add_at``/``subtract_at`` Extern by a copy kernel and a
    :class:`ScatterTemplate` (see the module docstring)."""
    out: list = []
    buffers = dict(schedule.buffers)
    for step in schedule.steps:
        template = _template_for(step, buffers) if isinstance(step, L.Extern) else None
        if template is None:
            out.append(step)
            continue
        a = step.args[0].name
        identity = L.loop_index("x", template.shape)
        copy = Kernel(f"{step.name}_copy", template.shape,
                      pointwise=[Store(step.name, L.Load(a, identity, template.dtype))], origins=[step.name])
        out += [copy, template]
        buffers[step.name] = replace(buffers[step.name], kind="kernel")
    decisions = dict(schedule.decisions)
    for s in out:
        if isinstance(s, ScatterTemplate):
            decisions[s.name] = "template: a copy of a, then tl.atomic_add of each update"
            for name, why in decisions.items():  # what the scheduler said of its inputs
                decisions[name] = re.sub(rf"\bextern {re.escape(s.name)}\b", f"template {s.name}", why)
    return replace(schedule, steps=out, buffers=buffers, decisions=decisions)


def scatter_kernel(t: ScatterTemplate, name: str, buffers: dict[str, Buffer]) -> tg.TritonKernel:
    """One program element per update: its destination read from the index arrays,
    its value from ``b`` (broadcast), added with ``tl.atomic_add``."""
    w = tg.ValueWriter(buffers, {t.name})
    numel = math.prod(t.domain)
    big = max(numel, math.prod(t.shape)) >= 2**31
    w.line(f"xnumel = {numel}")
    w.line(f"xindex = {'tl.program_id(0).to(tl.int64)' if big else 'tl.program_id(0)'} * XBLOCK + tl.arange(0, XBLOCK)")
    w.line("xmask = xindex < xnumel")
    tg.index_vars(w, "x", t.domain, "xindex")
    x = L.loop_index("x", t.domain)
    lead = len(t.domain) - (len(t.shape) - len(t.keys))
    dest = tuple(_position(_index_read(k, x[:lead]), n) for k, n in zip(t.keys, t.shape)) + x[lead:]
    if isinstance(t.value, Buffer):
        value = w.value(L.Load(t.value.name, broadcast_index(t.value.shape, t.domain, x), t.dtype))
        value = f"tl.broadcast_to({value}, [XBLOCK])"
    else:
        value = full("[XBLOCK]", np.asarray(t.value).astype(t.dtype).item(), t.dtype)
    if t.sign < 0:
        value = f"-{value}" if t.dtype.kind == "f" else f"(0 - {value})"
    flat = L.linearize(dest, buffers[t.name].strides)
    positions = {atom: w.position(atom) for atom in L.indirect_atoms(L.Load(t.name, dest, t.dtype))}
    offset = tg.render_index(flat, positions)
    w.line(f"tl.atomic_add(out_{t.name} + ({offset}), {value}, xmask)")
    header, params = tg.signature(name, w, [t.name], ["XBLOCK"])
    block = min(1024, tg.next_power_of_2(numel))
    # It allocates nothing (``writes`` empty): it adds into the copy's buffer.
    return tg.TritonKernel(name, "pointwise", params, ("flat", numel, "XBLOCK"), [dict(XBLOCK=block, num_warps=4)],
                           "\n".join([header] + w.lines), [])
