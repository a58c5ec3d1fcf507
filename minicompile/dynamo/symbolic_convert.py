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
import inspect
import operator
import types
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from . import bytecode
from .bytecode import CURRENT as VERSION
from .binder import make_binder, varargs_names
from .builtin_calls import BUILTINS, CONTAINER_METHODS, shallow_builtin
from .container_methods import container_truth, delete_item, dict_contains, read_item, store_item
from .exc import BreakReason, Unsupported
from .side_effects import delete_attribute
from .numpy_calls import FUNCTIONS, METHOD_MUTATIONS, METHODS, MUTATIONS, SPLITS, bind_call, split_calls
from ..ir import OPS, get_op
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
    MethodVariable,
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

# Callables that are safe to run at trace time on constant arguments: they are
# pure, so running them early gives exactly the value eager execution would.
PURE_BUILTINS = {abs, bool, float, int, str, len, min, max, round, pow, divmod, tuple, range, slice,
                 isinstance, type, getattr, hasattr, repr, format, sum, any, all, sorted}
PURE_MODULES = ("math",)

# Modules whose attributes are read once and trusted not to change (not guarded).
FIXED_MODULES = frozenset({"numpy", "math", "builtins", "operator", "functools", "itertools",
                           "collections", "typing", "minicompile"})

MAX_STEPS = 100_000  # instructions before we give up on a (loop-unrolling) trace


MAX_INLINE_DEPTH = 32


