"""Random NumPy programs: the source of a function and of its arguments, drawn by hypothesis.

In:  what the programs may do (the options of :func:`programs`).
Out: :class:`Program` — the source of a straight-line function of 3-12
     statements and the source of ``make_args()``, which builds a fresh,
     identically aliased argument set on every call; printed, it shows both::

         def f(a, b, lst):
             v0 = a[::-1]
             a[0] = -2.5
             np.add(v0, lst[0], out=b)
             print("p", np.round(b, 4).tolist())
             lst[1] += 1
             return v0

         def make_args():
             b0 = np.array([0.25, -1.0, 2.0, 0.5], dtype=np.float64)
             b1 = np.array([3, -1, 0, 2], dtype=np.int64)
             return (b0[:3], b0[1:], [b0[::-1][1:], b1]), [b0, b1]

``program.function()`` is ``f``, ``program.arguments()`` fresh arguments for it;
:func:`minicompile.testing.check` runs a strategy of programs as it runs a
function over drawn arguments (``check(programs(mutation=True))``).

By default a program is pure: calls of the op table (:mod:`.statements`) over
one to three independent arrays of any dtype, shape (0-d and empty included)
and layout (C, Fortran, negative strides), each result a new name, the last two
returned.  The options turn on what compiled code gets wrong most easily:

* ``mutation`` — writes: in-place operators, setitem with every kind of key,
  ``out=``, ``np.copyto``, ``ufunc.at``, ``fill``, ``sort``, views written
  through, arrays in lists, dicts and attributes rebound and updated;
* ``graph_breaks`` — ``print``, ``float(x.sum())``, ``.item()`` and calls to
  functions hidden from the tracer (one writes into its argument);
* ``aliasing`` — arguments that alias in every way NumPy allows: the same
  array twice, overlapping and disjoint views of one base, a view with its
  base, a transposed view, a 0-d view, containers sharing an argument;
* ``tensors`` — (with ``aliasing``) ``mc.Tensor`` arguments, which wrap their
  array without copying: over another argument's array, a view of one of its
  bases, or an array of their own, alone or in a container; statements read them
  (``r3 = t * 1``), after the writes into the memory they share, and the result
  returns one such read now and then;
* ``raising`` — now and then a last statement NumPy refuses (``int_array +=
  1.5``, a write into ``broadcast_to``): the compiled function must raise the
  same exception type and leave the arguments as NumPy leaves them.

With any of them the program is made of :func:`~.statements.draw_statement`'s
kinds (views and computations, plus those turned on), over arguments that are
arrays, 0-d views and containers of arrays.  Each candidate statement is run
with NumPy while the program is drawn, on the real (aliased) arguments, so the
generator knows every value's shape, dtype and memory and keeps only statements
NumPy accepts (and whose values stay small and finite).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from .statements import (BREAKS_THE_GRAPH, NAMESPACE, SHAPES, DTYPES, STATEMENT_KINDS, WRITES, Box, array_paths,
                         draw_call, draw_return, draw_statement, draw_values, in_bounds, keeps, new_name, quietly)
from .strategies import array_literal

# How often a statement NumPy refuses is kept (as the last one): about one program in eight raises.
KEEP_RAISING = 0.04

# ---------------------------------------------------------------------------
# The arguments: make_args() source with its aliasing
# ---------------------------------------------------------------------------

# Views of a base passed as arguments, by the base's number of dimensions.
ARG_VIEWS = {
    1: ["{b}[1:]", "{b}[::2]", "{b}[::-1]", "{b}[:-1]", "{b}[-2::-2]", "{b}[..., 0]", "{b}[None]"],
    2: ["{b}.T", "{b}[1:]", "{b}[:, ::-1]", "{b}[0]", "{b}[:, 1]", "{b}.reshape(-1)", "{b}[::-1, 1:]",
        "np.swapaxes({b}, 0, 1)"],
    3: ["{b}[0]", "{b}[:, ::-1]", "np.transpose({b}, (2, 0, 1))", "{b}[..., 0]", "{b}.reshape(-1)"],
}
# (first view, second view) pairs of one base.
ARG_VIEW_PAIRS = ["({b}[:-1], {b}[1:])", "({b}[:2], {b}[2:])", "({b}, {b}[::2])", "({b}[::2], {b})",
                  "({b}, {b}.T)", "({b}.T, {b})", "({b}[1:], {b}[::-1])", "({b}[::2], {b}[1::2])",
                  "({b}, {b})"]
LAYOUTS = ["", "", "", "fortran", "strided", "reversed"]


@dataclass
class Args:
    """The source of ``make_args()``, built line by line."""

    lines: list[str] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)
    exprs: list[str] = field(default_factory=list)  # one per parameter
    arrays: list[str] = field(default_factory=list)  # array expressions usable as items
    ndims: dict[str, int] = field(default_factory=dict)  # base name -> its number of dimensions

    def new_base(self, draw, shape=None, dtype=None) -> str:
        shape = draw(st.sampled_from(SHAPES)) if shape is None else shape
        dtype = draw(st.sampled_from(DTYPES)) if dtype is None else dtype
        values = draw_values(draw, shape, dtype)
        return self.add_base(values, draw(st.sampled_from(LAYOUTS)) if values.ndim else "")

    def add_base(self, values: np.ndarray, layout: str) -> str:
        """A line ``b<n> = <values laid out as layout>``; its name.  Layouts: "" (C),
        "fortran", "strided" (every other element of a wider base), "reversed"."""
        name = f"b{len(self.bases)}"
        if not values.ndim:
            layout = ""
        if layout == "fortran" and values.ndim >= 2:
            self.lines.append(f"{name} = np.asfortranarray({array_literal(values)})")
        elif layout == "strided":  # every other element of a hidden, twice as long base
            self.lines.append(f"{name} = np.repeat({array_literal(values)}, 2, axis=-1)[..., ::2]")
        elif layout == "reversed":  # negative strides on the last axis
            self.lines.append(f"{name} = {array_literal(np.flip(values, -1))}[..., ::-1]")
        else:
            self.lines.append(f"{name} = {array_literal(values)}")
        self.bases.append(name)
        self.ndims[name] = values.ndim
        return name

    def evaluates(self, expr: str) -> bool:
        """Does NumPy accept ``expr`` (``b0[..., 0]`` of an empty ``b0`` does not)?"""
        namespace = dict(NAMESPACE)
        try:
            exec("\n".join(self.lines), namespace)
            eval(expr, namespace)
        except Exception:
            return False
        return True

    @property
    def source(self) -> str:
        body = "".join(f"    {line}\n" for line in self.lines)
        return f"def make_args():\n{body}    return ({', '.join(self.exprs)},), [{', '.join(self.bases)}]\n"


def draw_view_of(draw, args: Args, base: str) -> str:
    options = ARG_VIEWS.get(min(args.ndims[base], 3), [])
    view = draw(st.sampled_from(options)).format(b=base) if options else base
    return view if args.evaluates(view) else base


def draw_tensor(draw, args: Args) -> str:
    """``mc.Tensor(x)`` (no copy: its data is ``x``) over another argument's array,
    a view of a base, or a base of its own."""
    choice = draw(st.integers(0, 3))
    if choice <= 1 and args.arrays:
        inner = draw(st.sampled_from(args.arrays))
    elif choice == 2 and args.bases:
        inner = draw_view_of(draw, args, draw(st.sampled_from(args.bases)))
    else:
        inner = args.new_base(draw)
    return f"mc.Tensor({inner})"


@st.composite
def arguments(draw, aliasing: bool = True, tensors: bool = False) -> tuple[list[str], Args]:
    """Parameter names and the make_args() that builds them: arrays (views of a base
    of their own, now and then), 0-d views, a list, a dict and a :class:`Box` of
    arrays; with ``aliasing``, also the same array twice, views of one base, and
    container members that are other arguments; with ``tensors`` too, mc.Tensor
    wrappers of such arrays (see :func:`draw_tensor`), as arguments and members."""
    args = Args()
    params: list[str] = []
    n_params = draw(st.integers(1, 4))
    kinds = ["array", "array", "same", "view", "pair", "pair", "zero_d", "list", "dict", "box"]
    if not aliasing:
        kinds = [k for k in kinds if k not in ("same", "view", "pair")]
    tensors = tensors and aliasing
    if tensors:
        kinds += ["tensor"]
    while len(args.exprs) < n_params:
        kind = draw(st.sampled_from(kinds))
        if kind in ("same", "view") and not args.arrays:
            kind = "array"
        prefix = {"list": "lst", "dict": "dct", "box": "obj"}.get(kind)
        if kind == "tensor":
            prefix = "t" if "t" not in params else "u"
        if prefix in params:  # one container of each kind keeps names readable
            kind, prefix = "array", None
        if kind == "array":
            name = args.new_base(draw)
            items = [name if draw(st.integers(0, 2)) else draw_view_of(draw, args, name)]
        elif kind == "same":
            items = [draw(st.sampled_from(args.arrays))]
        elif kind == "view":
            base = draw(st.sampled_from(args.bases))
            items = [draw_view_of(draw, args, base)]
        elif kind == "pair":
            base = args.new_base(draw, shape=draw(st.sampled_from([(4,), (5,), (3, 3), (4, 2)])))
            pair = draw(st.sampled_from(ARG_VIEW_PAIRS))
            if ".T" in pair and args.ndims[base] < 2:
                pair = ARG_VIEW_PAIRS[0]
            first, second = pair.format(b=base)[1:-1].split(", ", 1)
            if not args.evaluates(f"({first}, {second})"):
                first, second = base, f"{base}[::-1]"
            items = [first, second][: n_params - len(args.exprs)]
        elif kind == "tensor":
            items = [draw_tensor(draw, args)]
        elif kind == "zero_d":
            base = args.new_base(draw, shape=draw(st.sampled_from([(), (3,), (2, 2)])))
            ndim = args.ndims[base]
            items = [base if ndim == 0 else f"{base}[{', '.join(['0'] * ndim)}, ...]"]
        else:
            members = []
            for _ in range(draw(st.integers(1, 3))):
                if tensors and draw(st.integers(0, 3)) == 0:
                    members.append(draw_tensor(draw, args))
                elif aliasing and args.arrays and draw(st.integers(0, 2)) == 0:
                    members.append(draw(st.sampled_from(args.arrays)))  # shared with another argument
                else:
                    base = args.new_base(draw)
                    members.append(base if draw(st.integers(0, 2)) else draw_view_of(draw, args, base))
            if kind == "list":
                items = [f"[{', '.join(members)}]"]
            elif kind == "dict":
                keys = ["w", "g", "m"]
                items = ["{" + ", ".join(f"{keys[i]!r}: {m}" for i, m in enumerate(members)) + "}"]
            else:
                keys = ["w", "g", "m"]
                items = [f"Box({', '.join(f'{keys[i]}={m}' for i, m in enumerate(members))})"]
        for item in items:
            params.append(prefix or "abcdefgh"[sum(1 for p in params if len(p) == 1)])
            args.exprs.append(item)
            if prefix is None:
                args.arrays.append(item)
    return params, args


# ---------------------------------------------------------------------------
# The program
# ---------------------------------------------------------------------------


@dataclass
class Program:
    """A drawn function (``source``, ``function()``) and its arguments
    (``args_source``, ``arguments()``); printed, the two sources."""

    params: list[str]
    args_source: str  # def make_args(): ... return (args,), [bases]
    lines: list[str]
    returns: str | None  # the return expression; None: no return statement
    raises: bool  # the last statement raises in NumPy
    calls: tuple[str, ...] = ("aliased", "aliased")  # argument sets of the compiled calls, in order

    @property
    def source(self) -> str:
        body = "".join(f"    {line}\n" for line in self.lines)
        ret = f"    return {self.returns}\n" if self.returns is not None else ""
        return f"def f({', '.join(self.params)}):\n{body}{ret}"

    def function(self) -> Callable:
        namespace = dict(NAMESPACE)
        exec(compile(self.source, "<drawn program>", "exec"), namespace)
        return namespace["f"]

    def make_args(self, variant: str = "aliased") -> tuple[tuple, list[np.ndarray]]:
        """Fresh arguments and the bases they view.  ``"separate"``: each argument is a
        deep copy of its own, so no two arguments alias (a container's members may);
        ``"raising"``: the aliased ones, for a call made while NumPy's floating-point
        errors raise (``np.errstate(all="raise")``, which the caller sets)."""
        import minicompile as mc  # (mc.Tensor arguments; imported late: minicompile imports this module)

        namespace = dict(NAMESPACE, mc=mc)
        exec(compile(self.args_source, "<make_args>", "exec"), namespace)
        args, bases = namespace["make_args"]()
        if variant == "separate":
            return tuple(copy.deepcopy(a) for a in args), []
        return args, bases

    def arguments(self) -> tuple:
        """Fresh arguments for ``function()``, aliasing as ``make_args`` builds them."""
        return self.make_args()[0]

    def __str__(self) -> str:
        used = [name for name in NAMESPACE if name != "np" and f"{name}(" in self.source + self.args_source]
        imports = f"# {', '.join(used)}: from minicompile.testing.statements import {', '.join(used)}\n" if used else ""
        return f"{imports}{self.source}\n{self.args_source}"

    def __repr__(self) -> str:
        calls = self.calls != ("aliased", "aliased")
        return f"{self}\n# calls, in order: {', '.join(self.calls)}" if calls else str(self)



class State:
    """The program so far, run on real arguments: names, values, the bases."""

    def __init__(self, program: Program):
        self.program = program
        self.reset()

    def reset(self) -> None:
        args, bases = self.program.make_args()
        self.env = dict(NAMESPACE)
        self.env.update(zip(self.program.params, args))
        self.bases = bases
        for line in self.program.lines:
            quietly(exec, line, self.env)

    def try_line(self, line: str) -> BaseException | None:
        """Run ``line``; None if NumPy accepts it (and the values stay in bounds)."""
        try:
            quietly(exec, line, self.env)
        except Exception as e:
            self.reset()
            return e
        with np.errstate(all="ignore"):
            bounded = in_bounds([v for k, v in self.env.items() if k not in NAMESPACE] + self.bases)
        if not bounded:
            self.reset()
            return OverflowError("out of bounds")
        return None

    @property
    def names(self) -> list[str]:
        return [k for k in self.env if k not in NAMESPACE]

    def arrays(self) -> list[tuple[str, np.ndarray]]:
        # With no array in sight, a fresh one: a subscript, so that it is a valid
        # target of ``t op= v`` too (``np.zeros(2) += 1`` is a SyntaxError).
        return array_paths(self.env, self.names) or [("np.zeros(2)[...]", np.zeros(2))]

    def tensors(self) -> list[str]:
        """Paths of the mc.Tensor values: ``t``, ``lst[1]``, ``dct['w']``, ``obj.g``."""
        found = []
        for name in self.names:
            value = self.env[name]
            if _is_tensor(value):
                found.append(name)
            elif isinstance(value, list):
                found += [f"{name}[{i}]" for i, v in enumerate(value) if _is_tensor(v)]
            elif isinstance(value, dict):
                found += [f"{name}[{k!r}]" for k, v in value.items() if _is_tensor(v)]
            elif isinstance(value, Box):
                found += [f"{name}.{k}" for k, v in vars(value).items() if _is_tensor(v)]
        return found

    def scalars(self) -> list[str]:
        return [k for k in self.names if isinstance(self.env[k], (float, int, np.generic))
                and not isinstance(self.env[k], bool)]




def _is_tensor(value: Any) -> bool:
    return type(value).__name__ == "Tensor" and type(value).__module__.endswith("aot.tensor")


# ---------------------------------------------------------------------------
# The strategy
# ---------------------------------------------------------------------------


@st.composite
def programs(draw, *, mutation: bool = False, graph_breaks: bool = False, aliasing: bool = False,
             raising: bool = False, tensors: bool = False, min_statements: int = 3,
             max_statements: int = 12) -> Program:
    """A :class:`Program` of ``min_statements`` to ``max_statements`` statements;
    ``mutation``, ``graph_breaks``, ``aliasing``, ``tensors``, ``raising``: see the
    module docstring."""
    if not (mutation or graph_breaks or aliasing or raising):
        return _calls(draw, min_statements, max_statements)
    kinds = [k for k in STATEMENT_KINDS if (mutation or k not in WRITES) and (graph_breaks or k not in BREAKS_THE_GRAPH)]
    params, args = draw(arguments(aliasing, tensors))
    program = Program(params, args.source, [], None, False)
    state = State(program)
    n_statements = draw(st.integers(min_statements, max_statements))
    attempts = 0
    reads: list[str] = []  # names of the tensors read
    while len(program.lines) < n_statements and attempts < 4 * max_statements:
        attempts += 1
        tensor_paths = state.tensors()
        if tensor_paths and draw(st.integers(0, 3)) == 0:  # a read of a tensor's memory as it is now
            name = new_name(state, "r")
            line = f"{name} = {draw(st.sampled_from(tensor_paths))} * 1"
            if state.try_line(line) is None:
                program.lines.append(line)
                reads.append(name)
            continue
        line = draw_statement(draw, state, kinds)
        error = state.try_line(line)
        if error is None:
            program.lines.append(line)
        elif raising and keeps(error, line) and len(program.lines) >= min_statements - 1 \
                and draw(st.integers(0, 99)) < KEEP_RAISING * 100:
            program.lines.append(line)
            program.raises = True
            break
    assume(len(program.lines) >= min_statements)
    program.returns = draw_return(draw, state)
    reads = [r for r in reads if _is_tensor(state.env.get(r))]  # (not rebound since)
    if reads and draw(st.booleans()):
        read = draw(st.sampled_from(reads))
        program.returns = read if program.returns in (None, "None") else f"{program.returns}, {read}"
    program.calls = draw(st.sampled_from([("aliased", "aliased"), ("aliased", "aliased"),
                                          ("separate", "aliased"), ("aliased", "separate", "aliased"),
                                          ("aliased", "raising", "aliased")]))
    return program


# The pure programs' inputs: every dtype the op table takes, odd shapes.
CALL_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64]
CALL_SHAPES = [(), (1,), (3,), (0,), (2, 3), (3, 1), (1, 4), (2, 0), (2, 3, 2)]


def _call_input(draw, args: Args, shape: tuple[int, ...], dtype: Any) -> str:
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        values = rng.random(shape) < 0.5
    elif dtype.kind == "u":
        values = rng.integers(0, 6, shape)
    elif dtype.kind == "i":
        values = rng.integers(-4, 5, shape)
    else:
        values = np.round(rng.standard_normal(shape) * 2, 2)
    layout = draw(st.sampled_from(["", "fortran", "reversed"]))
    return args.add_base(np.asarray(values).astype(dtype), layout)


def _calls(draw, min_statements: int, max_statements: int) -> Program:
    """A pure program: op-table calls over independent inputs, the last two values returned."""
    n_inputs = draw(st.integers(1, 3))
    params = ["a", "b", "c"][:n_inputs]
    args = Args()
    for _ in range(n_inputs):
        args.exprs.append(_call_input(draw, args, draw(st.sampled_from(CALL_SHAPES)),
                                      draw(st.sampled_from(CALL_DTYPES))))
    program = Program(params, args.source, [], None, False)
    env: dict[str, Any] = dict(zip(params, program.arguments()))
    arrays = list(params)  # names of array values so far
    n_calls = draw(st.integers(min_statements, max_statements))
    attempts = 0
    while len(program.lines) < n_calls and attempts < 200:
        attempts += 1
        code = draw_call(draw, env, arrays)
        if code is None:
            continue
        try:
            value = quietly(eval, code, {"np": np, **env})
        except Exception:
            continue  # NumPy refuses this statement: draw another
        if not isinstance(value, (np.ndarray, np.generic)) or np.asarray(value).dtype.kind not in "biuf":
            continue
        if np.size(value) > 4096:
            continue  # keep programs small
        name = f"v{len(program.lines)}"
        program.lines.append(f"{name} = {code}")
        env[name] = value
        arrays.append(name)
    assume(len(program.lines) >= min_statements)
    program.returns = f"{arrays[-1]}, {draw(st.sampled_from(arrays[n_inputs:-1] or arrays))}"
    return program
