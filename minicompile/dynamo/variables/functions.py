"""Calls in the symbolic interpreter: CALL and its variants, and what each callee becomes.

In:  a callable variable and its argument variables (CALL, CALL_KW,
     CALL_FUNCTION_EX).
Out: the result's variable.  A NumPy function or array method becomes a graph
     op (numpy_calls.py), a call that writes into an argument a functional
     update of it (functionalization.py), a user function or method is inlined
     into the same graph (TorchDynamo's inlining), a pure builtin on constants
     runs at trace time, a container method acts on the trace's container
     (container_methods.py); anything else is :class:`Unsupported`.

A mixin of :class:`~.symbolic_convert.InstructionTranslator`.
"""
from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from .. import bytecode
from ..binder import make_binder, varargs_names
from .builtins import BUILTINS, CONTAINER_METHODS, shallow_builtin
from ..exc import Unsupported
from .numpy_calls import FUNCTIONS, METHOD_MUTATIONS, METHODS, MUTATIONS, SPLITS, bind_call, split_calls
from ...ir import get_op
from ...ir.ops import broadcast_shapes
from .base import (
    NULL,
    ArrayVariable,
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

# Callables that are safe to run at trace time on constant arguments: they are
# pure, so running them early gives exactly the value eager execution would.
PURE_BUILTINS = {abs, bool, float, int, str, len, min, max, round, pow, divmod, tuple, range, slice,
                 isinstance, type, getattr, hasattr, repr, format, sum, any, all, sorted}
PURE_MODULES = ("math",)

MAX_INLINE_DEPTH = 32


class CallsMixin:
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
        callee = type(self)(
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
            have, want = result.node.meta.shape, out.node.meta.shape
            try:  # the inputs broadcast against the output, which must hold all of them
                fits = broadcast_shapes(result.node.meta, out.node.meta) == tuple(want)
            except ValueError:
                fits = False
            if not fits:
                raise Unsupported(f"ValueError: non-broadcastable output operand with shape {tuple(want)} "
                                  f"doesn't match the broadcast shape {tuple(have)}", numpy_error=True)
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

