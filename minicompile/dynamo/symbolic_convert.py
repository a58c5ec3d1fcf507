"""The symbolic bytecode interpreter: one method per opcode (our InstructionTranslator).

It runs a function's bytecode without running the function.  The stack and
the locals hold variable trackers instead of values: array operations append
nodes to the :class:`OutputGraph`; Python values are computed for real, at
trace time, and become constants of the graph, guarded where they came from
the frame.  When it meets something it cannot follow it raises
:class:`Unsupported`, and :meth:`InstructionTranslator.run` records the reason
with the user's file and line.

Version differences (where CPython puts a call's NULL, how keyword names reach
CALL) come from :mod:`minicompile.dynamo.bytecode`; the handlers below are
written once for 3.11, 3.12 and 3.13.  Attribute access (attributes.py) and
calls (calls.py) have modules of their own, mixed into the translator.
"""
from __future__ import annotations

import builtins
import operator
import types
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from . import bytecode
from .bytecode import CURRENT as VERSION
from .variables.user_objects import AttributesMixin
from .variables.functions import CallsMixin
from .variables.builtins import CONTAINER_METHODS
from .variables.containers import container_truth, delete_item, dict_contains, read_item, store_item
from .exc import BreakReason, Unsupported
from ..ir import OPS
from ..ir.symbolic import is_symbolic
from .output_graph import CONSTANT_TYPES, OutputGraph, specialize_sizes
from .source import (
    Source,
    attr_source,
    builtin_source,
    closure_source,
    global_source,
    item_source,
    local_source,
)
from .variables import (
    NULL,
    ArrayVariable,
    CellVariable,
    ConstantVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    PythonObjectVariable,
    TupleVariable,
    UserFunctionVariable,
    UserObjectVariable,
    VariableTracker,
)

# Python operators -> (operator function for Python values, ufunc op for arrays)
BINARY_OPS: dict[str, tuple[Callable, str | None]] = {
    "+": (operator.add, "add"),
    "-": (operator.sub, "subtract"),
    "*": (operator.mul, "multiply"),
    "/": (operator.truediv, "divide"),
    "//": (operator.floordiv, "floor_divide"),
    "%": (operator.mod, "remainder"),
    "**": (operator.pow, "power"),
    "@": (operator.matmul, "matmul"),
    "&": (operator.and_, "bitwise_and"),
    "|": (operator.or_, "bitwise_or"),
    "^": (operator.xor, "bitwise_xor"),
    "<<": (operator.lshift, "left_shift"),
    ">>": (operator.rshift, "right_shift"),
}
COMPARE_OPS: dict[str, tuple[Callable, str]] = {
    "<": (operator.lt, "less"),
    "<=": (operator.le, "less_equal"),
    ">": (operator.gt, "greater"),
    ">=": (operator.ge, "greater_equal"),
    "==": (operator.eq, "equal"),
    "!=": (operator.ne, "not_equal"),
}
# Trace-time functions under which a symbolic size stays symbolic (see evaluate).
SIZE_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
                             operator.neg, operator.pos, operator.eq, operator.ne, operator.lt,
                             operator.le, operator.gt, operator.ge})

UNARY_OPS: dict[str, tuple[Callable, str]] = {
    "negative": (operator.neg, "negative"),
    "positive": (operator.pos, "positive"),
    "invert": (operator.invert, "invert"),
}

MAX_STEPS = 100_000  # instructions before we give up on a (loop-unrolling) trace


@dataclass(frozen=True)
class FrameState:
    """The interpreter's view of the frame just before one instruction."""

    index: int  # of the instruction in ``instructions``
    stack: list
    locals: dict
    deleted: set
    kw_names: tuple
    mutations: int  # count of container mutations so far (see OutputGraph.mutations)


