"""Derivative rules: one table, shared by the eager tape and the joint graph.

Each rule takes the emitter ``E`` (which applies ops eagerly or as graph
nodes), the gradient ``g`` of the op's output, the output ``out`` and the
op's canonical arguments ``a`` (a dict by parameter name), and returns the
gradient of each array argument — written with the same registry ops, so a
rule can be traced into a graph like any forward op.  Broadcasting is undone
with ``E.sum_to``.  A gradient left out (None, or a key not returned) means
"contributes nothing": that is only right where the derivative is zero.

Which values carry a gradient is decided by dtype alone: a floating-point
result of an input that carries one.  Integer and boolean results
(comparisons, ``isnan``, ``argmax``, ``count_nonzero``, bitwise ops) carry
none, so a path through them adds nothing, exactly their derivative.  A
floating-point op that is piecewise constant (``floor``, ``sign``,
``floor_divide``...) has a rule like any other, which returns no gradient:
zero almost everywhere.  Asking for a gradient through a floating-point op
without a rule raises :class:`NonDifferentiable` naming it — never a silent zero.

The rules of reads and writes through an index, scans such as ``cumprod``,
conversions and run-time checks are in derivatives_indexing.py; of the
contractions (``einsum``, ``tensordot``, ``dot``, norms) in derivatives_linalg.py;
of the ops that move elements (joins, ``tile``, ``pad``, windows, sorts) in
derivatives_shapes.py; of nan-reductions and order statistics in
derivatives_statistics.py — all registered into the same table.  The ops that
need no rule are listed in :data:`NON_DIFFERENTIABLE`, each with the reason.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import indexing

Rule = Callable[..., dict[str, Any]]
DERIVATIVES: dict[str, Rule] = {}

class NonDifferentiable(TypeError):
    pass


def complex_on_path(op: str, dtype: object) -> str:
    """The refusal when a value that needs a gradient passes through a complex one:
    the rules are real calculus, and a complex value would carry no gradient at all
    (a silent zero)."""
    return (f"np.{op} makes a {dtype} value from an input that needs a gradient: gradients "
            f"through complex values are not supported")


# The ops without a rule, and why none is needed: no floating-point result computed
# from an array (the tape and the joint graph then carry no gradient through them, by
# dtype), or no array input at all.  Every other op of the registry has a rule.
_BOOLEAN = "a boolean result: carries no gradient (its derivative is zero)"
_INTEGER = "an integer result (an index or a count): carries no gradient"
_INTEGER_ONLY = "defined on integers and booleans only: no floating-point input to differentiate"
_CREATION = "no array input: nothing to differentiate"
_COMPLEX_ONLY = "a complex result: no gradient flows through complex values (complex_on_path)"
# Ops never differentiated as themselves: the graph is rewritten first, and the
# ops it is rewritten into have rules (see AotFunction).
REWRITTEN_FOR_GRADIENTS: dict[str, str] = dict.fromkeys(
    ("loop", "loop_result"), "differentiated by the joint graph itself (aot/loop_gradients.py): the "
    "forward loop keeps the carries' history, the backward is the loop run in reverse over the body's "
    "own joint graph")
REWRITTEN_FOR_GRADIENTS.update(dict.fromkeys(
    ("attention_stats", "attention_grad"), "attention's backward, differentiated again (a second derivative) "
    "through the graph as written before a backend's pre-grad pass made it one attention node "
    "(AotFunction.unfused_joint)"))
NON_DIFFERENTIABLE: dict[str, str] = {
    **dict.fromkeys(("equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isclose",
                     "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf",
                     "isfinite", "signbit", "all", "any"), _BOOLEAN),
    **dict.fromkeys(("argmax", "argmin", "nanargmax", "nanargmin", "argsort", "argpartition",
                     "searchsorted", "digitize", "count_nonzero"), _INTEGER),
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
                     "gcd", "lcm", "bitwise_and_at", "bitwise_or_at", "bitwise_xor_at"), _INTEGER_ONLY),
    **dict.fromkeys(("arange", "zeros", "ones", "empty", "eye", "tri"), _CREATION),
    **dict.fromkeys(("real_scatter", "imag_scatter"), _COMPLEX_ONLY),
}


def derivative_rule(*names: str) -> Callable[[Rule], Rule]:
    def register(rule: Rule) -> Rule:
        for name in names:
            DERIVATIVES[name] = rule
        return rule
    return register


def is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _to(E, g, x) -> Any:
    """The gradient for argument ``x``: None for constants, else summed to x's shape."""
    return E.sum_to(g, x.shape) if is_array(x) else None


