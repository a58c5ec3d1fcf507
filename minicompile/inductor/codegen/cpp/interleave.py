"""Interleaved vectors for pointwise loops that evaluate our exp, log or tanh.

In:  a pointwise kernel and the loop-IR values it stores.
Out: :func:`lanes` — whether (and how wide) its inner loop is written as
     ``COPIES`` interleaved vectors; :func:`interleave` — ``COPIES`` copies of
     the loop body's lines, merged statement by statement; :data:`PRELUDE`.

GELU over 4M float32 evaluates ``mc_tanh_f32`` per element: about 55 AVX2
instructions per 8 lanes, most of them one long chain of multiply-adds (about
85 cycles from the load to the store).  The core overlaps successive vectors
only as far as its scheduler holds their instructions, and one vector's chain
fills most of it: the loop measured 33 cycles per vector on one Zen 3 core,
where its instructions alone need about 14.  Written as four vectors at a
time, each statement four times in a row for four independent lane groups,
and with GCC's scheduler run before register allocation
(``-fschedule-insns -fsched-pressure``, for these functions only, through
``MC_SCHEDULED``), the chains interleave: 24-26 cycles (the kernel on 64K
elements, in L2), and GELU over 4M on two threads went from 2.9 to 2.3 ms
with the kernel alone, 3.9-4.7 to 2.8-3.2 ms through ``mc.compile``
(medians of alternated runs).  Neither
change alone helps: unrolled copies without the scheduler run one after the
other (31-35 cycles), and the scheduler has one chain to work with in the
plain loop (33-37).  Every element computes exactly as before.

Only our vectorized functions (:func:`cpp.vector_math`) qualify: a loop of
plain arithmetic is already bound by loads and stores, and the C library's
functions are calls.  Only float32 loops do: GCC 12 did not vectorize the
interleaved float64 loop (four lanes per vector), which ran 3-5x slower.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from .... import config
from ....ir.symbolic import is_symbolic
from ... import loop_ir as L
from ...lowering import MASKED_OPS

# Vectors in flight per loop iteration: four measured best (GELU, one core:
# 33 cycles per vector plain, 28-29 with two, 24-26 with four).
COPIES = 4
# Bytes of one SIMD vector GCC fills (AVX2; GCC keeps 256-bit vectors by
# default on AVX-512 machines too).
VECTOR_BYTES = 32

PRELUDE = r"""
// Interleaved loops (see minicompile/inductor/codegen/cpp/interleave.py) run
// GCC's instruction scheduler before register allocation, so that the chains
// of independent vectors overlap.
#if defined(__GNUC__) && !defined(__clang__)
#define MC_SCHEDULED __attribute__((optimize("schedule-insns", "sched-pressure")))
#else
#define MC_SCHEDULED
#endif
"""

# A declaration in a generated body: "<type> <name> = ...".
_DECLARATION = re.compile(r"^\s*[A-Za-z_]\w* (\w+) = ")


def lanes(bodies: list[L.Value], size: object, vector_math: Callable[[str, np.dtype], str | None]) -> int:
    """Lanes per vector when the loop of ``size`` iterations computing
    ``bodies`` should interleave (it evaluates a function ``vector_math``
    has a vectorizable template for, reads nothing under a guard, holds no
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
    if widest > 4:  # float64: GCC 12 left the 4-lane interleaved loop scalar (GELU 15-24 -> 65-80 ms)
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
