"""Random programs that mutate their arguments, alias them and break the graph.

In: hypothesis draws.  Out: a ``Program`` — the source of a straight-line
function of 3-12 statements and the source of ``make_args()``, which builds a
fresh, identically aliased argument set on every call::

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

The statements mix in-place operators, setitem with basic, integer-array and
boolean-mask keys, ufuncs with ``out=``, ``np.copyto``, ``ufunc.at``,
``fill``, ``sort``, views of every kind (slices with negative steps, ``.T``,
``swapaxes``, view reshapes, ``expand_dims``, ``squeeze``, ``flip``,
read-only ``broadcast_to``), reads of bases and views after writes, updates of
arrays held in lists, dicts and object attributes, and graph breaks
(``print``, ``float(x.sum())``, ``.item()``, calls to functions hidden from
the tracer, one of which mutates its argument).  The arguments alias in every
way NumPy allows: the same array twice, overlapping and disjoint views of one
base, a view with its base, a transposed view, a 0-d view.

Each candidate statement is run with NumPy while the program is drawn, on the
real, aliased arguments, so the generator knows every value's shape, dtype and
memory and keeps only statements NumPy accepts — except that now and then a
statement NumPy refuses (``int_array += 1.5``, a write into ``broadcast_to``)
is kept as the program's last, to check that the compiled function raises the
same exception and leaves the arguments as NumPy leaves them.

``check_program(program, backend)`` runs the program with NumPy and through
``mc.compile(f, backend=B)``, and compares everything the caller can observe:
the result (type, dtype, shape, values, and whether it is, or shares memory
with, an argument), every argument, every base and container element
afterwards, what was printed, and the exception type.  See ``Outcome``.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import io
import textwrap
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from hypothesis import assume, note
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

import minicompile as mc

# ---------------------------------------------------------------------------
# What generated programs may call besides NumPy
# ---------------------------------------------------------------------------


class Box:
    """An object whose attributes hold arrays (``obj.w``, ``obj.g``), like a layer."""

    def __init__(self, **attributes: Any):
        self.__dict__.update(attributes)

    def __repr__(self) -> str:
        return f"Box({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


def opaque(fn: Callable) -> Callable:
    """Hide ``fn`` from the tracer: it sees a ``functools.partial``, a C callable it
    cannot inline, so the call breaks the graph and ``fn`` runs in CPython."""
    return functools.wraps(fn)(functools.partial(fn))


@opaque
def bump(a):
    """Adds one to ``a`` in place, in CPython, between two graphs."""
    a += 1


@opaque
def twice(a):
    return a * 2


@opaque
def peek(a):
    """Returns its argument itself: the result aliases whatever ``a`` aliases."""
    return a


NAMESPACE = {"np": np, "Box": Box, "bump": bump, "twice": twice, "peek": peek}

# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------

DTYPES = [np.dtype(t) for t in ("float64", "float64", "float32", "int64", "int32", "bool")]
SHAPES = [(), (3,), (4,), (5,), (2, 3), (3, 3), (3, 4), (2, 3, 2), (1, 3), (0,)]
# Quarters: sums and small products are exact in float32 and float64 in any order.
FLOAT_GRID = np.arange(-12, 13) / 4
# Values stay small so that integer products never overflow (NumPy wraps; C++
# leaves signed overflow undefined) and floats stay finite: a statement whose
# result leaves these bounds is not kept.
INT_BOUND = 4096
FLOAT_BOUND = 1e6
# How often a statement NumPy refuses is kept (as the last one): about one program in eight raises.
KEEP_RAISING = 0.04


def literal_array(values: np.ndarray) -> str:
    """Source that builds ``values`` again: ``np.array([...], dtype=np.int32)``."""
    return f"np.array({values.tolist()!r}, dtype=np.{values.dtype.name})"


def draw_values(draw, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype.kind == "f":
        values = rng.choice(FLOAT_GRID, shape)
    elif dtype.kind == "b":
        values = rng.random(shape) < 0.5
    else:
        values = rng.integers(-5, 6, shape)
    return np.asarray(values).astype(dtype)


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
        name = f"b{len(self.bases)}"
        layout = draw(st.sampled_from(LAYOUTS)) if values.ndim else ""
        if layout == "fortran" and values.ndim >= 2:
            self.lines.append(f"{name} = np.asfortranarray({literal_array(values)})")
        elif layout == "strided":  # every other element of a hidden, twice as long base
            self.lines.append(f"{name} = np.repeat({literal_array(values)}, 2, axis=-1)[..., ::2]")
        elif layout == "reversed":  # negative strides on the last axis
            self.lines.append(f"{name} = {literal_array(np.flip(values, -1))}[..., ::-1]")
        else:
            self.lines.append(f"{name} = {literal_array(values)}")
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


@st.composite
def arguments(draw) -> tuple[list[str], Args]:
    """Parameter names and the make_args() that builds them."""
    args = Args()
    params: list[str] = []
    n_params = draw(st.integers(1, 4))
    kinds = ["array", "array", "same", "view", "pair", "pair", "zero_d", "list", "dict", "box"]
    while len(args.exprs) < n_params:
        kind = draw(st.sampled_from(kinds))
        if kind in ("same", "view") and not args.arrays:
            kind = "array"
        prefix = {"list": "lst", "dict": "dct", "box": "obj"}.get(kind)
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
        elif kind == "zero_d":
            base = args.new_base(draw, shape=draw(st.sampled_from([(), (3,), (2, 2)])))
            ndim = args.ndims[base]
            items = [base if ndim == 0 else f"{base}[{', '.join(['0'] * ndim)}, ...]"]
        else:
            members = []
            for _ in range(draw(st.integers(1, 3))):
                if args.arrays and draw(st.integers(0, 2)) == 0:
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
        exec(compile(self.source, "<mutation program>", "exec"), namespace)
        return namespace["f"]

    def make_args(self, variant: str = "aliased") -> tuple[tuple, list[np.ndarray]]:
        """Fresh arguments and the bases they view.  ``"separate"``: each argument is a
        deep copy of its own, so no two arguments alias (a container's members may)."""
        namespace = dict(NAMESPACE)
        exec(compile(self.args_source, "<make_args>", "exec"), namespace)
        args, bases = namespace["make_args"]()
        if variant == "separate":
            return tuple(copy.deepcopy(a) for a in args), []
        return args, bases

    def __repr__(self) -> str:
        return (f"{self.source}\n{self.args_source}\n# calls, in order: {', '.join(self.calls)}; "
                f"Box, bump, twice, peek: tests/dynamo/mutation_programs.py")


# ---------------------------------------------------------------------------
# Running with NumPy while drawing
# ---------------------------------------------------------------------------


def quietly(fn: Callable, *args: Any) -> Any:
    with np.errstate(all="ignore"), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return fn(*args)


def array_paths(env: dict[str, Any], names: list[str]) -> list[tuple[str, np.ndarray]]:
    """Every array reachable from the named values: ``a``, ``lst[0]``, ``dct['w']``, ``obj.w``."""
    found = []
    for name in names:
        value = env.get(name)
        if isinstance(value, np.ndarray):
            found.append((name, value))
        elif isinstance(value, list):
            found += [(f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, np.ndarray)]
        elif isinstance(value, dict):
            found += [(f"{name}[{k!r}]", v) for k, v in value.items() if isinstance(v, np.ndarray)]
        elif isinstance(value, Box):
            found += [(f"{name}.{k}", v) for k, v in vars(value).items() if isinstance(v, np.ndarray)]
    return found


def in_bounds(value: Any) -> bool:
    """Are all numbers in ``value`` (an array, a scalar, a container of them) small and finite?"""
    if isinstance(value, (list, tuple, dict, Box)):
        items = vars(value).values() if isinstance(value, Box) else value.values() if isinstance(value, dict) else value
        return all(in_bounds(v) for v in items)
    if isinstance(value, (np.ndarray, np.generic, int, float)) and not isinstance(value, bool):
        a = np.asarray(value)
        if a.dtype.kind == "f":
            return bool(np.isfinite(a).all() and (np.abs(a) < FLOAT_BOUND).all())
        if a.dtype.kind in "iu":
            return bool((np.abs(a.astype(np.int64)) < INT_BOUND).all())
    return True


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

    def scalars(self) -> list[str]:
        return [k for k in self.names if isinstance(self.env[k], (float, int, np.generic))
                and not isinstance(self.env[k], bool)]


# ---------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------

VIEWS = {  # local views (and copies that look like views): template -> least ndim
    "{x}[1:]": 1, "{x}[::2]": 1, "{x}[::-1]": 1, "{x}[-2::-2]": 1, "{x}[:-1]": 1, "{x}[None]": 0,
    "{x}[...]": 0, "{x}[..., 0]": 1, "np.flip({x}, 0)": 1, "np.expand_dims({x}, 0)": 0,
    "{x}.reshape(-1)": 0, "{x}.ravel()": 0, "np.squeeze({x})": 0, "{x}.T": 2, "np.transpose({x})": 2,
    "np.swapaxes({x}, 0, 1)": 2, "{x}[:, ::-1]": 2, "{x}[1:, 0]": 2, "{x}[0]": 2,
    "np.broadcast_to({x}, (2,) + {x}.shape)": 0, "{x}.view()": 0,
    # Look-alikes that copy (or copy only when a view is impossible, or never): a write
    # through the result reaches the argument exactly when NumPy's is a view.
    "{x}.flatten()": 0, "np.asarray({x})": 0, "np.ravel({x})": 0, "{x}.reshape({x}.size)": 0,
    "{x}[[0, -1]]": 1, "{x}.astype({x}.dtype, copy=False)": 0, "np.squeeze({x}[None])": 0,
}
# Subscript views, usable as targets of `t op= v` and `t[k] = v`.
TARGET_VIEWS = ["{x}[1:]", "{x}[::-1]", "{x}[::2]", "{x}[-2::-2]", "{x}[..., 0]", "{x}[None]", "{x}[0]",
                "{x}[:, 1:]", "{x}[::-1, 0]", "{x}.T"]
INPLACE_OPS = ["+=", "+=", "-=", "*=", "/=", "//=", "|=", "&=", "**="]
SCALARS = {"f": ["0.5", "-1.25", "2", "3.0", "-0.0"], "i": ["1", "2", "-3", "0"], "b": ["True", "False", "1"]}
# A cast NumPy refuses now and then (`int_array += 1.5`, `bool_array -= 1`).
ODD_SCALARS = ["1.5", "-2", "True", "np.float32(2.5)", "np.int64(3)"]
UFUNCS_2 = ["np.add", "np.subtract", "np.multiply", "np.maximum", "np.minimum", "np.floor_divide",
            "np.true_divide"]
# Not np.negative: NumPy 2.4's np.negative(x, out=x) on some strided x (every 4th
# element of a float32 or int32 array, every 8th of a float64 or int64 one) reads x
# as if it were contiguous and writes wrong values, so NumPy is no oracle there;
# `-x` and `x *= -1` cover negation.
UFUNCS_1 = ["np.positive", "np.abs", "np.square", "np.sin", "np.floor", "np.logical_not"]
COMPUTE = ["{x} * 2", "{x} + {y}", "{x} - {y}", "{x} * {y}", "{x}.sum()", "{x}.sum(axis=0)", "np.sin({x})",
           "{x}.copy()", "{x} > 0", "{x}.astype(np.float32)", "np.where({x} > 0, {x}, 0)", "{x}[{key}]",
           "{x}.max()", "np.cumsum({x})", "{x} + {s}", "{x}.mean(axis=-1)", "-{x}", "{x}.T * 2",
           "{x}[::2] * 2"]
BREAKS = ["print('p', {x}.shape, {x}.dtype)", "print('p', {shown})", "{s_new} = float({x}.sum())",
          "{s_new} = {x}.sum().item()", "bump({x})", "{v_new} = twice({x})", "{v_new} = peek({x})"]
STATEMENT_KINDS = ["inplace", "inplace", "setitem", "setitem", "setitem", "mask", "out", "copyto", "at",
                   "fill", "sort", "view", "view", "compute", "compute", "break", "break", "rebind"]


def draw_key(draw, state: State, shape: tuple[int, ...], target: str) -> str:
    """A key for ``target[key]``: basic, integer-array or boolean."""
    ndim = len(shape)
    if ndim == 0:
        return draw(st.sampled_from(["...", "()", "None"]))
    n = shape[0]
    options = ["1:", ":-1", "::2", "::-1", "-2::-2", "1::2", ":", "...", "None", "..., 0"]
    if n:
        options += [str(draw(st.integers(-n, n - 1))), "[0, 0, -1]", f"np.array([{n - 1}, 0, {n - 1}])",
                    "[-1, 0]", literal_array(draw_values(draw, (n,), np.dtype(bool))), f"{target} > 0"]
    if ndim >= 2:
        options += ["0, 1:", ":, ::-1", "1:, 0", "..., ::2", ":, [0, 0]", "[0, 1], 0", "::-1, ::-1",
                    f"{target} < 1"]
    if n and draw(st.integers(0, 30)) == 0:
        options.append(str(n))  # out of bounds: IndexError
    same_shape = [p for p, a in array_paths(state.env, state.names) if a.shape == shape and p != target]
    if same_shape:
        options.append(f"{draw(st.sampled_from(same_shape))} > 0")  # a mask computed from another array
    return draw(st.sampled_from(options))


def draw_target(draw, state: State, views: bool = True) -> tuple[str, np.ndarray]:
    path, array = draw(st.sampled_from(state.arrays()))
    if views and array.ndim and draw(st.integers(0, 2)) == 0:
        template = draw(st.sampled_from([t for t in TARGET_VIEWS if t.count(",") < array.ndim and
                                         (".T" not in t or array.ndim >= 2)]))
        path = template.format(x=path)
    return path, array


def draw_operand(draw, state: State, shape: tuple[int, ...], kind: str) -> str:
    """A value to combine with, or store into, an array of ``shape``: a scalar, or an
    array (a name, a view, an expression) that broadcasts to ``shape``."""
    choice = draw(st.integers(0, 9))
    if choice < 4:
        floats = [p for p, a in state.arrays() if a.dtype.kind == "f" and a.size][:1]
        if kind in "iub" and floats and draw(st.integers(0, 12)) == 0:
            # A NaN or inf computed in the graph: a NumPy scalar eagerly, which NumPy
            # refuses to store into an integer array (a 0-d array it would cast silently).
            return f"({floats[0]}.sum() * 0 + {draw(st.sampled_from(['np.nan', 'np.inf', '2.5']))})"
        if draw(st.integers(0, 25)) == 0:
            return draw(st.sampled_from(ODD_SCALARS))
        scalars = SCALARS.get(kind, SCALARS["i"]) + state.scalars()
        return draw(st.sampled_from(scalars))
    fitting = []
    for path, a in state.arrays():
        try:
            if np.broadcast_shapes(a.shape, shape) == shape:
                fitting.append(path)
        except ValueError:
            pass
    if not fitting:
        return draw(st.sampled_from(SCALARS.get(kind, SCALARS["i"])))
    operand = draw(st.sampled_from(fitting))
    form = draw(st.sampled_from(["{x}", "{x}", "{x}[::-1]", "0.5 * {x}", "{x} * 2", "{x}.T", "{x} + 1"]))
    return form.format(x=operand)


def new_name(state: State, prefix: str) -> str:
    used = set(state.env)
    return next(f"{prefix}{i}" for i in range(100) if f"{prefix}{i}" not in used)


def draw_statement(draw, state: State) -> str:
    kind = draw(st.sampled_from(STATEMENT_KINDS))
    if kind == "inplace":
        target, array = draw_target(draw, state)
        op = draw(st.sampled_from(INPLACE_OPS))
        return f"{target} {op} {draw_operand(draw, state, array.shape, array.dtype.kind)}"
    if kind in ("setitem", "mask"):
        target, array = draw_target(draw, state)
        try:
            shape = quietly(eval, target, state.env).shape
        except Exception:
            shape = array.shape
        if kind == "mask" and shape:
            key = draw(st.sampled_from([f"{target} > 0", f"{target} < 0", f"{target} == 1"]))
            value = draw(st.sampled_from(["0", "-1", f"{target}[{target} > 0] * 2"
                                          if "<" not in key else "1"]))
            return f"{target}[{key}] = {value}"
        key = draw_key(draw, state, shape, target)
        try:
            sub_shape = quietly(eval, f"{target}[{key}]", state.env).shape
        except Exception:
            sub_shape = ()
        return f"{target}[{key}] = {draw_operand(draw, state, sub_shape, array.dtype.kind)}"
    if kind == "out":
        target, array = draw_target(draw, state)
        if draw(st.booleans()):
            fn = draw(st.sampled_from(UFUNCS_2))
            x = draw_operand(draw, state, array.shape, array.dtype.kind)
            y = draw_operand(draw, state, array.shape, array.dtype.kind)
            call = f"{fn}({x}, {y}, out={target})"
        else:
            fn = draw(st.sampled_from(UFUNCS_1))
            call = f"{fn}({draw_operand(draw, state, array.shape, array.dtype.kind)}, out={target})"
        if draw(st.integers(0, 5)) == 0:
            call = call.replace(f"out={target})", f"out=({target},))")
        return f"{new_name(state, 'v')} = {call}" if draw(st.integers(0, 2)) == 0 else call
    if kind == "copyto":
        target, array = draw_target(draw, state)
        src = draw_operand(draw, state, array.shape, array.dtype.kind)
        where = f", where={target} > 0" if draw(st.integers(0, 3)) == 0 else ""
        return f"np.copyto({target}, {src}{where})"
    if kind == "at":
        target, array = draw_target(draw, state, views=False)
        n = array.shape[0] if array.ndim else 1
        index = draw(st.sampled_from(["[0, 0, 1]", "[-1, -1]", f"[{n - 1}, 0, {n - 1}]", "0"]))
        fn = draw(st.sampled_from(["np.add.at", "np.add.at", "np.subtract.at", "np.maximum.at", "np.multiply.at"]))
        return f"{fn}({target}, {index}, {draw(st.sampled_from(SCALARS.get(array.dtype.kind, ['1'])))})"
    if kind == "fill":
        target, array = draw_target(draw, state)
        return f"{target}.fill({draw(st.sampled_from(SCALARS.get(array.dtype.kind, ['1'])))})"
    if kind == "sort":
        target, array = draw_target(draw, state)
        return f"{target}.sort({draw(st.sampled_from(['', 'axis=0', 'axis=-1']))})"
    if kind == "view":
        path, array = draw(st.sampled_from(state.arrays()))
        template = draw(st.sampled_from([t for t, nd in VIEWS.items() if array.ndim >= nd]))
        return f"{new_name(state, 'v')} = {template.format(x=path)}"
    if kind == "compute":
        x, array = draw(st.sampled_from(state.arrays()))
        y = draw_operand(draw, state, array.shape, array.dtype.kind)
        template = draw(st.sampled_from(COMPUTE))
        key = draw_key(draw, state, array.shape, x) if "{key}" in template else ""
        s = draw(st.sampled_from(state.scalars() or ["1.5"]))
        return f"{new_name(state, 'v')} = {template.format(x=x, y=y, key=key, s=s)}"
    if kind == "break":
        x, array = draw(st.sampled_from(state.arrays()))
        # Values printed mid-function must reflect every write before them; floats are
        # rounded so that a compiled kernel's last-bit differences do not show.
        shown = f"{x}.tolist()" if array.dtype.kind in "biu" else f"np.round({x}, 4).tolist()"
        template = draw(st.sampled_from(BREAKS))
        return template.format(x=x, shown=shown, s_new=new_name(state, "s"), v_new=new_name(state, "v"))
    # rebind: a container's member (or attribute) now holds another array
    containers = [p for p, _ in state.arrays() if "[" in p or "." in p]
    value = draw(st.sampled_from([f"{x} * 2" for x, _ in state.arrays()] + ["np.zeros(3)"]))
    if containers and draw(st.integers(0, 3)):
        return f"{draw(st.sampled_from(containers))} = {value}"
    lists = [p for p in state.program.params if p.startswith("lst")]
    return f"{lists[0]}.append({value})" if lists else f"{new_name(state, 'v')} = {value}"


@st.composite
def programs(draw, min_statements: int = 3, max_statements: int = 12) -> Program:
    """A program and its arguments; see the module docstring."""
    params, args = draw(arguments())
    program = Program(params, args.source, [], None, False)
    state = State(program)
    n_statements = draw(st.integers(min_statements, max_statements))
    attempts = 0
    while len(program.lines) < n_statements and attempts < 4 * max_statements:
        attempts += 1
        line = draw_statement(draw, state)
        error = state.try_line(line)
        if error is None:
            program.lines.append(line)
        elif keeps(error, line) and len(program.lines) >= min_statements - 1 \
                and draw(st.integers(0, 99)) < KEEP_RAISING * 100:
            program.lines.append(line)
            program.raises = True
            break
    assume(len(program.lines) >= min_statements)
    program.returns = draw_return(draw, state)
    program.calls = draw(st.sampled_from([("aliased", "aliased"), ("aliased", "aliased"),
                                          ("separate", "aliased"), ("aliased", "separate", "aliased")]))
    return program


def keeps(error: BaseException, line: str) -> bool:
    """May a statement that raised ``error`` end a program?  Not one whose values left
    the bounds, nor an in-place integer power with a negative exponent: NumPy has
    written the elements before the first negative one when it raises, an order of
    its loop no compiled kernel is bound to."""
    if isinstance(error, OverflowError):
        return False
    return not ("negative integer powers" in str(error) and ("**=" in line or "out=" in line))


def draw_return(draw, state: State) -> str | None:
    arrays = [p for p, _ in state.arrays()]
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return None
    if choice == 1:
        return "None"
    one = draw(st.sampled_from(arrays + state.scalars()))
    if choice == 2 and one in arrays:
        return f"{one}[1:]" if np.ndim(quietly(eval, one, state.env)) else f"{one}[...]"
    if choice >= 7:
        return f"{one}, {draw(st.sampled_from(arrays))}"
    return one


# ---------------------------------------------------------------------------
# Running and comparing
# ---------------------------------------------------------------------------

TOLERANCE = {  # float dtype -> (rtol, atol relative to the largest magnitude), compiled kernels only
    np.dtype(np.float16): (2e-3, 1e-3),  # a ufunc of bools computes in float16
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-13),
}