@dataclass(frozen=True)
class FrameState:
    """The interpreter's view of the frame just before one instruction."""

    index: int  # of the instruction in ``instructions``
    stack: list
    locals: dict
    deleted: set
    kw_names: tuple
    mutations: int  # count of container mutations so far (see OutputGraph.mutations)


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

    # -- attributes ------------------------------------------------------------------------

    def get_attr(self, obj: VariableTracker, name: str) -> VariableTracker:
        if isinstance(obj, ArrayVariable):
            return self.array_attr(obj, name)
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, types.ModuleType):
            try:
                value = getattr(obj.value, name)
            except AttributeError as e:
                raise Unsupported(f"AttributeError: {e}") from None
            module = obj.value.__name__.split(".")[0]
            if module in FIXED_MODULES or obj.source is None:
                # Library modules (np.exp, math.pi) are taken as fixed: not guarded.
                var = self.wrap_value(value)
                var.source = attr_source(obj.source, name) if obj.source else None
                return var
            # A setting in the user's own module may change between calls: guard it.
            return self.output.wrap(value, attr_source(obj.source, name), self.lineno)
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, type) \
                and obj.value.__module__ not in ("builtins",) and not obj.value.__module__.startswith("numpy"):
            return self.class_attr(obj, name)
        if isinstance(obj, UserObjectVariable):
            return self.user_object_attr(obj, name)
        if type(obj) in CONTAINER_METHODS and name in CONTAINER_METHODS[type(obj)]:
            return MethodVariable(obj, name)
        if isinstance(obj, UserFunctionVariable) and name in ("__name__", "__qualname__"):
            return ConstantVariable(getattr(obj.code, "co_" + name.strip("_")))
        if isinstance(obj, PythonObjectVariable) and isinstance(obj.value, np.ufunc):
            return self.evaluate(getattr, obj.value, name)  # np.add.at, np.add.nin
        if self.is_constant(obj):
            value = self.python_value(obj)
            if isinstance(value, (str, int, float, np.generic, np.dtype, tuple)):
                return self.evaluate(getattr, value, name)
        raise Unsupported(f"attribute .{name} of {obj.describe()} is not supported yet")

    def class_attr(self, cls: PythonObjectVariable, name: str) -> VariableTracker:
        """``Cls.name`` on a user class: functions, static/class methods, plain values."""
        try:
            static = inspect.getattr_static(cls.value, name)
        except AttributeError:
            raise Unsupported(f"AttributeError: type object {cls.value.__name__!r} has no attribute {name!r}",
                              numpy_error=True) from None
        if isinstance(static, staticmethod) or isinstance(static, types.FunctionType):
            return UserFunctionVariable(getattr(static, "__func__", static))
        if isinstance(static, classmethod):
            return UserFunctionVariable(static.__func__, bound_self=cls)
        if hasattr(static, "__get__") or cls.source is None:
            raise Unsupported(f"class attribute {cls.value.__name__}.{name} is a descriptor")
        return self.output.wrap(static, attr_source(cls.source, name), self.lineno)

    def user_object_attr(self, obj: UserObjectVariable, name: str) -> VariableTracker:
        """``obj.name`` on a user object, resolved the way Python would, without running code
        other than the functions it inlines (methods, properties)."""
        value = obj.value
        if obj.source is not None and (obj.source.expr, name) in self.output.side_effects.attributes:
            return self.output.side_effects.read_attr(obj.source.expr, name)  # set (or deleted) earlier
        if obj.source is not None:
            # Set earlier on another object: a later call passing one object under both
            # names would read the stale value here, so they must stay two objects.
            for other, attr in self.output.side_effects.attributes:
                if attr == name and other != obj.source.expr:
                    self.output.guards.add(obj.source, f"{obj.source.expr} is not {other}",
                                           f"id({obj.source.expr})", self.lineno)
        try:
            static = inspect.getattr_static(value, name)
        except AttributeError:
            raise Unsupported(f"AttributeError: {type(value).__name__!r} has no attribute {name!r}",
                              numpy_error=True) from None
        in_instance = name in getattr(value, "__dict__", {})
        if not in_instance:
            if isinstance(static, staticmethod):
                return UserFunctionVariable(static.__func__)
            if isinstance(static, classmethod):
                cls = PythonObjectVariable(type(value), Source(f"type({obj.source.expr})") if obj.source else None)
                return UserFunctionVariable(static.__func__, bound_self=cls)
            if isinstance(static, types.FunctionType):
                return UserFunctionVariable(static, bound_self=obj)
            if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
                return self.inline_call(UserFunctionVariable(static.fget), [obj], {})
        if obj.source is None:
            raise Unsupported(f"attribute .{name} of an object made during the trace")
        # A plain value (instance attribute, class constant, slot, namedtuple field):
        # read it now and guard it like any other input.
        return self.output.wrap(getattr(value, name), attr_source(obj.source, name), self.lineno)

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
        if name in METHODS or callable(getattr(np.ndarray, name, None)):
            # An unsupported method breaks the graph where it is called, not here.
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

    def STORE_ATTR(self, inst) -> None:
        obj, value = self.pop(), self.pop()
        if not isinstance(obj, UserObjectVariable) or obj.source is None:
            raise Unsupported(f"setting attribute .{inst.argval} of {obj.describe()}")
        static = inspect.getattr_static(type(obj.value), inst.argval, None)
        if hasattr(static, "__set__"):  # a property or slot with its own setter code
            raise Unsupported(f"setting .{inst.argval}, which runs a descriptor's setter")
        self.output.mutations += 1
        self.output.side_effects.store_attr(obj, inst.argval, value)

    def DELETE_ATTR(self, inst) -> None:
        delete_attribute(self, self.pop(), inst.argval)

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

    def LOAD_METHOD(self, inst) -> None:  # 3.11
        self.push_method(self.get_attr(self.pop(), inst.argval))

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

    # -- calls ---------------------------------------------------------------------------------------

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
        self.push(self.call_function(fn, positional, keywords))

    def CALL(self, inst) -> None:
        kw_names, self.kw_names = self.kw_names, ()
        self._call(inst.arg, kw_names)

    def CALL_KW(self, inst) -> None:  # 3.13
        kw_names = self.python_value(self.pop())
        self._call(inst.arg, kw_names)

    def CALL_FUNCTION_EX(self, inst) -> None:
        kwargs = self.pop() if inst.arg & 1 else DictVariable({})
        if not isinstance(kwargs, DictVariable):
            raise Unsupported(f"**kwargs from {kwargs.describe()}")
        args = self.sequence_items(self.pop())
        fn, self_arg = bytecode.split_callable(*self.popn(2), NULL)
        if self_arg is not None:
            args = [self_arg] + args
        self.push(self.call_function(fn, args, dict(kwargs.items)))

    def call_function(self, fn: VariableTracker, args: list, kwargs: dict) -> VariableTracker:
        if isinstance(fn, MethodVariable):
            if type(fn.obj) in CONTAINER_METHODS:
                return CONTAINER_METHODS[type(fn.obj)][fn.name](self, fn.obj, args, kwargs)
            if fn.name in METHOD_MUTATIONS:
                return self.call_mutation(METHOD_MUTATIONS[fn.name], [fn.obj] + args, kwargs,
                                          f"ndarray.{fn.name}")
            if fn.name not in METHODS:
                raise Unsupported(f"ndarray.{fn.name}() is not supported (its result leaves the graph)")
            result = self.call_numpy(METHODS[fn.name], [fn.obj] + args, kwargs, f"ndarray.{fn.name}")
            if isinstance(fn.obj, ArrayVariable) and fn.obj.scalar and isinstance(result, ArrayVariable) \
                    and result.node.meta.ndim == 0:
                result.scalar = True  # a NumPy scalar's methods return NumPy scalars
            return result
        if isinstance(fn, UserFunctionVariable):
            return self.inline_call(fn, args, kwargs)
        if isinstance(fn, UserObjectVariable) and isinstance(fn.value, types.MethodType) \
                and isinstance(fn.value.__func__, types.FunctionType):
            return self.inline_call(UserFunctionVariable(fn.value.__func__), [self.wrap_value(fn.value.__self__)] + args, kwargs)
        if not isinstance(fn, (PythonObjectVariable, ConstantVariable)):
            raise Unsupported(f"calling {fn.describe()} is not supported")
        target = fn.value
        name = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
        shallow = shallow_builtin(self, target, args, kwargs)  # len(lst): its length, not its items
        if shallow is not None:
            return shallow
        all_constant = all(self.is_constant(a) for a in args) and all(
            self.is_constant(v) for v in kwargs.values()
        )
        if _hashable(target) and target in FUNCTIONS and (
                not all_constant or get_op(FUNCTIONS[target].op).kind == "creation"):
            # Creation calls become graph nodes even on constants: arrays are not baked in.
            return self.call_numpy(FUNCTIONS[target], args, kwargs, f"np.{name}")
        if _hashable(target) and target in SPLITS and not all_constant:
            return self.call_split(target, args, kwargs)
        if _hashable(target) and target in MUTATIONS:
            return self.call_mutation(MUTATIONS[target], args, kwargs, f"np.{name}")
        if all_constant and _pure(target):
            values = [self.python_value(a) for a in args]
            kw_values = {k: self.python_value(v) for k, v in kwargs.items()}
            return self.evaluate(target, *values, **kw_values)
        if _hashable(target) and target in BUILTINS:
            return BUILTINS[target](self, args, kwargs)
        if isinstance(target, types.FunctionType):
            return self.inline_call(UserFunctionVariable(target, source=fn.source), args, kwargs)
        raise Unsupported(f"call to {name} is not supported yet")

    def inline_call(self, fn: UserFunctionVariable, args: list, kwargs: dict) -> VariableTracker:
        """Trace a call to a Python function into the same graph (TorchDynamo's inlining)."""
        code = fn.code
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            raise Unsupported(f"calling coroutine {code.co_name}")
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported(f"inlining deeper than {MAX_INLINE_DEPTH} calls")
        if fn.bound_self is not None:
            args = [fn.bound_self] + list(args)
        real = fn.fn if isinstance(fn.fn, types.FunctionType) else None
        defaults = real.__defaults__ if real is not None else fn.defaults
        kwdefaults = real.__kwdefaults__ if real is not None else fn.kwdefaults
        signature = types.SimpleNamespace(__code__=code, __defaults__=defaults or None,
                                          __kwdefaults__=kwdefaults or None)
        try:
            bound = make_binder(signature)(*args, **kwargs)
        except TypeError as e:
            raise Unsupported(f"TypeError: {e}", numpy_error=True) from None
        varargs, varkw = varargs_names(code)
        for name, value in bound.items():
            if name == varargs:
                bound[name] = TupleVariable(list(value))
            elif name == varkw:
                bound[name] = DictVariable(dict(value))
            elif not isinstance(value, VariableTracker):
                bound[name] = self.wrap_value(value)  # a default value
        closure = fn.closure or (real.__closure__ or () if real is not None else ())
        callee = InstructionTranslator(
            real, {}, self.output, code=code, bound=bound, closure=closure,
            f_globals=real.__globals__ if real is not None else fn.globals,
            fn_source=fn.source, parent=self,
        )
        if not code.co_flags & inspect.CO_GENERATOR:
            return callee.run()
        # A generator (a generator expression, say) is drained at once into the
        # items it yields.  Draining runs items a lazy consumer might never ask
        # for, so only a generator without side effects is traced this way.
        mutations = self.output.mutations
        callee.run()
        if self.output.mutations != mutations:
            raise Unsupported(f"generator {code.co_name} has side effects: it cannot be drained early")
        return IteratorVariable(callee.yielded)

    def call_numpy(self, rule, args: list, kwargs: dict, what: str) -> VariableTracker:
        out = kwargs.get("out")
        if isinstance(out, TupleVariable) and len(out.items) == 1:
            out = out.items[0]
        if isinstance(out, ArrayVariable) and get_op(rule.op).ufunc is not None:
            # ufunc(..., out=o, where=m) is copyto(o, ufunc(...), where=m): the result is
            # computed as usual, then written into o (and o is the result).
            where = kwargs.get("where", ConstantVariable(True))
            rest = {k: v for k, v in kwargs.items() if k not in ("out", "where")}
            result = self.call_numpy(rule, args, rest, what)
            new = self.output.call("copyto", {"dst": out, "src": result, "casting": "same_kind",
                                             "where": where})
            return self.update_array(out, new, f"{what}(..., out=)")
        # Constants reach the op binding as plain values, so defaults compare as NumPy's do.
        plain = [self.plain(a) for a in args]
        plain_kw = {k: self.plain(v) for k, v in kwargs.items()}
        op_kwargs = bind_call(rule, plain, plain_kw, what)
        a = op_kwargs.get("a")
        if rule.stub in (np.asarray, np.asanyarray) and isinstance(a, ArrayVariable) and not a.scalar \
                and op_kwargs.get("dtype") in (None, a.node.meta.dtype):
            return a  # np.asarray(x) is x itself: a write through either shows in both
        if rule.copies:  # x.flatten(): a view of a copy, never of x
            op_kwargs = {**op_kwargs, "a": self.output.call("copy", {"a": a})}
        return self.output.call(rule.op, op_kwargs)

    def call_split(self, fn: Any, args: list, kwargs: dict) -> VariableTracker:
        """np.split and friends: one getitem node per piece, in a list like NumPy's."""
        array = args[0] if args else kwargs.get("ary")
        if not isinstance(array, ArrayVariable):
            raise Unsupported(f"np.{fn.__name__} of {array.describe() if array else 'nothing'}")
        plain = [self.plain(a) for a in args]
        plain_kw = {k: self.plain(v) for k, v in kwargs.items()}
        try:
            pieces = split_calls(fn, tuple(plain), plain_kw, array.node.meta.shape)
        except Exception as e:
            raise Unsupported(f"np.{fn.__name__} raised {type(e).__name__}: {e}", numpy_error=True) from None
        return ListVariable([self.output.call("getitem", piece) for piece in pieces])

    def call_mutation(self, mutation, args: list, kwargs: dict, what: str) -> VariableTracker:
        """A call that writes into one of its arguments (np.copyto, np.add.at, x.sort())."""
        plain = [self.plain(a) for a in args]
        plain_kw = {k: self.plain(v) for k, v in kwargs.items()}
        op_kwargs = bind_call(mutation.rule, plain, plain_kw, what)
        target = op_kwargs.get(mutation.target)
        if not isinstance(target, ArrayVariable):
            raise Unsupported(f"{what} writes into {getattr(target, 'describe', lambda: target)()}")
        self.update_array(target, self.output.call(mutation.rule.op, op_kwargs), what)
        return ConstantVariable(None)

    def plain(self, var: VariableTracker) -> Any:
        return self.python_value(var) if self.is_constant(var) else var



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

