"""The symbolic bytecode interpreter: one method per opcode (our InstructionTranslator).

It runs a function's bytecode without running the function.  The stack and
the locals hold variable trackers instead of values.  Each handler pops its
operands, hands them to the code of their kind of value — the ``variables/``
package, where builtins.py dispatches operators, subscripts, attributes and
calls to arrays.py, containers.py, functions.py, user_objects.py,
user_classes.py and numpy_calls.py — and pushes the result.  Array operations append nodes to the
:class:`OutputGraph`; Python values are computed for real, at trace time, and
become constants of the graph, guarded where they came from the frame.  When
it meets something it cannot follow it raises :class:`Unsupported`, and
:meth:`InstructionTranslator.run` records the reason with the user's file and
line — for a break inside library code, the user's line that called into it.

Version differences (where CPython puts a call's NULL, how keyword names reach
CALL) come from :mod:`minicompile.dynamo.bytecode`; the handlers below are
written once for 3.11, 3.12 and 3.13.
"""
from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass, replace
from typing import Any

from . import bytecode, loop_capture, while_loops
from .bytecode import CURRENT as VERSION
from .exc import BreakReason, Unsupported
from .output_graph import OutputGraph
from .user_code import is_user_file
from .source import attr_source, builtin_source, global_source, item_source, local_source
from .variables.base import NULL, ConstantVariable, PythonObjectVariable, VariableTracker
from .variables.builtins import (
    binary,
    call_function,
    compare,
    delitem,
    evaluate,
    get_attr,
    getitem,
    is_,
    setitem,
    truth,
    unary,
)
from .variables.containers import (
    DictVariable,
    ListVariable,
    TupleVariable,
    contains,
    dict_key,
    iterate,
    next_item,
    python_value,
    sequence_items,
    wrap_value,
)
from .variables.functions import (
    FUNCTION_ATTRIBUTE_FLAGS,
    CellVariable,
    load_deref,
    make_function,
    set_function_attribute,
    store_deref,
)
from .variables.user_classes import SuperVariable, describe_raise, enter_context, super_attr
from .variables.user_objects import delete_attr, store_attr

MAX_STEPS = 100_000  # instructions before we give up on a (loop-unrolling) trace

# Modules whose functions read their globals as fixed values, unguarded (as
# module_attr takes ``np.exp``): NumPy's own Python code and minicompile's polyfills.
LIBRARY_MODULES = ("numpy", "math", "minicompile.dynamo.polyfills")


def _is_library(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LIBRARY_MODULES)


@dataclass(frozen=True)
class FrameState:
    """The interpreter's view of the frame just before one instruction."""

    index: int  # of the instruction in ``instructions``
    stack: list
    locals: dict
    deleted: set
    kw_names: tuple
    mutations: int  # count of container mutations so far (see OutputGraph.mutations)
    guards: int  # how many guards the capture had (see GuardSet.forget_after)


