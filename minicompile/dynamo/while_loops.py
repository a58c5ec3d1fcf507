"""``while`` loops on Python numbers as one loop node: ``while k < n: ...; k += 1``.

In:  the interpreter at a ``while`` loop's back edge, the first time it is taken (the
     first iteration has run, unrolled, and its condition was true).
Out: True when the rest of the loop became one ``loop`` node of the graph, as a
     counted loop does (:mod:`.loop_capture`): the locals hold its results and the
     interpreter continues after the loop; False when it unrolls.

Since 3.11 CPython writes the condition twice: once before the loop, and once at
its end, where it jumps back to the body's start (3.11:
``POP_JUMP_BACKWARD_IF_TRUE``; 3.12 and 3.13: ``POP_JUMP_IF_FALSE`` past the loop,
then ``JUMP_BACKWARD``).  The body is traced once from that start, with the Python
numbers it changes carried (``k``, ``t``: loop_numbers.py), so the condition at its
end is a value of the body's graph, computed from those numbers alone.  Capture
then runs the loop's Python arithmetic now (``loop_numbers.simulate``) until the
condition is false: that is the trip count, and the loop node counts it.  The
index is the iteration's number, which the body does not see.

A condition on array values (``while err > tol``) is data-dependent control flow:
the loop unrolls, and the branch breaks the graph as before.  So do a ``break``,
a ``while True``, a condition that does not change, and a loop that would run
more than ``loop_numbers.MAX_SIMULATED_ITERATIONS`` times.  torch.compile's twin is
the ``while_loop`` higher-order op, whose condition is a graph of its own run on
the device; here the condition is on Python values, so it is run at capture and
the node is a counted loop.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import config
from .exc import Unsupported
from .graph_break import JUMPS_IF_FALSE, JUMPS_IF_TRUE
from .loop_capture import LoopTrace, try_as_node
from .loop_numbers import CarriedNumber, simulate
from .variables.arrays import ArrayVariable

if TYPE_CHECKING:
    from .symbolic_convert import InstructionTranslator

CONDITIONAL_JUMPS = JUMPS_IF_TRUE | JUMPS_IF_FALSE


def as_while_node(tx: "InstructionTranslator", inst: Any) -> bool:
    """At a backward jump: the rest of a ``while`` loop as one node, or False (it jumps)."""
    head = tx.index_of[inst.argval]
    back = tx.ip - 1
    if head > back or tx.instructions[head].opname in ("FOR_ITER", "EXTENDED_ARG"):
        return False  # not backward, or a for loop's back edge
    key = (tx.code, inst.argval)
    scope = tx.output.loop_scope
    while scope is not None:
        if scope.key == key:
            return False  # the back edge of the body being traced
        scope = scope.parent
    how = tx.output.unrolled_loops.get(key)
    if how == "unroll":
        return False
    carry, attributes = (how[1], how[2]) if isinstance(how, tuple) else ((), ())
    return try_as_node(tx, WhileTrace(tx, inst, key, carry, attributes, head, back))


class WhileTrace(LoopTrace):
    """One trial of a while loop, from the body's start after its first iteration."""

    can_peel = False  # its first iteration has run already

    def __init__(self, tx: "InstructionTranslator", inst: Any, key: tuple, carry: tuple, attributes: tuple,
                 head: int, back: int):
        super().__init__(tx, inst, None, key, carry, attributes)
        self.head, self.back = head, back
        self.condition: tuple[Any, bool] | None = None  # (its node in the body, the value that goes on)
        last = tx.instructions[back]
        if last.opname in CONDITIONAL_JUMPS:  # 3.11: jumps back while the condition holds
            self.test, self.goes_on = back, last.opname in JUMPS_IF_TRUE
        elif back > 0 and tx.instructions[back - 1].opname in CONDITIONAL_JUMPS \
                and tx.index_of[tx.instructions[back - 1].argval] == back + 1:
            self.test = back - 1  # 3.12+: jumps past the loop when the condition fails
            self.goes_on = tx.instructions[back - 1].opname in JUMPS_IF_FALSE
        else:
            raise Unsupported("a while loop without a condition at the end of its body (while True)")

    def _bounds(self) -> tuple[int, int, int, int]:
        return self.head, self.head, self.head, self.back + 1

    def _index_bounds(self) -> tuple:
        return (int, None, None)

    def _enter(self, index: ArrayVariable) -> None:
        self.tx.ip = self.head

    def _before_step(self) -> bool:
        """At the condition: a Python number the body computed ends the iteration (the
        loop goes on, as far as this trace is concerned); the count comes from running it."""
        tx = self.tx
        top = tx.stack[-1] if tx.stack else None
        if not (isinstance(top, ArrayVariable) and top.weak is not None and top.python is None):
            return False  # a value known now: the interpreter takes the branch (out of the loop: unrolls)
        if tx.ip == self.test - 1 and tx.instructions[tx.ip].opname == "TO_BOOL":  # 3.13
            tx.ip += 1
            return True
        if tx.ip == self.test:
            tx.pop()
            self.condition = (top.node, self.goes_on)
            tx.ip = self.head if self.test == self.back else self.back
            return True
        return False

    def _count(self, numbers: list[CarriedNumber], body: Any, index: Any, kept: list) -> None:
        if self.condition is None:
            raise Unsupported("the while loop's condition does not depend on what the body changes")
        self.finals, count, self.last_values = simulate(numbers, index, body, None, self.condition, also=kept)
        if count <= config.loop_unroll_limit:
            raise Unsupported(f"{count} more iterations: a short loop unrolls")
        self.range, self.count = range(count), count

    def _leave(self) -> None:
        self.tx.ip = self.back + 1
