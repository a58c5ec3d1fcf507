"""A simulated Spyre-like dataflow accelerator: device, instruction set, simulator.

In:  a :class:`Program` (per-core instructions, DRAM tensors, scratchpad buffers),
     written by hand, by :func:`plan_matmul`, or by the compiler backend.
Out: :func:`simulate` returns the DRAM outputs and a :class:`Report`, or refuses
     the program with a :class:`SpyreError` that names core, instruction and address.

Modules, in the order data flows: ``device`` (the numbers), ``isa`` (instructions
and Program), ``checks`` (static refusals), ``cost`` (cycles per instruction,
shared-link calendars), ``dram`` (off-chip values and store ordering),
``simulator`` (values, time, dynamic refusals),
``report`` (cycles, utilization, timeline), ``matmul_plan`` (a hand-written
planner for C = A @ B).
"""
from .device import DTYPES, SpyreConfig
from .errors import (DmaRaceError, OperandLocationError, ProgramError, RingDeadlockError,
                     ScratchpadOverflowError, ScratchpadOverlapError, SpyreError,
                     UninitializedReadError)
from .isa import (Allocator, Barrier, Buffer, DmaGather, DmaLoad, DmaStore, DmaWait, DramTensor,
                  Matmul, Program, Retile, RingBroadcast, RingRecv, RingSend, Tile, VectorBinary,
                  VectorReduce, VectorSelect, VectorUnary)
from .matmul_plan import MatmulTiling, plan_matmul
from .report import Report
from .simulator import simulate

__all__ = [
    "DTYPES", "SpyreConfig", "SpyreError", "ProgramError", "UninitializedReadError",
    "DmaRaceError", "ScratchpadOverflowError", "ScratchpadOverlapError", "OperandLocationError",
    "RingDeadlockError", "Allocator", "Barrier", "Buffer", "DmaGather", "DmaLoad", "DmaStore",
    "DmaWait", "DramTensor", "Matmul", "Program", "Retile", "RingBroadcast", "RingRecv", "RingSend",
    "Tile", "VectorBinary", "VectorReduce", "VectorSelect", "VectorUnary", "Report", "simulate", "MatmulTiling",
    "plan_matmul",
]
