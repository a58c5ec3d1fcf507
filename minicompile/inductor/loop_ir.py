"""The loop-level IR: what a graph node means, one element at a time.

In:  nothing — this module is the vocabulary that ``lowering`` writes and
     ``scheduler`` and ``codegen`` read.
Out: three families of immutable, printable objects.

* **Index expressions** (:class:`Expr`): integer expressions over loop
  variables.  Strides, broadcasting, transposes and reshapes only ever need
  affine sums plus floor-division and modulo by positive constants, so an
  ``Expr`` is kept in one canonical form, ``c0 + c1*a1 + c2*a2 + ...``, where
  each atom ``a`` is a loop variable, ``e // d`` or ``e % d``.  Building an
  expression simplifies it (the rules are listed at :func:`floordiv`,
  :func:`mod` and :meth:`Expr._normalize`), so a reshape followed by its
  inverse folds back to the plain loop variables.  With dynamic shapes a
  stride may be a symbolic size: ``x0*(16*s1)`` is the atom ``Scaled(x0,
  16*s1)``, and a divisor may be one symbol (``x0 // s1``); a simplification
  that would need to compare sizes the symbols leave open is not made.
* **Values** (:class:`Load`, :class:`Constant`, :class:`Op`, :class:`Cast`):
  the scalar computed for one element.  Every value knows its dtype; an ``Op``
  receives operands already cast to the dtype NumPy's ufunc loop computes in.
* **Nodes** (:class:`Pointwise`, :class:`Reduction`, :class:`Extern`): what
  one graph node lowers to.  A ``Pointwise`` body is written in terms of the
  loop variables ``x0, x1, ...`` of its output; a ``Reduction`` adds
  ``r0, r1, ...`` for the reduced axes.  Fusing a producer into its consumer
  is substituting the consumer's index into the producer's body
  (:func:`substitute`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Union

import numpy as np

from ..ir.dtypes import short_name
from ..ir.symbolic import Sym, SymbolicUnsupported, monomial_quotient

# ---------------------------------------------------------------------------
# Index expressions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """A loop variable running over ``range(size)``."""

    name: str
    size: int

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class FloorDiv:
    base: "Expr"
    divisor: int

    def __str__(self) -> str:
        return f"({_paren(self.base)}//{self.divisor})"


@dataclass(frozen=True)
class Mod:
    base: "Expr"
    divisor: int

    def __str__(self) -> str:
        return f"({_paren(self.base)}%{self.divisor})"


@dataclass(frozen=True)
class Scaled:
    """``atom * factor`` for a symbolic size ``factor`` (dynamic shapes): the
    stride ``16*s0`` of a loop variable is a size known only at run time, so it
    stays a factor of the atom instead of becoming an integer coefficient."""

    atom: "Atom"
    factor: Sym

    def __str__(self) -> str:
        return f"{self.atom}*({self.factor})"


@dataclass(frozen=True)
class Indirect:
    """An index read from memory (a gather): ``value`` (an integer loop-IR
    value, a ``Load`` of an index array) as a position along an axis of
    ``size`` elements.  ``mode`` is what an index outside ``[-size, size)``
    means: ``"raise"`` (NumPy's ``x[idx]`` and ``np.take``: an IndexError;
    code generators that cannot raise wrap it, as CuPy does), ``"wrap"``
    (modulo ``size``) or ``"clip"`` (to the nearest end).  A negative index in
    range counts from the end in every mode but ``"clip"``."""

    value: "Value"
    size: int | Sym
    mode: str = "raise"

    def __str__(self) -> str:
        return f"[{self.value}]"


Atom = Union[Var, FloorDiv, Mod, Scaled, Indirect]


def _paren(e: "Expr") -> str:
    simple = e.const == 0 and len(e.terms) == 1 and e.terms[0][1] == 1
    return str(e) if simple else f"({e})"


class Expr:
    """``const + sum(coeff * atom)``, canonical, immutable and hashable."""

    __slots__ = ("terms", "const", "_hash")

    def __init__(self, terms: dict[Atom, int] | None = None, const: int = 0):
        normal, folded = _normalize(dict(terms or {}))
        # Sorting by printed form makes equal expressions compare and print equally.
        self.terms: tuple[tuple[Atom, int], ...] = tuple(sorted(normal.items(), key=lambda t: str(t[0])))
        self.const = int(const) + folded
        self._hash = hash((self.terms, self.const))

    # -- construction ------------------------------------------------------

    @staticmethod
    def of(value: "Expr | int") -> "Expr":
        return value if isinstance(value, Expr) else Expr(None, int(value))

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, other: "Expr | int") -> "Expr":
        other = Expr.of(other)
        terms = dict(self.terms)
        for atom, c in other.terms:
            terms[atom] = terms.get(atom, 0) + c  # x + x -> 2*x
        return Expr(terms, self.const + other.const)  # constants fold

    __radd__ = __add__

    def __mul__(self, other: "Expr | int") -> "Expr":
        if isinstance(other, Sym):
            return self._scaled(other)
        other = Expr.of(other)
        if not other.is_const:
            if not self.is_const:
                raise ValueError(f"index expressions stay affine: cannot multiply {self} by {other}")
            return other * self.const
        k = other.const
        return Expr({a: c * k for a, c in self.terms}, self.const * k)  # x*1 -> x, x*0 -> 0

    __rmul__ = __mul__

    def _scaled(self, factor: Sym) -> "Expr":
        """``self * factor`` for a symbolic size: each atom becomes ``Scaled``."""
        if self.const:
            raise SymbolicUnsupported(f"index {self} times the size {factor}")
        terms: dict[Atom, int] = {}
        for atom, c in self.terms:
            scaled = Scaled(atom.atom, atom.factor * factor) if isinstance(atom, Scaled) else Scaled(atom, factor)
            terms[scaled] = terms.get(scaled, 0) + c
        return Expr(terms)

    def __neg__(self) -> "Expr":
        return self * -1

    def __sub__(self, other: "Expr | int") -> "Expr":
        return self + (-Expr.of(other))

    def __floordiv__(self, divisor: int) -> "Expr":
        return floordiv(self, divisor)

    def __mod__(self, divisor: int) -> "Expr":
        return mod(self, divisor)

    # -- reading -----------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self.terms == other.terms and self.const == other.const

    def __hash__(self) -> int:
        return self._hash

    def coeff(self, var: Var) -> int:
        return dict(self.terms).get(var, 0)

    def free_vars(self) -> set[Var]:
        out: set[Var] = set()
        for atom, _ in self.terms:
            while isinstance(atom, Scaled):
                atom = atom.atom
            if isinstance(atom, Indirect):
                out |= {v for ld in loads(atom.value) for i in ld.index for v in i.free_vars()}
            else:
                out |= {atom} if isinstance(atom, Var) else atom.base.free_vars()
        return out

    def bounds(self) -> tuple[int, int]:
        """Smallest and largest value over all loop iterations."""
        lo = hi = self.const
        for atom, c in self.terms:
            alo, ahi = _atom_bounds(atom)
            lo += min(c * alo, c * ahi)
            hi += max(c * alo, c * ahi)
        return lo, hi

    def subs(self, mapping: dict[Var, "Expr"]) -> "Expr":
        """Replace loop variables simultaneously, simplifying the result."""
        out = Expr(None, self.const)
        for atom, c in self.terms:
            if isinstance(atom, Var):
                new = mapping.get(atom, Expr({atom: 1}))
            elif isinstance(atom, Scaled):
                new = Expr({atom.atom: 1}).subs(mapping) * atom.factor
            elif isinstance(atom, Indirect):
                new = Expr({Indirect(substitute(atom.value, mapping), atom.size, atom.mode): 1})
            elif isinstance(atom, FloorDiv):
                new = floordiv(atom.base.subs(mapping), atom.divisor)
            else:
                new = mod(atom.base.subs(mapping), atom.divisor)
            out = out + new * c
        return out

    def render(self, atom_fmt: Callable[[Atom], str] = str) -> str:
        def fmt(atom: Atom) -> str:  # a backend's atom_fmt never sees Scaled
            return f"{fmt(atom.atom)}*({atom.factor})" if isinstance(atom, Scaled) else atom_fmt(atom)

        parts = []
        for atom, c in self.terms:
            text = fmt(atom)
            mag = abs(c)
            term = text if mag == 1 else f"{mag}*{text}"
            parts.append(("-" if c < 0 else "+", term))
        if self.const or not parts:
            parts.append(("-" if self.const < 0 else "+", str(abs(self.const))))
        sign, first = parts[0]
        out = ("-" if sign == "-" else "") + first
        for sign, term in parts[1:]:
            out += f" {sign} {term}"
        return out

    def __str__(self) -> str:
        return self.render()

    __repr__ = __str__


def _atom_bounds(atom: Atom) -> tuple[int, int]:
    if isinstance(atom, Var):
        return 0, max(atom.size - 1, 0)
    if isinstance(atom, Indirect):  # normalized into its axis before use
        return 0, atom.size - 1
    if isinstance(atom, Scaled):  # factor is a size: positive
        lo, hi = _atom_bounds(atom.atom)
        return lo * atom.factor, hi * atom.factor
    lo, hi = atom.base.bounds()
    if isinstance(atom.divisor, Sym):  # e // s0 lies in [0, e] (s0 >= 2); e % s0 in [0, s0 - 1]
        if lo != 0:
            raise SymbolicUnsupported(f"bounds of {atom}")
        return (0, hi) if isinstance(atom, FloorDiv) else (0, atom.divisor - 1)
    if isinstance(atom, FloorDiv):
        return _div_bound(lo, atom.divisor, math.floor), _div_bound(hi, atom.divisor, math.ceil)
    return 0, atom.divisor - 1


def _div_bound(v: int | Sym, d: int, rounding: Callable) -> int | Sym:
    """``v // d``, or for a symbolic ``v`` a bound on it that needs no guard:
    each coefficient divided and rounded outward (every monomial is >= 0),
    so ``(256*s0 - 1) // 16`` is bounded by ``16*s0`` above, ``16*s0 - 1`` below."""
    if not isinstance(v, Sym):
        return v // d
    return Sym.make({m: rounding(Fraction(c) / d) for m, c in v.poly.items()}, v.env)