@dataclass
class Outcome:
    """Everything the caller sees after one call: the result or the exception type,
    printed text, the arguments, and every array ``make_args`` built."""

    result: Any
    error: Exception | None
    stdout: str
    args: tuple
    originals: list[np.ndarray]  # every array make_args built, and their bases, in a fixed order


def originals_of(args: tuple, bases: list[np.ndarray]) -> list[np.ndarray]:
    """Every array reachable from the bases and the arguments, and the bases of those
    (a strided layout's hidden base is compared too), each once, in a fixed order."""
    found: list[np.ndarray] = []

    def visit(value):
        if isinstance(value, np.ndarray):
            if not any(value is f for f in found):
                found.append(value)
            if isinstance(value.base, np.ndarray):
                visit(value.base)
        elif isinstance(value, (list, tuple, dict, Box)):
            items = vars(value).values() if isinstance(value, Box) else value.values() if isinstance(value, dict) \
                else value
            for v in items:
                visit(v)

    visit(list(bases))
    visit(args)
    return found


def run(fn: Callable, program: Program, variant: str) -> Outcome:
    args, bases = program.make_args(variant)
    originals = originals_of(args, bases)
    out = io.StringIO()
    result, error = None, None
    with np.errstate(all="ignore"), warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        try:
            result = fn(*args)
        except Exception as e:
            error = e
    return Outcome(result, error, out.getvalue(), args, originals)