class InstructionTranslator:
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
        self.lineno: int | None = self._first_line()
        self.return_value: VariableTracker | None = None

    def _first_line(self) -> int | None:
        """The line of the first instruction that runs; a resume function's prologue has
        none, so its jump is followed to the line it resumes at (which the guards on
        its parameters then name)."""
        i = 0
        while i < len(self.instructions):
            inst = self.instructions[i]
            if inst.positions is not None and inst.positions.lineno is not None:
                return inst.positions.lineno
            i = self.index_of[inst.argval] if inst.opname == "JUMP_FORWARD" else i + 1
        return self.code.co_firstlineno

    # -- driver ------------------------------------------------------------------

    def run(self) -> VariableTracker:
        """Interpret to the first RETURN; raise :class:`Unsupported` with a location."""
        try:
            for _ in range(MAX_STEPS):
                self.step()
                if self.return_value is not None:
                    return self.return_value
            raise Unsupported(f"trace longer than {MAX_STEPS} instructions")
        except Unsupported as e:
            filename = self.code.co_filename
            frame = f"{filename}:{self.lineno} in {self.code.co_name}"
            if not hasattr(e, "where"):  # the innermost frame knows the line
                e.where = BreakReason(e.reason, filename, self.lineno, e.numpy_error)
            if not is_user_file(filename):
                # Library code (or code made by exec, a dataclass's __init__): remember which
                # function the user called, and report the break at the user's line.
                e.library_call = getattr(self.fn, "__qualname__", self.code.co_qualname)
                e.library_module = self.f_globals.get("__name__")
            elif not is_user_file(e.where.filename):
                called = ".".join(p for p in (getattr(e, "library_module", None), e.library_call) if p)
                e.where = replace(e.where, reason=f"{e.where.reason} (in {called}, called here)",
                                  filename=filename, lineno=self.lineno)
            e.where = replace(e.where, user_stack=(frame,) + e.where.user_stack)
            raise

    def step(self) -> None:
        """Interpret the instruction at ``ip``."""
        inst = self.instructions[self.ip]
        # What the frame looked like before this instruction: a graph
        # break here resumes from exactly this state.
        self.snapshot = FrameState(self.ip, list(self.stack), dict(self.locals),
                                   set(self.deleted), self.kw_names, self.output.mutations,
                                   len(self.output.guards.guards))
        self.ip += 1
        if inst.positions is not None and inst.positions.lineno is not None:
            self.lineno = inst.positions.lineno
        self.output.tracer = self  # an inlined call's translator set it: take it back
        if self.parent is None:
            self.output.step += 1
        handler = getattr(self, inst.opname, None)
        if handler is None:
            raise Unsupported(f"bytecode {inst.opname} is not supported yet")
        handler(inst)

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

    # -- the frame: locals, globals, the chain of inlined calls ------------------------------

    def load_local(self, name: str) -> VariableTracker:
        if name in self.locals:
            return self.locals[name]
        if name in self.frame_locals and name not in self.deleted:
            var = self.output.wrap(self.frame_locals[name], local_source(name), self.lineno)
            self.locals[name] = var
            return var
        raise Unsupported(f"local variable {name!r} is read before it is assigned")

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
            if self.parent is not None and _is_library(self.f_globals.get("__name__") or ""):
                return wrap_value(self.f_globals[name])
            return self.output.wrap(self.f_globals[name], self.global_source(name), self.lineno)
        builtins_dict = self.f_globals.get("__builtins__", builtins.__dict__)
        if isinstance(builtins_dict, types.ModuleType):
            builtins_dict = builtins_dict.__dict__
        if name in builtins_dict:
            # Builtins are taken as they are; shadowing one at run time is not guarded.
            var = wrap_value(builtins_dict[name])
            var.source = builtin_source(name)
            return var
        raise Unsupported(f"NameError: name {name!r} is not defined", numpy_error=True)

    def frames(self) -> list["InstructionTranslator"]:
        frame, chain = self, []
        while frame is not None:
            chain.append(frame)
            frame = frame.parent
        return chain

    # -- locals and constants ------------------------------------------------------------------

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
        self.push(wrap_value(inst.argval))

    # -- globals and closures --------------------------------------------------------------------

    def LOAD_GLOBAL(self, inst) -> None:
        push_null = inst.arg & 1
        if push_null and VERSION.null_before_callable:
            self.push(NULL)
        self.push(self.load_global(inst.argval))
        if push_null and not VERSION.null_before_callable:
            self.push(NULL)

    def STORE_GLOBAL(self, inst) -> None:
        if self.f_globals is not self.root.f_globals:
            raise Unsupported(f"assignment to global {inst.argval!r} of another module")
        self.output.mutations += 1
        self.output.side_effects.store_global(inst.argval, self.pop())

    def LOAD_DEREF(self, inst) -> None:
        self.push(load_deref(self, inst.argval))

    def STORE_DEREF(self, inst) -> None:
        store_deref(self, inst.argval, self.pop())

    # -- attributes ----------------------------------------------------------------------------

    def push_method(self, method: VariableTracker) -> None:
        """Push a loaded method as [NULL, method] in the order CALL expects."""
        if VERSION.null_before_callable:
            self.push(NULL)
            self.push(method)
        else:
            self.push(method)
            self.push(NULL)

    def LOAD_ATTR(self, inst) -> None:
        attr = get_attr(self, self.pop(), inst.argval)
        if VERSION.load_attr_method_flag and inst.arg & 1:
            self.push_method(attr)
        else:
            self.push(attr)

    def LOAD_METHOD(self, inst) -> None:  # 3.11
        self.push_method(get_attr(self, self.pop(), inst.argval))

    def LOAD_SUPER_ATTR(self, inst) -> None:  # 3.12+: super().name, super(cls, obj).name
        obj, cls, global_super = self.pop(), self.pop(), self.pop()
        if not (isinstance(global_super, PythonObjectVariable) and global_super.value is builtins.super):
            raise Unsupported("super is not the builtin super")
        attr = super_attr(self, SuperVariable(python_value(cls), obj), inst.argval)
        if inst.arg & 1:
            self.push_method(attr)
        else:
            self.push(attr)

    def STORE_ATTR(self, inst) -> None:
        obj, value = self.pop(), self.pop()
        store_attr(self, obj, inst.argval, value)

    def DELETE_ATTR(self, inst) -> None:
        delete_attr(self, self.pop(), inst.argval)

    # -- subscripts ------------------------------------------------------------------------------

    def BINARY_SUBSCR(self, inst) -> None:
        index, container = self.pop(), self.pop()
        self.push(getitem(self, container, index))

    def BINARY_SLICE(self, inst) -> None:  # 3.12+
        stop, start, container = self.pop(), self.pop(), self.pop()
        key = ConstantVariable(slice(python_value(start), python_value(stop)))
        self.push(getitem(self, container, key))

    def STORE_SUBSCR(self, inst) -> None:
        key, container, value = self.pop(), self.pop(), self.pop()
        setitem(self, container, key, value)

    def STORE_SLICE(self, inst) -> None:  # 3.12+: container[start:stop] = value, as STORE_SUBSCR
        stop, start = self.pop(), self.pop()
        self.push(ConstantVariable(slice(python_value(start), python_value(stop))))
        self.STORE_SUBSCR(inst)

    def DELETE_SUBSCR(self, inst) -> None:
        key, container = self.pop(), self.pop()
        delitem(self, container, key)

    def BUILD_SLICE(self, inst) -> None:
        parts = [python_value(v) for v in self.popn(inst.arg)]
        self.push(ConstantVariable(slice(*parts)))

    # -- operators ------------------------------------------------------------------------

    def BINARY_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        symbol = inst.argrepr
        inplace = symbol.endswith("=")
        self.push(binary(self, symbol.rstrip("=") if inplace else symbol, a, b, inplace))

    def COMPARE_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        self.push(compare(self, bytecode.comparison_operator(inst), a, b))

    def UNARY_NEGATIVE(self, inst) -> None:
        self.push(unary(self, "negative", self.pop()))

    def UNARY_POSITIVE(self, inst) -> None:  # 3.11
        self.push(unary(self, "positive", self.pop()))

    def UNARY_INVERT(self, inst) -> None:
        self.push(unary(self, "invert", self.pop()))

    def UNARY_NOT(self, inst) -> None:
        self.push(ConstantVariable(not truth(self.pop())))

    def TO_BOOL(self, inst) -> None:  # 3.13
        self.push(ConstantVariable(truth(self.pop())))

    def CALL_INTRINSIC_1(self, inst) -> None:  # 3.12+
        if inst.argrepr == "INTRINSIC_UNARY_POSITIVE":
            self.UNARY_POSITIVE(inst)
        elif inst.argrepr == "INTRINSIC_LIST_TO_TUPLE":
            self.LIST_TO_TUPLE(inst)
        else:
            raise Unsupported(f"{inst.argrepr} is not supported yet")

    def IS_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        self.push(ConstantVariable(is_(self, a, b) != bool(inst.arg)))

    def CONTAINS_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
        self.push(ConstantVariable(contains(b, a) != bool(inst.arg)))

    # -- control flow on Python values ---------------------------------------------------------

    def _jump_if(self, inst, when: bool) -> None:
        if truth(self.pop()) == when and (self.index_of[inst.argval] > self.ip - 1
                                          or not while_loops.as_while_node(self, inst)):
            self.jump(inst)  # (3.11 jumps back to a while loop's body on its condition)

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
        if not truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_TRUE_OR_POP(self, inst) -> None:  # 3.11
        if truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_FORWARD(self, inst) -> None:
        self.jump(inst)

    JUMP = JUMP_FORWARD

    def JUMP_BACKWARD(self, inst) -> None:
        if not while_loops.as_while_node(self, inst):  # the rest of a while loop: one loop node
            self.jump(inst)

    JUMP_BACKWARD_NO_INTERRUPT = JUMP_FORWARD  # (yield from, await: no while loop)

    # -- loops: iterators known at trace time unroll (long counted ones may be one node) -----------------------------------------------

    def GET_ITER(self, inst) -> None:
        self.push(iterate(self, self.pop()))

    def FOR_ITER(self, inst) -> None:
        if loop_capture.as_loop_node(self, inst):  # a long counted loop: one loop node
            return
        item = next_item(self.stack[-1])
        if item is not None:
            self.push(item)
        else:
            self.pop()
            self.ip = self.index_of[inst.argval] + VERSION.for_iter_exhausted_skip

    # -- import of a module already imported: a lookup in sys.modules ----------------------------

    def IMPORT_NAME(self, inst) -> None:
        fromlist, level = python_value(self.pop()), python_value(self.pop())
        name = inst.argval
        if level != 0 or name not in sys.modules:
            raise Unsupported(f"import of {name!r}, not imported before the call")
        # ``import a.b`` binds ``a``; ``from a.b import c`` reads ``c`` from ``a.b`` (IMPORT_FROM).
        self.push(PythonObjectVariable(sys.modules[name if fromlist else name.partition(".")[0]]))

    def IMPORT_FROM(self, inst) -> None:
        self.push(get_attr(self, self.stack[-1], inst.argval))

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

    # -- returns and generators --------------------------------------------------------------------

    # -- with, raise, assert ---------------------------------------------------------------------------

    def BEFORE_WITH(self, inst) -> None:
        exit_fn, entered = enter_context(self, self.pop())
        self.push(exit_fn)  # called with (None, None, None) where the block ends normally
        self.push(entered)

    def LOAD_ASSERTION_ERROR(self, inst) -> None:
        self.push(PythonObjectVariable(AssertionError))

    def RAISE_VARARGS(self, inst) -> None:
        # The traced code raises: the frame runs as Python, which raises it itself
        # (with the user's traceback), so it counts as the program's own error.
        what = describe_raise(self.stack[-inst.arg]) if inst.arg else "a re-raised exception"
        raise Unsupported(f"{what} (raised by the function)", numpy_error=True)

    def RETURN_VALUE(self, inst) -> None:
        self.return_value = self.pop()

    def RETURN_CONST(self, inst) -> None:  # 3.12+
        self.return_value = wrap_value(inst.argval)

    def RETURN_GENERATOR(self, inst) -> None:  # a generator's first instruction
        self.yielded = []
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst) -> None:
        self.yielded.append(self.pop())
        self.push(ConstantVariable(None))  # what send() would pass back: next() sends None

    # -- building and unpacking containers ------------------------------------------------------------

    def BUILD_TUPLE(self, inst) -> None:
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst) -> None:
        self.push(ListVariable(self.popn(inst.arg)))

    def LIST_EXTEND(self, inst) -> None:
        items = sequence_items(self, self.pop())
        self.stack[-inst.arg].items.extend(items)

    def LIST_APPEND(self, inst) -> None:
        item = self.pop()
        self.stack[-inst.arg].items.append(item)

    def LIST_TO_TUPLE(self, inst) -> None:  # 3.11
        self.push(TupleVariable(list(self.pop().items)))

    def UNPACK_SEQUENCE(self, inst) -> None:
        items = sequence_items(self, self.pop())
        if len(items) != inst.arg:
            raise Unsupported(f"cannot unpack {len(items)} values into {inst.arg}")
        self.stack.extend(reversed(items))

    def UNPACK_EX(self, inst) -> None:
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = sequence_items(self, self.pop())
        if len(items) < before + after:
            raise Unsupported(f"not enough values to unpack (expected at least {before + after})")
        middle = ListVariable(items[before: len(items) - after])
        self.stack.extend(reversed(items[:before] + [middle] + items[len(items) - after:]))

    def BUILD_MAP(self, inst) -> None:
        flat = self.popn(2 * inst.arg)
        self.push(DictVariable({dict_key(k): v for k, v in zip(flat[::2], flat[1::2])}))

    def BUILD_CONST_KEY_MAP(self, inst) -> None:
        keys = python_value(self.pop())
        self.push(DictVariable(dict(zip(keys, self.popn(inst.arg)))))

    def MAP_ADD(self, inst) -> None:
        value, key = self.pop(), self.pop()
        self.stack[-inst.arg].items[dict_key(key)] = value

    def DICT_UPDATE(self, inst) -> None:
        other = self.pop()
        if not isinstance(other, DictVariable):
            raise Unsupported(f"dict update from {other.describe()}")
        self.stack[-inst.arg].items.update(other.items)

    DICT_MERGE = DICT_UPDATE

    # -- calls -------------------------------------------------------------------------------------

    def KW_NAMES(self, inst) -> None:  # 3.11, 3.12
        self.kw_names = bytecode.kw_names(inst, self.code)

    def _call(self, argc: int, kw_names: tuple[str, ...]) -> None:
        args = self.popn(argc)
        fn, self_arg = bytecode.split_callable(*self.popn(2), NULL)
        if self_arg is not None:
            args = [self_arg] + args
        n_kw = len(kw_names)
        positional = args[: len(args) - n_kw]
        keywords = dict(zip(kw_names, args[len(args) - n_kw:]))
        self.push(call_function(self, fn, positional, keywords))

    def CALL(self, inst) -> None:
        kw_names, self.kw_names = self.kw_names, ()
        self._call(inst.arg, kw_names)

    def CALL_KW(self, inst) -> None:  # 3.13
        kw_names = python_value(self.pop())
        self._call(inst.arg, kw_names)

    def CALL_FUNCTION_EX(self, inst) -> None:
        kwargs = self.pop() if inst.arg & 1 else DictVariable({})
        if not isinstance(kwargs, DictVariable):
            raise Unsupported(f"**kwargs from {kwargs.describe()}")
        args = sequence_items(self, self.pop())
        fn, self_arg = bytecode.split_callable(*self.popn(2), NULL)
        if self_arg is not None:
            args = [self_arg] + args
        self.push(call_function(self, fn, args, dict(kwargs.items)))

    # -- functions made during the trace (lambdas, nested defs, 3.11 comprehensions) ---------------

    def MAKE_FUNCTION(self, inst) -> None:
        fn = make_function(self, python_value(self.pop()))
        flags = inst.arg or 0  # 3.13 passes them through SET_FUNCTION_ATTRIBUTE instead
        for flag in FUNCTION_ATTRIBUTE_FLAGS:
            if flags & flag:
                set_function_attribute(fn, flag, self.pop())
        self.push(fn)

    def SET_FUNCTION_ATTRIBUTE(self, inst) -> None:  # 3.13
        fn = self.pop()
        set_function_attribute(fn, inst.arg, self.pop())
        self.push(fn)

    # -- strings (f-strings on Python values) ------------------------------------------------------------

    def FORMAT_VALUE(self, inst) -> None:  # 3.11, 3.12
        spec = python_value(self.pop()) if inst.arg & 0x04 else ""
        value = python_value(self.pop())
        convert = {1: str, 2: repr, 3: ascii}.get(inst.arg & 0x03)
        self.push(evaluate(format, convert(value) if convert else value, spec))

    def CONVERT_VALUE(self, inst) -> None:  # 3.13
        convert = {1: str, 2: repr, 3: ascii}[inst.arg]
        self.push(evaluate(convert, python_value(self.pop())))

    def FORMAT_SIMPLE(self, inst) -> None:  # 3.13
        self.push(evaluate(format, python_value(self.pop()), ""))

    def FORMAT_WITH_SPEC(self, inst) -> None:  # 3.13
        spec = python_value(self.pop())
        self.push(evaluate(format, python_value(self.pop()), spec))

    def BUILD_STRING(self, inst) -> None:
        self.push(ConstantVariable("".join(python_value(v) for v in self.popn(inst.arg))))
