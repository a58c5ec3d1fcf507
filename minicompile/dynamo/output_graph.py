"""The graph being captured, and how frame values enter it.

:class:`OutputGraph` owns what one capture produces: the ``ir.Graph``, its
guards, and the list of sources its placeholders read (``L['x']``,
``G['W']``).  :meth:`OutputGraph.wrap` is where a value from the frame turns
into a variable tracker — an array becomes a placeholder guarded on type,
shape, dtype and strides; a scalar becomes a constant guarded on its value; a
list or dict is guarded on its type only and read lazily (variables/frame_containers.py); a
module or known function becomes an object guarded on identity.  Anything else
is unsupported, and the reason names the source.
"""
from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from .. import ir
from ..aot.tensor import Tensor, grad_enabled
from ..ir import dtypes
from ..ir.ops.pointwise import negative_integer_powers
from ..ir.symbolic import Sym, free_symbols
from .dynamic_shapes import DynamicPolicy, SymbolTable, is_cupy_array
from .exc import Unsupported
from .variables.frame_containers import FrameDictVariable, FrameListVariable
from .functionalization import Functionalizer
from .guards import GuardSet
from .side_effects import SideEffects
from .source import Source, attr_source, item_source
from .variables.arrays import ArrayVariable
from .variables.base import (
    CONSTANT_TYPES,
    ConstantVariable,
    LazyConstantVariable,
    PythonObjectVariable,
    VariableTracker,
    specialize_sizes,
)
from .variables.containers import ListVariable, TupleVariable
from .variables.functions import UserFunctionVariable
from .variables.user_objects import UserObjectVariable

# Functions that, applied to a NumPy scalar, give back a NumPy scalar: NumPy runs
# them as the scalar's own method (np.reshape(s, ()) is s.reshape(())).  Methods of
# a NumPy scalar always return scalars for 0-d results (see numpy_calls.call_method).
SCALAR_PRESERVING = frozenset({"astype", "reshape", "transpose", "squeeze", "real", "imag"})

# The arguments that may hold symbolic sizes (their rules handle them), by op;
# every other argument gets plain ints, each a guard ``s0 == <its value>``.
SIZE_ARGUMENTS: dict[str, frozenset[str]] = {
    "reshape": frozenset({"shape"}), "getitem": frozenset({"key"}), "setitem": frozenset({"key"}),
    **{op: frozenset({"shape"}) for op in ("zeros", "ones", "empty", "full")},
}


_INT8_ZERO = np.zeros((), np.int8)


@functools.lru_cache(maxsize=256)
def size_input(n: int) -> np.ndarray:
    """The graph input that carries the int ``n`` as its shape ``(n,)``: a
    read-only zero-stride view of one byte (no memory of size ``n``)."""
    return np.broadcast_to(_INT8_ZERO, (n,))


def _mutable(value: Any) -> bool:
    """Objects whose identity matters to the trace (a write through one name shows through all)."""
    return type(value) in (list, dict) or not (
        isinstance(value, (CONSTANT_TYPES, tuple, types.ModuleType, types.FunctionType, type,
                           np.ndarray, np.ufunc)) or callable(value))


def placeholder_name(source: Source) -> str:
    """``L['x']`` -> ``x``; ``G['W']`` -> ``W``; items and attributes joined by ``_``."""
    text = source.expr
    for prefix in ("L[", "G[", "B["):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return "".join(c if c.isalnum() else "_" for c in text.replace("CLOSURE", "closure"))