def assert_values(actual: np.ndarray, expected: np.ndarray, exact: bool, where: str) -> None:
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}, NumPy {expected.dtype}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape}, NumPy {expected.shape}"
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=where, strict=True)
        return
    nan = np.isnan(expected)
    assert (np.isnan(actual) == nan).all(), f"{where}: NaN at other places\n{actual}\nNumPy:\n{expected}"
    if exact:  # bit for bit, -0.0 included
        a, e = np.ascontiguousarray(actual)[~nan], np.ascontiguousarray(expected)[~nan]
        assert a.tobytes() == e.tobytes(), f"{where}: values differ\ncompiled: {actual!r}\nNumPy:    {expected!r}"
    else:
        rtol, atol = TOLERANCE[expected.dtype]
        finite = np.abs(expected[np.isfinite(expected)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, equal_nan=True, err_msg=where)


def assert_same_value(actual: Any, expected: Any, outcome: Outcome, want: Outcome, exact: bool,
                      where: str) -> None:
    """Equal values, and the same relation to the arguments: the same original array,
    or sharing memory with the same originals."""
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__}, NumPy {type(expected).__name__}"
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f"{where}: length {len(actual)}, NumPy {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_value(a, e, outcome, want, exact, f"{where}[{i}]")
    elif isinstance(expected, dict):
        keys, want_keys = list(actual), list(expected)
        assert len(keys) == len(want_keys) and all(map(same_key, keys, want_keys)), \
            f"{where}: keys {keys}, NumPy {want_keys}"
        for k, e in zip(keys, want_keys):
            assert_same_value(actual[k], expected[e], outcome, want, exact, f"{where}[{e!r}]")
    elif isinstance(expected, Box):
        assert_same_value(vars(actual), vars(expected), outcome, want, exact, f"{where}.__dict__")
    elif isinstance(expected, np.ndarray):
        identity = [i for i, o in enumerate(want.originals) if expected is o]
        got = [i for i, o in enumerate(outcome.originals) if actual is o]
        assert got == identity, f"{where}: is argument array {got}, NumPy's is {identity} (see make_args order)"
        shares = [i for i, o in enumerate(want.originals) if np.shares_memory(expected, o)]
        got = [i for i, o in enumerate(outcome.originals) if np.shares_memory(actual, o)]
        assert got == shares, f"{where}: shares memory with arrays {got}, NumPy's with {shares}"
        assert_values(actual, expected, exact, where)
    elif isinstance(expected, np.generic):
        assert_values(np.asarray(actual), np.asarray(expected), exact, where)
    elif isinstance(expected, float) and not exact:
        assert abs(actual - expected) <= 1e-9 * max(1.0, abs(expected)) or actual != actual and expected != expected, \
            f"{where}: {actual!r}, NumPy {expected!r}"
    else:
        assert actual == expected or (actual != actual and expected != expected), \
            f"{where}: {actual!r}, NumPy {expected!r}"


