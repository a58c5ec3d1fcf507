"""How long each unit is busy with one instruction, and shared-bandwidth calendars.

In:  an instruction with its operand dtypes, and a :class:`~.device.SpyreConfig`.
Out: cycle counts (:func:`matmul_cycles`, :func:`vector_cycles`), bytes a
     transfer really moves (:func:`dma_bytes`, :func:`gather_bytes`,
     :func:`ring_bytes`), and
     :class:`Calendar`, which hands out time on a shared link so that
     transfers from many cores share its bandwidth without ever exceeding it.

Every formula is the device's throughput applied to the operand sizes; the
simulator adds nothing else, so a roofline written from the same parameters
predicts it closely.
"""
from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np

from .device import DTYPES, SpyreConfig


def matmul_cycles(m: int, n: int, k: int, cfg: SpyreConfig) -> int:
    """Output-stationary systolic array: each matrix_dim^2 block of the output
    takes k cycles; blocks stream back to back after one fill and drain."""
    d = cfg.matrix_dim
    return math.ceil(m / d) * math.ceil(n / d) * k + cfg.matrix_fill_cycles


def vector_cycles(elements: int, widest_dtype: str, transcendental: bool,
                  cfg: SpyreConfig) -> int:
    """SIMD lanes hold vector_lanes 16-bit values; wider data uses fewer lanes."""
    lanes = cfg.vector_lanes * 2 // max(2, DTYPES[widest_dtype].itemsize)
    passes = cfg.transcendental_factor if transcendental else 1
    return math.ceil(elements / lanes) * passes + cfg.vector_pipeline_cycles


def dma_bytes(address: int, row_stride: int, rows: int, row_bytes: int, unit: int) -> int:
    """Bytes a strided transfer moves: each row burst covers whole 128-byte units."""
    starts = address + row_stride * np.arange(rows, dtype=np.int64)
    units = (starts + row_bytes - 1) // unit - starts // unit + 1
    return int(units.sum()) * unit


def gather_bytes(addresses: np.ndarray, unit: int) -> int:
    """Bytes a gather moves: every 128-byte unit a row of its elements touches, once
    per row (rows x cols element addresses; aligned elements never straddle a unit)."""
    if addresses.size == 0:
        return 0
    units = np.sort(addresses // unit, axis=1)
    per_row = 1 + np.count_nonzero(np.diff(units, axis=1), axis=1)
    return int(per_row.sum()) * unit


def ring_bytes(nbytes: int, unit: int) -> int:
    return -(-nbytes // unit) * unit


class Calendar:
    """Busy intervals of one shared link, kept sorted and merged.

    reserve(t, d) books d cycles of the link from time t on, filling any
    free gaps first; a transfer may be split across gaps (the link serves
    whoever is queued), so bandwidth is conserved whatever order the
    requests are booked in."""

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.busy = 0

    def reserve(self, t: int, cycles: int) -> tuple[int, int]:
        """Book `cycles` from t on; return (first cycle used, cycle after the last)."""
        if cycles <= 0:
            return t, t
        self.busy += cycles
        starts, ends = self.starts, self.ends
        j = bisect_right(ends, t)
        lo = j
        cur, need, segments = t, cycles, []
        while need:
            if j < len(starts) and starts[j] <= cur:
                cur = max(cur, ends[j])
                j += 1
                continue
            gap_end = starts[j] if j < len(starts) else cur + need
            take = min(need, gap_end - cur)
            segments.append((cur, cur + take))
            need -= take
            cur += take
        first, last = segments[0][0], segments[-1][1]
        # Re-merge the window the new segments fell into, with touching neighbours.
        lo = max(lo - 1, 0)
        hi = min(j + 1, len(starts))
        merged: list[list[int]] = []
        for s, e in sorted(list(zip(starts[lo:hi], ends[lo:hi])) + segments):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        starts[lo:hi] = [s for s, _ in merged]
        ends[lo:hi] = [e for _, e in merged]
        return first, last

    def forget_before(self, t: int) -> None:
        """Drop intervals that end before t: no later request can start earlier."""
        k = bisect_right(self.ends, t)
        if k > 64:
            del self.starts[:k], self.ends[:k]
