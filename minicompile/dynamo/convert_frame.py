"""From one call's frame to one cache entry: capture, then hand the graph to a backend.

:func:`capture` runs the symbolic interpreter over the function for the
values in ``L`` and returns a :class:`Capture`: the graph, its guards, the
sources its inputs come from, and how to rebuild the function's return value
from the graph's outputs — or, when the interpreter stopped, the reason.

:func:`compile_entry` turns a capture into a :class:`CacheEntry`: a compiled
guard function plus a ``run(L, G)`` that feeds the backend's compiled callable
and rebuilds the result.  An entry whose capture failed runs the function
eagerly, and is guarded the same way, so the same inputs do not trace again.
"""
from __future__ import annotations

import builtins
import contextlib
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import warnings

import numpy as np

from .. import config, ir, logs
from ..graph_id import GraphId
from ..aot.aot_function import AotFunction
from ..aot.tensor import Tensor
from ..ir import passes
from ..ir.symbolic import Sym, is_symbolic
from ..warn import warn
from . import bytecode, user_code
from .exc import BreakReason, GraphBreakError, Unsupported
from .exc import GraphRaised, NotResumable, RestartAnalysis
from .functionalization import numpy_strides, storage_array
from .graph_break import BreakPlan, plan_epilogue, plan_graph_break
from .polyfills.base import python_result
from .guards import GuardSet
from .dynamic_shapes import DynamicPolicy
from .output_graph import OutputGraph, size_input
from .symbolic_convert import InstructionTranslator
from .variables.arrays import ArrayVariable
from .variables.base import ConstantVariable, PythonObjectVariable, VariableTracker, specialize_sizes
from .variables.containers import DictVariable, ListVariable, NamedTupleVariable, TupleVariable
from .variables.functions import UserFunctionVariable
from .variables.user_objects import NewObjectVariable, UserObjectVariable

Backend = Callable[[ir.Graph, list], Callable[..., tuple]]


@dataclass
class Capture:
    graph: ir.Graph | None
    guards: GuardSet
    input_sources: list[str]  # expressions that read the graph inputs from the frame
    output_spec: Any  # see _output_spec
    break_reason: BreakReason | None
    seconds: float = 0.0
    # Set when the break resumes: the transformed function that replaces the frame.
    break_plan: BreakPlan | None = None
    not_resumable: str | None = None  # why a break had to run the whole frame eagerly
    name: str = ""  # the qualified name of the function captured
    # Set when the function already had cache entries: the guard that failed (a recompile).
    recompile_reason: str | None = None


@dataclass
class CacheEntry:
    guard: Callable[[dict, dict], bool]
    capture: Capture
    run: Callable[[dict, dict, tuple, dict], Any]
    compiled: Any = None
    compile_seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    graph_id: GraphId | None = None  # which graph of the function (None: runs eagerly)


def frame_builtins(fn: types.FunctionType) -> dict:
    b = fn.__globals__.get("__builtins__", builtins.__dict__)
    return b.__dict__ if isinstance(b, types.ModuleType) else b


def capture(fn: types.FunctionType, L: dict[str, Any],
            wrap_function: Callable[[types.FunctionType], Any] | None = None,
            allow_breaks: bool = True, scalars_as_inputs: bool = False,
            dynamic: DynamicPolicy | None = None) -> Capture:
    """Trace ``fn`` symbolically for the frame values ``L``.

    With ``wrap_function`` (which compiles a function lazily), side effects get
    a compiled epilogue and, when ``allow_breaks``, a graph break that can be
    resumed yields a break plan instead of an eager fallback.  ``dynamic`` says
    which array sizes become symbols.  The graph before a graph break keeps them
    symbolic like any other: the code after it (the transformed function, an
    epilogue) reads the sizes it needs from the frame, and the resume function
    is a frame of its own, which becomes dynamic when its own sizes change.  A
    capture left with no symbolic size is redone with static sizes."""
    if dynamic is not None and dynamic.any:
        with warnings.catch_warnings(record=True):  # an internal error here: the static retry says it
            cap = _capture(fn, L, wrap_function, allow_breaks, scalars_as_inputs, dynamic)
        if cap.graph is not None and cap.graph.is_dynamic and (cap.break_reason is None or cap.break_plan):
            return cap  # whole, with an epilogue, or up to a graph break that resumes
        if cap.graph is None and cap.break_reason is not None and (cap.break_reason.numpy_error
                                                                  or cap.not_resumable):
            # The frame runs as Python (NumPy rejects the program, or the break cannot
            # resume): guards over symbolic sizes let it do so for every size.
            return cap
        logs.log("recompiles", lambda: f"{fn.__qualname__}: symbolic sizes dropped "
                 f"({'capture failed' if cap.graph is None else 'no symbolic size left'}); static capture")
    return _capture(fn, L, wrap_function, allow_breaks, scalars_as_inputs, None)


