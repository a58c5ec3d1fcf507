"""Resume functions: a function's own bytecode, entered in the middle.

After a graph break at instruction *i*, execution must continue at *i + 1*
with the stack and the locals the original frame would have there.  A resume
function does that with real bytecode for the running Python: it is the
original code object with a short prologue in front,

    RESUME 0
    DELETE_FAST  <each local that is unbound at i + 1>
    LOAD_FAST    ___stack0   (or PUSH_NULL for a NULL slot)
    ...
    JUMP_FORWARD <to instruction i + 1 of the original code>
    <the original instructions, unchanged>

and a signature that takes every local of the original frame plus the stack
slots as parameters.  Because 3.11+ jumps are relative, the original
instructions need no patching; only the exception table (absolute offsets)
is shifted and the line table gets a "no location" entry for the prologue.
The new function is compiled lazily by the same machinery as any other
function, so the code after a break becomes a graph of its own.
"""
from __future__ import annotations

import dis
import inspect
import types

OP = dis.opmap
PROLOGUE_LINE_CODE = 15  # location-table entry kind: "no location"


def stack_param(i: int) -> str:
    return f"___stack{i}"


def _instr(opname: str, arg: int = 0) -> list[int]:
    """One instruction, with EXTENDED_ARG prefixes when the argument needs them."""
    out: list[int] = []
    for shift in (24, 16, 8):
        if arg >> shift:
            out += [OP["EXTENDED_ARG"], (arg >> shift) & 0xFF]
    return out + [OP[opname], arg & 0xFF]


def _varint(value: int) -> list[int]:
    """Exception-table varint: 6-bit chunks, most significant first, 0x40 = more."""
    chunks = [value & 0x3F]
    value >>= 6
    while value:
        chunks.append(value & 0x3F)
        value >>= 6
    chunks.reverse()
    return [c | 0x40 for c in chunks[:-1]] + [chunks[-1]]


def _parse_exception_table(table: bytes) -> list[list[int]]:
    entries, i = [], 0

    def read() -> int:
        nonlocal i
        b = table[i]
        i += 1
        value = b & 0x3F
        while b & 0x40:
            b = table[i]
            i += 1
            value = (value << 6) | (b & 0x3F)
        return value

    while i < len(table):
        entries.append([read(), read(), read(), read()])  # start, length, target, depth_lasti
    return entries


def shift_exception_table(table: bytes, units: int) -> bytes:
    out: list[int] = []
    for start, length, target, depth_lasti in _parse_exception_table(table):
        entry = _varint(start + units) + _varint(length) + _varint(target + units) + _varint(depth_lasti)
        entry[0] |= 0x80  # marks the start of an entry
        out += entry
    return bytes(out)


def covered_by_exception_table(code: types.CodeType, offset: int) -> bool:
    """Is the instruction at ``offset`` inside a try/with block (or a 3.12+ inlined comprehension)?"""
    unit = offset // 2
    return any(start <= unit < start + length
               for start, length, _, _ in _parse_exception_table(code.co_exceptiontable))


def inside_loop(instructions: list[dis.Instruction], offset: int) -> bool:
    """Does a backward jump at or after ``offset`` land at or before it?  (The
    jump itself counts: 3.11 tests a ``while`` condition at the loop's bottom.)"""
    return any(inst.offset >= offset and "BACKWARD" in inst.opname
               and isinstance(inst.argval, int) and inst.argval <= offset for inst in instructions)


def can_resume(code: types.CodeType) -> str | None:
    """Why a frame of ``code`` cannot be resumed in the middle, or None."""
    if code.co_cellvars or code.co_freevars:
        return "the function has closure cells"
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return "the function is a generator or coroutine"
    return None


def make_resume_code(code: types.CodeType, target_offset: int, stack: list[bool],
                     unbound: list[str]) -> types.CodeType:
    """A code object that starts ``code`` at ``target_offset``.

    It keeps the name, qualified name, file and line table of ``code``, so a
    traceback from it reads as the original function at the line that raised
    (TorchDynamo names it ``__resume_at_N``; the compiled function that runs it
    is named so in the transformed function's namespace).

    ``stack`` has one entry per stack slot at the target, bottom first: True
    for a value (passed as parameter ``___stack{i}``), False for a NULL.
    ``unbound`` lists locals that must not be bound at the target.
    """
    varnames = list(code.co_varnames)
    # A resume function of a resume function already has ___stack parameters.
    taken = set(varnames)
    stack_names = []
    for i, is_value in enumerate(stack):
        if is_value:
            param = stack_param(i)
            while param in taken:
                param += "_"
            taken.add(param)
            stack_names.append(param)
    params = varnames + stack_names

    def build(jump_arg: int) -> list[int]:
        body = _instr("RESUME", 0)
        for local in unbound:
            body += _instr("DELETE_FAST", varnames.index(local))
        k = 0
        for is_value in stack:
            if is_value:
                body += _instr("LOAD_FAST", len(varnames) + k)
                k += 1
            else:
                body += _instr("PUSH_NULL")
        return body + _instr("JUMP_FORWARD", jump_arg)

    # The jump is the prologue's last instruction and the original code starts
    # right after it, so its (relative) argument is the target's own offset.
    prologue = build(target_offset // 2)
    units = len(prologue) // 2
    linetable = bytearray()
    remaining = units
    while remaining:
        n = min(remaining, 8)
        linetable.append(0x80 | (PROLOGUE_LINE_CODE << 3) | (n - 1))
        remaining -= n
    flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    return code.replace(
        co_code=bytes(prologue) + code.co_code,
        co_argcount=len(params),
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_nlocals=len(params),
        co_varnames=tuple(params),
        co_flags=flags,
        co_linetable=bytes(linetable) + code.co_linetable,
        co_exceptiontable=shift_exception_table(code.co_exceptiontable, units),
        co_stacksize=code.co_stacksize + len(stack) + 1,
    )