# -- arithmetic -------------------------------------------------------------------------------

@derivative_rule("add")
def _add(E, g, out, a):  # d(x1 + x2) = dx1 + dx2
    return {"x1": _to(E, g, a["x1"]), "x2": _to(E, g, a["x2"])}


@derivative_rule("subtract")
def _subtract(E, g, out, a):  # d(x1 - x2) = dx1 - dx2
    return {"x1": _to(E, g, a["x1"]), "x2": _to(E, E.call("negative", g), a["x2"])}


@derivative_rule("multiply")
def _multiply(E, g, out, a):  # d(x1 x2) = x2 dx1 + x1 dx2
    x1, x2 = a["x1"], a["x2"]
    return {"x1": _to(E, E.call("multiply", g, x2), x1) if is_array(x1) else None,
            "x2": _to(E, E.call("multiply", g, x1), x2) if is_array(x2) else None}


@derivative_rule("divide")
def _divide(E, g, out, a):  # d(x1 / x2) = dx1 / x2 - x1 dx2 / x2^2 = (dx1 - out dx2) / x2
    x1, x2 = a["x1"], a["x2"]
    g1 = E.call("divide", g, x2)
    return {"x1": _to(E, g1, x1) if is_array(x1) else None,
            "x2": _to(E, E.call("negative", E.call("multiply", g1, out)), x2) if is_array(x2) else None}


@derivative_rule("negative")
def _negative(E, g, out, a):
    return {"x": E.call("negative", g)}


@derivative_rule("positive")
def _positive(E, g, out, a):
    return {"x": g}


# Of a real array (a complex one never carries a gradient: complex_on_path), the
# conjugate and the real part are the array itself, the imaginary part zeros.
@derivative_rule("conjugate")
def _conjugate(E, g, out, a):
    return {"x": g}


@derivative_rule("real")
def _real(E, g, out, a):
    return {"val": g}


@derivative_rule("imag")
def _imag(E, g, out, a):
    return {"val": None}


@derivative_rule("square")
def _square(E, g, out, a):  # d(x^2) = 2x dx
    return {"x": E.call("multiply", g, E.call("multiply", a["x"], 2))}


@derivative_rule("power")
def _power(E, g, out, a):  # d(x^y) = y x^(y-1) dx + x^y log(x) dy
    # At x = 0 both terms can be 0 * inf = NaN where the derivative is 0: x^0 is 1
    # (d/dx = 0), and 0^y is 0 for y > 0 (d/dy = 0; y = 0, a jump, takes 0 as well).
    # Only those points are masked (as PyTorch's pow_backward does), so that the
    # gradient stays differentiable in y where x is not 0 (second derivatives).
    x, y = a["x1"], a["x2"]
    gx = gy = None
    if is_array(x) and (is_array(y) or y != 0):  # x^0 is constant: no gradient
        slope = E.call("multiply", y, E.call("power", x, E.call("subtract", y, 1) if is_array(y) else y - 1))
        if is_array(y):
            slope = E.call("where", E.call("logical_and", E.call("equal", x, 0), E.call("equal", y, 0)), 0.0, slope)
        gx = E.sum_to(E.call("multiply", g, slope), x.shape)
    if is_array(y):
        rate = E.call("multiply", out, E.call("log", x))
        at_zero = E.call("greater_equal", y, 0)
        if is_array(x):
            at_zero = E.call("logical_and", E.call("equal", x, 0), at_zero)
            rate = E.call("where", at_zero, 0.0, rate)
        elif x == 0:
            rate = E.call("where", at_zero, 0.0, rate)
        gy = E.sum_to(E.call("multiply", g, rate), y.shape)
    return {"x1": gx, "x2": gy}


@derivative_rule("absolute")
def _absolute(E, g, out, a):  # d|x| = sign(x) dx (0 at 0)
    x = a["x"]
    positive = E.call("where", E.call("greater", x, 0), g, 0.0)
    return {"x": E.call("where", E.call("less", x, 0), E.call("negative", g), positive)}