def _capture(fn: types.FunctionType, L: dict[str, Any],
             wrap_function: Callable[[types.FunctionType], Any] | None,
             allow_breaks: bool, scalars_as_inputs: bool,
             dynamic: DynamicPolicy | None) -> Capture:
    """One capture; traced again, with the loop unrolled, each time a loop's body
    turns out not to be one loop node (RestartAnalysis)."""
    start = time.perf_counter()
    logs.log("bytecode", lambda: f"{fn.__qualname__}:\n{bytecode.format_bytecode(fn.__code__)}")
    unrolled: dict = {}  # loop -> "peel" (its first iteration unrolls) or "unroll"
    while True:
        try:
            cap = _capture_once(fn, L, wrap_function, allow_breaks, scalars_as_inputs, dynamic, unrolled)
        except RestartAnalysis as restart:
            if unrolled.get(restart.key) == "unroll":  # an unrolled loop never tries again
                raise AssertionError(f"loop {restart.key} restarted twice") from None
            how = _next_trial(unrolled.get(restart.key), restart)
            unrolled[restart.key] = how
            retry = {"peel": "runs its first iteration unrolled", "unroll": "unrolls"}.get(
                how, f"carries {', '.join(sorted(set(how[1] + how[2])))} as values of the loop")
            logs.log("loops", lambda: f"{fn.__qualname__}: the loop at {restart.key[0].co_name} "
                     f"(offset {restart.key[1]}) {retry}: {restart.reason}")
            continue
        cap.seconds = time.perf_counter() - start
        return cap


def _next_trial(before: Any, restart: RestartAnalysis) -> Any:
    """How a loop is tried next after ``restart``: with more values carried (each
    retry carries strictly more, so the retries end), its first iteration peeled
    (once), or unrolled."""
    carried = before if isinstance(before, tuple) else ("carry", (), ())
    carry = tuple(sorted(set(carried[1]) | set(restart.carry)))
    attributes = tuple(sorted(set(carried[2]) | set(restart.attributes)))
    if (before is None or isinstance(before, tuple)) and (carry, attributes) != carried[1:]:
        return ("carry", carry, attributes)
    return "peel" if before is None and restart.peel else "unroll"