def _normalize(terms: dict[Atom, int]) -> tuple[dict[Atom, int], int]:
    """Drop zero terms and fold ``k*d*(e//d) + k*(e%d) -> k*e`` (undoing a reshape);
    returns the terms and the constant the folds add (``e``'s own: ``x0 + 1`` sliced
    from a reshape folds back to ``x0 + 1``, not ``x0``).

    ``e//d`` is looked up in its canonical form, so ``12*(z//12) + 4*((z//4)%3)``
    folds to ``4*(z//4)`` and then, with ``z%4``, to ``z``.
    """
    terms = {a: c for a, c in terms.items() if c}
    const = 0
    changed = True
    while changed:
        changed = False
        for atom, k in list(terms.items()):
            if not isinstance(atom, Mod):
                continue
            quotient = floordiv(atom.base, atom.divisor)
            if len(quotient.terms) != 1 or quotient.const or quotient.terms[0][1] != 1:
                continue
            partner = quotient.terms[0][0]
            if terms.get(partner) == k * atom.divisor:
                del terms[atom], terms[partner]
                for a2, c2 in atom.base.terms:
                    terms[a2] = terms.get(a2, 0) + k * c2
                const += k * atom.base.const
                terms = {a: v for a, v in terms.items() if v}
                changed = True
                break
    return terms, const