@derivative_rule("maximum", "minimum")
def _extremum(E, g, out, a):  # the gradient goes to the chosen side (ties: the first)
    x1, x2 = a["x1"], a["x2"]
    first = E.call("equal", out, x1) if is_array(x1) else None
    return {"x1": _to(E, E.call("where", first, g, 0.0), x1) if is_array(x1) else None,
            "x2": _to(E, E.call("where", first, 0.0, g) if first is not None else g, x2)
            if is_array(x2) else None}


@derivative_rule("where")
def _where(E, g, out, a):
    c, x, y = a["condition"], a["x"], a["y"]
    return {"condition": None,
            "x": _to(E, E.call("where", c, g, 0.0), x) if is_array(x) else None,
            "y": _to(E, E.call("where", c, 0.0, g), y) if is_array(y) else None}


@derivative_rule("floor", "ceil", "trunc", "rint", "round", "sign", "floor_divide")
def _piecewise_constant(E, g, out, a):  # d = 0 between the jumps (and undefined at them)
    return {}


@derivative_rule("remainder", "fmod")
def _remainder(E, g, out, a):  # out = x1 - q x2, q an integer (floor or trunc of x1/x2): d = dx1 - q dx2
    x1, x2 = a["x1"], a["x2"]
    gx2 = None
    if is_array(x2):
        # q read back from the output, so it is the very integer the op subtracted
        # (no floor or trunc kernel, no disagreement near a jump).
        q = E.call("divide", E.call("subtract", x1, out), x2)
        gx2 = _to(E, E.call("negative", E.call("multiply", g, q)), x2)
    return {"x1": _to(E, g, x1), "x2": gx2}


@derivative_rule("copysign")
def _copysign(E, g, out, a):  # |x1| with the sign of x2: d = +-dx1, 0 dx2
    x1 = a["x1"]
    return {"x1": _to(E, E.call("where", E.call("equal", out, x1), g, E.call("negative", g)), x1)}


@derivative_rule("heaviside")
def _heaviside(E, g, out, a):  # a step in x1; x2 is its value where x1 == 0
    x1, x2 = a["x1"], a["x2"]
    return {"x2": _to(E, E.call("where", E.call("equal", x1, 0), g, 0.0), x2) if is_array(x2) else None}


# -- transcendental ---------------------------------------------------------------------------

@derivative_rule("exp")
def _exp(E, g, out, a):  # d e^x = e^x dx
    return {"x": E.call("multiply", g, out)}


@derivative_rule("log")
def _log(E, g, out, a):  # d log x = dx / x
    return {"x": E.call("divide", g, a["x"])}


@derivative_rule("sqrt")
def _sqrt(E, g, out, a):  # d sqrt(x) = dx / (2 sqrt(x))
    return {"x": E.call("divide", g, E.call("multiply", out, 2))}


@derivative_rule("tanh")
def _tanh(E, g, out, a):  # d tanh x = (1 - tanh^2 x) dx
    return {"x": E.call("multiply", g, E.call("subtract", 1, E.call("multiply", out, out)))}


@derivative_rule("sin")
def _sin(E, g, out, a):
    return {"x": E.call("multiply", g, E.call("cos", a["x"]))}


@derivative_rule("cos")
def _cos(E, g, out, a):
    return {"x": E.call("negative", E.call("multiply", g, E.call("sin", a["x"])))}


# -- reductions ---------------------------------------------------------------------------

def _keepdims_shape(shape: tuple[int, ...], axis: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axis else n for i, n in enumerate(shape))


def _expand(E, g, a):
    """A reduction's output gradient, broadcast back over the reduced axes."""
    x = a["a"]
    g = E.call("reshape", g, _keepdims_shape(x.shape, a["axis"]))
    return E.broadcast_to(g, x)


@derivative_rule("sum")
def _sum(E, g, out, a):  # every element contributes once
    return {"a": _expand(E, g, a)}


@derivative_rule("mean")
def _mean(E, g, out, a):  # every element contributes 1/n
    x = a["a"]
    n = 1
    for i in a["axis"]:
        n *= x.shape[i]
    return {"a": _expand(E, E.call("divide", g, float(max(n, 1))), a)}


