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
written once for 3.11, 3.12 and 3.13.
"""
from __future__ import annotations

import builtins
import operator
import types
from typing import Any, Callable

import numpy as np

from . import bytecode
from .bytecode import CURRENT as VERSION
from .exc import BreakReason, Unsupported
from .numpy_calls import FUNCTIONS, METHODS, bind_call
from .output_graph import CONSTANT_TYPES, OutputGraph
from .source import attr_source, builtin_source, closure_source, global_source, local_source
from .variables import (
    NULL,
    ArrayVariable,
    ConstantVariable,
    ListVariable,
    MethodVariable,
    PythonObjectVariable,
    TupleVariable,
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
    "<<": (operator.lshift, None),
    ">>": (operator.rshift, None),
}
COMPARE_OPS: dict[str, tuple[Callable, str]] = {
    "<": (operator.lt, "less"),
    "<=": (operator.le, "less_equal"),
    ">": (operator.gt, "greater"),
    ">=": (operator.ge, "greater_equal"),
    "==": (operator.eq, "equal"),
    "!=": (operator.ne, "not_equal"),
}
UNARY_OPS: dict[str, tuple[Callable, str]] = {
    "negative": (operator.neg, "negative"),
    "positive": (operator.pos, "positive"),
    "invert": (operator.invert, "invert"),
}

# Callables that are safe to run at trace time on constant arguments: they are
# pure, so running them early gives exactly the value eager execution would.
PURE_BUILTINS = {abs, bool, float, int, str, len, min, max, round, pow, divmod, tuple, range,
                 isinstance, type, getattr, hasattr, repr, format, sum, any, all, sorted}
PURE_MODULES = ("math",)

MAX_STEPS = 100_000  # instructions before we give up on a (loop-unrolling) trace


class InstructionTranslator:
    def __init__(self, fn: types.FunctionType, frame_locals: dict[str, Any], output: OutputGraph):
        self.fn = fn
        self.code = fn.__code__
        self.frame_locals = frame_locals
        self.f_globals = fn.__globals__
        self.output = output
        self.instructions = bytecode.instructions(self.code)
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.stack: list[VariableTracker] = []
        self.locals: dict[str, VariableTracker] = {}
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
                self.ip += 1
                if inst.positions is not None and inst.positions.lineno is not None:
                    self.lineno = inst.positions.lineno
                handler = getattr(self, inst.opname, None)
                if handler is None:
                    raise Unsupported(f"bytecode {inst.opname} is not supported yet")
                handler(inst)
                if self.return_value is not None:
                    return self.return_value
            raise Unsupported(f"trace longer than {MAX_STEPS} instructions")
        except Unsupported as e:
            e.where = BreakReason(e.reason, self.code.co_filename, self.lineno, e.numpy_error)
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
        raise Unsupported(f"{var.describe()} is not known at trace time")

    def is_constant(self, var: VariableTracker) -> bool:
        if isinstance(var, (ConstantVariable, PythonObjectVariable)):
            return True
        if isinstance(var, (TupleVariable, ListVariable)):
            return all(self.is_constant(v) for v in var.items)
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
        """Run ``fn`` at trace time on Python values; its error becomes eager's error."""
        try:
            return self.wrap_value(fn(*args, **kwargs))
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
        return bool(self.python_value(var))

    # -- loading and storing ----------------------------------------------------------

    def load_local(self, name: str) -> VariableTracker:
        if name in self.locals:
            return self.locals[name]
        if name in self.frame_locals:
            var = self.output.wrap(self.frame_locals[name], local_source(name), self.lineno)
            self.locals[name] = var
            return var
        raise Unsupported(f"local variable {name!r} is read before it is assigned")

    def LOAD_FAST(self, inst) -> None:
        self.push(self.load_local(inst.argval))

    LOAD_FAST_CHECK = LOAD_FAST

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

    def LOAD_CONST(self, inst) -> None:
        self.push(self.wrap_value(inst.argval))

    def load_global(self, name: str) -> VariableTracker:
        if name in self.f_globals:
            return self.output.wrap(self.f_globals[name], global_source(name), self.lineno)
        builtins_dict = self.f_globals.get("__builtins__", builtins.__dict__)
        if isinstance(builtins_dict, types.ModuleType):
            builtins_dict = builtins_dict.__dict__
        if name in builtins_dict:
            # Builtins are taken as they are; shadowing one at run time is not guarded.
            var = self.wrap_value(builtins_dict[name])
            var.source = builtin_source(name)
            return var
        raise Unsupported(f"name {name!r} is not defined")

    def LOAD_GLOBAL(self, inst) -> None:
        push_null = inst.arg & 1
        if push_null and VERSION.null_before_callable:
            self.push(NULL)
        self.push(self.load_global(inst.argval))
        if push_null and not VERSION.null_before_callable:
            self.push(NULL)

    def LOAD_DEREF(self, inst) -> None:
        name = inst.argval
        if name in self.locals:  # a cell variable this frame assigned
            self.push(self.locals[name])
            return
        if name not in self.code.co_freevars or self.fn.__closure__ is None:
            raise Unsupported(f"closure variable {name!r} is not supported here")
        index = self.code.co_freevars.index(name)
        try:
            value = self.fn.__closure__[index].cell_contents
        except ValueError:
            raise Unsupported(f"closure variable {name!r} is empty") from None
        self.push(self.output.wrap(value, closure_source(index), self.lineno))

    def STORE_DEREF(self, inst) -> None:
        if inst.argval in self.code.co_freevars:
            raise Unsupported(f"assignment to closure variable {inst.argval!r} (nonlocal)")
        self.locals[inst.argval] = self.pop()

    # -- attributes ------------------------------------------------------------------------

    def get_attr(self, obj: VariableTracker, name: str) -> VariableTracker:
        if isinstance(obj, ArrayVariable):
            return self.array_attr(obj, name)
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, types.ModuleType):
            try:
                value = getattr(obj.value, name)
            except AttributeError as e:
                raise Unsupported(f"AttributeError: {e}") from None
            # Module attributes (np.exp, math.pi) are taken as fixed: not guarded.
            var = self.wrap_value(value)
            var.source = attr_source(obj.source, name) if obj.source else None
            return var
        if self.is_constant(obj):
            value = self.python_value(obj)
            if isinstance(value, (str, int, float, np.generic, np.dtype, tuple)):
                return self.evaluate(getattr, value, name)
        raise Unsupported(f"attribute .{name} of {obj.describe()} is not supported yet")

    def array_attr(self, arr: ArrayVariable, name: str) -> VariableTracker:
        meta = arr.node.meta
        # shape, dtype and strides are guarded on every array input, so these
        # are constants of this cache entry.
        facts = {
            "shape": meta.shape, "ndim": meta.ndim, "size": meta.size, "dtype": meta.dtype,
            "itemsize": meta.dtype.itemsize, "nbytes": meta.size * meta.dtype.itemsize,
        }
        if name in facts:
            return self.wrap_value(facts[name])
        if name == "T":
            return self.output.call("transpose", {"a": arr, "axes": ConstantVariable(None)})
        if name in METHODS:
            return MethodVariable(arr, name)
        raise Unsupported(f"ndarray attribute .{name} is not supported yet")

    def push_method(self, method: VariableTracker) -> None:
        """Push a loaded method as [NULL, method] in the order CALL expects."""
        if VERSION.null_before_callable:
            self.push(NULL)
            self.push(method)
        else:
            self.push(method)
            self.push(NULL)

    def LOAD_ATTR(self, inst) -> None:
        obj = self.pop()
        attr = self.get_attr(obj, inst.argval)
        if VERSION.load_attr_method_flag and inst.arg & 1:
            self.push_method(attr)
        else:
            self.push(attr)

    def LOAD_METHOD(self, inst) -> None:  # 3.11
        self.push_method(self.get_attr(self.pop(), inst.argval))

    # -- operators ------------------------------------------------------------------------

    def binary(self, symbol: str, a: VariableTracker, b: VariableTracker, inplace: bool) -> VariableTracker:
        py_fn, op = BINARY_OPS[symbol]
        if self.is_constant(a) and self.is_constant(b):
            return self.evaluate(py_fn, self.python_value(a), self.python_value(b))
        if inplace and isinstance(a, ArrayVariable):
            raise Unsupported(f"in-place array update (x {symbol}= ...) is not supported yet")
        for v in (a, b):
            if isinstance(v, (TupleVariable, ListVariable)):
                raise Unsupported(f"'{symbol}' between an array and a Python {v.describe()}")
        if op is None:
            raise Unsupported(f"operator '{symbol}' on arrays is not supported yet")
        if (symbol == "**" and isinstance(a, ArrayVariable) and not a.scalar
                and isinstance(b, ConstantVariable) and type(b.value) is int and b.value == 2):
            # ndarray.__pow__ computes x ** 2 as np.square(x): bool ** 2 is int8.
            return self.output.call("square", {"x": a})
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
        if self.is_constant(a) and self.is_constant(b):
            result = self.python_value(a) is self.python_value(b)
        elif isinstance(a, ArrayVariable) != isinstance(b, ArrayVariable):
            result = False  # an array is never None, a constant or a module
        else:
            raise Unsupported("'is' between two arrays (their identity is not traced)")
        self.push(ConstantVariable(result != bool(inst.arg)))

    def CONTAINS_OP(self, inst) -> None:
        b, a = self.pop(), self.pop()
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
        if isinstance(var, ArrayVariable):
            raise Unsupported("iterating over an array is not supported yet")
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

    def subscript(self, container: VariableTracker, index: VariableTracker) -> VariableTracker:
        if isinstance(container, ArrayVariable):
            raise Unsupported("array indexing is not supported yet")
        key = self.python_value(index)
        if isinstance(container, (TupleVariable, ListVariable)):
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

    # -- calls ---------------------------------------------------------------------------------------

    def KW_NAMES(self, inst) -> None:  # 3.11, 3.12
        self.kw_names = bytecode.kw_names(inst, self.code)

    def _call(self, argc: int, kw_names: tuple[str, ...]) -> None:
        args = self.popn(argc)
        first, second = self.popn(2)
        if VERSION.null_before_callable:
            fn, self_arg = (second, None) if first is NULL else (first, second)
        else:
            fn, self_arg = first, (None if second is NULL else second)
        if self_arg is not None:
            args = [self_arg] + args
        n_kw = len(kw_names)
        positional = args[: len(args) - n_kw]
        keywords = dict(zip(kw_names, args[len(args) - n_kw:]))
        self.push(self.call_function(fn, positional, keywords))

    def CALL(self, inst) -> None:
        kw_names, self.kw_names = self.kw_names, ()
        self._call(inst.arg, kw_names)

    def CALL_KW(self, inst) -> None:  # 3.13
        kw_names = self.python_value(self.pop())
        self._call(inst.arg, kw_names)

    def CALL_FUNCTION_EX(self, inst) -> None:
        kwargs = self.pop() if inst.arg & 1 else None
        if kwargs is not None:
            raise Unsupported("calls with **kwargs are not supported yet")
        args = self.sequence_items(self.pop())
        first, second = self.popn(2)
        fn = second if (VERSION.null_before_callable and first is NULL) else first
        if not VERSION.null_before_callable and second is not NULL:
            args = [second] + args
        self.push(self.call_function(fn, args, {}))

    def call_function(self, fn: VariableTracker, args: list, kwargs: dict) -> VariableTracker:
        if isinstance(fn, MethodVariable):
            return self.call_numpy(METHODS[fn.name], [fn.obj] + args, kwargs, f"ndarray.{fn.name}")
        if not isinstance(fn, (PythonObjectVariable, ConstantVariable)):
            raise Unsupported(f"calling {fn.describe()} is not supported")
        target = fn.value
        name = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
        all_constant = all(self.is_constant(a) for a in args) and all(
            self.is_constant(v) for v in kwargs.values()
        )
        if _hashable(target) and target in FUNCTIONS and not all_constant:
            return self.call_numpy(FUNCTIONS[target], args, kwargs, f"np.{name}")
        if all_constant and _pure(target):
            values = [self.python_value(a) for a in args]
            kw_values = {k: self.python_value(v) for k, v in kwargs.items()}
            return self.evaluate(target, *values, **kw_values)
        if target is len and len(args) == 1 and not kwargs:
            return self.builtin_len(args[0])
        if target is abs and len(args) == 1 and not kwargs:
            return self.output.call("absolute", {"x": args[0]})
        if target is isinstance and len(args) == 2 and isinstance(args[0], ArrayVariable):
            # The array's exact type is guarded, so this is a constant of the entry.
            return ConstantVariable(issubclass(np.ndarray, self.python_value(args[1])))
        raise Unsupported(f"call to {name} is not supported yet")

    def call_numpy(self, rule, args: list, kwargs: dict, what: str) -> VariableTracker:
        # Constants reach the op binding as plain values, so defaults compare as NumPy's do.
        plain = [self.plain(a) for a in args]
        plain_kw = {k: self.plain(v) for k, v in kwargs.items()}
        return self.output.call(rule.op, bind_call(rule, plain, plain_kw, what))

    def plain(self, var: VariableTracker) -> Any:
        return self.python_value(var) if self.is_constant(var) else var

    def builtin_len(self, var: VariableTracker) -> VariableTracker:
        if isinstance(var, ArrayVariable):
            if var.node.meta.ndim == 0:
                raise Unsupported("TypeError: len() of unsized object", numpy_error=True)
            return ConstantVariable(var.node.meta.shape[0])
        if isinstance(var, (TupleVariable, ListVariable)):
            return ConstantVariable(len(var.items))
        raise Unsupported(f"len() of {var.describe()}")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _pure(fn: Any) -> bool:
    """May ``fn`` run at trace time?  Pure NumPy functions, math, a few builtins, scalar types."""
    if _hashable(fn) and (fn in PURE_BUILTINS or fn in FUNCTIONS):
        return True
    if isinstance(fn, type) and (issubclass(fn, np.generic) or fn is np.dtype):
        return True
    module = getattr(fn, "__module__", None) or ""
    if module in PURE_MODULES:
        return True
    # Bound methods of immutable values ("{}".format, (3).bit_length)
    owner = getattr(fn, "__self__", None)
    return isinstance(owner, (str, int, float, tuple, np.generic, np.dtype)) and not isinstance(owner, type)

