"""Graph breaks that resume: compile what came before, run one instruction for real, go on.

When the interpreter stops at an instruction it cannot trace (a call to
``print``, ``x.item()``, a branch on an array value, an in-place update), and
the frame can be resumed there, the cache entry becomes a *transformed
function* — TorchDynamo's transformed code object — that

1. calls the compiled graph of everything traced so far,
2. rebuilds the values on the stack and in the live locals (from the graph's
   outputs, from the frame, or from constants),
3. runs the unsupported instruction in CPython, on real values,
4. returns the result of a *resume function* (see resume_execution.py) that
   continues the original bytecode right after that instruction — one per
   side of a branch.

The transformed function is generated as Python source and compiled to a
real code object, so it can be printed (``MINICOMPILE_LOGS=bytecode``).
Resume functions are wrapped like any compiled function and traced lazily on
their first call, so the code after a break gets a graph of its own.
"""
from __future__ import annotations

import dis
import linecache
import types
from dataclasses import dataclass
from typing import Any, Callable

from .. import ir, logs
from . import bytecode
from .bytecode import CURRENT as VERSION
from .exc import NotResumable
from .output_graph import OutputGraph
from .reconstruct import Reconstructor
from .user_code import is_library_code
from .resume_execution import can_resume, covered_by_exception_table, inside_loop, make_resume_code
from .variables.base import NULL, ConstantVariable, VariableTracker
from .variables.containers import TupleVariable
from .variables.functions import UserFunctionVariable

JUMPS_IF_TRUE = {"POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE"}
JUMPS_IF_FALSE = {"POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE"}
CALLS = {"CALL", "CALL_KW", "CALL_FUNCTION_EX"}
# Instructions that compute one value from k stack operands, as Python source.
EXPRESSIONS: dict[str, tuple[int, Callable[..., str]]] = {
    "UNARY_NOT": (1, lambda inst, a: f"(not {a})"),
    "BINARY_SUBSCR": (2, lambda inst, a, b: f"{a}[{b}]"),
    "LOAD_ATTR": (1, lambda inst, a: f"{a}.{inst.argval}"),
}


@dataclass
class BreakPlan:
    """Everything needed to build the transformed function of one break."""

    outputs: list[ir.Node]     # graph outputs the transformed code reads
    source: str                # the transformed function, as Python source
    namespace: dict[str, Any]  # the objects its source refers to (graph, resume functions, ...)
    # Where in the user's code the transformed function stands (dis.Positions of the
    # instruction it runs, or of the return): its frame in a traceback shows that.
    positions: Any = None
    # A break: the transformed function returns (resume function, its arguments), for
    # the caller to call; an epilogue returns the frame's return value.
    resumes: bool = False


