"""Symbolic sizes: the ``s0, s1, ...`` of a dynamic-shape graph (our ShapeEnv + SymInt).

In:  a size that may vary between calls — created by capture as a symbol with
     a *hint*, the value it had in the example call.
Out: :class:`Sym`, an int-like value that holds a polynomial over symbols
     (``s0*16``, ``s0 + s1 + 3``) and can stand wherever a shape rule expects an
     int; :class:`ShapeEnv`, which owns the symbols, where each one comes from
     (``L['x'].shape[0]``), and the *guards*: the relations the trace relied on.

Arithmetic on sizes stays symbolic.  A *decision* (``s0 == s1``, ``n >= 4``,
``s0 % 8 == 0``) is what needs care, and :meth:`ShapeEnv.decide` handles every
one the same way:

1. it is decided statically when every value of the symbols allows only one
   answer — symbols are never 0 or 1 (those sizes stay specialized), so each
   is at least 2, which settles ``s0 != 1``, ``4*s0 >= 8`` or ``s0 == s0``;
2. otherwise, while capturing, the example values (hints) answer it and the
   answer is recorded as a guard (``s0 == s1``), so a later call whose sizes
   would answer differently misses the cache instead of getting a wrong result;
3. after capture (in a backend) an undecided equality is answered "not
   provably equal" (a fusion or a buffer reuse is skipped, never wrongly
   made); any other undecided relation raises :class:`SymbolicUnsupported`,
   and the backend specializes per concrete shape rather than guess.

Asking for a plain int (``int(s0)``, ``range(s0)``, NumPy taking the size)
*specializes*: while capturing, the guard ``s0 == hint`` is recorded and the
hint returned — an unrolled loop over ``range(n)`` stays specialized, as it must.

Expressions render as Python and C alike (``2*s0*s1 + 3``).  A division the
trace guarded exact (the length ``(s0 + 1)//2`` of ``x[::2]``) renders in
Python only; the C++ backend compiles a graph holding one per shape.

Which sizes a capture makes symbolic is decided in
:mod:`minicompile.dynamo.dynamic_shapes`; whether a backend compiles a graph
with symbols once or once per shape, in :mod:`minicompile.per_shape`.
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any, Callable, Iterable

import numpy as np

Monomial = tuple[str, ...]  # sorted symbol names; () is the constant term


class SymbolicUnsupported(Exception):
    """A symbolic size met a question it cannot answer without a guard (outside capture)."""


# ---------------------------------------------------------------------------
# Polynomials over symbols
# ---------------------------------------------------------------------------


def _poly_add(a: dict, b: dict, sign: int = 1) -> dict:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
    return {m: c for m, c in out.items() if c}


def _poly_mul(a: dict, b: dict) -> dict:
    out: dict = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c}


def _mono_text(m: Monomial, name: Callable[[str], str]) -> str:
    return "*".join(name(s) for s in m)


def render(poly: dict, name: Callable[[str], str] = str) -> str:
    """``poly`` as an integer expression in Python and C syntax."""
    den = math.lcm(*(Fraction(c).denominator for c in poly.values())) if poly else 1
    terms = []
    for m in sorted(poly, key=lambda m: (-len(m), m)):
        c = poly[m] * den
        c = int(c)
        if not m:
            terms.append(str(c))
        else:
            body = _mono_text(m, name)
            terms.append(body if c == 1 else f"-{body}" if c == -1 else f"{c}*{body}")
    text = " + ".join(terms).replace("+ -", "- ") or "0"
    if den == 1:
        return text
    return f"{text}//{den}" if len(terms) == 1 and "-" not in text[1:] else f"({text})//{den}"


def _bounds(poly: dict) -> tuple[float, float]:
    """Bounds of the value with every symbol anywhere in ``[2, inf)``: exact
    below when the polynomial grows with each symbol there (``s0*s1 - s0``:
    every partial derivative is >= 0, so the least value is at all-2)."""
    lo, hi = _term_bounds(poly)
    if lo == -math.inf and _nondecreasing(poly):
        lo = evaluate_poly_float(poly)
    return lo, hi


def _nondecreasing(poly: dict, depth: int = 0) -> bool:
    symbols = {s for m in poly for s in m}
    if depth > 3:
        return False
    for s in symbols:
        deriv: dict = {}
        for m, c in poly.items():
            k = m.count(s)
            if k:
                rest = list(m)
                rest.remove(s)
                deriv[tuple(rest)] = deriv.get(tuple(rest), 0) + c * k
        lo = _term_bounds(deriv)[0]
        if lo < 0 and not (_nondecreasing(deriv, depth + 1) and evaluate_poly_float(deriv) >= 0):
            return False
    return True


def evaluate_poly_float(poly: dict, at: int = 2) -> float:
    return float(sum(c * at ** len(m) for m, c in poly.items()))


def _term_bounds(poly: dict) -> tuple[float, float]:
    lo = hi = 0.0
    for m, c in poly.items():
        least = c * 2 ** len(m)
        if not m:
            lo += c
            hi += c
        elif c > 0:
            lo += least
            hi = math.inf
        else:
            lo = -math.inf
            hi += least
    return lo, hi


# ---------------------------------------------------------------------------
# The environment: symbols, hints, guards
# ---------------------------------------------------------------------------


class Relation:
    """``poly OP 0`` (OP in ``== != >=``), or ``poly % modulus == 0`` (OP ``%``)
    and its negation (OP ``%!``)."""

    def __init__(self, poly: dict, op: str, modulus: int = 0):
        self.poly, self.op, self.modulus = poly, op, modulus

    def key(self) -> tuple:
        return (tuple(sorted(self.poly.items())), self.op, self.modulus)

    def text(self, name: Callable[[str], str] = str) -> str:
        """Readable: positive terms left, the rest right (``s0 == s1``, ``s0 >= 5``)."""
        if self.op in ("%", "%!"):
            eq = "==" if self.op == "%" else "!="
            return f"({render(self.poly, name)}) % {self.modulus} {eq} 0"
        # poly OP 0  ->  positive terms OP the negated rest (the constant on the right)
        left = {m: c for m, c in self.poly.items() if c > 0 and m}
        right = {m: -c for m, c in self.poly.items() if c and (c < 0 or not m)}
        if not left and self.op == ">=":  # -a + c >= 0 reads better as a <= c
            const = {(): self.poly[()]} if self.poly.get((), 0) else {}
            return f"{render({m: c for m, c in right.items() if m}, name)} <= {render(const, name)}"
        return f"{render(left, name)} {self.op} {render(right, name)}"

    def holds(self, values: dict[str, int]) -> bool:
        v = evaluate_poly(self.poly, values)
        if self.op in ("%", "%!"):
            return (v % self.modulus == 0) == (self.op == "%")
        return {"==": operator.eq, "!=": operator.ne, ">=": operator.ge}[self.op](v, 0)


class ShapeEnv:
    """The symbols of one capture, their hints and sources, and the guards on them.

    ``mode`` is ``"capture"`` (undecided relations become guards), then
    ``"frozen"`` once the guards are final (undecided relations raise)."""

    def __init__(self) -> None:
        self.hints: dict[str, int] = {}
        self.sources: dict[str, str] = {}  # symbol -> the expression that reads it from the frame
        self.guards: list[tuple[Relation, int | None]] = []
        self.specialized: dict[str, int] = {}
        self._decided: dict[tuple, bool] = {}
        self.mode = "capture"
        # The user line being traced when a guard is recorded (set by capture).
        self.current_line: Callable[[], int | None] = lambda: None

    def create_symbol(self, hint: int, source: str) -> "Sym":
        if hint < 2:
            raise ValueError(f"sizes 0 and 1 stay specialized, got a symbol for {hint}")
        name = f"s{len(self.hints)}"
        self.hints[name] = int(hint)
        self.sources[name] = source
        return Sym({(name,): 1}, self)

    def hint(self, poly: dict) -> int:
        return evaluate_poly(poly, self.hints)

    def decide(self, rel: Relation) -> bool:
        """The answer to ``rel``: static, remembered, or (capturing) guarded."""
        key = rel.key()
        if key in self._decided:
            return self._decided[key]
        static = _static(rel)
        if static is not None:
            return static
        if self.mode != "capture":
            # After capture, equality means "provably equal": a fusion or a buffer
            # reuse is then only skipped.  An order question has no safe side.
            if rel.op in ("==", "!="):
                return rel.op == "!="
            raise SymbolicUnsupported(f"deciding {rel.text()} needs a guard")
        answer = rel.holds(self.hints)
        recorded = rel if answer else _negate(rel)
        self.guards.append((recorded, self.current_line()))
        self._decided[key] = answer
        self._decided[recorded.key()] = True
        return answer

    def specialize(self, poly: dict) -> int:
        """A plain int wanted: guard the expression equal to its hint."""
        value = self.hint(poly)
        if self.mode != "capture":
            raise SymbolicUnsupported(f"{render(poly)} is needed as a plain int")
        self.decide(Relation(_poly_add(poly, {(): value}, -1), "=="))
        for m in poly:
            if len(m) == 1 and len(poly) == 1:
                self.specialized[m[0]] = self.hints[m[0]]
        return value

    def relation_guards(self) -> list[tuple[str, str, tuple[str, ...], int | None]]:
        """``(check over sources, readable text, symbols involved, line)`` per guard."""
        out = []
        for rel, line in self.guards:
            syms = tuple(sorted({s for m in rel.poly for s in m}))
            check = rel.text(lambda s: self.sources[s])
            out.append((check, rel.text(), syms, line))
        return out


def _negate(rel: Relation) -> Relation:
    if rel.op == "==":
        return Relation(rel.poly, "!=")
    if rel.op == "!=":
        return Relation(rel.poly, "==")
    if rel.op == ">=":  # not (p >= 0)  ->  -p - 1 >= 0
        return Relation(_poly_add({(): -1}, rel.poly, -1), ">=")
    return Relation(rel.poly, "%!", rel.modulus)


def _static(rel: Relation) -> bool | None:
    """The answer when no assignment of symbols >= 2 can change it, else None."""
    if rel.op == "%!":
        return None
    if rel.op == "%":
        if all(Fraction(c) % rel.modulus == 0 for c in rel.poly.values()):
            return True
        return None
    lo, hi = _bounds(rel.poly)
    neg_lo = _bounds({m: -c for m, c in rel.poly.items()})[0]  # -(largest value)
    hi = min(hi, -neg_lo)
    if rel.op == ">=":
        return True if lo >= 0 else False if hi < 0 else None
    zero = not rel.poly
    nonzero = lo > 0 or hi < 0
    if rel.op == "==":
        return True if zero else False if nonzero else None
    return False if zero else True if nonzero else None


def evaluate_poly(poly: dict, values: dict[str, int]) -> int:
    total = Fraction(0)
    for m, c in poly.items():
        term = Fraction(c)
        for s in m:
            term *= values[s]
        total += term
    if total.denominator != 1:
        raise ValueError(f"{render(poly)} is not an integer for {values}")
    return int(total)


def monomial_quotient(poly: dict, divisor: dict) -> dict | None:
    """``poly / divisor`` when ``divisor`` is one symbolic term ``c*m`` dividing
    every term of ``poly`` exactly (``4*s0*s1 / (2*s0) = 2*s1``), else None."""
    if len(divisor) != 1:
        return None
    (m, c), = divisor.items()
    if not m:
        return None
    out = {}
    for term, k in poly.items():
        rest = list(term)
        for s in m:
            if s not in rest:
                return None
            rest.remove(s)
        if Fraction(k) % c:
            return None
        out[tuple(rest)] = Fraction(k) / c
    return out


# ---------------------------------------------------------------------------
# The int-like size
# ---------------------------------------------------------------------------


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}


def _poly_of(value: Any) -> dict | None:
    if isinstance(value, Sym):
        return value.poly
    if isinstance(value, int) or (hasattr(value, "__index__") and type(value).__module__ == "numpy"):
        v = operator.index(value)
        return {(): v} if v else {}
    return None


class Sym:
    """An integer size known symbolically (see the module docstring)."""

    __slots__ = ("poly", "env")

    def __init__(self, poly: dict, env: ShapeEnv):
        self.poly = poly
        self.env = env

    @staticmethod
    def make(poly: dict, env: ShapeEnv) -> "Sym | int":
        """A Sym, or a plain int when no symbol is left."""
        if not any(m for m in poly):
            c = poly.get((), 0)
            return int(c) if Fraction(c).denominator == 1 else Sym(poly, env)
        return Sym(poly, env)

    # -- arithmetic stays symbolic ----------------------------------------

    def _arith(self, other: Any, fn: Callable[[dict, dict], dict]) -> Any:
        p = _poly_of(other)
        return NotImplemented if p is None else Sym.make(fn(self.poly, p), self.env)

    def __add__(self, other: Any) -> Any:
        return self._arith(other, _poly_add)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._arith(other, lambda a, b: _poly_add(a, b, -1))

    def __rsub__(self, other: Any) -> Any:
        return self._arith(other, lambda a, b: _poly_add(b, a, -1))

    def __mul__(self, other: Any) -> Any:
        return self._arith(other, _poly_mul)

    __rmul__ = __mul__

    def __neg__(self) -> Any:
        return Sym.make({m: -c for m, c in self.poly.items()}, self.env)

    def __pos__(self) -> "Sym":
        return self

    def __floordiv__(self, other: Any) -> Any:
        d = _poly_of(other)
        if d is None:
            return NotImplemented
        exact = monomial_quotient(self.poly, d)
        if exact is not None:
            return Sym.make(exact, self.env)
        if set(d) != {()} or d[()] <= 0:
            return self.env.specialize(self.poly) // (other if not isinstance(other, Sym) else int(other))
        k = d[()]
        if self.divisible_by(k):  # exact (statically, or guarded ``% k == 0``)
            return Sym.make({m: Fraction(c) / k for m, c in self.poly.items()}, self.env)
        return self.env.specialize(self.poly) // k

    def __rfloordiv__(self, other: Any) -> Any:
        return operator.floordiv(other, self.env.specialize(self.poly))

    def __mod__(self, other: Any) -> Any:
        d = _poly_of(other)
        if d is None:
            return NotImplemented
        if monomial_quotient(self.poly, d) is not None:
            return 0
        if set(d) == {()} and d[()] > 0 and Fraction(d[()]).denominator == 1:
            # The example's remainder r, guarded ``(self - r) % k == 0``: one guard per residue class.
            k = int(d[()])
            r = self.hint % k
            self.env.decide(Relation(_poly_add(self.poly, {(): r}, -1), "%", k))  # holds for the hint
            return r
        return self.env.specialize(self.poly) % int(other)

    def __rmod__(self, other: Any) -> Any:
        return operator.mod(other, self.env.specialize(self.poly))

    def divisible_by(self, k: int) -> bool:
        """Whether ``self % k == 0`` (guarded when it is not static)."""
        return self.env.decide(Relation(self.poly, "%", k))

    # -- decisions go through the environment -------------------------------

    def _relation(self, other: Any, op: str) -> Any:
        p = _poly_of(other)
        if p is None:
            if isinstance(other, (float, np.floating)):  # s0 == 8.0: compare the value, guarded
                return _COMPARE[op](self.env.specialize(self.poly), other)
            return NotImplemented
        diff = _poly_add(self.poly, p, -1)
        if op == "==":
            return self.env.decide(Relation(diff, "=="))
        if op == "!=":
            return self.env.decide(Relation(diff, "!="))
        if op == ">=":
            return self.env.decide(Relation(diff, ">="))
        if op == ">":
            return self.env.decide(Relation(_poly_add(diff, {(): 1}, -1), ">="))
        if op == "<=":
            return self.env.decide(Relation({m: -c for m, c in diff.items()}, ">="))
        return self.env.decide(Relation(_poly_add({m: -c for m, c in diff.items()}, {(): 1}, -1), ">="))

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._relation(other, "==")

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._relation(other, "!=")

    def __lt__(self, other: Any) -> Any:
        return self._relation(other, "<")

    def __le__(self, other: Any) -> Any:
        return self._relation(other, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._relation(other, ">")

    def __ge__(self, other: Any) -> Any:
        return self._relation(other, ">=")

    def __bool__(self) -> bool:
        return self != 0

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.poly.items())))

    # -- a plain int specializes ------------------------------------------

    def __index__(self) -> int:
        return self.env.specialize(self.poly)

    __int__ = __index__

    # -- reading --------------------------------------------------------------

    @property
    def hint(self) -> int:
        return self.env.hint(self.poly)

    @property
    def symbols(self) -> set[str]:
        return {s for m in self.poly for s in m}

    def is_symbol(self) -> bool:
        return len(self.poly) == 1 and next(iter(self.poly)) and len(next(iter(self.poly))) == 1 \
            and next(iter(self.poly.values())) == 1

    def render(self, name: Callable[[str], str] = str) -> str:
        return render(self.poly, name)

    def __str__(self) -> str:
        return render(self.poly)

    __repr__ = __str__


# ---------------------------------------------------------------------------
# Helpers over nested values (shapes, op arguments)
# ---------------------------------------------------------------------------


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` (a size, or a tuple/list/slice of them) holds a Sym."""
    if isinstance(value, Sym):
        return True
    if isinstance(value, (tuple, list)):
        return any(is_symbolic(v) for v in value)
    if isinstance(value, slice):
        return any(isinstance(v, Sym) for v in (value.start, value.stop, value.step))
    if hasattr(value, "shape") and type(value).__name__ == "TensorMeta":
        return is_symbolic(value.shape)
    return False