class OutputGraph:
    def __init__(self) -> None:
        self.graph = ir.Graph()
        # Where ops go: the graph, or the body of a loop being traced (loop_capture.py).
        self.current = self.graph
        # Loops that run unrolled in this capture (their body could not be one loop node),
        # by (code object, offset of FOR_ITER), and the loop being traced now, if any.
        self.unrolled_loops: dict = {}
        self.loop_scope: Any = None
        self.gradients_wanted = False  # an input tensor requires grad
        self.guards = GuardSet()
        self.tracer: Any = None  # the InstructionTranslator running now (for source lines)
        self.input_sources: list[Source] = []
        self._wrapped: dict[str, VariableTracker] = {}
        self._array_sources: dict[int, tuple[Any, ArrayVariable]] = {}  # id -> (array, variable)
        self._objects: dict[int, tuple[Any, VariableTracker]] = {}  # mutable objects by identity
        # Treat NumPy scalar inputs as 0-d graph inputs instead of constants (resume
        # functions: a scalar the graph computed must not be guarded on its value).
        self.scalars_as_inputs = False
        self.scalar_inputs: set[str] = set()
        self.size_inputs: set[str] = set()  # int arguments passed as size inputs (add_size_inputs)
        # Bumped by every in-place change to a traced container: a graph break
        # inside an instruction that already mutated something cannot be resumed.
        self.mutations = 0
        # Counts the root frame's instructions: an object made during the current one
        # (its __init__ running) can still change without counting as a mutation.
        self.step = 0
        self.side_effects = SideEffects()
        # Storages and views of the arrays the trace holds; in-place updates (functionalization).
        self.functional = Functionalizer(self)
        # Which array sizes become symbols (dynamic shapes); None: all static.
        self.symbols: SymbolTable | None = None

    def enable_dynamic(self, policy: DynamicPolicy) -> None:
        self.symbols = SymbolTable(policy) if policy.any else None
        if self.symbols is not None:  # a size guard names the user line that relied on it
            self.symbols.env.current_line = lambda: getattr(getattr(self, "tracer", None), "lineno", None)

    # -- values from the frame ------------------------------------------------------

    def wrap(self, value: Any, source: Source, lineno: int | None) -> VariableTracker:
        """A variable for ``value`` found at ``source``, with the guards it needs."""
        cached = self._wrapped.get(source.expr)
        if cached is None:
            shared = self._objects.get(id(value)) if _mutable(value) else None
            if shared is not None and shared[0] is value:
                # One list, dict or object reached through two names: one variable, so a
                # write through one name is seen through the other; guard they stay one.
                self.guards.add(source, f"{source.expr} is {shared[1].source.expr}",
                                f"id({source.expr})", lineno)
                cached = shared[1]
            else:
                cached = self._wrap(value, source, lineno)
                if _mutable(value):
                    self._objects[id(value)] = (value, cached)
            self._wrapped[source.expr] = cached
        return cached

    def _wrap(self, value: Any, source: Source, lineno: int | None) -> VariableTracker:
        if type(value) is np.ndarray or is_cupy_array(value) or type(value) is Tensor:
            alias = self._array_sources.get(id(value))
            if alias is not None and alias[0] is value:
                # The same array reached through two names: one graph input, and a
                # guard that they stay one object (what the graph assumed).
                self.guards.add(source, f"{source.expr} is {alias[1].source.expr}",
                                f"id({source.expr})", lineno)
                return alias[1]
            # Guard first: the decision that this input is (un)supported depends on them.
            axes = self.symbols.policy.symbolic_axes(source.expr, value) if self.symbols else []
            shape: tuple = tuple(value.shape)
            if axes:
                shape = tuple(self.symbols.size(source.expr, i, n, self.guards, source, lineno)
                              if i in axes else n for i, n in enumerate(shape))
                self.guards.dynamic_array(source, value, shape, lineno)
            else:
                self.guards.array(source, value, lineno)
            if type(value) is Tensor:
                # A gradient writes loop nodes out (ir.loops.unroll_loops): trip counts stay ints.
                self.gradients_wanted |= value.requires_grad
                # Whether a gradient is wanted decides between a plain and a joint graph.
                self.guards.add(source, f"{source.expr}.requires_grad == {value.requires_grad}",
                                f"{source.expr}.requires_grad", lineno)
                self.guards.add(source, f"___grad_enabled() == {grad_enabled()}", "___grad_enabled()", lineno)
                # Its data's array module picks the code (NumPy's or CuPy's arrays): guarded as
                # an array's own type is, so a CuPy tensor never runs code compiled for NumPy.
                data_type = "___ndarray" if type(value.data) is np.ndarray else self.guards.constant(type(value.data))
                self.guards.add(source, f"type({source.expr}.data) is {data_type}", f"type({source.expr}.data)",
                                lineno)
            if value.dtype not in dtypes.SUPPORTED:
                raise Unsupported(f"{source} has dtype {value.dtype}, which is not supported")
            node = self.graph.placeholder(placeholder_name(source), ir.TensorMeta(shape, value.dtype))
            self.input_sources.append(source)
            var = self.functional.input(value, source, node)
            self._array_sources[id(value)] = (value, var)
            return var
        if isinstance(value, np.ndarray):
            self.guards.identity(source, type(value), lineno)
            raise Unsupported(f"{source} is a {type(value).__name__}, an ndarray subclass")
        if self.scalars_as_inputs and isinstance(value, np.generic) and value.dtype in dtypes.SUPPORTED:
            self.guards.type_of(source, value, lineno)
            node = self.graph.placeholder(placeholder_name(source), ir.TensorMeta((), value.dtype))
            self.input_sources.append(source)
            self.scalar_inputs.add(source.expr)
            return ArrayVariable(node, source, scalar=True)
        if self.symbols is not None and self.symbols.policy.symbolic_int(source.expr, value):
            # An int argument whose value changed between calls: a size symbol,
            # kept symbolic through size arithmetic only (any other use pins it).
            self.guards.type_of(source, value, lineno)
            sym = self.symbols.size(source.expr, None, value, self.guards, source, lineno)
            if self.symbols.env.sources[str(sym)] == source.expr:  # its own symbol, not an axis's
                self.guards.size_int(source, sym, lineno)
            return ConstantVariable(sym, source)
        if isinstance(value, CONSTANT_TYPES):
            if self.scalars_as_inputs and type(value) in (int, float) and source.expr.startswith("L["):
                # A number handed to a resume function: guarded on its value once read.
                self.guards.type_of(source, value, lineno)
                return LazyConstantVariable(value, source, lambda: self.guards.value(
                    source, value, getattr(self.tracer, "lineno", lineno)))
            self.guards.value(source, value, lineno)
            return ConstantVariable(value, source)
        if type(value) is tuple:
            self.guards.length(source, value, lineno)
            return TupleVariable([self.wrap(v, item_source(source, i), lineno) for i, v in enumerate(value)],
                                 source)
        if type(value) in (list, dict):
            # Only the type: its length, keys and items are guarded when the trace reads them.
            self.guards.type_of(source, value, lineno)
            cls = FrameListVariable if type(value) is list else FrameDictVariable
            var = cls(value, source, self)
            self.side_effects.containers.append(var)
            return var
        if isinstance(value, types.FunctionType):
            self.guards.identity(source, value, lineno)
            return UserFunctionVariable(value, source)
        if isinstance(value, (types.ModuleType, types.BuiltinFunctionType, np.ufunc, type)) or (
                callable(value) and type(value).__module__.startswith("numpy")):  # NumPy's dispatchers
            self.guards.identity(source, value, lineno)
            return PythonObjectVariable(value, source)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            # A bound method held as a value (cb = obj.step; a partial of one): its
            # function by identity, its object like any other value.
            self.guards.type_of(source, value, lineno)
            function = attr_source(source, "__func__")
            self.guards.identity(function, value.__func__, lineno)
            owner = self.wrap(value.__self__, attr_source(source, "__self__"), lineno)
            return UserFunctionVariable(value.__func__, function, bound_self=owner)
        if isinstance(value, (types.MethodType, types.GeneratorType, types.CoroutineType)) \
                or type(value).__module__ == "builtins":
            self.guards.identity(source, type(value), lineno)
            raise Unsupported(f"{source} has type {type(value).__name__}, which is not supported")
        # An instance of a user class (dataclasses and named tuples included):
        # its type is guarded, its attributes are read and guarded when used.
        self.guards.type_of(source, value, lineno)
        return UserObjectVariable(value, source)

    def add_size_inputs(self) -> None:
        """One graph input per int argument that stayed a free size symbol (the
        trace is over): a *size input*, a zero-stride ``int8`` array of shape
        ``(n,)`` made from the int, whose data is never read.  The symbol is then
        bound from an input's shape like every other size symbol, so each
        backend (and ``Graph.__call__``) reads ``s1`` the way it reads ``s0``."""
        if self.symbols is None:
            return
        used: set[str] = set()
        for n in self.graph.nodes:
            used |= free_symbols(n.meta) | free_symbols(n.args)
        after = max((i for i, n in enumerate(self.graph.nodes) if n.kind == "placeholder"), default=-1)
        for name, expr, pinned in self.symbols.int_symbols():
            if pinned and name not in used:
                continue  # fixed to its value and nowhere in the graph: no input needed
            sym = Sym({(name,): 1}, self.symbols.env)
            node = self.graph.placeholder(placeholder_name(Source(expr)), ir.TensorMeta((sym,), np.dtype(np.int8)))
            self.graph.nodes.remove(node)
            after += 1
            self.graph.nodes.insert(after, node)
            self.input_sources.append(Source(expr))
            self.size_inputs.add(expr)

    def input_exprs(self) -> list[str]:
        """How the compiled code reads each graph input from the frame (NumPy scalar
        inputs become 0-d arrays, which every backend takes; an int size, its size input)."""
        return [f"___asarray({s.expr})" if s.expr in self.scalar_inputs
                else f"___size_input({s.expr})" if s.expr in self.size_inputs else s.expr
                for s in self.input_sources]

    def base_input(self, value: Any, source: Source) -> ir.Node:
        """A graph input for the base array of arguments that share memory (read from
        the frame as ``L['x'].base``), placed after the inputs so far."""
        self.guards.array(source, value, None)
        self.guards.add(source, f"{source.expr}.flags.c_contiguous", f"{source.expr}.flags.c_contiguous", None)
        node = self.graph.placeholder(placeholder_name(source), ir.TensorMeta(tuple(value.shape), value.dtype))
        self.graph.nodes.remove(node)
        after = max(i for i, n in enumerate(self.graph.nodes) if n.kind == "placeholder")
        self.graph.nodes.insert(after + 1, node)
        self.input_sources.append(source)
        return node

    # -- graph building ------------------------------------------------------------

    def user_stack(self) -> tuple[ir.SourceLine, ...]:
        """The frames being traced now, outermost first, at their current lines."""
        frames = []
        tracer = self.tracer
        while tracer is not None:
            frames.append(ir.SourceLine(tracer.code.co_filename, tracer.lineno, tracer.code.co_name))
            tracer = tracer.parent
        return tuple(reversed(frames))

    def weak_operands(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A Python number computed in the graph (a loop's index) as the operand NumPy
        makes of a Python number (NEP 50): the other operands' dtype, or int64/float64
        alone.  Only elementwise ops take one; an int that may not fit refuses."""
        if ir.get_op(op).kind != "pointwise":
            raise Unsupported(f"np.{op} of the loop index (a Python number in eager code)")
        strong = [v.node.meta.dtype for v in args.values()
                  if isinstance(v, ArrayVariable) and v.weak is None]
        constants = [v.value for v in args.values()
                     if isinstance(v, ConstantVariable) and type(v.value) in (int, float, bool)]
        out = dict(args)
        for name, v in args.items():
            if not (isinstance(v, ArrayVariable) and v.weak is not None):
                continue
            kind, low, high = v.weak
            target = np.result_type(*strong, *constants, kind(0))
            if target.kind in "iu" and target != np.int64:
                info = np.iinfo(target)
                if low is None or low < info.min or high > info.max:
                    raise Unsupported(f"the loop index may not fit in {target} (NumPy would raise)")
            if target == np.bool_ and kind is not bool:
                raise Unsupported("the loop index meets a bool array")
            node = v.node if v.node.meta.dtype == target else self.current.call("astype", v.node, target)
            out[name] = node  # a plain node: no memory, no layout of its own (it broadcasts)
        return out

    def to_graph_arg(self, var: VariableTracker) -> Any:
        """The node or Python constant a variable stands for as an op argument."""
        if isinstance(var, ArrayVariable):
            if var.weak is not None:  # a loop's index inside a tuple or list argument
                raise Unsupported(f"a Python {var.weak[0].__name__} computed from the loop index inside "
                                  "an argument of an array operation")
            if var.python is not None:  # eager computes with the Python value itself
                raise Unsupported(f"{var.describe()} used in an array operation: its value is known "
                                  f"once the graph has run")
            return var.node
        if isinstance(var, ConstantVariable):
            return var.value
        if isinstance(var, (TupleVariable, ListVariable)):
            return tuple(self.to_graph_arg(v) for v in var.items)
        if isinstance(var, PythonObjectVariable) and isinstance(var.value, type):
            return var.value  # a dtype given as a scalar type: np.float32
        if isinstance(var, (tuple, list)):  # a plain container that may hold variables
            return type(var)(self.to_graph_arg(v) for v in var)
        if not isinstance(var, VariableTracker):
            return var  # already a plain Python value
        raise Unsupported(f"{var.describe()} cannot be an argument of an array operation")

    @property
    def on_device(self) -> bool:
        """Does the graph compute on CuPy arrays?  Their reductions give 0-d arrays,
        never NumPy scalars, so NumPy's errors for scalars (a NaN stored into
        an integer array) do not apply."""
        return any(s.value is not None and is_cupy_array(s.value) for s in self.functional.inputs)

    def _check_integer_exponent(self, node: ir.Node, args: dict[str, Any]) -> None:
        """An integer ``x ** y`` with ``y`` computed in the graph: NumPy raises for a
        negative ``y``, so the graph checks ``y`` when it runs, even where nothing
        reads the power (``check`` is never dropped).  Constant exponents are the
        meta rule's (ir/ops/pointwise.py)."""
        exponent = args["x2"]
        loop = (node.args[0].meta.dtype if isinstance(node.args[0], ir.Node) else None,
                node.args[1].meta.dtype if isinstance(node.args[1], ir.Node) else None, node.meta.dtype)
        if isinstance(exponent, ArrayVariable) and loop[1] is not None and negative_integer_powers(loop):
            bad = self.call("less", {"x1": exponent, "x2": 0})
            if isinstance(args["x1"], ArrayVariable):  # over the broadcast: nothing raises for an empty base
                everywhere = self.call("equal", {"x1": args["x1"], "x2": args["x1"]})  # integers: all True
                bad = self.call("logical_and", {"x1": bad, "x2": everywhere})
            self.call("check", {"a": exponent, "bad": bad, "error": "ValueError",
                                "message": "Integers to negative integer powers are not allowed."})

    def call(self, op: str, args: dict[str, Any]) -> ArrayVariable:
        """Add ``op`` to the graph; NumPy's own errors become graph breaks.  The result
        is a view of its first argument where NumPy's would be (functionalization.py)."""
        if any(isinstance(v, ArrayVariable) and v.weak is not None for v in args.values()):
            args = self.weak_operands(op, args)
        graph_args = {k: self.to_graph_arg(v) for k, v in args.items()}
        if self.symbols is not None:
            # A size used as a value (x * n, np.full(..., n)): specialized.
            sizes = SIZE_ARGUMENTS.get(op, frozenset())
            graph_args = {k: v if k in sizes else specialize_sizes(v) for k, v in graph_args.items()}
            if "key" in sizes:  # an integer index (x[n]) is a value; slice bounds stay sizes
                key = graph_args["key"]
                graph_args["key"] = (tuple(int(k) if isinstance(k, Sym) else k for k in key)
                                     if isinstance(key, tuple) else int(key) if isinstance(key, Sym) else key)
        try:
            node = self.current.call(op, **graph_args)
        except Unsupported:
            raise
        except NotImplementedError as e:  # e.g. a result whose shape depends on values
            raise Unsupported(f"np.{op}: {e}") from None
        except Exception as e:  # NumPy would raise here too: let eager NumPy do it
            raise Unsupported(f"np.{op} raised {type(e).__name__}: {e}", numpy_error=True) from None
        node.user_stack = self.user_stack()
        if op == "power":
            self._check_integer_exponent(node, args)
        first = next(iter(args.values()), None)
        scalar = node.meta.ndim == 0 and (
            node.op.result_is_scalar(dict(zip(node.op.param_names, node.args)))
            or (op in SCALAR_PRESERVING and isinstance(first, ArrayVariable) and first.scalar)
        )
        return self.functional.result(node, args, scalar)