@derivative_rule("max", "min")
def _max(E, g, out, a):  # shared evenly among the elements that attain the extremum
    x = a["a"]
    keep = _keepdims_shape(x.shape, a["axis"])
    winner = E.call("equal", x, E.call("reshape", out, keep))
    hits = E.call("astype", winner, x.dtype)
    count = E.call("sum", hits, axis=a["axis"], keepdims=True)
    share = E.call("divide", E.call("reshape", g, keep), count)
    return {"a": E.call("multiply", hits, share)}


def _others_product(E, x, axis: tuple[int, ...]):
    """For each element of ``x``, the product of the *other* elements of its reduction
    group (the elements the axes ``axis`` fold together), written without a division:
    the reduced axes moved last and flattened into one, the exclusive products from the
    left and from the right (a cumulative product shifted by one, led by a 1),
    multiplied, and moved back.  Exact where ``x`` holds zeros, where ``prod / x_i``
    gives NaN (0 / 0) or the wrong value; requires a group of at least two elements."""
    shape = tuple(x.shape)
    kept = tuple(i for i in range(len(shape)) if i not in axis)
    perm = kept + tuple(axis)
    lead = tuple(shape[i] for i in kept)
    n = 1
    for i in axis:
        n *= shape[i]
    last = len(lead)
    if perm != tuple(range(len(shape))):
        x = E.call("transpose", x, perm)
    flat = E.call("reshape", x, lead + (n,))
    widths = ((0, 0),) * last + ((1, 0),)
    head = (slice(None),) * last + (slice(0, n - 1),)

    def exclusive(v):  # out[..., k] = prod_{j < k} v[..., j]
        return E.call("pad", E.call("cumprod", E.call("getitem", v, head), axis=last), widths, constant_values=1)

    left = exclusive(flat)
    right = E.call("flip", exclusive(E.call("flip", flat, last)), last)
    others = E.call("reshape", E.call("multiply", left, right), tuple(shape[i] for i in perm))
    if perm != tuple(range(len(shape))):
        others = E.call("transpose", others, tuple(sorted(range(len(perm)), key=lambda i: perm[i])))
    return others


@derivative_rule("prod")
def _prod(E, g, out, a):
    # d prod / d x_i = the product of the other elements of x_i's group, computed without
    # dividing by x_i (prod / x_i is 0 / 0 = NaN at a zero, where the answer is finite).
    x = a["a"]
    if 0 in tuple(x.shape):  # no elements: nothing to differentiate
        return {"a": E.call("multiply", x, 0)}
    keep = _keepdims_shape(x.shape, a["axis"])
    g = E.call("reshape", g, keep)
    n = 1
    for i in a["axis"]:
        n *= x.shape[i]
    if n == 1:  # a group of one element: prod is that element (in out's dtype)
        grad = E.broadcast_to(g, x)
    else:
        xs = x if np.dtype(out.dtype) == np.dtype(x.dtype) else E.call("astype", x, out.dtype)
        grad = E.call("multiply", g, _others_product(E, xs, a["axis"]))
    if np.dtype(grad.dtype) != np.dtype(x.dtype):
        grad = E.call("astype", grad, x.dtype)
    return {"a": grad}


# -- layout ---------------------------------------------------------------------------------

@derivative_rule("transpose")
def _transpose(E, g, out, a):  # transpose back with the inverse permutation
    axes = a["axes"]
    inverse = tuple(sorted(range(len(axes)), key=lambda i: axes[i]))
    return {"a": E.call("transpose", g, inverse)}


@derivative_rule("reshape")
def _reshape(E, g, out, a):
    return {"a": E.call("reshape", g, tuple(a["a"].shape))}


@derivative_rule("astype")
def _astype(E, g, out, a):
    return {"x": E.call("astype", g, a["x"].dtype)}


# -- linear algebra ---------------------------------------------------------------------------

def _swap_last(E, x):
    axes = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return E.call("transpose", x, axes)