def _capture_once(fn: types.FunctionType, L: dict[str, Any],
                  wrap_function: Callable[[types.FunctionType], Any] | None,
                  allow_breaks: bool, scalars_as_inputs: bool,
                  dynamic: DynamicPolicy | None, unrolled: set) -> Capture:
    start = time.perf_counter()
    output = OutputGraph()
    output.unrolled_loops = unrolled
    output.scalars_as_inputs = scalars_as_inputs
    if dynamic is not None:
        output.enable_dynamic(dynamic)
    tracer = InstructionTranslator(fn, L, output)
    try:
        result = tracer.run()
        output.functional.install_guards()
        output.add_size_inputs()
        if output.side_effects or output.functional.write_backs_pending() or output.functional.aliases(result) \
                or _builds_objects(result):
            # Code after the graph: write back, replay effects, rebuild views and arguments.
            if wrap_function is None:
                raise Unsupported("side effects on the caller's objects need the compiled epilogue")
            plan = plan_epilogue(output, result, wrap_function, tracer.instructions[tracer.ip - 1].positions)
            output.graph.output(plan.outputs)
            _freeze_sizes(output)
            return Capture(passes.drop_inner_copies(output.graph), output.guards,
                           output.input_exprs(), None, None, time.perf_counter() - start,
                           break_plan=plan)
        outputs: list[ir.Node] = []
        spec = _output_spec(result, outputs, output, {"CLOSURE": fn.__closure__ or (), "B": frame_builtins(fn)})
        spec = _with_layouts(spec, result, outputs)
        output.graph.output(outputs)
        _freeze_sizes(output)
        graph = passes.drop_inner_copies(output.graph)
        reason = None
    except Unsupported as e:
        graph, spec = None, None
        reason = getattr(e, "where", None) or BreakReason(e.reason, fn.__code__.co_filename, None)
        if wrap_function is not None and allow_breaks and not reason.numpy_error \
                and hasattr(tracer, "snapshot"):
            try:
                if not e.resumable:
                    raise NotResumable(e.reason)
                output.guards.forget_after(tracer.snapshot.guards, {s.expr for s in output.input_sources})
                output.functional.install_guards()
                output.add_size_inputs()
                plan = plan_graph_break(tracer, output, lambda f: wrap_function(f, is_resume=True),
                                        wrap_function)
            except (NotResumable, Unsupported) as why:
                _freeze_sizes(output)
                return Capture(None, output.guards, output.input_exprs(), None, reason,
                               time.perf_counter() - start, not_resumable=str(why))
            output.graph.output(plan.outputs)
            _freeze_sizes(output)
            graph = passes.drop_inner_copies(output.graph)
            return Capture(graph, output.guards, output.input_exprs(), None, reason,
                           time.perf_counter() - start, break_plan=plan)
    except Exception as e:  # a bug in minicompile: never let it cost the user a result
        if config.strict:
            raise
        warn(f"minicompile: internal error while capturing {fn.__qualname__}: "
             f"{type(e).__name__}: {e}; running it eagerly")
        graph, spec = None, None
        reason = BreakReason(f"internal error: {type(e).__name__}: {e}",
                             fn.__code__.co_filename, tracer.lineno)
    return Capture(graph, output.guards, output.input_exprs(), spec, reason,
                   time.perf_counter() - start)


def _builds_objects(result: VariableTracker) -> bool:
    """Does returning ``result`` build objects the trace made (then the code after the
    graph builds them, once each, reconstruct.py) or hold one list or dict twice?"""
    seen: set[int] = set()

    def walk(var: VariableTracker) -> bool:
        if isinstance(var, NewObjectVariable):
            return True
        if isinstance(var, (ListVariable, DictVariable)) and var.source is None:
            if id(var) in seen:
                return True
            seen.add(id(var))
        if isinstance(var, (TupleVariable, ListVariable)) and var.source is None:
            return any(walk(v) for v in var.items)
        if isinstance(var, DictVariable) and var.source is None:
            return any(walk(v) for v in var.items.values())
        return False

    return walk(result)


def _freeze_sizes(output: OutputGraph) -> None:
    """The trace is over: its size relations become guards, and from now on an
    undecided relation is an error, never a silent guess."""
    if output.symbols is not None:
        output.symbols.add_relation_guards(output.guards)
        output.symbols.env.mode = "frozen"