class InstructionTranslator(AttributesMixin, CallsMixin):
    """Interprets one frame.  The root frame reads its arguments from the real
    frame (``frame_locals``, wrapped lazily with ``L[...]`` sources); an inlined
    callee (:meth:`inline_call`) starts with variables already bound."""

    def __init__(self, fn: types.FunctionType, frame_locals: dict[str, Any], output: OutputGraph,
                 *, code: types.CodeType | None = None, bound: dict[str, VariableTracker] | None = None,
                 closure: tuple = (), f_globals: dict | None = None, fn_source: Any = None,
                 parent: "InstructionTranslator | None" = None):
        self.fn = fn
        self.code = code if code is not None else fn.__code__
        self.frame_locals = frame_locals
        self.f_globals = f_globals if f_globals is not None else fn.__globals__
        self.closure = closure if (closure or fn is None) else (fn.__closure__ or ())
        self.fn_source = fn_source
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.deleted: set[str] = set()
        self.output = output
        self.instructions = bytecode.instructions(self.code)
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.stack: list[VariableTracker] = []
        self.locals: dict[str, VariableTracker] = dict(bound or {})
        self.kw_names: tuple[str, ...] = ()
        self.ip = 0
        self.lineno: int | None = self.code.co_firstlineno
        self.return_value: VariableTracker | None = None

    # -- driver ------------------------------------------------------------------

    def run(self) -> VariableTracker:
        """Interpret to the first RETURN; raise :class:`Unsupported` with a location."""
        try:
            for _ in range(MAX_STEPS):
                inst = self.instructions[self.ip]
                # What the frame looked like before this instruction: a graph
                # break here resumes from exactly this state.
                self.snapshot = FrameState(self.ip, list(self.stack), dict(self.locals),
                                           set(self.deleted), self.kw_names, self.output.mutations)
                self.ip += 1
                if inst.positions is not None and inst.positions.lineno is not None:
                    self.lineno = inst.positions.lineno
                self.output.tracer = self  # an inlined call's translator set it: take it back
                handler = getattr(self, inst.opname, None)
                if handler is None:
                    raise Unsupported(f"bytecode {inst.opname} is not supported yet")
                handler(inst)
                if self.return_value is not None:
                    return self.return_value
            raise Unsupported(f"trace longer than {MAX_STEPS} instructions")
        except Unsupported as e:
            frame = f"{self.code.co_filename}:{self.lineno} in {self.code.co_name}"
            if not hasattr(e, "where"):  # the innermost frame knows the line
                e.where = BreakReason(e.reason, self.code.co_filename, self.lineno, e.numpy_error)
            e.where = replace(e.where, user_stack=(frame,) + e.where.user_stack)
            raise

    def push(self, var: VariableTracker) -> None:
        self.stack.append(var)

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, n: int) -> list[VariableTracker]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def jump(self, inst) -> None:
        self.ip = self.index_of[inst.argval]

    # -- Python values of variables ------------------------------------------------

    def python_value(self, var: VariableTracker) -> Any:
        """The real Python value of a variable known at trace time."""
        if isinstance(var, (ConstantVariable, PythonObjectVariable)):
            return var.value
        if isinstance(var, TupleVariable):
            return tuple(self.python_value(v) for v in var.items)
        if isinstance(var, ListVariable):
            return [self.python_value(v) for v in var.items]
        if isinstance(var, DictVariable):
            return {k: self.python_value(v) for k, v in var.items.items()}
        raise Unsupported(f"{var.describe()} is not known at trace time")

    def is_constant(self, var: VariableTracker) -> bool:
        if isinstance(var, (ConstantVariable, PythonObjectVariable)):
            return True
        if isinstance(var, (TupleVariable, ListVariable)):
            return all(self.is_constant(v) for v in var.items)
        if isinstance(var, DictVariable):
            return all(self.is_constant(v) for v in var.items.values())
        return False

    def wrap_value(self, value: Any) -> VariableTracker:
        """A variable for a value computed at trace time (no source, no guard)."""
        if type(value) is tuple:
            return TupleVariable([self.wrap_value(v) for v in value])
        if type(value) is list:
            return ListVariable([self.wrap_value(v) for v in value])
        if isinstance(value, np.ndarray):
            raise Unsupported("creating arrays from constants is not supported yet")
        if isinstance(value, CONSTANT_TYPES) or isinstance(value, (slice, range, types.CodeType)):
            return ConstantVariable(value)
        return PythonObjectVariable(value)

    def evaluate(self, fn: Callable, *args: Any, **kwargs: Any) -> VariableTracker:
        """Run ``fn`` at trace time on Python values; its error becomes eager's error.

        Symbolic sizes (dynamic shapes) stay symbolic through size arithmetic and
        comparisons only; any other function (``str``, ``float``, ``math.prod``)
        gets their example values, each guarded: it would not know a ``Sym``."""
        if fn not in SIZE_ARITHMETIC and is_symbolic((args, tuple(kwargs.values()))):
            args, kwargs = specialize_sizes(args), {k: specialize_sizes(v) for k, v in kwargs.items()}
        try:
            return self.wrap_value(fn(*args, **kwargs))
        except TypeError:
            if not is_symbolic((args, tuple(kwargs.values()))):
                raise
            # An operator the size type does not implement (s0 ** 2, s0 / 2).
            return self.evaluate(lambda: fn(*specialize_sizes(args), **specialize_sizes(kwargs)))
        except Unsupported:
            raise
        except Exception as e:
            name = getattr(fn, "__name__", repr(fn))
            raise Unsupported(f"{name}(...) raised {type(e).__name__}: {e}", numpy_error=True) from None

    def truth(self, var: VariableTracker) -> bool:
        if isinstance(var, ArrayVariable):
            raise Unsupported(
                "branch on an array value (bool(array)): data-dependent control flow"
            )
        known = container_truth(var)  # a list or dict: its length only
        return known if known is not None else bool(self.python_value(var))

    # -- loading and storing ----------------------------------------------------------

    def load_local(self, name: str) -> VariableTracker:
        if name in self.locals:
            return self.locals[name]
        if name in self.frame_locals and name not in self.deleted:
            var = self.output.wrap(self.frame_locals[name], local_source(name), self.lineno)
            self.locals[name] = var
            return var
        raise Unsupported(f"local variable {name!r} is read before it is assigned")

    def LOAD_FAST(self, inst) -> None:
        if inst.argval in self.code.co_cellvars:  # 3.13 loads a cell for a closure this way
            self.push(CellVariable(self, inst.argval))
        else:
            self.push(self.load_local(inst.argval))

    LOAD_FAST_CHECK = LOAD_CLOSURE = LOAD_FAST

    def LOAD_FAST_LOAD_FAST(self, inst) -> None:
        for name in inst.argval:
            self.push(self.load_local(name))

    def LOAD_FAST_AND_CLEAR(self, inst) -> None:
        self.push(self.locals.pop(inst.argval, NULL))

    def STORE_FAST(self, inst) -> None:
        self.locals[inst.argval] = self.pop()

    def STORE_FAST_STORE_FAST(self, inst) -> None:
        for name in inst.argval:
            self.locals[name] = self.pop()

    def STORE_FAST_LOAD_FAST(self, inst) -> None:
        store, load = inst.argval
        self.locals[store] = self.pop()
        self.push(self.load_local(load))

    def DELETE_FAST(self, inst) -> None:
        self.locals.pop(inst.argval, None)
        self.deleted.add(inst.argval)

    def LOAD_CONST(self, inst) -> None:
        self.push(self.wrap_value(inst.argval))

    def global_source(self, name: str):
        """Where a global of this frame lives, as seen from the root frame."""
        if self.parent is None or self.f_globals is self.root.f_globals:
            return global_source(name)
        if self.fn_source is not None:
            return item_source(attr_source(self.fn_source, "__globals__"), name)
        raise Unsupported(f"global {name!r} of a function defined in another module")

    @property
    def root(self) -> "InstructionTranslator":
        return self if self.parent is None else self.parent.root

    def load_global(self, name: str) -> VariableTracker:
        if self.f_globals is self.root.f_globals and name in self.output.side_effects.globals:
            return self.output.side_effects.globals[name]  # written earlier in this trace
        if name in self.f_globals:
            return self.output.wrap(self.f_globals[name], self.global_source(name), self.lineno)
        builtins_dict = self.f_globals.get("__builtins__", builtins.__dict__)
        if isinstance(builtins_dict, types.ModuleType):
            builtins_dict = builtins_dict.__dict__
        if name in builtins_dict:
            # Builtins are taken as they are; shadowing one at run time is not guarded.
            var = self.wrap_value(builtins_dict[name])
            var.source = builtin_source(name)
            return var
        raise Unsupported(f"name {name!r} is not defined")

    def STORE_GLOBAL(self, inst) -> None:
        if self.f_globals is not self.root.f_globals:
            raise Unsupported(f"assignment to global {inst.argval!r} of another module")
        self.output.mutations += 1
        self.output.side_effects.store_global(inst.argval, self.pop())

    def LOAD_GLOBAL(self, inst) -> None:
        push_null = inst.arg & 1
        if push_null and VERSION.null_before_callable:
            self.push(NULL)
        self.push(self.load_global(inst.argval))
        if push_null and not VERSION.null_before_callable:
            self.push(NULL)

    def LOAD_DEREF(self, inst) -> None:
        name = inst.argval
        if name not in self.code.co_freevars:  # a cell of this frame: an ordinary local here
            self.push(self.load_local(name))
            return
        index = self.code.co_freevars.index(name)
        cell = self.closure[index] if index < len(self.closure) else None
        if isinstance(cell, CellVariable):  # a function made during this trace
            self.push(cell.frame.load_local(cell.name))
            return
        if cell is None:
            raise Unsupported(f"closure variable {name!r} is not available")
        try:
            value = cell.cell_contents
        except ValueError:
            raise Unsupported(f"closure variable {name!r} is empty") from None
        if self.parent is None:
            source = closure_source(index)
        elif self.fn_source is not None:
            source = attr_source(Source(f"{attr_source(self.fn_source, '__closure__').expr}[{index}]"),
                                 "cell_contents")
        else:
            raise Unsupported(f"closure variable {name!r} of a function made outside the frame")
        self.push(self.output.wrap(value, source, self.lineno))

    def STORE_DEREF(self, inst) -> None:
        name = inst.argval
        if name in self.code.co_freevars:
            cell = self.closure[self.code.co_freevars.index(name)]
            if not isinstance(cell, CellVariable):
                raise Unsupported(f"assignment to closure variable {name!r} (nonlocal) of the caller")
            cell.frame.locals[name] = self.pop()
            self.output.mutations += 1
            return
        self.locals[name] = self.pop()

    def STORE_SUBSCR(self, inst) -> None:
        key, container, value = self.pop(), self.pop(), self.pop()
        if isinstance(container, ArrayVariable):
            if "setitem" not in OPS:
                raise Unsupported("array item assignment is not supported yet")
            if container.storage is None:
                raise Unsupported(f"TypeError: {container.describe()} does not support item assignment",
                                  numpy_error=True)
            updated = self.output.call("setitem", {"a": container, "key": self.index_key(key), "value": value})
            self.update_array(container, updated, "item assignment")
            return
        store_item(self, container, key, value)  # a list's or dict's: container_methods.py

    def DELETE_SUBSCR(self, inst) -> None:
        key, container = self.pop(), self.pop()
        delete_item(self, container, key)

    # -- in-place array updates: functional in the graph, written back after it ----------------

    def cast_in_place(self, result: ArrayVariable, target: ArrayVariable, op: str) -> ArrayVariable:
        """``x op= y`` stores into x: NumPy casts the result with 'same_kind' and never
        changes x's shape."""
        have, want = result.node.meta, target.node.meta
        if have.shape != want.shape:
            raise Unsupported(f"non-broadcastable output operand with shape {want.shape} doesn't match "
                              f"the broadcast shape {have.shape}", numpy_error=True)
        if have.dtype == want.dtype:
            return result
        if not np.can_cast(have.dtype, want.dtype, casting="same_kind"):
            raise Unsupported(f"Cannot cast ufunc '{op}' output from {have.dtype!r} to {want.dtype!r} "
                              f"with casting rule 'same_kind'", numpy_error=True)
        return self.output.call("astype", {"x": result, "dtype": want.dtype})

    def update_array(self, target: ArrayVariable, new: ArrayVariable, what: str) -> ArrayVariable:
        """``target`` now holds ``new``'s values (same shape and dtype), and so does the
        memory it shares with every other array: functionalized, see functionalization.py."""
        if target.storage is None:
            raise Unsupported(f"TypeError: {what}: {target.describe()} cannot be written in place",
                              numpy_error=True)
        self.output.mutations += 1
        self.output.functional.mutate(target, new.node, what)
        return target

    def frames(self) -> list["InstructionTranslator"]:
        frame, chain = self, []
        while frame is not None:
            chain.append(frame)
            frame = frame.parent
        return chain

    # -- operators ------------------------------------------------------------------------

    def binary(self, symbol: str, a: VariableTracker, b: VariableTracker, inplace: bool) -> VariableTracker:
        py_fn, op = BINARY_OPS[symbol]
        if self.is_constant(a) and self.is_constant(b):
            return self.evaluate(py_fn, self.python_value(a), self.python_value(b))
        if inplace and type(a) in CONTAINER_METHODS and isinstance(a, ListVariable):
            CONTAINER_METHODS[type(a)]["extend"](self, a, [b], {})  # lst += items extends lst itself
            return a
        if inplace and isinstance(a, ArrayVariable) and a.storage is not None:
            result = self.binary(symbol, a, b, inplace=False)
            return self.update_array(a, self.cast_in_place(result, a, op or symbol), f"'{symbol}='")
        for v in (a, b):
            if isinstance(v, (TupleVariable, ListVariable)):
                raise Unsupported(f"'{symbol}' between an array and a Python {v.describe()}")
        if op is None:
            raise Unsupported(f"operator '{symbol}' on arrays is not supported yet")
        fast = _fast_power(a, b) if symbol == "**" else None
        if fast is not None:
            return self.output.call(fast, {"x": a})
        return self.output.call(op, {"x1": a, "x2": b})

    def BINARY_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        symbol = inst.argrepr
        inplace = symbol.endswith("=")
        self.push(self.binary(symbol.rstrip("=") if inplace else symbol, a, b, inplace))

    def COMPARE_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        py_fn, op = COMPARE_OPS[bytecode.comparison_operator(inst)]
        if self.is_constant(a) and self.is_constant(b):
            self.push(self.evaluate(py_fn, self.python_value(a), self.python_value(b)))
        else:
            self.push(self.output.call(op, {"x1": a, "x2": b}))

    def unary(self, kind: str) -> None:
        var = self.pop()
        py_fn, op = UNARY_OPS[kind]
        if self.is_constant(var):
            self.push(self.evaluate(py_fn, self.python_value(var)))
        else:
            self.push(self.output.call(op, {"x": var}))

    def UNARY_NEGATIVE(self, inst) -> None:
        self.unary("negative")

    def UNARY_POSITIVE(self, inst) -> None:  # 3.11
        self.unary("positive")

    def UNARY_INVERT(self, inst) -> None:
        self.unary("invert")

    def UNARY_NOT(self, inst) -> None:
        self.push(ConstantVariable(not self.truth(self.pop())))

    def TO_BOOL(self, inst) -> None:  # 3.13
        self.push(ConstantVariable(self.truth(self.pop())))

    def LIST_TO_TUPLE(self, inst) -> None:  # 3.11
        self.push(TupleVariable(list(self.pop().items)))

    def CALL_INTRINSIC_1(self, inst) -> None:  # 3.12+
        if inst.argrepr == "INTRINSIC_UNARY_POSITIVE":
            self.unary("positive")
        elif inst.argrepr == "INTRINSIC_LIST_TO_TUPLE":
            self.LIST_TO_TUPLE(inst)
        else:
            raise Unsupported(f"{inst.argrepr} is not supported yet")

    def IS_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        objects = (ListVariable, DictVariable, UserObjectVariable)
        if isinstance(a, objects) or isinstance(b, objects):
            # One object is one variable (wrap deduplicates by identity, guarded).
            self.push(ConstantVariable((a is b) != bool(inst.arg)))
            return
        if self.is_constant(a) and self.is_constant(b):
            result = specialize_sizes(self.python_value(a)) is specialize_sizes(self.python_value(b))
        elif isinstance(a, ArrayVariable) != isinstance(b, ArrayVariable):
            result = False  # an array is never None, a constant or a module
        else:
            raise Unsupported("'is' between two arrays (their identity is not traced)")
        self.push(ConstantVariable(result != bool(inst.arg)))

    def CONTAINS_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        if isinstance(b, DictVariable):  # key in dict: only that key needs to be known
            result = dict_contains(self, b, a)
        else:
            result = self.python_value(a) in self.python_value(b)
        self.push(ConstantVariable(result != bool(inst.arg)))

    # -- control flow on Python values ---------------------------------------------------------

    def _jump_if(self, inst, when: bool) -> None:
        if self.truth(self.pop()) == when:
            self.jump(inst)

    def POP_JUMP_IF_FALSE(self, inst) -> None:
        self._jump_if(inst, False)

    def POP_JUMP_IF_TRUE(self, inst) -> None:
        self._jump_if(inst, True)

    def _jump_if_none(self, inst, when: bool) -> None:
        var = self.pop()
        is_none = isinstance(var, ConstantVariable) and var.value is None
        if is_none == when:
            self.jump(inst)

    def POP_JUMP_IF_NONE(self, inst) -> None:
        self._jump_if_none(inst, True)

    def POP_JUMP_IF_NOT_NONE(self, inst) -> None:
        self._jump_if_none(inst, False)

    # 3.11 spells the same jumps with a direction.
    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_IF_FALSE
    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_IF_TRUE
    POP_JUMP_FORWARD_IF_NONE = POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_IF_NONE
    POP_JUMP_FORWARD_IF_NOT_NONE = POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_IF_NOT_NONE

    def JUMP_IF_FALSE_OR_POP(self, inst) -> None:  # 3.11
        if not self.truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_TRUE_OR_POP(self, inst) -> None:  # 3.11
        if self.truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_FORWARD(self, inst) -> None:
        self.jump(inst)

    JUMP_BACKWARD = JUMP_BACKWARD_NO_INTERRUPT = JUMP = JUMP_FORWARD

    # -- stack shuffling and no-ops -------------------------------------------------------------------

    def POP_TOP(self, inst) -> None:
        self.pop()

    def PUSH_NULL(self, inst) -> None:
        self.push(NULL)

    def COPY(self, inst) -> None:
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst) -> None:
        self.stack[-1], self.stack[-inst.arg] = self.stack[-inst.arg], self.stack[-1]

    def NOP(self, inst) -> None:
        pass

    RESUME = PRECALL = EXTENDED_ARG = COPY_FREE_VARS = MAKE_CELL = NOP

    def RETURN_VALUE(self, inst) -> None:
        self.return_value = self.pop()

    def RETURN_GENERATOR(self, inst) -> None:  # a generator's first instruction
        self.yielded = []
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst) -> None:
        self.yielded.append(self.pop())
        self.push(ConstantVariable(None))  # what send() would pass back: next() sends None

    def RETURN_CONST(self, inst) -> None:  # 3.12+
        self.return_value = self.wrap_value(inst.argval)

    # -- containers ------------------------------------------------------------------------------

    def BUILD_TUPLE(self, inst) -> None:
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst) -> None:
        self.push(ListVariable(self.popn(inst.arg)))

    def LIST_EXTEND(self, inst) -> None:
        items = self.sequence_items(self.pop())
        self.stack[-inst.arg].items.extend(items)

    def LIST_APPEND(self, inst) -> None:
        item = self.pop()
        self.stack[-inst.arg].items.append(item)

    def sequence_items(self, var: VariableTracker) -> list[VariableTracker]:
        if isinstance(var, (TupleVariable, ListVariable)):
            return list(var.items)
        if isinstance(var, DictVariable):
            return [self.wrap_value(k) for k in var.keys()]  # the keys, not the values
        if isinstance(var, IteratorVariable):
            items, var.position = var.items[var.position:], len(var.items)
            return items
        if isinstance(var, ArrayVariable):
            raise Unsupported("iterating over an array is not supported yet")
        if isinstance(var, UserObjectVariable) and isinstance(var.value, tuple) and var.source is not None:
            return [self.output.wrap(v, item_source(var.source, i), self.lineno)  # a named tuple
                    for i, v in enumerate(var.value)]
        value = self.python_value(var)
        try:
            return [self.wrap_value(v) for v in value]
        except TypeError as e:
            raise Unsupported(f"TypeError: {e}") from None

    def UNPACK_SEQUENCE(self, inst) -> None:
        items = self.sequence_items(self.pop())
        if len(items) != inst.arg:
            raise Unsupported(f"cannot unpack {len(items)} values into {inst.arg}")
        self.stack.extend(reversed(items))

    def BUILD_SLICE(self, inst) -> None:
        parts = [self.python_value(v) for v in self.popn(inst.arg)]
        self.push(ConstantVariable(slice(*parts)))

    def index_key(self, index: VariableTracker) -> Any:
        """An array subscript as the getitem op takes it: constants, and arrays as variables."""
        if isinstance(index, ArrayVariable):
            return index
        if isinstance(index, TupleVariable):
            return tuple(self.index_key(v) for v in index.items)
        if isinstance(index, ListVariable):  # x[[0, 2]]: an integer-array index
            if not self.is_constant(index):
                raise Unsupported("indexing an array with a list of arrays is not supported yet")
        return self.python_value(index)

    def subscript(self, container: VariableTracker, index: VariableTracker) -> VariableTracker:
        if isinstance(container, ArrayVariable):
            if "getitem" not in OPS:
                raise Unsupported("array indexing is not supported yet")
            return self.output.call("getitem", {"a": container, "key": self.index_key(index)})
        if isinstance(container, (DictVariable, ListVariable)):
            return read_item(self, container, index)  # reads that item only: container_methods.py
        key = self.python_value(index)
        if isinstance(container, TupleVariable):
            try:
                picked = container.items[key]
            except (IndexError, TypeError) as e:
                raise Unsupported(f"{type(e).__name__}: {e}") from None
            return TupleVariable(picked) if isinstance(key, slice) else picked
        return self.evaluate(operator.getitem, self.python_value(container), key)

    def BINARY_SUBSCR(self, inst) -> None:
        index, container = self.pop(), self.pop()
        self.push(self.subscript(container, index))

    def BINARY_SLICE(self, inst) -> None:  # 3.12+
        stop, start, container = self.pop(), self.pop(), self.pop()
        key = ConstantVariable(slice(self.python_value(start), self.python_value(stop)))
        self.push(self.subscript(container, key))

    def STORE_SLICE(self, inst) -> None:  # 3.12+: container[start:stop] = value, as STORE_SUBSCR
        stop, start = self.pop(), self.pop()
        self.push(ConstantVariable(slice(self.python_value(start), self.python_value(stop))))
        self.STORE_SUBSCR(inst)

    def UNPACK_EX(self, inst) -> None:
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = self.sequence_items(self.pop())
        if len(items) < before + after:
            raise Unsupported(f"not enough values to unpack (expected at least {before + after})")
        middle = ListVariable(items[before: len(items) - after])
        self.stack.extend(reversed(items[:before] + [middle] + items[len(items) - after:]))

    def dict_key(self, var: VariableTracker) -> Any:
        key = specialize_sizes(self.python_value(var))  # looked up by its value, guarded
        try:
            hash(key)
        except TypeError:
            raise Unsupported(f"unhashable dict key {var.describe()}") from None
        return key

    def BUILD_MAP(self, inst) -> None:
        flat = self.popn(2 * inst.arg)
        self.push(DictVariable({self.dict_key(k): v for k, v in zip(flat[::2], flat[1::2])}))

    def BUILD_CONST_KEY_MAP(self, inst) -> None:
        keys = self.python_value(self.pop())
        self.push(DictVariable(dict(zip(keys, self.popn(inst.arg)))))

    def MAP_ADD(self, inst) -> None:
        value, key = self.pop(), self.pop()
        self.stack[-inst.arg].items[self.dict_key(key)] = value

    def DICT_UPDATE(self, inst) -> None:
        other = self.pop()
        if not isinstance(other, DictVariable):
            raise Unsupported(f"dict update from {other.describe()}")
        self.stack[-inst.arg].items.update(other.items)

    DICT_MERGE = DICT_UPDATE

    # -- loops: iterators known at trace time unroll -----------------------------------------------

    def GET_ITER(self, inst) -> None:
        var = self.pop()
        if isinstance(var, IteratorVariable):
            self.push(var)
        elif isinstance(var, ListVariable):
            # A list iterator sees items appended during the loop: share the item list.
            self.push(IteratorVariable(var.items))
        else:
            self.push(IteratorVariable(self.sequence_items(var)))

    def FOR_ITER(self, inst) -> None:
        it = self.stack[-1]
        if not isinstance(it, IteratorVariable):
            raise Unsupported(f"for loop over {it.describe()}")
        if it.position < len(it.items):
            self.push(it.items[it.position])
            it.position += 1
        else:
            self.pop()
            self.ip = self.index_of[inst.argval] + VERSION.for_iter_exhausted_skip

    # -- functions made during the trace (lambdas, nested defs, 3.11 comprehensions) ---------------

    def MAKE_FUNCTION(self, inst) -> None:
        code = self.python_value(self.pop())
        fn = UserFunctionVariable(code, globals=self.f_globals)
        flags = inst.arg or 0  # 3.13 passes them through SET_FUNCTION_ATTRIBUTE instead
        for flag in (0x08, 0x04, 0x02, 0x01):
            if flags & flag:
                self.set_function_attribute(fn, flag, self.pop())
        self.push(fn)

    def SET_FUNCTION_ATTRIBUTE(self, inst) -> None:  # 3.13
        fn = self.pop()
        self.set_function_attribute(fn, inst.arg, self.pop())
        self.push(fn)

    def set_function_attribute(self, fn: UserFunctionVariable, flag: int, value: VariableTracker) -> None:
        if flag == 0x08:
            fn.closure = tuple(value.items)
        elif flag == 0x02:
            fn.kwdefaults = dict(value.items)
        elif flag == 0x01:
            fn.defaults = tuple(value.items)
        # 0x04 (annotations) changes nothing the trace can see

    # -- strings (f-strings on Python values) ------------------------------------------------------------

    def FORMAT_VALUE(self, inst) -> None:  # 3.11, 3.12
        spec = self.python_value(self.pop()) if inst.arg & 0x04 else ""
        value = self.python_value(self.pop())
        convert = {1: str, 2: repr, 3: ascii}.get(inst.arg & 0x03)
        self.push(self.evaluate(format, convert(value) if convert else value, spec))

    def CONVERT_VALUE(self, inst) -> None:  # 3.13
        convert = {1: str, 2: repr, 3: ascii}[inst.arg]
        self.push(self.evaluate(convert, self.python_value(self.pop())))

    def FORMAT_SIMPLE(self, inst) -> None:  # 3.13
        self.push(self.evaluate(format, self.python_value(self.pop()), ""))

    def FORMAT_WITH_SPEC(self, inst) -> None:  # 3.13
        spec = self.python_value(self.pop())
        self.push(self.evaluate(format, self.python_value(self.pop()), spec))

    def BUILD_STRING(self, inst) -> None:
        self.push(ConstantVariable("".join(self.python_value(v) for v in self.popn(inst.arg))))

def _fast_power(base: VariableTracker, exponent: VariableTracker) -> str | None:
    """The ufunc ``ndarray.__pow__`` uses instead of np.power for a Python-number exponent.

    NumPy computes ``x ** 2`` as ``np.square(x)`` (so ``bool ** 2`` is int8) and,
    for float arrays, ``x ** 0.5`` as ``np.sqrt(x)`` (so ``-inf ** 0.5`` is nan);
    its other shortcuts agree with np.power.  NumPy scalars take no shortcut.
    """
    if not isinstance(base, ArrayVariable) or base.scalar or not isinstance(exponent, ConstantVariable):
        return None
    value = exponent.value
    if type(value) not in (int, float):
        return None
    if base.node.meta.dtype.kind == "f":
        return {0.5: "sqrt", 2: "square"}.get(value)
    return "square" if type(value) is int and value == 2 else None