@derivative_rule("matmul")
def _matmul(E, g, out, a):  # d(AB) = dA B + A dB; 1-D operands act as a row / a column
    A, B = a["x1"], a["x2"]
    A2 = E.call("reshape", A, (1,) + tuple(A.shape)) if len(A.shape) == 1 else A
    B2 = E.call("reshape", B, tuple(B.shape) + (1,)) if len(B.shape) == 1 else B
    batch = tuple(np.broadcast_shapes(tuple(A2.shape[:-2]), tuple(B2.shape[:-2])))
    g2 = E.call("reshape", g, batch + (A2.shape[-2], B2.shape[-1]))
    gA = E.sum_to(E.call("matmul", g2, _swap_last(E, B2)), tuple(A2.shape))
    if len(B2.shape) == 2 and len(A2.shape) > 2:
        # A weight shared by a batch: the batch's products summed are one product over
        # the batch's rows, (rows, K)^T @ (rows, N) — no batched matmul and no sum after it.
        rows_a = E.call("reshape", A2, (-1, A2.shape[-1]))
        rows_g = E.call("reshape", g2, (-1, B2.shape[-1]))
        gB = E.call("matmul", _swap_last(E, rows_a), rows_g)
    else:
        gB = E.sum_to(E.call("matmul", _swap_last(E, A2), g2), tuple(B2.shape))
    return {"x1": E.call("reshape", gA, tuple(A.shape)), "x2": E.call("reshape", gB, tuple(B.shape))}


# -- more pointwise functions: d f(x) = f'(x) dx, with f' written from x and out ---------------

_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))
UNARY_SLOPES: dict[str, Callable[..., Any]] = {
    "tan": lambda E, x, out: E.call("add", 1.0, E.call("multiply", out, out)),          # 1 + tan^2
    "sinh": lambda E, x, out: E.call("cosh", x),
    "cosh": lambda E, x, out: E.call("sinh", x),
    "arcsin": lambda E, x, out: E.call("divide", 1.0, E.call("sqrt", E.call("subtract", 1.0, E.call("multiply", x, x)))),
    "arccos": lambda E, x, out: E.call("divide", -1.0, E.call("sqrt", E.call("subtract", 1.0, E.call("multiply", x, x)))),
    "arctan": lambda E, x, out: E.call("divide", 1.0, E.call("add", 1.0, E.call("multiply", x, x))),
    "arcsinh": lambda E, x, out: E.call("divide", 1.0, E.call("sqrt", E.call("add", E.call("multiply", x, x), 1.0))),
    "arccosh": lambda E, x, out: E.call("divide", 1.0, E.call("sqrt", E.call("subtract", E.call("multiply", x, x), 1.0))),
    "arctanh": lambda E, x, out: E.call("divide", 1.0, E.call("subtract", 1.0, E.call("multiply", x, x))),
    "exp2": lambda E, x, out: E.call("multiply", out, _LN2),
    "expm1": lambda E, x, out: E.call("add", out, 1.0),
    "log2": lambda E, x, out: E.call("divide", 1.0, E.call("multiply", x, _LN2)),
    "log10": lambda E, x, out: E.call("divide", 1.0, E.call("multiply", x, _LN10)),
    "log1p": lambda E, x, out: E.call("divide", 1.0, E.call("add", x, 1.0)),
    "cbrt": lambda E, x, out: E.call("divide", 1.0, E.call("multiply", E.call("multiply", out, out), 3.0)),
    "reciprocal": lambda E, x, out: E.call("negative", E.call("multiply", out, out)),
    "deg2rad": lambda E, x, out: float(np.pi / 180.0),
    "rad2deg": lambda E, x, out: float(180.0 / np.pi),
}


def _slope_rule(name: str) -> Rule:
    def rule(E, g, out, a):
        return {"x": E.call("multiply", g, UNARY_SLOPES[name](E, a["x"], out))}
    return rule


for _name in UNARY_SLOPES:
    DERIVATIVES[_name] = _slope_rule(_name)

DERIVATIVES["fabs"] = _absolute
DERIVATIVES["fmax"] = DERIVATIVES["fmin"] = _extremum


@derivative_rule("float_power")
def _float_power(E, g, out, a):
    return _power(E, g, out, a)


@derivative_rule("hypot")
def _hypot(E, g, out, a):  # d sqrt(x1^2 + x2^2) = (x1 dx1 + x2 dx2) / out
    x1, x2 = a["x1"], a["x2"]
    share = E.call("divide", g, out)
    return {"x1": _to(E, E.call("multiply", share, x1), x1) if is_array(x1) else None,
            "x2": _to(E, E.call("multiply", share, x2), x2) if is_array(x2) else None}


