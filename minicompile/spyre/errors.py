"""What the card refuses: one exception class per rule a program can break.

In:  the core, the instruction (index and text) and the address involved.
Out: a :class:`SpyreError` subclass whose message names all three, so a
     planner's author can find the line of the listing that is wrong.
"""
from __future__ import annotations


class SpyreError(Exception):
    """A program the hardware would not run as written."""

    def __init__(self, core: int | None, index: int | None, instruction: object, detail: str):
        self.core, self.index, self.instruction = core, index, instruction
        where = []
        if core is not None:
            where.append(f"core {core}")
        if index is not None:
            where.append(f"instruction {index} `{instruction}`")
        super().__init__(f"{', '.join(where)}: {detail}" if where else detail)


class ProgramError(SpyreError):
    """Malformed: an unknown buffer or tensor, mismatched shapes, a bad dtype."""


class UninitializedReadError(SpyreError):
    """Reads scratchpad bytes that no instruction wrote."""


class DmaRaceError(SpyreError):
    """Touches the target of a DMA load before waiting on the load's tag."""


class ScratchpadOverflowError(SpyreError):
    """A buffer reaches past the scratchpad the compiler may use."""


class ScratchpadOverlapError(SpyreError):
    """Two buffers that are live at the same time share bytes."""


class OperandLocationError(SpyreError):
    """A compute unit is handed an operand in DRAM; units only see scratchpad."""


class RingDeadlockError(SpyreError):
    """Cores wait on ring messages or barriers that can never arrive."""


def span(start: int, end: int) -> str:
    """An address range as the messages print it."""
    return f"{start:#x}..{end:#x}"
