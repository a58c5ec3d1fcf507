"""Python functions in traced code: inlining calls, closures, functions made during the trace.

In:  a user function's variable and its argument variables (a call), a free
     variable's name (LOAD_DEREF, STORE_DEREF), the pieces of a function
     being made (MAKE_FUNCTION, SET_FUNCTION_ATTRIBUTE).
Out: the call's result, traced into the same graph by a new
     :class:`~..symbolic_convert.InstructionTranslator` for the callee
     (TorchDynamo's inlining) — a generator is drained into an iterator of
     the items it yields; the closure variable's value, read from the
     caller's cell and guarded, or from the frame that made the function;
     a :class:`UserFunctionVariable` for a function made by the trace.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..binder import make_binder, varargs_names
from ..exc import Unsupported
from ..source import Source, attr_source, closure_source
from .base import ConstantVariable, PythonObjectVariable, VariableTracker
from .containers import DictVariable, IteratorVariable, TupleVariable, wrap_value

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

MAX_INLINE_DEPTH = 32


@dataclass(eq=False)
class UserFunctionVariable(VariableTracker):
    """A Python function the interpreter inlines when it is called.

    ``closure`` holds, per free variable, either a real cell (a function from
    the frame) or a :class:`CellVariable` of the frame being traced (a
    function created by MAKE_FUNCTION during the trace).
    """

    fn: Any  # types.FunctionType, or a code object for functions made during the trace
    source: Source | None = None
    defaults: tuple = ()
    kwdefaults: dict = field(default_factory=dict)
    closure: tuple = ()
    globals: dict | None = None
    bound_self: VariableTracker | None = None

    @property
    def code(self):
        return getattr(self.fn, "__code__", self.fn)

    def describe(self) -> str:
        return f"function {self.code.co_name}"

    def python_type(self) -> type:
        return types.FunctionType if self.bound_self is None else types.MethodType


@dataclass(eq=False)
class CellVariable(VariableTracker):
    """A cell of a frame being traced: reads see the frame's current value."""

    frame: Any  # the InstructionTranslator that owns the variable
    name: str
    source: Source | None = None


# -- calls: traced into the same graph -----------------------------------------------------------

def inline_call(tx: "InstructionTranslator", fn: UserFunctionVariable, args: list, kwargs: dict) -> VariableTracker:
    """Trace a call to a Python function into the same graph (TorchDynamo's inlining)."""
    code = fn.code
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise Unsupported(f"calling coroutine {code.co_name}")
    if tx.depth >= MAX_INLINE_DEPTH:
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
            bound[name] = wrap_value(value)  # a default value
    closure = fn.closure or (real.__closure__ or () if real is not None else ())
    callee = type(tx)(
        real, {}, tx.output, code=code, bound=bound, closure=closure,
        f_globals=real.__globals__ if real is not None else fn.globals,
        fn_source=fn.source, parent=tx,
    )
    if not code.co_flags & inspect.CO_GENERATOR:
        return callee.run()
    # A generator (a generator expression, say) is drained at once into the
    # items it yields.  Draining runs items a lazy consumer might never ask
    # for, so only a generator without side effects is traced this way.
    mutations = tx.output.mutations
    callee.run()
    if tx.output.mutations != mutations:
        raise Unsupported(f"generator {code.co_name} has side effects: it cannot be drained early")
    return IteratorVariable(callee.yielded)


def get_attr(tx: "InstructionTranslator", fn: UserFunctionVariable, name: str) -> VariableTracker:
    """``fn.__name__`` and ``fn.__qualname__``; no other attribute of a function."""
    if name in ("__name__", "__qualname__"):
        return ConstantVariable(getattr(fn.code, "co_" + name.strip("_")))
    raise Unsupported(f"attribute .{name} of {fn.describe()} is not supported yet")


# -- closures ------------------------------------------------------------------------------------

def load_deref(tx: "InstructionTranslator", name: str) -> VariableTracker:
    """The value of the free (or cell) variable ``name`` of the frame ``tx`` traces."""
    if name not in tx.code.co_freevars:  # a cell of this frame: an ordinary local here
        return tx.load_local(name)
    index = tx.code.co_freevars.index(name)
    cell = tx.closure[index] if index < len(tx.closure) else None
    if isinstance(cell, CellVariable):  # a function made during this trace
        return cell.frame.load_local(cell.name)
    if cell is None:
        raise Unsupported(f"closure variable {name!r} is not available")
    try:
        value = cell.cell_contents
    except ValueError:
        raise Unsupported(f"closure variable {name!r} is empty") from None
    if name == "__class__" and isinstance(value, type):
        # The class a method was defined in (what super() reads): set when the class
        # was made and never rebound, so it needs no guard.
        return PythonObjectVariable(value)
    if tx.parent is None:
        source = closure_source(index)
    elif tx.fn_source is not None:
        source = attr_source(Source(f"{attr_source(tx.fn_source, '__closure__').expr}[{index}]"),
                             "cell_contents")
    else:
        raise Unsupported(f"closure variable {name!r} of a function made outside the frame")
    return tx.output.wrap(value, source, tx.lineno)


def store_deref(tx: "InstructionTranslator", name: str, value: VariableTracker) -> None:
    """``name = value`` for a free (``nonlocal``) or cell variable of the frame ``tx`` traces."""
    if name in tx.code.co_freevars:
        cell = tx.closure[tx.code.co_freevars.index(name)]
        if not isinstance(cell, CellVariable):
            raise Unsupported(f"assignment to closure variable {name!r} (nonlocal) of the caller")
        cell.frame.locals[name] = value
        tx.output.mutations += 1
        return
    tx.locals[name] = value


# -- functions made during the trace (lambdas, nested defs, 3.11 comprehensions) -----------------

# MAKE_FUNCTION's flags, in the order their values sit on the stack (top first).
FUNCTION_ATTRIBUTE_FLAGS = (0x08, 0x04, 0x02, 0x01)


def make_function(tx: "InstructionTranslator", code: types.CodeType) -> UserFunctionVariable:
    """A function made from ``code`` in the frame ``tx`` traces (its attributes come next)."""
    return UserFunctionVariable(code, globals=tx.f_globals)


def set_function_attribute(fn: UserFunctionVariable, flag: int, value: VariableTracker) -> None:
    """One of MAKE_FUNCTION's (3.13: SET_FUNCTION_ATTRIBUTE's) attributes of a new function."""
    if flag == 0x08:
        fn.closure = tuple(value.items)
    elif flag == 0x02:
        fn.kwdefaults = dict(value.items)
    elif flag == 0x01:
        fn.defaults = tuple(value.items)
    # 0x04 (annotations) changes nothing the trace can see