@derivative_rule("arctan2")
def _arctan2(E, g, out, a):  # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
    y, x = a["x1"], a["x2"]
    r2 = E.call("add", E.call("multiply", x, x), E.call("multiply", y, y))
    return {"x1": _to(E, E.call("divide", E.call("multiply", g, x), r2), y) if is_array(y) else None,
            "x2": _to(E, E.call("negative", E.call("divide", E.call("multiply", g, y), r2)), x)
            if is_array(x) else None}


@derivative_rule("logaddexp")
def _logaddexp(E, g, out, a):  # d log(e^x1 + e^x2) = e^(x1-out) dx1 + e^(x2-out) dx2
    x1, x2 = a["x1"], a["x2"]
    return {k: _to(E, E.call("multiply", g, E.call("exp", E.call("subtract", v, out))), v)
            if is_array(v) else None for k, v in (("x1", x1), ("x2", x2))}


@derivative_rule("logaddexp2")
def _logaddexp2(E, g, out, a):  # d log2(2^x1 + 2^x2) = 2^(x1-out) dx1 + 2^(x2-out) dx2
    x1, x2 = a["x1"], a["x2"]
    return {k: _to(E, E.call("multiply", g, E.call("exp2", E.call("subtract", v, out))), v)
            if is_array(v) else None for k, v in (("x1", x1), ("x2", x2))}


@derivative_rule("clip")
def _clip(E, g, out, a):  # the gradient goes to whichever of a, a_min, a_max the value is (ties: a)
    x, lo, hi = a["a"], a["a_min"], a["a_max"]
    from_x = E.call("equal", out, x)
    rest = E.call("where", from_x, 0.0, g)  # the part a did not take
    grads = {"a": _to(E, E.call("where", from_x, g, 0.0), x), "a_min": None, "a_max": None}
    if lo is not None:
        from_lo = E.call("equal", out, lo)
        grads["a_min"] = _to(E, E.call("where", from_lo, rest, 0.0), lo)
        rest = E.call("where", from_lo, 0.0, rest)
    grads["a_max"] = _to(E, rest, hi)
    return grads


@derivative_rule("nan_to_num")
def _nan_to_num(E, g, out, a):  # 1 where x was finite, 0 where it was replaced
    x = a["x"]
    return {"x": E.call("where", E.call("equal", out, x), g, 0.0)}


@derivative_rule("zeros_like", "ones_like", "empty_like")
def _like(E, g, out, a):  # only the array's shape and dtype are read, never a value: d = 0
    return {}


@derivative_rule("full", "full_like")
def _full(E, g, out, a):  # every element is the fill value (broadcast): its gradient sums g
    return {"fill_value": _to(E, g, a["fill_value"])}


# -- more reductions and scans --------------------------------------------------------------

def _count(x, axis) -> int:
    n = 1
    for i in axis:
        n *= x.shape[i]
    return n


@derivative_rule("var")
def _var(E, g, out, a):  # d var = 2 (x - mean) dx / (n - ddof)
    x, axis = a["a"], a["axis"]
    mean = E.call("mean", x, axis=axis, keepdims=True)
    scale = 2.0 / max(_count(x, axis) - a["ddof"], 1)
    centered = E.call("subtract", x, mean)
    return {"a": E.call("multiply", _expand(E, g, a), E.call("multiply", centered, scale))}


@derivative_rule("std")
def _std(E, g, out, a):  # d std = d var / (2 std)
    # Where std is 0 (a constant slice: one element, a 0-d input) x - mean is 0 too, and
    # 0/0 would be NaN.  The slice's std is then |x - mean| in every direction, whose
    # subgradient at the kink is 0: that is the gradient given (not NaN).
    x, axis = a["a"], a["axis"]
    keep = _keepdims_shape(x.shape, axis)
    mean = E.call("mean", x, axis=axis, keepdims=True)
    centered = E.call("subtract", x, mean)
    scale = E.call("reshape", out, keep)
    zero = E.call("equal", scale, 0)
    denom = E.call("multiply", E.call("where", zero, 1.0, scale), float(max(_count(x, axis) - a["ddof"], 1)))
    share = E.call("where", zero, 0.0, E.call("divide", centered, denom))
    return {"a": E.call("multiply", _expand(E, g, a), share)}