def plan_graph_break(tracer, output: OutputGraph, make_resume: Callable[[types.FunctionType], Any],
                     wrap_callee: Callable[[Any], Any]) -> BreakPlan:
    """Plan the transformed function for a break at ``tracer.snapshot``; raises NotResumable."""
    code, state = tracer.code, tracer.snapshot
    why = can_resume(code)
    if why:
        raise NotResumable(why)
    if output.mutations != state.mutations:
        raise NotResumable("the instruction had already changed a traced list or dict")
    instructions = tracer.instructions
    inst = instructions[state.index]
    positions = inst.positions
    if covered_by_exception_table(code, inst.offset):
        raise NotResumable("the break is inside a try/with block or a comprehension")
    if inside_loop(instructions, inst.offset):
        raise NotResumable("the break is inside a loop body")

    w = Reconstructor(output, wrap_callee)
    stack = list(state.stack)
    next_index = state.index + 1
    instruction: list[str] = []  # the instruction itself, run after the effects traced before it
    branch = None
    if inst.opname == "TO_BOOL" and instructions[next_index].opname in JUMPS_IF_TRUE | JUMPS_IF_FALSE:
        inst, next_index = instructions[next_index], next_index + 1  # 3.13: TO_BOOL then jump
    if inst.opname in JUMPS_IF_TRUE | JUMPS_IF_FALSE:
        branch = (w.expr(stack.pop()), inst.opname in JUMPS_IF_TRUE, inst.argval)
        result = None
    elif inst.opname in CALLS:
        result = _call_source(w, inst, stack, state, tracer.code)
    elif inst.opname in EXPRESSIONS and not (inst.opname == "LOAD_ATTR" and VERSION.load_attr_method_flag
                                               and inst.arg & 1):
        k, render = EXPRESSIONS[inst.opname]
        operands = [w.expr(v) for v in stack[-k:]]
        del stack[-k:]
        result = render(inst, *operands)
    elif inst.opname == "BINARY_OP":
        b, a = w.expr(stack.pop()), w.expr(stack.pop())
        symbol = inst.argrepr
        if symbol.endswith("=") and symbol not in ("==", "!=", "<=", ">="):
            instruction.append(f"___lhs = {a}")
            instruction.append(f"___lhs {symbol} {b}")  # in place on the real object, as CPython would
            result = "___lhs"
        else:
            result = f"({a} {symbol} {b})"
    elif inst.opname == "STORE_SUBSCR":
        key, container, value = w.expr(stack.pop()), w.expr(stack.pop()), w.expr(stack.pop())
        instruction.append(f"{container}[{key}] = {value}")
        result = None
    else:
        raise NotResumable(f"cannot resume after {inst.opname}")

    # Locals the resume function receives (every local of the frame, in order).
    local_exprs, unbound = [], []
    for name in code.co_varnames:
        if name in state.locals and state.locals[name] is not NULL:
            local_exprs.append(w.expr(state.locals[name]))
        elif name in tracer.frame_locals and name not in state.deleted:
            local_exprs.append(f"L[{name!r}]")  # an argument the trace never read
        else:
            local_exprs.append("None")
            unbound.append(name)
    below = [w.expr(v) for v in stack if v is not NULL]

    def resume_call(offset: int, pushed: list[str]) -> str:
        slots = [v is not NULL for v in stack] + [True] * len(pushed)
        resume_code = make_resume_code(code, offset, slots, unbound)
        line = _line_at(instructions, offset)
        fn = types.FunctionType(resume_code, tracer.f_globals, resume_code.co_name)
        # Tracebacks show it as the function it continues (its code's name); logs say more.
        fn.__qualname__ = f"{resume_code.co_qualname} (resumed at line {line})"
        # Its stack parameters, in the user's words (guards print these).
        values = [v for v in stack if v is not NULL] + [None] * len(pushed)
        params = resume_code.co_varnames[len(code.co_varnames):]
        fn.stack_names = {**getattr(tracer.fn, "stack_names", {}),
                          **{f"L[{p!r}]": _stack_name(v, code, positions) for p, v in zip(params, values)}}
        logs.log("bytecode", lambda: f"{fn.__qualname__}:\n{bytecode.format_bytecode(resume_code)}")
        name = w.named(f"___resume_at_{offset}", make_resume(fn))
        arguments = "".join(f"{a}, " for a in local_exprs + below + pushed)
        return f"{name}, ({arguments})"

    # Reads first (w.lines), then the effects traced before the break, then the instruction.
    effects = _effects(output, w)
    body = [f"    {line}" for line in w.read_lines() + effects + instruction]
    if branch is not None:
        cond, jump_if_true, target = branch
        fallthrough = instructions[next_index].offset
        body.append(f"    if {cond}:" if jump_if_true else f"    if not {cond}:")
        body.append(f"        return {resume_call(target, [])}")
        body.append(f"    return {resume_call(fallthrough, [])}")
    else:
        pushed = [] if inst.opname == "STORE_SUBSCR" else ["___result"]
        if pushed:
            body.append(f"    ___result = {result}")
        body.append(f"    return {resume_call(instructions[next_index].offset, pushed)}")
    header = ["def transformed(L, G):"] + [f"    {line}" for line in _call_graph(output)]
    return BreakPlan(w.outputs, "\n".join(header + body), w.namespace, positions, resumes=True)


def plan_epilogue(output: OutputGraph, result: VariableTracker,
                  wrap_callee: Callable[[Any], Any], positions: Any = None) -> BreakPlan:
    """The code after a complete graph when the trace had side effects:
    read the return value, replay the effects, return.  ``positions``: those of
    the return it stands for."""
    w = Reconstructor(output, wrap_callee)
    ret = w.expr(result)
    effects = _effects(output, w)
    lines = _call_graph(output) + w.read_lines() + effects + [f"return {ret}"]
    return BreakPlan(w.outputs, "def transformed(L, G):\n" + "\n".join("    " + l for l in lines), w.namespace,
                     positions)


