"""Programs that mutate, alias and graph-break, compiled on every backend vs NumPy.

The programs come from ``mutation_programs.programs()`` (see its docstring):
in-place operators, setitem with every kind of key, ``out=``, ``copyto``,
``ufunc.at``, ``fill``, ``sort``, views and writes through them, containers of
arrays, arguments that alias one another, and graph breaks between statements.
Each program runs with NumPy and through ``mc.compile(f, backend=B)`` for B in
eager, aot_eager, cpp and triton (Triton's interpreter on the CPU), at least
twice on fresh arguments, and everything the caller can observe must agree:
the result and how it aliases the arguments, every argument and base array
afterwards (bit for bit on eager and aot_eager and for integers and bools; a
tight tolerance for floats from compiled kernels), what was printed, and the
exception type when NumPy raises.

Example counts: ``MINICOMPILE_FUZZ_EXAMPLES`` (eager and aot_eager, default
300) and ``MINICOMPILE_FUZZ_COMPILED_EXAMPLES`` (cpp and triton, default 25).
``MINICOMPILE_FUZZ=1`` (``make fuzz``) explores a new seed each run instead of
a fixed one, shrinks each failure and prints the blob that replays it; every
failure notes the program's source and its ``make_args()``.  The default run
does not shrink (``MINICOMPILE_FUZZ_SHRINK=1`` does), to stay fast when failing.

``PINNED`` holds small programs, each a case the random programs found, run
on every backend: a failing one is a wrong result, never to be skipped.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import minicompile as mc
from mutation_programs import Program, check_program, from_source, programs, run

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FUZZ = os.environ.get("MINICOMPILE_FUZZ") == "1"
EXAMPLES = int(os.environ.get("MINICOMPILE_FUZZ_EXAMPLES", 300))
COMPILED_EXAMPLES = int(os.environ.get("MINICOMPILE_FUZZ_COMPILED_EXAMPLES", 25))
# Under fuzzing, a new seed every run (``--hypothesis-seed`` replays one) and the blob
# that replays each failure; otherwise the profile's (fixed under CI).
EXPLORE = dict(derandomize=False, print_blob=True, database=None) if FUZZ else {}
COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), **EXPLORE)
# Shrinking a failure runs (and, on cpp and triton, compiles) hundreds of smaller
# programs, a minute or more: the default run reports a failure as drawn (12 statements
# at most); fuzzing, or MINICOMPILE_FUZZ_SHRINK=1, shrinks it first.
SHRINK = FUZZ or os.environ.get("MINICOMPILE_FUZZ_SHRINK") == "1"
NO_SHRINK = {} if SHRINK else dict(phases=[Phase.explicit, Phase.reuse, Phase.generate])


def triton_missing() -> str | None:
    try:
        import triton  # noqa: F401
    except ImportError:
        return "triton is not installed"
    return None


def cpp_missing() -> str | None:
    try:
        from minicompile.inductor import codecache

        codecache.find_compiler()
    except Exception as e:
        return f"no C++ compiler: {e}"
    return None


needs_triton = pytest.mark.skipif(triton_missing() is not None, reason=str(triton_missing()))
needs_cpp = pytest.mark.skipif(cpp_missing() is not None, reason=str(cpp_missing()))
# Capture is what differs between Python versions: the eager backend's runs are also
# `capture` tests (run on 3.12 and 3.13 by `make test`).
BACKENDS = [pytest.param("eager", marks=pytest.mark.capture), "aot_eager", pytest.param("cpp", marks=needs_cpp),
            pytest.param("triton", marks=needs_triton)]


# ---------------------------------------------------------------------------
# Random programs
# ---------------------------------------------------------------------------


@pytest.mark.fuzz
@pytest.mark.capture
@settings(max_examples=EXAMPLES, **COMMON, **NO_SHRINK)
@given(programs())
def test_mutation_programs_eager(program: Program):
    check_program(program, "eager")


@pytest.mark.fuzz
@settings(max_examples=EXAMPLES, **COMMON, **NO_SHRINK)
@given(programs())
def test_mutation_programs_aot_eager(program: Program):
    check_program(program, "aot_eager")


@needs_cpp
@pytest.mark.fuzz
@settings(max_examples=COMPILED_EXAMPLES, **COMMON, **NO_SHRINK)
@given(programs())
def test_mutation_programs_cpp(program: Program):
    check_program(program, "cpp")


@needs_triton
@pytest.mark.fuzz
@settings(max_examples=COMPILED_EXAMPLES, **COMMON, **NO_SHRINK)
@given(programs())
def test_mutation_programs_triton(program: Program):
    check_program(program, "triton")


# On CuPy's test double (tests/fake_cupy.py): the programs on device arrays, against
# CuPy eager, through the backends that run them on the CPU.  Capture treats a device
# array its own way (no writeable flag, 0-d arrays for NumPy's scalars, its array
# module's calls, host copies refused).  Four kinds of program are left out, as known
# divergences: a NumPy array made inside the program and mixed with device arrays
# (CuPy refuses the mix); ``np.asarray`` of a device array (CuPy refuses it, the
# compiled code returns the array); an augmented assignment to one element
# (``a[0] += 1.5``: CuPy's a[0] is a 0-d view updated in place, which refuses a float
# into an integer array, where NumPy and the compiled code read, add and store a
# scalar); and ``np.broadcast_to`` (CuPy has no read-only arrays: a write through the
# broadcast view, which NumPy refuses, races on CuPy; the double, wrapping NumPy,
# refuses it where capture's device rules do not).
DEVICE_EXAMPLES = int(os.environ.get("MINICOMPILE_FUZZ_COMPILED_EXAMPLES", 25)) if FUZZ else 40
DEVICE_DIVERGENT = re.compile(r"np\.(zeros|ones|full|array|empty|arange|asarray|broadcast_to)\(|\[-?\d+(, -?\d+)*\] [-+*/]+= ")


def on_device(program: Program) -> bool:
    # (mc.Tensor arguments stay on the host: OnDevice wraps arrays only)
    return not any(DEVICE_DIVERGENT.search(line) for line in program.lines) and "mc.Tensor(" not in program.args_source


@pytest.mark.fuzz
@settings(max_examples=DEVICE_EXAMPLES, **COMMON, **NO_SHRINK)
@given(program=programs().filter(on_device))
def test_mutation_programs_cupy_double_eager(program: Program, fake_cupy):
    check_program(program, "eager", fake_cupy)


@pytest.mark.fuzz
@settings(max_examples=DEVICE_EXAMPLES, **COMMON, **NO_SHRINK)
@given(program=programs().filter(on_device))
def test_mutation_programs_cupy_double_aot_eager(program: Program, fake_cupy):
    check_program(program, "aot_eager", fake_cupy)


# ---------------------------------------------------------------------------
# Pinned programs: each found by the generator, reduced by hand
# ---------------------------------------------------------------------------

def arguments_source(*lines: str, returns: str) -> str:
    """The source of a make_args() whose body is ``lines``."""
    body = "".join(f"    {line}\n" for line in lines)
    return f"def make_args():\n{body}    return {returns}\n"


ONE = arguments_source("b0 = np.array([1.0, 2.0, 3.0, 4.0])", returns="(b0,), [b0]")
ZERO_D = arguments_source("b0 = np.array(0.75)", returns="(b0,), [b0]")
STRIDED = arguments_source("b0 = np.arange(12).reshape(3, 4)", returns="(b0[:, ::2],), [b0]")
TWICE = arguments_source("b0 = np.full(3, 2.0)", returns="(b0, b0), [b0]")
# name -> (source of f, source of make_args[, argument sets of the calls]).
# Grouped as the random programs found them; the comment says what goes wrong.
PINNED: dict[str, tuple] = {
    # A graph break at `x[k] = v` or `x op= v` after x was updated in the same graph:
    # CPython's write lands in the graph's copy of x, not in the caller's array.
    "write_after_setitem": ("def f(a, out):\n    out[:] = a\n    out[1] = -1.0\n",
                            arguments_source("b0 = np.ones((3, 2))", "b1 = np.zeros((3, 2))",
                                             returns="(b0, b1), [b0, b1]")),
    "iadd_after_setitem": ("def f(a):\n    a[0] = 5.0\n    a += 1\n", ONE),
    "iadd_after_ufunc_at": ("def f(a):\n    np.add.at(a, [0, 0], 1.0)\n    a += a\n", ONE),
    "iadd_after_a_view_was_taken": ("def f(a):\n    a += -2\n    v0 = a[None]\n    a += -2\n", ZERO_D),
    "sort_of_a_transposed_view": ("def f(a):\n    a.sort(axis=-1)\n    a.T.sort(axis=-1)\n",
                                  arguments_source("b0 = np.array([[1.25, -1.5], [0.75, -1.25], [-1.25, 0.75]])",
                                       returns="(b0,), [b0]")),
    "zero_d_view_written_twice": ("def f(a):\n    a[...] = a\n    a[...] = 1\n",
                                  arguments_source("b0 = np.array([-1, 4, 5])", returns="(b0[0, ...],), [b0]")),
    # Arguments that alias are traced as independent arrays.
    "same_array_twice": ("def f(x, y):\n    x += 1\n    return x * y\n", TWICE),
    "same_array_twice_after_a_separate_call": ("def f(x, y):\n    x += 1\n    return x * y\n", TWICE,
                                               ("separate", "aliased")),
    "same_array_twice_both_written": ("def f(a, b):\n    a[0] = 1.0\n    b[0] = 2.0\n", TWICE),
    "same_strided_array_twice": ("def f(a, b):\n    a[0] = 7\n    return b.ravel()\n",
                                 arguments_source("b0 = np.arange(12).reshape(2, 6)[:, ::2]",
                                                  returns="(b0, b0), [b0]")),
    "container_shares_an_argument": ("def f(a, dct):\n    a[:] = 0.0\n    return dct['w'] + 1\n",
                                     arguments_source("b0 = np.arange(3.0)", returns="(b0, {'w': b0}), [b0]")),
    "attribute_shares_an_argument": ("def f(a, obj):\n    obj.w *= 3\n    return a + 0\n",
                                     arguments_source("b0 = np.ones(3)", returns="(b0, Box(w=b0)), [b0]")),
    "overlapping_views": ("def f(a, b):\n    a += 1\n    return b.copy()\n",
                          arguments_source("b0 = np.arange(5.0)", returns="(b0[:-1], b0[1:]), [b0]")),
    "view_and_its_base": ("def f(a, b):\n    b[0] = 9.0\n    a *= 2\n",
                          arguments_source("b0 = np.arange(6.0)", returns="(b0, b0[::2]), [b0]")),
    "transposed_view_and_base": ("def f(a, t):\n    a[0] = -1.0\n    return t.sum(axis=0)\n",
                                 arguments_source("b0 = np.arange(9.0).reshape(3, 3)", returns="(b0, b0.T), [b0]")),
    # A view taken after an update is a view of the graph's copy: returned, it is
    # no view of the argument; written through, the write is lost.
    "return_view_after_write": ("def f(a):\n    a[0] = 5.0\n    return a[1:]\n", ONE),
    "return_zero_d_view_after_write": ("def f(a):\n    a[...] = -0.5\n    return a[...]\n", ZERO_D),
    "return_argument_and_its_view": ("def f(a):\n    a *= 2\n    return a, a[1:]\n", ONE),
    "write_through_view_taken_after_update": ("def f(a):\n    a += 1\n    v0 = a[1:]\n    v0.fill(2)\n", ONE),
    # An array updated, then its container slot rebound: the update is written
    # through the path (L['dct']['g']) into the new array.
    "dict_member_written_then_rebound": ("def f(dct):\n    dct['g'][:] = -1.0\n    dct['g'] = np.zeros(4)\n",
                                         arguments_source("b0 = np.arange(4.0)", returns="({'g': b0},), [b0]")),
    "list_member_updated_then_rebound": ("def f(lst):\n    np.add.at(lst[0], 0, 1)\n    lst[0] = np.zeros(3)\n",
                                         arguments_source("b0 = np.arange(4)", returns="([b0],), [b0]")),
    # An array stored into an attribute, then updated in place: the attribute gets the old value.
    "attribute_rebound_then_sorted": ("def f(obj, b):\n    obj.w = b * 2\n    obj.w.sort()\n",
                                      arguments_source("b0 = np.array(0.25)", "b1 = np.array([3.0, -1.0, 2.0])",
                                           returns="(Box(w=b0), b1), [b0, b1]")),
    "attribute_rebound_then_setitem": ("def f(obj):\n    obj.w = obj.w * 2\n    obj.w[0] = 9.0\n",
                                       arguments_source("b0 = np.arange(3.0)", returns="(Box(w=b0),), [b0]")),
    # Copies that are taken for views, and the reverse.
    "flatten_is_a_copy": ("def f(a):\n    v = a.flatten()\n    v[0] = 100.0\n", ONE),
    "flatten_then_base_written": ("def f(a):\n    v = a.flatten()\n    a[1:] += 1.5\n    return v\n", ONE),
    "asarray_is_the_array_itself": ("def f(a):\n    v = np.asarray(a)\n    v[0] = 100.0\n", ONE),
    "ravel_of_a_strided_array_is_a_copy": ("def f(a):\n    v = a.ravel()\n    v[0] = 100\n", STRIDED),
    "ravel_of_a_strided_array_after_update": ("def f(a):\n    a += 1\n    return a.ravel()\n", STRIDED),
    # ufunc.at's index list reaches the compiled kernels as a tuple: [i, j] indexes two axes.
    "ufunc_at_with_a_list_of_indices": ("def f(a):\n    np.add.at(a, [0, 0], 1.0)\n", ONE),
    "ufunc_at_rows_of_a_matrix": ("def f(a):\n    np.subtract.at(a, [-1, -1], 1)\n",
                                  arguments_source("b0 = np.zeros((2, 3), dtype=np.int64)", returns="(b0,), [b0]")),
    # The inductor's masked store through an expand_dims view of a strided argument.
    "mask_setitem_through_expand_dims_of_strided": (
        "def f(a):\n    v = np.expand_dims(a, 0)\n    v[v > 0] = -1\n",
        arguments_source("b0 = np.array([-3.0, 1.25, 1.5, -1.5, 2.0, 0.5])", returns="(b0[::2],), [b0]")),
    # Guards on a dict's keys spell each key as source: an object key is no Python literal.
    "dict_with_an_object_key": ("def f(x, seen):\n    seen['n'] = x * len(seen)\n",
                                arguments_source("b0 = np.ones(2)", returns="(b0, {object(): 1}), [b0]")),
    # The inductor's index arithmetic for a reversed view of a reshape view refuses to compile.
    "copyto_from_a_reversed_reshape_view": (
        "def f(a):\n    v0 = a.reshape(-1)\n    np.copyto(v0, v0[::-1], where=v0 > 0)\n",
        arguments_source("b0 = np.array([[-3, 1, 0, 0], [0, -4, 2, -3]], dtype=np.int32)", returns="(b0,), [b0]")),
    # A 0-d array the graph made, live across a break: a backend hands back a NumPy
    # scalar for a 0-d result, which the resumed code could not write into.
    "zero_d_copy_written_after_a_break": ("def f(a):\n    v0 = a.copy()\n    v0 += 1.5\n    print('p')\n"
                                          "    v0[...] = 1.5\n    return v0\n", ZERO_D),
    # The loop IR folded 3*((x0+1)//3) + (x0+1)%3 (a slice of a reshape, read through the
    # reshape back) to x0, dropping the +1: the kernel read one element early.
    "slice_of_a_reshape_written": ("def f(a):\n    v0 = a.reshape(-1)\n    v1 = a[1:]\n    v0[1:] += 1.5\n",
                                   arguments_source("b0 = np.arange(9.0).reshape(3, 3)", returns="(b0[:-1],), [b0]")),
    # out= of a shape the inputs do not broadcast to: NumPy refuses; copyto accepted it.
    "ufunc_into_an_out_of_another_shape": ("def f(a):\n    v1 = a[1:]\n    np.negative(v1, out=(v1[0],))\n",
                                           arguments_source("b0 = np.ones((2, 3))", returns="(b0,), [b0]")),
    # Triton: a ufunc of a Python constant written into an array.
    "ufunc_of_a_constant_into_out": ("def f(a):\n    v = a.astype(np.float32)\n    np.square(True, out=(v,))\n"
                                     "    return v\n",
                                     arguments_source("b0 = np.array([True, False])", returns="(b0,), [b0]")),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_program(name: str, backend: str):
    source, make_args, *calls = PINNED[name]
    check_program(from_source(source, make_args, calls=calls[0] if calls else ("aliased", "aliased")), backend)


INTS = arguments_source("b0 = np.array([4, 2, 0, -3])", returns="(b0,), [b0]")
# Found by the programs on CuPy's test double: the compiled code followed NumPy where
# CuPy eager does otherwise.
PINNED_ON_DEVICE: dict[str, tuple] = {
    # CuPy's sum is a 0-d array: a NaN stored from it into integers is cast, never raises.
    "nan_from_a_sum_into_integers": ("def f(a):\n    v0 = a + 1.5\n    a[1:] = v0.sum() * 0 + np.nan\n", INTS),
    # CuPy's ufunc.at takes index arrays: a list is CuPy's TypeError.
    "ufunc_at_with_a_list": ("def f(a):\n    a += 1\n    np.add.at(a, [0, 0, 1], 1)\n", INTS),
    # squeeze with nothing to squeeze returns the array itself, in CuPy as in NumPy.
    "squeeze_returns_the_array": ("def f(a):\n    v0 = np.squeeze(a)\n    a += 1\n    return a, v0\n", INTS),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", sorted(PINNED_ON_DEVICE))
def test_pinned_program_on_device(name: str, backend: str, fake_cupy):
    source, make_args = PINNED_ON_DEVICE[name]
    program = from_source(source, make_args)
    check_program(program, backend, fake_cupy)
    if name == "ufunc_at_with_a_list":  # CuPy's error, not NumPy's answer
        (a,), _ = program.make_args()
        with pytest.raises(TypeError):
            mc.compile(program.function(), backend=backend)(fake_cupy.ndarray(a))


# ---------------------------------------------------------------------------
# The generator itself: fresh, identically aliased arguments; what it draws
# ---------------------------------------------------------------------------


def test_make_args_rebuilds_the_aliasing():
    program = from_source("def f(a, b, lst):\n    a += 1\n", """
        def make_args():
            b0 = np.arange(6.0)
            return (b0[:4], b0[2:], [b0, b0[::-1]]), [b0]
        """)
    (a1, b1, lst1), [base1] = program.make_args()
    (a2, b2, lst2), [base2] = program.make_args()
    assert a1.base is base1 and lst1[0] is base1 and a2.base is base2
    assert not np.shares_memory(base1, base2)  # fresh every time
    assert np.shares_memory(a2, b2) and np.shares_memory(lst2[1], a2)
    (a3, b3, _), bases = program.make_args("separate")
    assert bases == [] and not np.shares_memory(a3, b3)


def test_the_generator_draws_every_feature():
    """Over 600 programs, every kind of statement, argument and return appears
    (a generator that silently stops drawing one proves nothing)."""
    drawn: list[Program] = []

    @settings(max_examples=600, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(programs())
    def collect(program):
        drawn.append(program)

    collect()
    text = "\n".join(p.source + p.args_source for p in drawn)
    for feature in ["+=", "*=", "] = ", " > 0] = ", "out=", "np.copyto(", ".at(", ".fill(", ".sort(",
                    "[::-1]", ".T", "np.swapaxes(", ".reshape(-1)", "np.expand_dims(", "np.squeeze(",
                    "np.flip(", "np.broadcast_to(", "[None]", "...", ".flatten()", "np.asarray(", "np.array(",
                    "is np.True_", "1.0 / ",
                    "print(", "float(", ".item()", "bump(", "peek(", "twice(", "lst", "dct[", "obj.",
                    "Box(", "[0, 0, -1]", "dtype=np.bool", "dtype=np.int32", "dtype=np.float32",
                    "return None", "mc.Tensor(", "r0 = "]:
        assert feature in text, f"no program draws {feature!r}"
    assert any(p.raises for p in drawn) and not all(p.raises for p in drawn)
    assert any("separate" in p.calls for p in drawn) and any("raising" in p.calls for p in drawn)
    assert any(p.returns is None for p in drawn) and any(p.returns and "," in p.returns for p in drawn)
    returned = [p.args_source.splitlines()[-1] for p in drawn]
    for aliasing in [r"[(, ](b\d+), \1[,)]",  # the same array twice
                     r"(b\d+)\[:-1\], \1\[1:\]",  # overlapping views
                     r"(b\d+), \1(\[|\.T)", r"(b\d+)(\[::2\]|\.T), \1[,)]",  # a view and its base
                     r"(b\d+)\[:2\], \1\[2:\]",  # disjoint views
                     r"\[0, \.\.\.\]",  # a 0-d view
                     r"(b\d+), .*mc\.Tensor\(\1\)",  # an array and a tensor over it
                     r"[\[=:] ?mc\.Tensor\("]:  # a tensor in a container
        assert any(re.search(aliasing, line) for line in returned), f"no arguments alias as {aliasing}"
    assert 3 <= min(len(p.lines) for p in drawn) and max(len(p.lines) for p in drawn) <= 12


def test_each_draw_is_plain_numpy_when_not_raising():
    """A drawn program that is not meant to raise runs with NumPy without error."""

    @settings(max_examples=60, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(programs(), st.sampled_from(["aliased", "separate"]))
    def runs(program, variant):
        outcome = run(program.function(), program, variant)
        if not program.raises and variant == "aliased":
            assert outcome.error is None, program

    runs()
