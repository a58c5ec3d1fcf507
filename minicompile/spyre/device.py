"""The simulated Spyre-like card: every number the planner and the simulator use.

In:  nothing (or overrides, e.g. ``SpyreConfig(cores=4)`` for a smaller card).
Out: :class:`SpyreConfig`, a frozen record of the device, and :data:`DTYPES`,
     the storage formats the card knows.

Published facts (IBM's descriptions of the Spyre accelerator and of its
research predecessor, the AIU): 32 cores on a bidirectional ring; 2 MB of
scratchpad per core, of which the compiler may plan about 1.55 MB (the rest
holds the runtime's own buffers); an 8x8 systolic matrix array per core;
fp16 / fp8 / int8 / int4 arithmetic accumulating in fp32; data moves in
128-byte units, and each ring direction carries 128 bytes per cycle.

Estimates (IBM publishes no figure; each is marked *estimate* below, chosen to
be plausible for a 2020s inference card and to keep the arithmetic readable):
the clock, the off-chip bandwidth and latency, the cost of a ring hop, the
vector unit's width and the extra cost of transcendental functions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SpyreConfig:
    # -- published -----------------------------------------------------------
    cores: int = 32
    """Cores on the ring (published: 32 per card)."""
    scratchpad_bytes: int = 2 * 2**20
    """Scratchpad per core (published: 2 MB). There is no cache: data a core
    computes on must have been moved into this scratchpad explicitly."""
    scratchpad_usable_bytes: int = 1_625_216
    """Scratchpad bytes the compiler may allocate (published: about 1.55 MB;
    here 1.55 MiB rounded down to whole 128-byte units)."""
    ring_bytes_per_cycle: int = 128
    """Bandwidth of one ring link in one direction (published: 128 B/cycle)."""
    matrix_dim: int = 8
    """The systolic matrix array is matrix_dim x matrix_dim processing
    elements (published: 8x8). Each element does one fp16 multiply-accumulate
    per cycle into an fp32 accumulator (the rate is an estimate)."""
    transfer_bytes: int = 128
    """Smallest unit a DMA or ring transfer moves (published: 128 bytes); a
    partial unit costs a whole one."""

    # -- estimates -------------------------------------------------------------
    clock_hz: float = 1.0e9
    """Core clock (estimate: 1 GHz). Only used to print times in seconds and
    to place trace events on a microsecond axis."""
    dram_bytes_per_cycle: int = 128
    """Off-chip bandwidth shared by all cores (estimate: 128 B/cycle, that is
    128 GB/s at 1 GHz, the order of an LPDDR5 card). DRAM traffic reaches the
    cores over the ring; because this figure equals one link's bandwidth the
    ring is never the narrower pipe for it, so the simulator charges DRAM
    traffic to this shared port only, never to ring links."""
    dram_latency_cycles: int = 200
    """Cycles from a DMA request leaving the core to its first bytes landing
    (estimate)."""
    ring_hop_cycles: int = 2
    """Latency of one hop between neighbouring cores (estimate)."""
    vector_lanes: int = 64
    """fp16 lanes of the SIMD vector unit (estimate); 32-bit data runs on
    half as many lanes. Integer arithmetic (estimate: IBM publishes int8/int4
    for the matrix unit only): the vector unit is assumed to add, subtract,
    multiply, compare, take max/min and select on int8, int16, int32, uint8 and
    uint16 at the lane count of their width (8- and 16-bit data on every lane,
    32-bit on half),
    wrapping on overflow as two's-complement hardware does; it has no integer
    divider and no 64-bit integers. Masks (comparison results) are int8 0/1."""
    transcendental_factor: int = 4
    """exp, tanh, log, ... cost this many times a simple op (estimate)."""
    vector_pipeline_cycles: int = 8
    """Fixed start-up cost of one vector instruction (estimate)."""
    matrix_fill_cycles: int = 16
    """Cycles to fill and drain the systolic array once per instruction:
    2 x matrix_dim (estimate, from the array's geometry)."""
    issue_cycles: int = 1
    """Cycles the per-core sequencer spends issuing one instruction (estimate)."""

    @property
    def macs_per_cycle(self) -> int:
        """Peak fp16 multiply-accumulates of one core's matrix unit per cycle."""
        return self.matrix_dim * self.matrix_dim

    @property
    def ring_diameter(self) -> int:
        """Hops between the two cores farthest apart on the bidirectional ring."""
        return self.cores // 2

    def hops(self, src: int, dst: int) -> int:
        """Hops on the shorter way round the ring from core src to core dst."""
        d = (dst - src) % self.cores
        return min(d, self.cores - d)


@dataclass(frozen=True)
class DType:
    name: str
    bits: int
    numpy: type | None  # None: declared by the card, not simulated functionally

    @property
    def itemsize(self) -> int:
        # int4 is stored one value per byte here: packing pairs would make
        # every tile edge a half-byte case for no gain in what the model shows.
        return max(1, self.bits // 8)


# The card's formats. fp8 and int4 are listed so programs can declare them;
# NumPy has no such types, so only their timing can be simulated (functional=False).
DTYPES: dict[str, DType] = {
    "fp32": DType("fp32", 32, np.float32),
    "fp16": DType("fp16", 16, np.float16),
    "int8": DType("int8", 8, np.int8),
    "int16": DType("int16", 16, np.int16),   # vector unit only (see vector_lanes)
    "int32": DType("int32", 32, np.int32),   # vector unit only (see vector_lanes)
    "uint8": DType("uint8", 8, np.uint8),    # vector unit only (see vector_lanes)
    "uint16": DType("uint16", 16, np.uint16),  # vector unit only (see vector_lanes)
    "fp8": DType("fp8", 8, None),
    "int4": DType("int4", 4, None),
}

NUMPY_TO_DTYPE = {np.dtype(d.numpy): name for name, d in DTYPES.items() if d.numpy is not None}