@derivative_rule("cumsum")
def _cumsum(E, g, out, a):  # each input adds to every later output: reversed cumulative sum
    x, axis = a["a"], a["axis"]
    if axis is None:  # the flattened array's cumulative sum (a 0-d array's too)
        g, axis = E.call("reshape", g, (-1,)), 0
    flipped = E.call("flip", g, axis)
    return {"a": E.call("reshape", E.call("flip", E.call("cumsum", flipped, axis=axis), axis), tuple(x.shape))}


# -- more layout: views undo themselves, joins split, selections scatter ------------------------

@derivative_rule("broadcast_to")
def _broadcast_to(E, g, out, a):
    return {"array": E.sum_to(g, tuple(a["array"].shape))}


@derivative_rule("expand_dims", "squeeze", "ravel")
def _same_data(E, g, out, a):
    x = a["a"]
    return {"a": E.call("reshape", g, tuple(x.shape))}


@derivative_rule("copy")
def _copy(E, g, out, a):
    return {"a": g}


@derivative_rule("swapaxes")
def _swapaxes(E, g, out, a):
    return {"a": E.call("swapaxes", g, a["axis1"], a["axis2"])}


@derivative_rule("moveaxis")
def _moveaxis(E, g, out, a):
    return {"a": E.call("moveaxis", g, a["destination"], a["source"])}


@derivative_rule("flip")
def _flip(E, g, out, a):
    return {"m": E.call("flip", g, a["axis"])}


def _split_along(E, g, parts, axis: int) -> tuple:
    pieces, start = [], 0
    for p in parts:
        size = p.shape[axis]
        key = (slice(None),) * axis + (slice(start, start + size),)
        pieces.append(E.call("getitem", g, key))
        start += size
    return tuple(pieces)


@derivative_rule("stack")
def _stack(E, g, out, a):
    axis = a["axis"] % len(g.shape)
    return {"arrays": tuple(E.call("getitem", g, (slice(None),) * axis + (i,)) if is_array(x) else None
                            for i, x in enumerate(a["arrays"]))}


@derivative_rule("getitem")
def _getitem(E, g, out, a):  # the gradient back where the key read it, zeros elsewhere
    x, key = a["a"], a["key"]
    widths = _pad_widths(key, x.shape)
    if widths is not None:
        # Integers and step-1 slices read a box of x: its gradient is g padded
        # with zeros, which lowers to a masked read and fuses into its consumer.
        box = tuple(n - before - after for n, (before, after) in zip(x.shape, widths))
        return {"a": E.call("pad", E.call("reshape", g, box), widths)}
    zeros = E.call("zeros_like", x)
    if not indexing.is_advanced(key):  # basic indexing reads each element at most once
        return {"a": E.call("setitem", zeros, key, g)}
    # Integer-array keys may pick an element twice: its gradients add up (np.add.at).
    return {"a": E.call("add_at", zeros, key, g)}


def _pad_widths(key: tuple, shape: tuple) -> tuple[tuple[int, int], ...] | None:
    """(zeros before, zeros after) per axis of ``shape`` when the canonical
    ``key`` reads a box of it (integers, slices of step 1, None, one
    Ellipsis) and every size is known; else None."""
    key = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(n, int) for n in shape) or indexing.is_advanced(key):
        return None
    axes = [k for k in indexing.expand_ellipsis(key, len(shape)) if k is not None]
    axes += [slice(None)] * (len(shape) - len(axes))
    widths = []
    for k, n in zip(axes, shape):
        if isinstance(k, int) and not isinstance(k, bool) and 0 <= k < n:
            widths.append((k, n - k - 1))
        elif isinstance(k, slice) and k.step in (None, 1) and all(isinstance(b, (int, type(None)))
                                                                    for b in (k.start, k.stop)):
            start, stop, _ = k.indices(n)
            widths.append((start, n - start - max(stop - start, 0)))
        else:
            return None
    return tuple(widths)


@derivative_rule("outer")
def _outer(E, g, out, a):  # d(a b^T) = da b^T + a db^T
    A, B = a["a"], a["b"]
    fa, fb = E.call("reshape", A, (-1,)), E.call("reshape", B, (-1,))
    ga = E.call("matmul", g, fb)
    gb = E.call("matmul", _swap_last(E, g), fa)
    return {"a": E.call("reshape", ga, tuple(A.shape)), "b": E.call("reshape", gb, tuple(B.shape))}

