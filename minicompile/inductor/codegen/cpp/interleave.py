"""Interleaved vectors for pointwise loops that evaluate our exp, log or tanh.

In:  a pointwise kernel, the loop-IR values it stores, and the
     :class:`~.kernel.KernelWriter` writing it.
Out: :func:`lanes` — whether (and how wide) its inner loop is written as
     ``COPIES`` interleaved vectors — and :func:`write_interleaved`, the loop
     itself; the kernel's function is marked ``MC_SCHEDULED``
     (``include/mc_interleave.h``, :data:`HEADER`).

Why: our ``mc_tanh_f32`` is one long chain of dependent multiply-adds per
vector, which the core overlaps with the next vector's only as far as its
scheduler holds their instructions; four independent vectors written
statement by statement, with GCC's scheduler run before register allocation
(``-fschedule-insns -fsched-pressure``, for these functions only), overlap
their chains (neither change helps alone).  Every element computes exactly as
in the plain loop.  Only loops calling our vectorized functions qualify (plain
arithmetic is bound by loads and stores), and only float32 ones (GCC 12 left
the interleaved float64 loop scalar).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .... import config
from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...lowering import MASKED_OPS
from .ops import vector_math

if TYPE_CHECKING:
    from .kernel import KernelWriter

HEADER = "mc_interleave.h"
# Vectors in flight per loop iteration (four measured best).
COPIES = 4
# Bytes of one SIMD vector GCC fills (AVX2; GCC keeps 256-bit vectors by
# default on AVX-512 machines too).
VECTOR_BYTES = 32

# A declaration in a generated body: "<type> <name> = ...".
_DECLARATION = re.compile(r"^\s*[A-Za-z_]\w* (\w+) = ")


def lanes(bodies: list[L.Value], size: object) -> int:
    """Lanes per vector when the loop of ``size`` iterations computing
    ``bodies`` should interleave (it evaluates one of our vectorizable
    functions, :func:`.ops.vector_math`, reads nothing under a guard, holds no
    value wider than 4 bytes, and may run ``COPIES`` vectors at least once);
    else 0."""
    if not config.cpp_interleave:
        return 0
    values = {v for b in bodies for v in L.walk(b)}
    if any(isinstance(v, L.Op) and v.name in MASKED_OPS for v in values):
        return 0
    if not any(isinstance(v, L.Op) and vector_math(v.name, v.args[-1].dtype) for v in values):
        return 0
    widest = max(v.dtype.itemsize for v in values)
    if widest > 4:  # float64: GCC 12 left the 4-lane interleaved loop scalar
        return 0
    n = VECTOR_BYTES // widest
    return n if is_symbolic(size) or size >= COPIES * n else 0


def interleave(body: list[str], var: str, copies: int) -> list[str]:
    """``copies`` copies of ``body`` (lines of single statements), copy ``k``
    with its own temporaries and ``var`` renamed ``<name>_<k>``, merged so
    that each statement appears ``copies`` times in a row."""
    names = {var} | {m.group(1) for line in body if (m := _DECLARATION.match(line))}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    return [pattern.sub(lambda m, k=k: f"{m.group(1)}_{k}", line) for line in body for k in range(copies)]


def write_interleaved(w: KernelWriter, out_vars: list[L.Var], big: bool, width: int) -> None:
    """A pointwise kernel whose inner loop runs ``COPIES`` vectors of
    ``width`` lanes (:func:`lanes`) at a time, their statements interleaved (:func:`interleave`),
    then the elements left over one vector loop at a time."""
    var = out_vars[-1]
    v, step = var.name, COPIES * width
    w.scheduled = True
    w.open_loops(out_vars[:-1], {0: w.parallel()} if big and len(out_vars) > 1 else {})
    w.line(f"const int64_t {v}_m = {var.size} - {var.size} % {step};")
    w.depth += 1
    body = _pointwise_body(w)  # at the depth of the loop over what is left
    w.depth -= 1
    if big and len(out_vars) == 1:
        w.line(w.parallel())
    w.open_block(f"for (int64_t {v}_g = 0; {v}_g < {v}_m; {v}_g += {step})")
    w.line("#pragma omp simd")
    w.open_block(f"for (int64_t {v}_l = 0; {v}_l < {width}; ++{v}_l)")
    for c in range(COPIES):
        w.line(f"const int64_t {v}_{c} = {v}_g + {f'{c * width} + ' if c else ''}{v}_l;")
    w.lines += ["    " + line for line in interleave(body, v, COPIES)]
    w.close_loops(2)
    w.line("#pragma omp simd")
    w.open_block(f"for (int64_t {v} = {v}_m; {v} < {var.size}; ++{v})")
    w.lines += body
    w.close_loops(len(out_vars))


def _pointwise_body(w: KernelWriter) -> list[str]:
    """The lines storing each pointwise output at the loop index, taken out
    of the kernel's text (what they computed is out of scope again)."""
    start = len(w.lines)
    with w.scope():
        w.store_pointwise()
    body = w.lines[start:]
    del w.lines[start:]
    return body