def _output_spec(var: VariableTracker, outputs: list[ir.Node], output: OutputGraph | None = None,
                 frame: dict | None = None) -> Any:
    """Describe the return value as a tree whose array leaves index ``outputs``;
    ``frame`` holds the names besides ``L`` and ``G`` that sources read
    (``CLOSURE``, ``B``), for the leaves read from the frame."""
    frame = frame or {}

    def reader(expr: str) -> Callable[[dict, dict], Any]:
        return eval(f"lambda L, G: {expr}", dict(frame))

    if isinstance(var, ArrayVariable):
        node = var.node
        if node not in outputs:
            outputs.append(node)
        if var.eager_python is not None:
            return ("python", (var.eager_python, outputs.index(node)))
        return ("scalar" if var.scalar else "array", outputs.index(node))
    if isinstance(var, (ConstantVariable, PythonObjectVariable)):
        sizes = _size_expression(var.value, output)
        if sizes is not None:  # sizes returned (x.shape): read from the frame, for every size
            return ("frame", reader(sizes))
        return ("const", specialize_sizes(var.value))
    if isinstance(var, (ListVariable, DictVariable)) and var.source is not None:
        # The caller's own list or dict (unchanged, or the epilogue would return it).
        return ("frame", reader(var.source.expr))
    if isinstance(var, NamedTupleVariable):
        return ("namedtuple", (var.cls, [_output_spec(v, outputs, output, frame) for v in var.items]))
    if isinstance(var, (TupleVariable, ListVariable)):
        kind = "tuple" if isinstance(var, TupleVariable) else "list"
        return (kind, [_output_spec(v, outputs, output, frame) for v in var.items])
    if isinstance(var, DictVariable):
        return ("dict", {k: _output_spec(v, outputs, output, frame) for k, v in var.items.items()})
    if isinstance(var, UserObjectVariable) and var.source is not None:
        # Only its type is guarded: return the object this call was given.
        return ("frame", reader(var.source.expr))
    if isinstance(var, UserFunctionVariable) and isinstance(var.fn, types.FunctionType) \
            and var.bound_self is None:
        return ("const", var.fn)
    raise Unsupported(f"returning {var.describe()} is not supported yet")


def _with_layouts(spec: Any, result: VariableTracker, outputs: list[ir.Node]) -> Any:
    """``spec``, told to lay each returned array out as NumPy's was (a backend's
    buffer may have other strides; the layout decides whether a later reshape is a
    view).  Arrays of unknown layout are returned as the backend made them."""
    layouts = {}

    def visit(var: Any) -> None:
        if isinstance(var, ArrayVariable) and not var.scalar and var.eager_python is None and var.node in outputs:
            node = var.node
            strides = numpy_strides(var.layout, node.meta.shape, node.meta.dtype)
            if strides is not None:
                layouts.setdefault(outputs.index(node), strides)
        elif isinstance(var, (TupleVariable, ListVariable, NamedTupleVariable)):
            for item in var.items:
                visit(item)
        elif isinstance(var, DictVariable):
            for item in var.items.values():
                visit(item)

    visit(result)
    return ("laid_out", (tuple(layouts.items()), spec)) if layouts else spec


def _size_expression(value: Any, output: OutputGraph | None) -> str | None:
    """A symbolic size (or a tuple of sizes and ints, a shape) as a Python expression
    over the frame's arrays; None for anything else (specialized, with a guard)."""
    if output is None or output.symbols is None or not is_symbolic(value):
        return None
    sources = output.symbols.env.sources
    if isinstance(value, Sym):
        return f"({value.render(lambda s: f'({sources[s]})')})"
    if type(value) is tuple and all(type(v) is int or isinstance(v, Sym) for v in value):
        parts = [repr(v) if type(v) is int else _size_expression(v, output) for v in value]
        return None if None in parts else "(" + "".join(f"{p}, " for p in parts) + ")"
    return None


def rebuild(spec: Any, values: tuple, L: dict, G: dict) -> Any:
    kind, payload = spec
    if kind == "array":
        value = values[payload]
        # a backend may hand back a NumPy scalar for a 0-d result; eager had an array
        return np.asarray(value) if isinstance(value, np.generic) else value
    if kind == "laid_out":  # a backend's buffer may be laid out otherwise: copied into NumPy's layout
        layouts, inner = payload
        for index, strides in layouts:  # (the common case, already laid out so, copies nothing)
            if getattr(values[index], "strides", strides) != strides:
                values = (*values[:index], storage_array(values[index], strides), *values[index + 1:])
        return rebuild(inner, values, L, G)
    if kind == "scalar":
        # eager NumPy had a NumPy scalar here, not a 0-d array (a Tensor stays a Tensor)
        return values[payload][()]
    if kind == "python":  # eager had a Python value (np.allclose's bool), not a NumPy scalar
        python_type, index = payload
        return python_result(python_type, values[index])
    if kind == "const":
        return payload
    if kind == "frame":
        return payload(L, G)
    if kind == "dict":
        return {k: rebuild(s, values, L, G) for k, s in payload.items()}
    if kind == "namedtuple":
        cls, specs = payload
        return tuple.__new__(cls, [rebuild(s, values, L, G) for s in specs])
    items = [rebuild(s, values, L, G) for s in payload]
    return tuple(items) if kind == "tuple" else items


