"""Running a drawn program with NumPy and compiled, and comparing everything the caller sees.

The programs come from :func:`minicompile.testing.random_programs.programs` with every
option on (:func:`programs` here): straight-line functions that mutate their
arguments, alias them and break the graph, with the source of ``make_args()``,
which builds a fresh, identically aliased argument set on every call (see
that module's docstring).

``check_program(program, backend)`` runs the program with NumPy and through
``mc.compile(f, backend=B)``, and compares everything the caller can observe:
the result (type, dtype, shape, values, and whether it is, or shares memory
with, an argument), every argument, every base and container element
afterwards, what was printed, and the exception type.  See ``Outcome``.
(``minicompile.testing.assert_same`` checks the same for one call, less the
printed text and the bases no argument shows; this check is the stricter one
the generator's own tests need: bit for bit on eager and aot_eager, and over
several calls on fresh or separate arguments.)
"""
from __future__ import annotations

import contextlib
import io
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import note
from hypothesis.control import currently_in_test_context

import minicompile as mc
from minicompile.testing import random_programs
from minicompile.testing.random_programs import Program
from minicompile.testing.statements import Box


def programs(min_statements: int = 3, max_statements: int = 12):
    """Programs that mutate, alias, break the graph and now and then raise."""
    return random_programs.programs(mutation=True, graph_breaks=True, aliasing=True, raising=True, tensors=True,
                                    min_statements=min_statements, max_statements=max_statements)


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


def run(fn: Callable, program: Program, variant: str, device: "OnDevice | None" = None) -> Outcome:
    """One call of ``fn`` on fresh arguments (on ``device``'s arrays, when given)."""
    args, bases = program.make_args(variant)
    originals = originals_of(args, bases)
    call_args = device.wrap(args) if device is not None else args
    out = io.StringIO()
    result, error = None, None
    errors = "raise" if variant == "raising" else "ignore"  # NumPy's error state around the call
    with np.errstate(all=errors), warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        try:
            result = fn(*call_args)
        except Exception as e:
            error = e
    if device is not None:  # compared on the host: the data the device arrays stand for
        result, call_args = device.unwrap(result), device.unwrap(call_args)
    return Outcome(result, error, out.getvalue(), call_args, originals)