def free_symbols(value: Any) -> set[str]:
    if isinstance(value, Sym):
        return value.symbols
    if isinstance(value, (tuple, list)):
        return set().union(*(free_symbols(v) for v in value)) if value else set()
    if isinstance(value, slice):
        return free_symbols((value.start, value.stop, value.step))
    if hasattr(value, "shape") and type(value).__name__ == "TensorMeta":
        return free_symbols(value.shape)
    return set()


def size_hint(value: Any) -> Any:
    """The example's value of a size (or tuple of sizes), for heuristics only."""
    if isinstance(value, Sym):
        return value.hint
    if isinstance(value, tuple):
        return tuple(size_hint(v) for v in value)
    return value


def substitute(value: Any, bindings: dict[str, int]) -> Any:
    """``value`` with every Sym evaluated under ``bindings`` (tuples, lists, slices walked)."""
    if isinstance(value, Sym):
        return evaluate_poly(value.poly, bindings)
    if isinstance(value, tuple):
        return tuple(substitute(v, bindings) for v in value)
    if isinstance(value, list):
        return [substitute(v, bindings) for v in value]
    if isinstance(value, slice):
        return slice(*(substitute(v, bindings) for v in (value.start, value.stop, value.step)))
    if hasattr(value, "shape") and type(value).__name__ == "TensorMeta":
        return type(value)(substitute(tuple(value.shape), bindings), value.dtype)
    return value


def symbol_bindings(shapes: Iterable[tuple], values: Iterable[tuple[int, ...]]) -> dict[str, int]:
    """Bind the plain symbols of ``shapes`` (placeholder metas) to the dims of ``values``."""
    out: dict[str, int] = {}
    for shape, actual in zip(shapes, values):
        for d, a in zip(shape, actual):
            if isinstance(d, Sym) and d.is_symbol():
                out[next(iter(d.poly))[0]] = int(a)
    return out


def input_symbols(shapes: Iterable[tuple]) -> dict[str, tuple[int, int]]:
    """Each plain symbol of the input shapes -> (input position, axis) it is read from."""
    out: dict[str, tuple[int, int]] = {}
    for i, shape in enumerate(shapes):
        for axis, d in enumerate(shape):
            if isinstance(d, Sym) and d.is_symbol():
                out.setdefault(next(iter(d.poly))[0], (i, axis))
    return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:])))


def has_division(value: Any) -> bool:
    """Whether a size (or tuple of sizes) divides (``(s0 + 1)//2``): C spells that differently."""
    if isinstance(value, Sym):
        return any(Fraction(c).denominator != 1 for c in value.poly.values())
    if isinstance(value, (tuple, list)):
        return any(has_division(v) for v in value)
    return False