def _extractor(exprs: list[str], builtins_dict: dict, closure: tuple | None) -> Callable:
    """``extract(L, G) -> (L['x'], G['W'], ...)``: the graph inputs of this frame."""
    body = ", ".join(exprs)
    src = f"def extract(L, G):\n    return ({body}{',' if exprs else ''})"
    namespace = {"B": builtins_dict, "CLOSURE": closure or (), "___asarray": np.asarray,
                 "___size_input": size_input}
    exec(compile(src, "<minicompile inputs>", "exec"), namespace)
    return namespace["extract"]


def compile_entry(
    fn: types.FunctionType, L: dict[str, Any], backend: Backend, fullgraph: bool,
    wrap_function: Callable[[types.FunctionType], Any] | None = None, is_resume: bool = False,
    dynamic: DynamicPolicy | None = None, recompile_reason: str | None = None,
    graph: GraphId | None = None,
) -> CacheEntry:
    """Capture ``fn`` for this frame and compile the graph with ``backend``.

    ``wrap_function`` compiles the functions a graph break hands work to
    (resume functions, a callee that broke); without it a break runs eagerly.
    ``recompile_reason`` (the guard that failed) is set when ``fn`` already
    had cache entries; the capture carries it to the recorders.  ``graph`` is
    the id of this compile (:mod:`minicompile.graph_id`), the entry's
    ``graph_id``: the caller compiles under it (``graph_id.compiling``), so
    that the artifacts and the kernel names carry it.
    """
    cap = capture(fn, L, wrap_function, allow_breaks=not fullgraph, scalars_as_inputs=is_resume,
                  dynamic=dynamic)
    fb = frame_builtins(fn)
    cap.guards.rename(getattr(fn, "stack_names", {}))  # a resume function's stack, in the user's words
    guard = cap.guards.compile(fb, fn.__closure__)
    logs.log("guards", lambda: f"{fn.__qualname__}:\n{guard.source}")
    cap.name = fn.__qualname__
    cap.recompile_reason = recompile_reason
    for recorder in RECORDERS:
        recorder.append(cap)

    if cap.break_reason is not None and cap.break_plan is None:
        logs.log("graph_breaks", lambda: f"{fn.__qualname__}: {cap.break_reason}; running the "
                 f"function eagerly ({cap.not_resumable or 'no resume point'})")
        # Under fullgraph, a program NumPy itself rejects raises NumPy's error
        # (from the eager run below), not a graph-break error.
        if fullgraph and not cap.break_reason.numpy_error:
            raise GraphBreakError(cap.break_reason)

        def run_eager(L: dict, G: dict, args: tuple, kwargs: dict) -> Any:
            return fn(*args, **kwargs)

        return CacheEntry(guard, cap, run_eager, graph_id=graph)

    logs.log("graph", lambda: cap.graph.python_code(fn.__name__))
    extract = _extractor(cap.input_sources, fb, fn.__closure__)
    start = time.perf_counter()
    if cap.graph.op_count() == 0:
        compiled = cap.graph  # nothing to compile: outputs are inputs or constants
    else:
        example_inputs = list(extract(L, fn.__globals__))
        if cap.graph.is_dynamic and any(isinstance(x, Tensor) for x in example_inputs):
            # The joint forward/backward graph is built for static sizes only.
            logs.log("recompiles", lambda: f"{fn.__qualname__}: mc.Tensor inputs, static capture")
            return compile_entry(fn, L, backend, fullgraph, wrap_function, is_resume, dynamic=None,
                                 recompile_reason=recompile_reason, graph=graph)
        try:
            if any(isinstance(x, Tensor) for x in example_inputs):
                # Tensors in: compile forward and backward (AOTAutograd), record on the tape
                # (a loop node is written out there first when a gradient flows).
                compiled = AotFunction(cap.graph, example_inputs, backend)
            else:
                # Symbolic sizes or not: the backend was told how to meet them when it
                # was looked up (once, or once per shape: minicompile.per_shape).
                compiled = backend(cap.graph, example_inputs)
        except Exception as e:
            name = getattr(backend, "__name__", repr(backend))
            raise RuntimeError(f"minicompile backend {name!r} failed on {fn.__qualname__}: {e}") from e
    seconds = time.perf_counter() - start

    if cap.break_plan is not None:
        transformed = _transformed_function(fn, cap.break_plan, compiled, fb)
        if cap.break_reason is not None:
            logs.log("graph_breaks", lambda: f"{fn.__qualname__}: {cap.break_reason}; resuming after it")
        logs.log("bytecode", lambda: f"transformed {fn.__qualname__}:\n{cap.break_plan.source}\n\n"
                 + bytecode.side_by_side(f"original {fn.__qualname__}", bytecode.format_bytecode(fn.__code__),
                                         "transformed", bytecode.format_bytecode(transformed.__code__)))

        resumes = cap.break_plan.resumes

        def run_transformed(L: dict, G: dict, args: tuple, kwargs: dict) -> Any:
            try:
                outcome = transformed(L, G)
            except GraphRaised as e:
                return _run_as_python(fn, args, kwargs, e.error)
            if not resumes:
                return outcome
            # The resume function is called here, after the transformed function has
            # returned: a traceback from the code after the break then shows the
            # user's function once, at the line that raised (user_code.py).
            resume, resume_args = outcome
            return resume(*resume_args)

        return CacheEntry(guard, cap, run_transformed, compiled, seconds, graph_id=graph)

    spec = cap.output_spec

    def run_compiled(L: dict, G: dict, args: tuple, kwargs: dict) -> Any:
        try:
            values = compiled(*extract(L, G))
        except Exception as e:
            return _run_as_python(fn, args, kwargs, e)
        return rebuild(spec, values, L, G)

    return CacheEntry(guard, cap, run_compiled, compiled, seconds, graph_id=graph)