class Host:
    """A NumPy array where a program on device arrays handed back one (a kind of
    result CuPy eager would not give): never equal in type to a device array's data."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __repr__(self) -> str:
        return f"Host({self.array!r})"


class OnDevice:
    """Runs a program on device arrays whose data are the host arrays ``make_args``
    built (CuPy's test double, tests/fake_cupy.py, wraps a NumPy array without a
    copy): every array, one wrapper each, so aliasing and identity carry over, in
    containers of their own.  ``unwrap`` maps the call's values back: an argument's
    wrapper to its NumPy array, any other device array to a new view of its data
    (same memory, another object), a NumPy array to :class:`Host`."""

    def __init__(self, double):
        self.double = double
        self.memo: dict[int, Any] = {}  # id of a host value -> its device twin
        self.back: dict[int, Any] = {}  # id of a device twin -> the host value
        self.keep: list[Any] = []  # keeps the ids above alive

    def wrap(self, value: Any) -> Any:
        if id(value) in self.memo:
            return self.memo[id(value)]
        if isinstance(value, np.ndarray):
            twin = self.double.ndarray(value)
        elif isinstance(value, (list, tuple)):
            twin = type(value)(self.wrap(v) for v in value)
        elif isinstance(value, dict):
            twin = {k: self.wrap(v) for k, v in value.items()}
        elif isinstance(value, Box):
            twin = Box(**{k: self.wrap(v) for k, v in vars(value).items()})
        else:
            return value
        self.memo[id(value)], self.back[id(twin)] = twin, value
        self.keep += [value, twin]
        return twin

    def unwrap(self, value: Any) -> Any:
        if isinstance(value, self.double.ndarray):
            known = self.back.get(id(value))
            return known if known is not None else self.double.peek(value)[...]
        if isinstance(value, np.ndarray):
            return Host(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self.unwrap(v) for v in value)
        if isinstance(value, dict):
            return {k: self.unwrap(v) for k, v in value.items()}
        if isinstance(value, Box):
            return Box(**{k: self.unwrap(v) for k, v in vars(value).items()})
        return value


def assert_values(actual: np.ndarray, expected: np.ndarray, exact: "bool | np.dtype", where: str) -> None:
    """Equal dtype, shape and values: bit for bit where ``exact`` is True, else to the
    tolerance of the float dtype ``exact`` names (a float64 array may hold values a
    float32 loop computed) or of the array's own dtype, whichever is looser."""
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}, NumPy {expected.dtype}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape}, NumPy {expected.shape}"
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=where, strict=True)
        return
    nan = np.isnan(expected)
    assert (np.isnan(actual) == nan).all(), f"{where}: NaN at other places\n{actual}\nNumPy:\n{expected}"
    if exact is True:  # bit for bit, -0.0 included
        a, e = np.ascontiguousarray(actual)[~nan], np.ascontiguousarray(expected)[~nan]
        assert a.tobytes() == e.tobytes(), f"{where}: values differ\ncompiled: {actual!r}\nNumPy:    {expected!r}"
    else:
        rtol, atol = max(TOLERANCE[expected.dtype], TOLERANCE.get(exact, (0.0, 0.0)))
        finite = np.abs(expected[np.isfinite(expected)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, equal_nan=True, err_msg=where)


def assert_same_value(actual: Any, expected: Any, outcome: Outcome, want: Outcome, exact: "bool | np.dtype",
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
    elif isinstance(expected, mc.Tensor):
        # Its data: values, and which arguments' memory it is or shares; not its layout (a
        # compiled region hands back the backend's C-contiguous buffers as tensors).
        actual, expected, where = actual.data, expected.data, f"{where}.data"
        assert [actual is o for o in outcome.originals] == [expected is o for o in want.originals], \
            f"{where}: not the same argument array as NumPy's"
        assert [np.shares_memory(actual, o) for o in outcome.originals] == \
            [np.shares_memory(expected, o) for o in want.originals], f"{where}: shares other memory than NumPy's"
        assert_values(actual, expected, exact, where)
    elif isinstance(expected, np.ndarray):
        identity = [i for i, o in enumerate(want.originals) if expected is o]
        got = [i for i, o in enumerate(outcome.originals) if actual is o]
        assert got == identity, f"{where}: is argument array {got}, NumPy's is {identity} (see make_args order)"
        shares = [i for i, o in enumerate(want.originals) if np.shares_memory(expected, o)]
        got = [i for i, o in enumerate(outcome.originals) if np.shares_memory(actual, o)]
        assert got == shares, f"{where}: shares memory with arrays {got}, NumPy's with {shares}"
        # The layout decides whether a later reshape or ravel is a view or a copy.
        layout = lambda a: (a.flags.c_contiguous, a.flags.f_contiguous)  # noqa: E731
        assert layout(actual) == layout(expected), \
            f"{where}: (C, F)-contiguous {layout(actual)}, NumPy's {layout(expected)} (strides {actual.strides}, " \
            f"NumPy's {expected.strides})"
        assert_values(actual, expected, exact, where)
    elif isinstance(expected, Host):
        assert_values(actual.array, expected.array, exact, f"{where} (a NumPy array)")
    elif isinstance(expected, np.generic):
        assert_values(np.asarray(actual), np.asarray(expected), exact, where)
    elif isinstance(expected, float) and exact is not True:
        rtol = max(1e-9, TOLERANCE.get(exact, (0.0,))[0])
        assert abs(actual - expected) <= rtol * max(1.0, abs(expected)) or actual != actual and expected != expected, \
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


def assert_same_outcome(outcome: Outcome, want: Outcome, exact: "bool | np.dtype", call: str,
                        kinds: bool = True, device: bool = False) -> None:
    """The same exception type, arguments afterwards, printed text and result; with
    ``kinds`` False, the result's values only (NumPy's answer for a program on
    CuPy arrays, whose results are 0-d arrays where NumPy's are scalars).  On
    ``device`` arrays any two TypeErrors agree: CuPy's refusals (a function, keyword
    or index form it lacks) and NumPy's casting errors there are all TypeErrors."""
    raised = lambda e: f"{type(e).__name__}({e})" if e is not None else "nothing"  # noqa: E731
    both_type_errors = device and isinstance(outcome.error, TypeError) and isinstance(want.error, TypeError)
    assert type(outcome.error) is type(want.error) or both_type_errors, \
        f"{call}: compiled raised {raised(outcome.error)}, NumPy {raised(want.error)}"
    for i, (a, e) in enumerate(zip(outcome.originals, want.originals)):
        assert_values(a, e, exact, f"{call}: argument array {i} (make_args order) afterwards")
    if kinds:
        assert_same_value(outcome.args, want.args, outcome, want, exact, f"{call}: arguments afterwards")
    assert outcome.stdout == want.stdout, f"{call}: printed {outcome.stdout!r}, NumPy printed {want.stdout!r}"
    if want.error is not None:
        return
    if not kinds:
        got, expected = leaves(outcome.result), leaves(want.result)
        assert len(got) == len(expected), f"{call}: {len(got)} values in the result, NumPy {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_values(np.asarray(g), np.asarray(e), exact, f"{call}: result value {i}")
        return
    pairs = [(r, e) for r, e in zip(results_of(outcome.result), results_of(want.result))]
    for i, (r1, e1) in enumerate(pairs):  # arrays of the result that are or view one another
        for j, (r2, e2) in enumerate(pairs[:i]):
            assert (r1 is r2) == (e1 is e2), f"{call}: result[{i}] is result[{j}]: {r1 is r2}, NumPy {e1 is e2}"
            assert np.shares_memory(r1, r2) == np.shares_memory(e1, e2), \
                f"{call}: result[{i}] shares memory with result[{j}]: NumPy says {np.shares_memory(e1, e2)}"
    assert_same_value(outcome.result, want.result, outcome, want, exact, f"{call}: result")


def leaves(value: Any) -> list:
    """The values in a result, containers walked (for a comparison of values only)."""
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in leaves(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves(v)]
    return [value.array if isinstance(value, Host) else value]


def results_of(result: Any) -> list[np.ndarray]:
    if isinstance(result, tuple):
        return [r for r in result if isinstance(r, np.ndarray)]
    return [result] if isinstance(result, np.ndarray) else []


EXACT_BACKENDS = ("eager", "aot_eager")
# Where NumPy was built with AVX-512 loops for these functions it uses them on contiguous
# operands only (strided ones go to the C library), and the two can differ in the last
# bit: NumPy's own answer then depends on memory layout, which the graph does not keep
# for its intermediates.  Programs using them compare to a tolerance there.
LAYOUT_DEPENDENT = ("**", "np.power", "np.sin", "np.cos", "np.tanh", "np.exp", "np.log")
AVX512 = bool(getattr(np._core._multiarray_umath, "__cpu_features__", {}).get("AVX512_SKX"))


def bit_exact(program: Program, backend: str) -> "bool | np.dtype":
    """True where ``backend`` must match NumPy bit for bit on ``program``; else the
    least precise float dtype the program may compute in (float64 arrays can hold
    a float32 or float16 loop's results: ``np.sin(b, out=(a,))``, ``np.sin`` of bools)."""
    source = repr(program)
    if backend in EXACT_BACKENDS and not (AVX512 and any(f in source for f in LAYOUT_DEPENDENT)):
        return True
    if "float16" in source or "np.bool" in source:
        return np.dtype(np.float16)
    return np.dtype(np.float32 if "float32" in source else np.float64)


def check_program(program: Program, backend: str, double: Any = None) -> None:
    """NumPy's outcome, and the compiled function's on every call in ``program.calls``
    (the first compiles; later ones run cached entries or recompile), must agree;
    with ``double``, both on CuPy's test double's arrays.
    A failure shows the program: in hypothesis's notes, or else in the message."""
    if currently_in_test_context():
        note(repr(program))
        return compare_calls(program, backend, double)
    try:
        compare_calls(program, backend, double)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{program!r}") from None


def compare_calls(program: Program, backend: str, double: Any = None) -> None:
    """With ``double`` (CuPy's test double), on device arrays against CuPy eager; where
    CuPy eager refuses what NumPy does (a TypeError: no such function, keyword or
    index form in CuPy), compiled code may instead give NumPy's answer."""
    fn = program.function()
    device = (lambda: OnDevice(double)) if double is not None else (lambda: None)  # noqa: E731
    expected = {}
    for variant in set(program.calls):
        want = run(fn, program, variant, device())
        expected[variant] = [want] + ([run(fn, program, variant)] if isinstance(want.error, TypeError) else [])
    compiled = mc.compile(fn, backend=backend)
    exact, on_device = bit_exact(program, backend), double is not None
    for n, variant in enumerate(program.calls):
        outcome, (want, *numpy_instead) = run(compiled, program, variant, device()), expected[variant]
        try:
            assert_same_outcome(outcome, want, exact, f"call {n + 1} ({variant} arguments)", device=on_device)
        except AssertionError:
            if not numpy_instead:
                raise
            assert_same_outcome(outcome, numpy_instead[0], exact,
                                f"call {n + 1} ({variant} arguments; CuPy raised {want.error!r})", kinds=False,
                                device=on_device)


def from_source(source: str, make_args: str, calls: tuple[str, ...] = ("aliased", "aliased")) -> Program:
    """A ``Program`` written by hand: the sources of ``def f(...)`` and of ``def make_args()``
    (which returns the argument tuple and the list of bases)."""
    header, *body = textwrap.dedent(source).strip().splitlines()
    params = [p.strip() for p in header[header.index("(") + 1: header.index(")")].split(",") if p.strip()]
    lines = [line.strip() for line in body]
    returns = lines.pop()[len("return"):].strip() or "None" if lines and lines[-1].startswith("return") else None
    return Program(params, textwrap.dedent(make_args).strip() + "\n", lines, returns, False, calls)