def same_key(key: Any, expected: Any) -> bool:
    """Dict keys of two argument sets: plain values equal, other objects (each set
    builds its own) of one type."""
    if isinstance(expected, (str, int, float, tuple, type(None))):
        return type(key) is type(expected) and key == expected
    return type(key) is type(expected)


def assert_same_outcome(outcome: Outcome, want: Outcome, exact: bool, call: str) -> None:
    raised = lambda e: f"{type(e).__name__}({e})" if e is not None else "nothing"  # noqa: E731
    assert type(outcome.error) is type(want.error), \
        f"{call}: compiled raised {raised(outcome.error)}, NumPy {raised(want.error)}"
    for i, (a, e) in enumerate(zip(outcome.originals, want.originals)):
        assert_values(a, e, exact, f"{call}: argument array {i} (make_args order) afterwards")
    assert_same_value(outcome.args, want.args, outcome, want, exact, f"{call}: arguments afterwards")
    assert outcome.stdout == want.stdout, f"{call}: printed {outcome.stdout!r}, NumPy printed {want.stdout!r}"
    if want.error is None:
        pairs = [(r, e) for r, e in zip(results_of(outcome.result), results_of(want.result))]
        for i, (r1, e1) in enumerate(pairs):  # arrays of the result that are or view one another
            for j, (r2, e2) in enumerate(pairs[:i]):
                assert (r1 is r2) == (e1 is e2), f"{call}: result[{i}] is result[{j}]: {r1 is r2}, NumPy {e1 is e2}"
                assert np.shares_memory(r1, r2) == np.shares_memory(e1, e2), \
                    f"{call}: result[{i}] shares memory with result[{j}]: NumPy says {np.shares_memory(e1, e2)}"
        assert_same_value(outcome.result, want.result, outcome, want, exact, f"{call}: result")


