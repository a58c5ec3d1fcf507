"""Python-version differences in bytecode, kept in one table.

The symbolic interpreter reads instructions through :mod:`dis`, which already
decodes most arguments the same way on 3.11, 3.12 and 3.13.  What still
differs is where a call's NULL sits on the stack and how keyword names reach a
call; those facts live here and nowhere else.
"""
from __future__ import annotations

import dis
import sys
from dataclasses import dataclass
from types import CodeType


@dataclass(frozen=True)
class VersionFacts:
    # 3.11/3.12: CALL sees [NULL | method, callable | self, *args];
    # 3.13:      CALL sees [callable, NULL | self, *args].
    null_before_callable: bool
    # 3.11/3.12 pass keyword names with a KW_NAMES instruction before CALL;
    # 3.13 pushes them as a constant tuple and calls CALL_KW.
    kw_names_instruction: bool
    # 3.12+ fold LOAD_METHOD into LOAD_ATTR, flagged by the low bit of its arg.
    load_attr_method_flag: bool
    # When FOR_ITER finds its iterator exhausted it pops it and jumps to its
    # target, then skips this many instructions there: none on 3.11 (the
    # target is past the loop), END_FOR on 3.12, END_FOR + POP_TOP on 3.13.
    for_iter_exhausted_skip: int


FACTS = {
    (3, 11): VersionFacts(null_before_callable=True, kw_names_instruction=True,
                          load_attr_method_flag=False, for_iter_exhausted_skip=0),
    (3, 12): VersionFacts(null_before_callable=True, kw_names_instruction=True,
                          load_attr_method_flag=True, for_iter_exhausted_skip=1),
    (3, 13): VersionFacts(null_before_callable=False, kw_names_instruction=False,
                          load_attr_method_flag=True, for_iter_exhausted_skip=2),
}

try:
    CURRENT = FACTS[sys.version_info[:2]]
except KeyError:  # pragma: no cover - guarded by requires-python
    raise ImportError(
        f"minicompile's bytecode interpreter supports Python 3.11-3.13, not {sys.version.split()[0]}"
    ) from None


def split_callable(first, second, null) -> tuple:
    """The two stack slots below a call's arguments -> (callable, self or None).

    3.11/3.12 lay them out as [NULL | method, callable | self], 3.13 as
    [callable, NULL | self]; ``null`` is whatever stands for NULL there.
    """
    if CURRENT.null_before_callable:
        return (second, None) if first is null else (first, second)
    return first, (None if second is null else second)


def instructions(code: CodeType) -> list[dis.Instruction]:
    """The code's instructions without CACHE entries, in order."""
    return [i for i in dis.get_instructions(code) if i.opname != "CACHE"]


def stored_before_read(body: list[dis.Instruction]) -> set[str]:
    """The locals whose first use in ``body``, in code order, is a store: a loop body
    that stores one before any read never sees the value it held at the loop's head.
    A read in code order before the first store counts as a read first, even on a branch
    not taken; a cell variable or a ``del`` counts as read."""
    first: dict[str, bool] = {}
    for inst in body:
        op, names = inst.opname, inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)
        if op in ("STORE_FAST", "STORE_FAST_STORE_FAST"):
            stores = (True,) * len(names)
        elif op == "STORE_FAST_LOAD_FAST":  # 3.13: the store, then the load
            stores = (True, False)
        elif op.startswith("LOAD_FAST") or op.endswith("_DEREF") or op in ("DELETE_FAST", "LOAD_CLOSURE",
                                                                             "MAKE_CELL"):
            stores = (False,) * len(names)
        else:
            continue
        for name, store in zip(names, stores):
            first.setdefault(name, store)
    return {name for name, store in first.items() if store}


def comparison_operator(inst: dis.Instruction) -> str:
    """``'<'`` for COMPARE_OP on every version (3.13 may say ``'bool(<)'``)."""
    op = inst.argval
    return op[5:-1] if op.startswith("bool(") else op


def kw_names(inst: dis.Instruction, code: CodeType) -> tuple[str, ...]:
    """The keyword names a 3.11/3.12 KW_NAMES instruction announces."""
    value = inst.argval
    if isinstance(value, tuple):
        return value
    return code.co_consts[inst.arg]  # 3.11's dis leaves argval as the index


def format_bytecode(code: CodeType) -> str:
    return dis.Bytecode(code).dis()


def side_by_side(left_title: str, left: str, right_title: str, right: str, width: int = 60) -> str:
    """Two listings in columns, for comparing original and transformed bytecode."""
    lhs, rhs = left.splitlines(), right.splitlines()
    rows = [f"{left_title:<{width}} | {right_title}", f"{'-' * width}-+-{'-' * width}"]
    for i in range(max(len(lhs), len(rhs))):
        a = lhs[i] if i < len(lhs) else ""
        b = rhs[i] if i < len(rhs) else ""
        rows.append(f"{a[:width]:<{width}} | {b}")
    return "\n".join(rows)