def _split(e: Expr, d: int | Sym) -> tuple[Expr, Expr]:
    """``e = d*q + r`` with every coefficient of ``r`` not divisible by ``d``
    (a symbolic ``d`` divides only the ``Scaled`` terms whose factor it divides)."""
    q, r = {}, {}
    scaled = Expr()
    for atom, c in e.terms:
        exact = _scaled_quotient(atom, d)
        if exact is not None:
            scaled = scaled + exact * c
        elif isinstance(d, int) and c % d == 0:
            q[atom] = c // d
        else:
            r[atom] = c
    qc, rc = divmod(e.const, d) if isinstance(d, int) else (0, e.const)
    return Expr(q, qc) + scaled, Expr(r, rc)


def _split_nonnegative(e: Expr, d: int | Sym) -> tuple[Expr, Expr]:
    """:func:`_split` with ``r >= 0`` for every value: a remainder that may be negative
    (``11 - x0 = 4*2 + (3 - x0)`` for ``x0`` up to 11, a reversed view of a reshape)
    lends ``k*d`` from the quotient, so ``r // d`` and ``r % d`` keep their meaning
    in C, whose division truncates toward zero."""
    q, r = _split(e, d)
    low = r.bounds()[0] if isinstance(d, int) else 0
    if low < 0:
        k = -(low // d)
        q, r = q - k, r + k * d
    return q, r


def _scaled_quotient(atom: Atom, d: int | Sym) -> "Expr | None":
    """``atom / d`` when ``atom`` is ``Scaled`` by a size that ``d`` divides exactly."""
    if not isinstance(atom, Scaled):
        return None
    factor = atom.factor.poly
    if isinstance(d, Sym):
        poly = monomial_quotient(factor, d.poly)
    elif all(Fraction(c) % d == 0 for c in factor.values()):
        poly = {m: Fraction(c) / d for m, c in factor.items()}
    else:
        poly = None
    return None if poly is None else Expr({atom.atom: 1}) * Sym.make(poly, atom.factor.env)


def _within(e: Expr, d: int | Sym) -> bool:
    """``0 <= e < d`` for every value (False when symbolic sizes leave it open)."""
    try:
        lo, hi = e.bounds()
        return 0 <= lo and hi < d
    except SymbolicUnsupported:
        return False


def _content(d: int | Sym) -> int:
    """The integer factor common to every term of a size (``16*s0`` -> 16)."""
    if isinstance(d, int):
        return d
    coeffs = [Fraction(c) for c in d.poly.values()]
    return math.gcd(*(int(c) for c in coeffs)) if all(c.denominator == 1 for c in coeffs) else 1


def _divisor_atom(d: int | Sym) -> int | Sym:
    """A divisor a ``FloorDiv``/``Mod`` atom may hold: an int or one symbol (rendered bare)."""
    if isinstance(d, Sym) and not d.is_symbol():
        raise SymbolicUnsupported(f"an index divided by {d}")
    return d


def _common_factor(e: Expr, d: int | Sym) -> tuple[int, Expr, Expr] | None:
    """A ``g | d`` with ``e = g*a + b`` and ``0 <= b < g``: then ``e//d = a//(d/g)``.
    For a symbolic ``d``, ``g`` may be a symbolic stride of ``e`` that divides it
    (``(s2*x0 + x1) // (s1*s2) -> x0 // s1`` when ``x1 < s2``)."""
    for g in sorted({math.gcd(c, _content(d)) for _, c in e.terms}, reverse=True):
        if g <= 1:
            continue
        a, b = _split(e, g)
        if _within(b, g):
            return g, a, b
    if isinstance(d, Sym):
        for atom, _ in e.terms:
            if isinstance(atom, Scaled) and monomial_quotient(d.poly, atom.factor.poly) is not None:
                a, b = _split(e, atom.factor)
                if _within(b, atom.factor):
                    return atom.factor, a, b
    return None


def floordiv(e: Expr | int, d: int) -> Expr:
    """``e // d`` for ``e >= 0`` and ``d > 0``, simplified:

    * ``e // 1 -> e``; constants fold;
    * ``e // d -> 0`` when ``0 <= e < d``;
    * ``(d*q + r) // d -> q + r // d``;
    * ``(g*a + b) // (g*k) -> a // k`` when ``0 <= b < g``;
    * ``(e // a) // b -> e // (a*b)``.
    """
    e = Expr.of(e)
    if d <= 0:
        raise ValueError(f"floor division of an index by {d}")
    if d == 1:
        return e
    if e.is_const:
        if isinstance(d, Sym) and e.const:
            raise SymbolicUnsupported(f"{e.const} // {d}")
        return Expr(None, e.const // d if e.const else 0)
    if e.bounds()[0] < 0:
        raise ValueError(f"floor division of a possibly negative index {e}")
    if _within(e, d):
        return Expr()
    q, r = _split_nonnegative(e, d)
    if (r.is_const and isinstance(d, int)) or _within(r, d):
        return q
    if not q.is_const or q.const:
        return q + floordiv(r, d)
    factor = _common_factor(r, d)
    if factor is not None:
        g, a, _ = factor
        return floordiv(a, d // g)
    if len(r.terms) == 1 and r.const == 0 and r.terms[0][1] == 1 and isinstance(r.terms[0][0], FloorDiv):
        inner = r.terms[0][0]
        return floordiv(inner.base, inner.divisor * d)
    return Expr({FloorDiv(r, _divisor_atom(d)): 1})


def mod(e: Expr | int, d: int) -> Expr:
    """``e % d`` for ``e >= 0`` and ``d > 0``, simplified:

    * ``e % 1 -> 0``; constants fold;
    * ``e % d -> e`` when ``0 <= e < d``;
    * ``(d*q + r) % d -> r % d``;
    * ``(g*a + b) % (g*k) -> g*(a % k) + b`` when ``0 <= b < g``;
    * ``(e % (d*k)) % d -> e % d``.
    """
    e = Expr.of(e)
    if d <= 0:
        raise ValueError(f"modulo of an index by {d}")
    if d == 1:
        return Expr()
    if e.is_const:
        if isinstance(d, Sym) and e.const:
            raise SymbolicUnsupported(f"{e.const} % {d}")
        return Expr(None, e.const % d if e.const else 0)
    if e.bounds()[0] < 0:
        raise ValueError(f"modulo of a possibly negative index {e}")
    _, r = _split_nonnegative(e, d)
    if _within(r, d):
        return r
    factor = _common_factor(r, d)
    if factor is not None:
        g, a, b = factor
        return mod(a, d // g) * g + b
    if len(r.terms) == 1 and r.const == 0 and r.terms[0][1] == 1 and isinstance(r.terms[0][0], Mod):
        inner = r.terms[0][0]
        if isinstance(inner.divisor, int) and isinstance(d, int) and inner.divisor % d == 0:
            return mod(inner.base, d)
    return Expr({Mod(r, _divisor_atom(d)): 1})


def loop_vars(prefix: str, ranges: tuple[int, ...]) -> tuple[Var, ...]:
    return tuple(Var(f"{prefix}{i}", n) for i, n in enumerate(ranges))


def loop_index(prefix: str, ranges: tuple[int, ...]) -> tuple[Expr, ...]:
    """The index ``(x0, x1, ...)`` of a loop nest; a dimension of size 1 is the constant 0."""
    return tuple(Expr() if v.size == 1 else Expr({v: 1}) for v in loop_vars(prefix, ranges))


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def linearize(index: tuple[Expr, ...], strides: tuple[int, ...]) -> Expr:
    """The flat element offset of ``index`` in a buffer with these strides."""
    out = Expr()
    for i, s in zip(index, strides):
        out = out + i * s
    return out


# ---------------------------------------------------------------------------
# Values: the scalar computed per element
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """``buffer[index]``; ``buffer`` names a graph node, index is per dimension."""

    buffer: str
    index: tuple[Expr, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.buffer}[{', '.join(map(str, self.index))}]"


@dataclass(frozen=True)
class Constant:
    value: Any  # a Python bool/int/float already rounded to ``dtype``
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.value!r}:{short_name(self.dtype)}"


@dataclass(frozen=True)
class Op:
    """A scalar op; operands already hold the ufunc loop's input dtype."""

    name: str
    args: tuple["Value", ...]
    dtype: np.dtype  # of the result (bool for comparisons)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Cast:
    value: "Value"
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{short_name(self.dtype)}({self.value})"


Value = Union[Load, Constant, Op, Cast]


def cast(value: Value, dtype: np.dtype) -> Value:
    """``dtype(value)``; no-op casts vanish and constants fold."""
    dtype = np.dtype(dtype)
    if value.dtype == dtype:
        return value
    if isinstance(value, Constant):
        with np.errstate(all="ignore"):
            return Constant(np.asarray(value.value, value.dtype).astype(dtype).item(), dtype)
    return Cast(value, dtype)


def constant(value: Any, dtype: np.dtype) -> Constant:
    """A graph constant as the loop sees it: rounded to ``dtype`` as NumPy does."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and type(value) is int:
        # A Python int the op accepted outside the dtype's range (np.where does)
        # wraps around as NumPy's conversion does; dtype.type(value) would raise.
        bits = 8 * dtype.itemsize
        value %= 1 << bits
        if dtype.kind == "i" and value >= 1 << (bits - 1):
            value -= 1 << bits
    with np.errstate(all="ignore"):
        return Constant(dtype.type(value).item(), dtype)


def walk(value: Value) -> Iterator[Value]:
    """Every sub-value, parents first (shared sub-values repeat), the values
    a gather's index is read from included (they come before the Load)."""
    if isinstance(value, Load):
        for atom in indirect_atoms(value):
            yield from walk(atom.value)
    yield value
    if isinstance(value, Op):
        for a in value.args:
            yield from walk(a)
    elif isinstance(value, Cast):
        yield from walk(value.value)


def indirect_atoms(load: Load) -> list[Indirect]:
    """The gathered positions in a Load's index (outermost only: an index array
    read through another index array is inside one of them)."""
    found: list[Indirect] = []

    def visit(e: Expr) -> None:
        for atom, _ in e.terms:
            while isinstance(atom, Scaled):
                atom = atom.atom
            if isinstance(atom, Indirect):
                found.append(atom)
            elif not isinstance(atom, Var):
                visit(atom.base)

    for i in load.index:
        visit(i)
    return list(dict.fromkeys(found))


def map_indirect(e: Expr, fn: Callable[[Indirect], Indirect]) -> Expr:
    """``e`` with each gathered position replaced by ``fn(atom)``."""
    if not any(isinstance(a, (Indirect, FloorDiv, Mod, Scaled)) for a, _ in e.terms):
        return e
    out = Expr(None, e.const)
    for atom, c in e.terms:
        if isinstance(atom, Indirect):
            new = Expr({fn(atom): 1})
        elif isinstance(atom, Scaled):
            new = map_indirect(Expr({atom.atom: 1}), fn) * atom.factor
        elif isinstance(atom, FloorDiv):
            new = floordiv(map_indirect(atom.base, fn), atom.divisor)
        elif isinstance(atom, Mod):
            new = mod(map_indirect(atom.base, fn), atom.divisor)
        else:
            new = Expr({atom: 1})
        out = out + new * c
    return out


def map_index_loads(load: Load, fn: Callable[[Value], Value]) -> Load:
    """``load`` with each gathered position's value rewritten by ``fn``."""
    if not indirect_atoms(load):
        return load
    index = tuple(map_indirect(i, lambda a: Indirect(fn(a.value), a.size, a.mode)) for i in load.index)
    return Load(load.buffer, index, load.dtype)


def map_loads(value: Value, fn: Callable[[Load], Value], memo: dict | None = None) -> Value:
    """Rebuild ``value`` with every ``Load`` replaced by ``fn(load)`` (in a
    gather, the Loads of its index values too)."""
    memo = {} if memo is None else memo
    if value in memo:
        return memo[value]
    if isinstance(value, Load):
        out = fn(map_index_loads(value, lambda v: map_loads(v, fn, memo)))
    elif isinstance(value, Op):
        out = Op(value.name, tuple(map_loads(a, fn, memo) for a in value.args), value.dtype)
    elif isinstance(value, Cast):
        out = cast(map_loads(value.value, fn, memo), value.dtype)
    else:
        out = value
    memo[value] = out
    return out


def substitute(value: Value, mapping: dict[Var, Expr]) -> Value:
    """``value`` with its loop variables replaced (how a producer is inlined)."""
    if isinstance(value, Load):  # Expr.subs reaches into a gather's index values itself
        return Load(value.buffer, tuple(i.subs(mapping) for i in value.index), value.dtype)
    if isinstance(value, Op):
        return Op(value.name, tuple(substitute(a, mapping) for a in value.args), value.dtype)
    if isinstance(value, Cast):
        return cast(substitute(value.value, mapping), value.dtype)
    return value


def loads(value: Value) -> list[Load]:
    seen: dict[Load, None] = {}
    for v in walk(value):
        if isinstance(v, Load):
            seen.setdefault(v)
    return list(seen)


# ---------------------------------------------------------------------------
# Nodes: what one graph node lowers to
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pointwise:
    """``out[x0, x1, ...] = body`` over ``ranges``.  A view is a Pointwise whose
    body is one ``Load`` with rearranged index (``is_view``): no data moves."""

    name: str
    ranges: tuple[int, ...]
    body: Value
    is_view: bool = False

    @property
    def dtype(self) -> np.dtype:
        return self.body.dtype

    @property
    def vars(self) -> tuple[Var, ...]:
        return loop_vars("x", self.ranges)

    def __str__(self) -> str:
        kind = "View" if self.is_view else "Pointwise"
        return f"{kind} {self.name}: {_ranges('x', self.ranges)} -> {short_name(self.dtype)}\n  {self.body}"


# argmax/argmin carry a pair per row, the extreme value and its position;
# their result is the position (see :meth:`Reduction.position`).
ARG_REDUCTION_TYPES = ("argmax", "argmin")
REDUCTION_TYPES = ("sum", "prod", "mean", "max", "min") + ARG_REDUCTION_TYPES


@dataclass(frozen=True)
class Reduction:
    """``out[x...] = reduce(body for r...)``.  ``ranges`` is the output shape
    (keepdims-aware); ``reduction_ranges`` the reduced axes, in order.  The body
    is already cast to the element dtype; it accumulates in ``acc_dtype``.
    An argmax/argmin accumulates the extreme value in ``acc_dtype`` together
    with its :meth:`position`, and ``dtype`` (intp) is that position's."""

    name: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    reduction_type: str
    body: Value
    dtype: np.dtype
    acc_dtype: np.dtype

    @property
    def vars(self) -> tuple[Var, ...]:
        return loop_vars("x", self.ranges)

    @property
    def is_arg(self) -> bool:
        return self.reduction_type in ARG_REDUCTION_TYPES

    def position(self) -> Expr:
        """Where the element ``r...`` lies in its row, counted row-major over
        ``reduction_ranges``: NumPy's argmax index along the axis, or into the
        flattened array for ``axis=None`` (all axes reduced, in order)."""
        return linearize(loop_index("r", self.reduction_ranges), contiguous_strides(self.reduction_ranges))

    def __str__(self) -> str:
        return (
            f"Reduction {self.name}: {_ranges('x', self.ranges)} x {_ranges('r', self.reduction_ranges)} "
            f"-> {short_name(self.dtype)}  {self.reduction_type} in {short_name(self.acc_dtype)}\n  {self.body}"
        )


@dataclass(frozen=True)
class BufferRef:
    """An Extern argument that is an array computed by the graph; ``scalar``: eager
    NumPy had a NumPy scalar there (a reduction's 0-d result), which some calls
    treat apart from a 0-d array (``x[k] = nan`` raises for an integer ``x``)."""

    name: str
    scalar: bool = False

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Extern:
    """A NumPy library call (BLAS matmul, or any op the loops cannot express
    with NumPy's exact semantics); ``reason`` says why it is not generated."""

    name: str
    op_name: str
    impl: Callable[..., Any] = field(compare=False)
    args: tuple
    shape: tuple[int, ...]
    dtype: np.dtype
    reason: str

    @property
    def inputs(self) -> list[str]:
        return [a.name for a in _flat(self.args) if isinstance(a, BufferRef)]

    def __str__(self) -> str:
        args = ", ".join(map(str, self.args))
        return f"Extern {self.name} = np.{self.op_name}({args})  ({self.reason})"


Node = Union[Pointwise, Reduction, Extern]


def _flat(values: Any) -> Iterator[Any]:
    for v in values:
        if isinstance(v, (tuple, list)):
            yield from _flat(v)
        else:
            yield v


def _ranges(prefix: str, ranges: tuple[int, ...]) -> str:
    if not ranges:
        return "[]"
    return "[" + ", ".join(f"{prefix}{i}<{n}" for i, n in enumerate(ranges)) + "]"