def _run_as_python(fn: types.FunctionType, args: tuple, kwargs: dict, error: BaseException) -> Any:
    """The compiled graph raised ``error`` before anything was written back: run the
    frame as Python.  NumPy raising there too (an integer to a negative power, a
    bad index) is its own error, after the writes eager execution makes first;
    NumPy not raising means the backend was wrong, which is said."""
    result = fn(*args, **kwargs)
    if config.strict:
        raise error
    warn(f"minicompile: the compiled code of {fn.__qualname__} raised "
         f"{type(error).__name__}: {error}; ran it as Python instead")
    return result


def _transformed_function(fn: types.FunctionType, plan: BreakPlan, compiled: Any,
                          builtins_dict: dict) -> types.FunctionType:
    """Compile the break plan's source into the function that replaces the frame."""
    namespace = {"B": builtins_dict, "CLOSURE": fn.__closure__ or (), "___graph": compiled,
                 "___GraphRaised": GraphRaised,
                 "___asarray": np.asarray, "___size_input": size_input, **plan.namespace}
    # Compiled as the user's function at the line of the break: a traceback through
    # it (the instruction it runs raising) shows that line of the user's file.
    exec(user_code.compile_at(plan.source, fn.__code__, plan.positions, "transformed"), namespace)
    transformed = namespace["transformed"]
    transformed.__qualname__ = f"{fn.__qualname__} (transformed)"
    transformed.source = plan.source
    return transformed


# recording() pushes a list here; every capture made while it is open is appended
# to every open list (explain() and minicompile.testing's counters use it).
RECORDERS: list[list[Capture]] = []


@contextlib.contextmanager
def recording() -> Iterator[list[Capture]]:
    """Collect every capture (one per cache entry compiled, recompiles and resume
    functions included) made while the block runs, in order."""
    captures: list[Capture] = []
    RECORDERS.append(captures)
    try:
        yield captures
    finally:
        RECORDERS.remove(captures)