def _stack_name(var: VariableTracker | None, code: types.CodeType, positions: Any) -> str:
    """How a resume function's stack parameter reads to the user: the expression whose
    value it is (``<x.item()>``, for the result of the instruction that broke), the
    caller's name for a value of theirs (``<x>``), else where it was on the stack."""
    if var is None:
        text = _source_text(code.co_filename, positions)
        if text:
            return f"<{text}>"
    elif var.source is not None and var.source.expr.startswith(("L[", "G[")):
        return "<" + var.source.expr[2:].replace("']", "", 1).lstrip("'") + ">"
    line = getattr(positions, "lineno", None)
    return f"<a value on the stack at line {line}>"


def _source_text(filename: str, positions: Any) -> str | None:
    """The user's source text at ``positions`` (one line, trimmed), if it can be read."""
    line_no = getattr(positions, "lineno", None)
    if not line_no:
        return None
    line = linecache.getline(filename, line_no)
    if not line:
        return None
    raw = line.encode()
    start = positions.col_offset or 0
    end = positions.end_col_offset if positions.end_lineno == line_no and positions.end_col_offset else len(raw)
    text = raw[start:end].decode(errors="replace").strip()
    return text + ("..." if positions.end_lineno != line_no else "") if text else None


def _line_at(instructions: list, offset: int) -> int | None:
    """The source line of the first instruction at or after ``offset`` that has one."""
    for inst in instructions:
        if inst.offset >= offset and inst.positions is not None and inst.positions.lineno is not None:
            return inst.positions.lineno
    return None


def _call_graph(output: OutputGraph) -> list[str]:
    """The graph call that starts a transformed function (see exc.GraphRaised)."""
    return ["try:", f"    ___out = ___graph({', '.join(output.input_exprs())})",
            "except Exception as ___error:", "    raise ___GraphRaised(___error) from ___error"]


def _effects(output: OutputGraph, w: Reconstructor) -> list[str]:
    """What the traced code did to the caller's objects, replayed on them: first the
    new values of the arrays it wrote written back into their memory, then the
    side effects on lists, dicts, attributes and globals."""
    lines = [f"{target}[...] = {w.node_value(node)}" for target, node in output.functional.write_backs()]
    return lines + output.side_effects.emit(w.expr)


def _call_source(w: Reconstructor, inst: dis.Instruction, stack: list, state, code) -> str:
    """The CALL instruction as a Python call expression on the rebuilt values."""
    if inst.opname == "CALL_FUNCTION_EX":
        kwargs = w.expr(stack.pop()) if inst.arg & 1 else None
        args = w.expr(stack.pop())
        second, first = stack.pop(), stack.pop()
        fn, self_arg = bytecode.split_callable(first, second, NULL)
        prefix = f"{w.expr(self_arg)}, " if self_arg is not None else ""
        return f"{_callable(w, fn)}({prefix}*{args}" + (f", **{kwargs})" if kwargs else ")")
    if inst.opname == "CALL_KW":
        kw_names = tuple(w_value(stack.pop()))
    else:
        kw_names = state.kw_names
    argc = inst.arg
    args = stack[len(stack) - argc:]
    del stack[len(stack) - argc:]
    second, first = stack.pop(), stack.pop()
    fn, self_arg = bytecode.split_callable(first, second, NULL)
    if self_arg is not None:
        args = [self_arg] + args
    n_kw = len(kw_names)
    positional = [w.expr(a) for a in args[: len(args) - n_kw]]
    keywords = [f"{k}={w.expr(v)}" for k, v in zip(kw_names, args[len(args) - n_kw:])]
    return f"{_callable(w, fn)}({', '.join(positional + keywords)})"


def _callable(w: Reconstructor, fn: VariableTracker) -> str:
    """The function the broken call calls.  A function of the user's is where the
    trace broke: it is compiled on its own (and traced up to its own break); a
    library's (``json.dumps``) runs as it is."""
    if isinstance(fn, UserFunctionVariable):
        return w.callee(fn, compiled=not is_library_code(fn.code))
    return w.expr(fn)


def w_value(var: VariableTracker) -> Any:
    if isinstance(var, ConstantVariable):
        return var.value
    if isinstance(var, TupleVariable):
        return tuple(w_value(v) for v in var.items)
    raise NotResumable(f"keyword names from {var.describe()}")