def results_of(result: Any) -> list[np.ndarray]:
    if isinstance(result, tuple):
        return [r for r in result if isinstance(r, np.ndarray)]
    return [result] if isinstance(result, np.ndarray) else []


EXACT_BACKENDS = ("eager", "aot_eager")


def check_program(program: Program, backend: str) -> None:
    """NumPy's outcome, and the compiled function's on every call in ``program.calls``
    (the first compiles; later ones run cached entries or recompile), must agree.
    A failure shows the program: in hypothesis's notes, or else in the message."""
    if currently_in_test_context():
        note(repr(program))
        return compare_calls(program, backend)
    try:
        compare_calls(program, backend)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{program!r}") from None


def compare_calls(program: Program, backend: str) -> None:
    fn = program.function()
    expected = {variant: run(fn, program, variant) for variant in set(program.calls)}
    compiled = mc.compile(fn, backend=backend)
    exact = backend in EXACT_BACKENDS
    for n, variant in enumerate(program.calls):
        assert_same_outcome(run(compiled, program, variant), expected[variant], exact,
                            f"call {n + 1} ({variant} arguments)")


def from_source(source: str, make_args: str, calls: tuple[str, ...] = ("aliased", "aliased")) -> Program:
    """A ``Program`` written by hand: the sources of ``def f(...)`` and of ``def make_args()``
    (which returns the argument tuple and the list of bases)."""
    header, *body = textwrap.dedent(source).strip().splitlines()
    params = [p.strip() for p in header[header.index("(") + 1: header.index(")")].split(",") if p.strip()]
    lines = [line.strip() for line in body]
    returns = lines.pop()[len("return"):].strip() or "None" if lines and lines[-1].startswith("return") else None
    return Program(params, textwrap.dedent(make_args).strip() + "\n", lines, returns, False, calls)
