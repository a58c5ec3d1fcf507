"""Silent wrong results found by using minicompile as a new user would, each pinned on every backend.

Each of these once gave an answer that differed from eager NumPy without any
error: a lost write through a view, a stale read of an argument passed twice,
appends lost under threads, a generator or coroutine that stopped being one,
a zero gradient for ``np.mod``, an internal error for ``np.argmax`` of a
0-d array, and an mc.Tensor that read stale values after a write to the array
it wraps.  Each runs here on eager, aot_eager, cpp and triton (Triton's
interpreter for NumPy arrays), comparing the result and every argument.
The classes they belong to are covered more widely by the generators in
tests/dynamo/test_mutation_programs.py and the corpora beside it.
"""
from __future__ import annotations

import asyncio
import inspect
import threading
import warnings

import numpy as np
import pytest

import minicompile as mc
from minicompile.testing.gradients import central_differences

try:
    import triton  # noqa: F401
    HAVE_TRITON = True
except ImportError:
    HAVE_TRITON = False

BACKENDS = ["eager", "aot_eager", "cpp", pytest.param("triton", marks=pytest.mark.skipif(
    not HAVE_TRITON, reason="triton is not installed"))]
pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def write_then_write_through_a_view(a, out):
    out[:] = a
    out[1] = -1.0
    return out.sum()


def matmul_then_column_write(a, b, out):
    out[...] = a @ b
    out[:, 0] = 0.0


def test_a_write_through_a_view_after_a_write_is_kept(backend):
    out = np.zeros((3, 4))
    assert mc.compile(write_then_write_through_a_view, backend=backend)(np.ones((3, 4)), out) == 4.0
    assert out[1].tolist() == [-1.0] * 4 and out[0].tolist() == [1.0] * 4
    out = np.zeros((3, 4))
    mc.compile(matmul_then_column_write, backend=backend)(np.ones((3, 2)), np.ones((2, 4)), out)
    assert (out[:, 0] == 0).all() and (out[:, 1:] == 2).all()


def add_then_multiply(x, y):
    x += 1
    return x * y


def set_then_add(x, y):
    x[0] = 100
    return x + y


def add_out_then_add(x, y):
    np.add(x, 1, out=x)
    return x + y


@pytest.mark.parametrize("fn, expected", [(add_then_multiply, [9.0] * 3), (set_then_add, [200.0, 4.0, 4.0]),
                                          (add_out_then_add, [6.0] * 3)])
def test_an_argument_passed_twice_is_read_after_its_update(backend, fn, expected):
    compiled = mc.compile(fn, backend=backend)
    for _ in range(2):
        a = np.full(3, 2.0)
        assert compiled(a, a).tolist() == expected


def test_side_effects_under_threads_are_all_kept(backend):
    log: list = []

    def record(x, t):
        log.append(t)
        return x * 2

    compiled = mc.compile(record, backend=backend)
    compiled(np.ones(5), -1)  # compile once, before the threads
    log.clear()

    def work(t: int) -> None:
        for _ in range(200):
            compiled(np.ones(5), t)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(log) == 800 and all(log.count(t) == 200 for t in range(4))


def generate(x):
    for i in range(3):
        yield x * i


async def scale(x):
    return x * 2


def test_generator_and_coroutine_functions_keep_their_kind(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = mc.compile(generate, backend=backend)(np.ones(2))
        assert inspect.isgenerator(g) and [v.tolist() for v in g] == [[0, 0], [1, 1], [2, 2]]
        c = mc.compile(scale, backend=backend)(np.ones(2))
        assert inspect.iscoroutine(c) and asyncio.run(c).tolist() == [2.0, 2.0]


def test_mod_has_its_gradient(backend):
    def loss(x, y):
        return np.sum(np.mod(x, y) + x + y)

    x = mc.Tensor(np.array([0.5, 3.0, -2.5]), requires_grad=True)
    y = mc.Tensor(np.array([2.0, 1.25, 2.0]), requires_grad=True)
    mc.compile(loss, backend=backend)(x, y).backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0, 2.0])
    np.testing.assert_allclose(y.grad, 1.0 - np.floor(x.data / y.data))  # d/dy = -floor(x / y)


def test_argmax_of_a_0d_array_is_0(backend):
    result = mc.compile(lambda x: np.argmax(x, axis=-1), backend=backend)(np.array(1.5, np.float32))
    assert type(result) is np.int64 and result == 0


def write_a_mean_into_ints(x, y):
    x[..., :1] = y.mean()
    return x.T + 1


@pytest.mark.parametrize("values, error", [([np.nan, 1.0], ValueError), ([np.inf, 1.0], OverflowError),
                                           ([2.0, 1.0], None)])
def test_a_computed_nan_written_into_ints_raises_as_numpys_scalar_does(backend, values, error):
    """``y.mean()`` is a NumPy scalar eagerly, and NumPy converts a scalar written
    into an integer array strictly: NaN and inf raise.  A compiled graph held the
    mean as a 0-d array, which NumPy casts silently (to -2**63): a wrong value."""
    y = np.array(values)
    expected_x, x = np.zeros((2, 4), np.int64), np.zeros((2, 4), np.int64)
    if error is not None:
        with pytest.raises(error):
            write_a_mean_into_ints(expected_x, y)
        with warnings.catch_warnings(), pytest.raises(error):
            warnings.simplefilter("ignore")  # the compiled call's fallback to Python says so
            mc.compile(write_a_mean_into_ints, backend=backend)(x, y)
    else:
        expected = write_a_mean_into_ints(expected_x, y)
        np.testing.assert_array_equal(mc.compile(write_a_mean_into_ints, backend=backend)(x, y), expected)
    np.testing.assert_array_equal(x, expected_x)


def reshape_across_a_break(a, b):
    v1 = a[::2] * 2 + b
    v2 = v1.reshape(-1)  # a view of v1: a * 2 of a strided a is contiguous
    print("between two graphs")
    v1.fill(0.5)
    return v2[1:]


def reshape_of_mixed_orders(a, c):
    v1 = a[:2, :3] + c.T  # C and F operands: NumPy chose C, so the reshape is a view
    v2 = v1.reshape(-1)
    print("between two graphs")
    v1.fill(0.5)
    return v2[1:4], v1, v1.reshape(-1)


def test_a_reshape_that_numpy_made_a_view_stays_one_across_a_break(backend, capsys):
    """A result's layout was unknown unless its operands were contiguous, so its
    reshape was taken for a copy: after a graph break, writes to the array no
    longer showed in the reshape (it returned the old values)."""
    a, b, c = np.arange(6.0) - 2, np.array([1.0, 2.0, 3.0]), np.arange(6.0).reshape(3, 2)
    for fn, args in ((reshape_across_a_break, (a, b)), (reshape_of_mixed_orders, (a.reshape(2, 3), c))):
        got, want = mc.compile(fn, backend=backend)(*args), fn(*args)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        if len(want) == 3:
            assert np.shares_memory(got[1], got[2]) is np.shares_memory(want[1], want[2]) is True


def reshape_of_a_fortran_result_after_a_break(a, b):
    v0 = b * 2  # b is Fortran-ordered, so is v0 (NumPy's order="K")
    print("between two graphs")
    v1 = v0.reshape(-1)  # a copy in NumPy: v0 is not C-contiguous
    v1 += 1.5
    b += v0
    return a, v0


def test_a_result_keeps_numpys_layout_across_a_break(backend, capsys):
    """Found by fuzzing the C++ and Triton backends: a compiled kernel handed back
    ``b * 2`` C-contiguous where NumPy's is Fortran-ordered, so after the graph
    break ``v0.reshape(-1)`` was a view, ``v1 += 1.5`` changed ``v0``, and ``b``
    came out 1.5 too large.  Results now come back in NumPy's layout."""
    def args():
        return np.arange(3.0), np.asfortranarray(np.arange(9.0).reshape(3, 3) - 4)[:-1]
    got_args, want_args = args(), args()
    got, want = mc.compile(reshape_of_a_fortran_result_after_a_break, backend=backend)(*got_args), \
        reshape_of_a_fortran_result_after_a_break(*want_args)
    for g, w in zip(got_args + got, want_args + want):
        np.testing.assert_array_equal(g, w)
        assert (g.flags.c_contiguous, g.flags.f_contiguous) == (w.flags.c_contiguous, w.flags.f_contiguous)
    assert got[1].strides == want[1].strides and got[1].base is None


def write_nan_into_a_dead_copy(a, c):
    v0 = a * 2
    v0[1:] = c.sum() * 0 + np.nan  # nothing reads v0: NumPy raises all the same


def fill_with_a_computed_inf(a, c):
    a.fill(c.sum() * 0 + np.inf)
    return a


@pytest.mark.parametrize("fn, error", [(write_nan_into_a_dead_copy, ValueError),
                                       (fill_with_a_computed_inf, OverflowError)])
def test_a_value_numpy_refuses_to_store_raises_even_if_the_write_is_dead(backend, fn, error):
    """The strict conversion of a computed float scalar is a check in the graph, kept
    by dead-code elimination (it was dropped with the write nobody read)."""
    a, c = np.array([4, 2, 0], np.int64), np.array(2.25)
    with pytest.raises(error):
        fn(a.copy(), c)
    with warnings.catch_warnings(), pytest.raises(error):
        warnings.simplefilter("ignore")
        mc.compile(fn, backend=backend)(a, c)
    np.testing.assert_array_equal(a, [4, 2, 0])


@pytest.mark.parametrize("dtype, value", [(np.int64, -2.0 ** 63), (np.int32, -2.0 ** 31 - 0.5), (np.int8, 127.9),
                                          (np.uint8, -1.0), (np.uint8, np.nan), (np.int8, 128.0)])
def test_the_conversion_check_accepts_what_numpy_accepts(backend, dtype, value):
    """At the integer's edges the check agrees with NumPy: int64's -2**63 fits, a
    float into an unsigned array is cast without a check (NumPy's own rule)."""
    def store(a, c):
        a[0] = c.sum() * 1.0
        return a

    c = np.array([value])
    try:
        expected = store(np.zeros(2, dtype), c)
    except OverflowError:
        with warnings.catch_warnings(), pytest.raises(OverflowError):
            warnings.simplefilter("ignore")
            mc.compile(store, backend=backend)(np.zeros(2, dtype), c)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's own cast warning, both sides
        np.testing.assert_array_equal(mc.compile(store, backend=backend)(np.zeros(2, dtype), c), expected)


@pytest.mark.parametrize("key", ["0", "1:", "...", "None", "[0, 1]", "np.array([-1, 0])", "[True, False, True]"])
def test_a_computed_nan_is_refused_only_where_numpy_refuses_it(backend, key):
    """Basic indexing converts the value as int() does (NaN raises); an integer or
    boolean array key casts it as an array (NaN becomes -2**63, no error)."""
    namespace = {"np": np}
    exec(f"def store(a, c):\n    a[{key}] = c.sum() * 0 + np.nan\n    return a\n", namespace)
    store, c = namespace["store"], np.array([1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's cast warning; the compiled call's fallback
        try:
            expected = store(np.zeros(3, np.int64), c)
        except ValueError:
            with pytest.raises(ValueError):
                mc.compile(store, backend=backend)(np.zeros(3, np.int64), c)
            return
        np.testing.assert_array_equal(mc.compile(store, backend=backend)(np.zeros(3, np.int64), c), expected)


def power_by_a_dead_negative_exponent(a, b):
    v0 = a * 2
    v0 **= b  # nothing reads v0: NumPy refuses the negative integer power all the same


def power_by_a_constant_negative_exponent(a, b):
    v0 = a ** -1


def power_of_an_empty_base(a, b):
    v = a[:0] ** b  # no element is computed: NumPy raises nothing
    return v


def element_takes_a_sequence(a, b):
    v4 = b * 2
    v4[0] += a[:1]  # one element takes no array, not even one of size 1


@pytest.mark.parametrize("fn", [power_by_a_dead_negative_exponent, power_by_a_constant_negative_exponent,
                                element_takes_a_sequence])
def test_errors_numpy_raises_are_raised_even_if_nothing_reads_the_value(backend, fn):
    """Found by fuzzing: integer powers by a negative exponent raised nowhere when the
    power was dead (a ``check`` in the graph now; a constant exponent is the meta
    rule's), and a size-1 array stored into one element raised only on the
    backends that ran NumPy's setitem."""
    make = lambda: (np.array([1, -5, -3]), np.array([1, -1, 2]))  # noqa: E731
    with pytest.raises(ValueError) as numpy_error:
        fn(*make())
    args = make()
    with warnings.catch_warnings(), pytest.raises(ValueError, match=str(numpy_error.value).rstrip(".")):
        warnings.simplefilter("ignore")
        mc.compile(fn, backend=backend)(*args)
    np.testing.assert_array_equal(args[0], make()[0])


def test_an_empty_power_raises_nothing(backend):
    a, b = np.array([1, -5, -3]), np.array(-2)
    got = mc.compile(power_of_an_empty_base, backend=backend)(a, b)
    assert got.shape == (0,) and got.dtype == power_of_an_empty_base(a, b).dtype


def sine_of_a_filled_array(x):
    x[...] = 1.5
    return np.sin(x), x * 0 - 0.0


def test_constants_keep_their_dtype_and_sign(backend):
    """Found by fuzzing the Triton backend: ``x[...] = 1.5; np.sin(x)`` computed the
    sine of a bare constant, which Triton takes as float32; a stored ``-0.0``
    was typed from a Python zero, which some Triton versions make +0.0."""
    for value in (1.5, -0.0):
        def f(x, value=value):
            x.fill(value)
            return np.sin(x), x
        expected, got = f(np.ones(3)), mc.compile(f, backend=backend)(np.ones(3))
        for e, g in zip(expected, got):
            assert g.tobytes() == e.tobytes(), (value, g, e)
    got = mc.compile(sine_of_a_filled_array, backend=backend)(np.ones(3))
    assert [g.tobytes() for g in got] == [e.tobytes() for e in sine_of_a_filled_array(np.ones(3))]
    for fn in (negative_zero_into_a_slice, times_negative_zero):
        got, want = np.array([2.25, 0.75, 0.0]), np.array([2.25, 0.75, 0.0])
        mc.compile(fn, backend=backend)(got), fn(want)
        assert got.tobytes() == want.tobytes(), (fn.__name__, got, want)


def negate_and_tanh(x):
    return -x, np.tanh(x), -x.astype(np.float32), np.tanh(x.astype(np.float32))


def test_negation_and_tanh_keep_the_sign_of_zero(backend):
    """Found by fuzzing on Triton 3.6, which negates as ``0 - x``: ``-a`` of +0.0
    was +0.0; Triton's tanh of -0.0 was +0.0 on every version."""
    x = np.array([0.0, -0.0, 1e-3, -2.0, np.inf])
    got, want = mc.compile(negate_and_tanh, backend=backend)(x), negate_and_tanh(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and (np.signbit(g) == np.signbit(w)).all(), (g, w)
        np.testing.assert_allclose(g, w, rtol=1e-6)


LAID_OUT_BY_NUMPY = {  # each result's layout is NumPy's own choice
    "ufunc_of_a_transpose": lambda b: b.T * 2,  # Fortran-ordered
    "copy_method_of_a_transpose": lambda b: np.where(b.T > 0, b.T.copy(), 1.5),  # C: copy() is order="C"
    "astype_of_a_broadcast": lambda b: np.broadcast_to(b[0], (2, 3)).astype(np.float32) + 0,
    "fancy_index_of_columns": lambda b: b[:, [0, 0]] * 1,  # strides (8, 16)
}


def returned_twice(b):
    v0 = b.T * 2
    return v0, v0


@pytest.mark.parametrize("name", sorted(LAID_OUT_BY_NUMPY))
def test_a_returned_result_has_numpys_layout(backend, name):
    """Found by fuzzing once results' contiguity was compared: each came back
    C-contiguous from compiled kernels (the fancy index also from eager)."""
    fn = LAID_OUT_BY_NUMPY[name]
    b = np.arange(6.0).reshape(2, 3)
    got, want = mc.compile(fn, backend=backend)(b), fn(b)
    np.testing.assert_array_equal(got, want)
    assert got.strides == want.strides
    first, second = mc.compile(returned_twice, backend=backend)(b)
    assert first is second and first.strides == returned_twice(b)[0].strides


def negative_zero_into_a_slice(a):  # a select of a bare -0.0 in the kernel
    a[1:][1:] = -0.0


def times_negative_zero(a):
    np.multiply(a, -0.0, out=(a,))
    a[1:] += 1.5


def add_rows_at(out, idx, b):
    np.add.at(out, idx, b)
    return out


def test_add_at_with_a_2d_index_and_a_shorter_b_adds_every_update(backend):
    """NumPy 2.4's own ``np.add.at(out, idx2d, b1d)`` reads past ``b`` (garbage in
    ``out``); every backend adds the documented updates, ``b`` broadcast to the
    index array's shape, as an explicit loop does."""
    idx, b = np.array([[0, 2, 2], [1, 0, 2]]), np.array([1, 10, 100])
    expected = np.zeros(3, np.int64)
    for i, v in zip(idx.ravel(), np.broadcast_to(b, idx.shape).ravel()):
        expected[i] += v
    got = mc.compile(add_rows_at, backend=backend)(np.zeros(3, np.int64), idx, b)
    np.testing.assert_array_equal(got, expected)


def zeros_at_the_extremes(a):
    c = np.full((4, 2), -0.0)
    return (np.maximum(-0.0, a), np.minimum(0.0, -a), np.maximum(0.5 * np.zeros(3), a),
            c.sum(), c.mean(axis=0), c[::2].sum(axis=1), c.astype(np.float32).sum())


def test_ties_of_signed_zeros_and_sums_of_negative_zeros_follow_numpy(backend):
    """Found by fuzzing the Triton backend: ``np.maximum(-0.0, a)`` kept the
    constant on a tie (NumPy's float64 loop keeps the second operand), a row of
    negative zeros summed to -0.0 (NumPy's sum starts from +0.0), and a maximum
    of a constant-only expression did not compile in the interpreter."""
    a = np.array([0.0, -0.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to Python
        got = mc.compile(zeros_at_the_extremes, backend=backend)(a)
    for g, w in zip(got, zeros_at_the_extremes(a)):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (g, w)


def row_passes_over_negative_zeros(x):
    s = x.sum(axis=-1, keepdims=True)
    return s, (x - s).sum(axis=-1, keepdims=True), x.mean(axis=-1)


def test_rows_of_negative_zeros_sum_to_positive_zero_in_fused_row_passes(backend):
    """Rows of -0.0 summed in a kernel of several passes over the same rows (the Triton
    backend's row groups, softmax's form) gave -0.0: the persistent kernel's fix for NumPy's
    sum starting from +0.0 was not shared by the row groups."""
    x = np.full((4, 64), -0.0, np.float32)
    got = mc.compile(row_passes_over_negative_zeros, backend=backend)(x)
    for g, w in zip(got, row_passes_over_negative_zeros(x)):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (g, w)


def stencil_written_in_place(u, w):
    u = u * 1.0
    u[1:-1] = 0.5 * (u[:-2] + u[2:]) * w[1:-1]
    return (u * np.arange(1.0, 7.0)).sum()


def view_taken_before_a_write(u, w):
    u = u * w
    v = u[1:]          # a view: it sees the write below, as in NumPy
    u[0:3] = u[0:3] * 2.0
    return (v * v).sum() + u.sum()


@pytest.mark.parametrize("fn", [stencil_written_in_place, view_taken_before_a_write])
def test_gradient_of_a_tensor_written_in_place_from_its_own_values(backend, fn):
    """``u[1:-1] = 0.5 * (u[:-2] + u[2:])`` on an mc.Tensor gave a zero gradient for the interior:
    the reads of u before the write were recorded on the tape as reads of the tensor, which the
    write then made the new value, so the gradient went round a cycle.  Each tape node now
    reads the value it was given, and a live view of a written tensor is taken again."""
    rng = np.random.default_rng(0)
    u, w = rng.standard_normal(6), rng.standard_normal(6)
    U, W = mc.Tensor(u.copy(), requires_grad=True), mc.Tensor(w.copy(), requires_grad=True)
    loss = mc.compile(fn, backend=backend)(U, W)
    np.testing.assert_allclose(float(loss), fn(u.copy(), w.copy()), rtol=1e-12)
    loss.backward()
    for got, which in ((U.grad, 0), (W.grad, 1)):
        np.testing.assert_allclose(got, central_differences(fn, [u, w], which), rtol=1e-6, atol=1e-8)


class Holder:
    """An object a program stores a tensor on."""


HELD: list = []


def write_through_a_dict(u, w):
    u = u * 2.0
    d = {"a": u}
    d["a"] *= 2.0
    return (u ** 2).sum()


def write_through_an_attribute(u, w):
    u = u * 2.0
    box = Holder()
    box.u = u
    box.u += w
    return (u ** 2).sum()


def write_through_a_global_list(u, w):
    HELD.clear()
    u = u * 2.0
    HELD.append(u)
    HELD[-1] *= 2.0
    return (u ** 2).sum()


@pytest.mark.parametrize("fn", [write_through_a_dict, write_through_an_attribute, write_through_a_global_list])
def test_a_tensor_written_through_a_dict_an_attribute_or_a_global_is_written(backend, fn):
    """``u = x * 2; d = {"a": u}; d["a"] *= 2`` on an mc.Tensor lost the write (56 for 224):
    the trace counted holders in lists and tuples of its frames only, so it took the write
    for one nobody else sees and kept the new value under the dict's name alone."""
    u, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    U, W = mc.Tensor(u.copy(), requires_grad=True), mc.Tensor(w.copy(), requires_grad=True)
    loss = mc.compile(fn, backend=backend)(U, W)
    np.testing.assert_allclose(float(loss), fn(u.copy(), w.copy()), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(U.grad, central_differences(fn, [u, w], 0), rtol=1e-6, atol=1e-8)


def write_through_a_view_of_a_tensor(x):
    u = x * 2.0
    v = u[1:4]
    v *= 3.0
    return (u * u).sum()


def test_a_write_through_a_view_of_a_tensor_is_refused_as_the_tape_refuses_it(backend):
    """``v = u[1:4]; v *= 3`` on an mc.Tensor: the tape refuses it (its write would not reach
    u), but compiled code kept ``v * 3`` as v's new value and returned 220 for NumPy's 1148."""
    x = mc.Tensor(np.arange(1.0, 6.0), requires_grad=True)
    with pytest.raises(TypeError, match="view"):
        write_through_a_view_of_a_tensor(x)
    with pytest.raises(TypeError, match="view"):
        mc.compile(write_through_a_view_of_a_tensor, backend=backend)(x)


NAN_AT = np.zeros((3, 2, 3), bool)
NAN_AT[0, 1, 2] = NAN_AT[2, 0, 1] = True
PROD_FORMS = {
    "axis=1": lambda x: np.prod(x, axis=1),
    "axis=None": lambda x: np.prod(x),
    "axis=(0, 2)": lambda x: np.prod(x, axis=(0, 2)),
    "axis=-1, keepdims": lambda x: np.prod(x, axis=-1, keepdims=True),
    "method, axis=0": lambda x: x.prod(0),
    "nanprod, axis=2": lambda x: np.nanprod(np.where(NAN_AT, np.nan, x), axis=2),
}


@pytest.mark.parametrize("form", PROD_FORMS)
def test_prods_gradient_is_finite_and_right_at_zeros(backend, form):
    """``np.prod(x, axis=1).sum()`` at x=[[2, 0, 3], [1, 2, 3]] gave the gradient
    [[0, nan, 0], [6, 3, 2]] (not [[0, 6, 0], ...]) on every backend and on the tape:
    the rule was ``g * prod / x``, 0 / 0 at a zero.  Now the product of the other
    elements of each group, without a division.  Groups with one zero, two zeros,
    all zeros, and none; the weights make every group's incoming gradient differ."""
    x = np.array([[[2.0, 0.0, 3.0], [1.0, 2.0, -3.0]],
                  [[0.0, 0.0, 1.5], [0.0, 0.0, 0.0]],
                  [[-1.0, 0.5, 0.0], [4.0, 0.0, 2.0]]])
    fn = PROD_FORMS[form]
    w = np.arange(1.0, 1.0 + np.size(fn(x))).reshape(np.shape(fn(x)))

    def loss(x):
        return np.sum(fn(x) * w)

    expected = central_differences(loss, [x], 0)
    for run in (loss, mc.compile(loss, backend=backend)):
        t = mc.Tensor(x.copy(), requires_grad=True)
        run(t).backward()
        assert np.isfinite(t.grad).all()
        np.testing.assert_allclose(t.grad, expected, rtol=1e-6, atol=1e-6)


def write_then_read_a_tensor(t, y):
    y += 1                     # y is t's memory (or a copy of it)
    return (t * 2).sum()


def read_write_read_a_tensor(t, y):
    s = (t * t).sum()
    y[0] = 100.0
    return s + np.exp(t).sum()


def write_through_data_then_read(t, y):
    x = t.data                 # t's own memory, written below
    x += y
    return t * 2


def tensors_over_views_in_a_list(ts, y):
    y[1:] *= 3.0               # y is the base of both tensors' data (or a copy of it)
    return ts[0] * ts[1] + y[:3]


def _wrapped(requires_grad: bool = False, view: bool = False):
    def make(alias):
        a = np.arange(1.0, 5.0)
        y = a if alias else a.copy()
        return (mc.Tensor(a[1:] if view else a, requires_grad=requires_grad), y)
    return make


def _in_a_list(alias):
    a = np.arange(1.0, 5.0)
    y = a if alias else a.copy()
    return ([mc.Tensor(a[:3]), mc.Tensor(a[1:])], y)


TENSOR_ALIASING = {
    "write_then_read": (write_then_read_a_tensor, _wrapped()),
    "write_then_read_a_view": (write_then_read_a_tensor, _wrapped(view=True)),
    "read_write_read_with_grad": (read_write_read_a_tensor, _wrapped(requires_grad=True)),
    "write_through_data": (write_through_data_then_read, _wrapped()),
    "tensors_in_a_list": (tensors_over_views_in_a_list, _in_a_list),
}


def _contents(value):
    if isinstance(value, (list, tuple)):
        return [_contents(v) for v in value]
    return np.array(value.data if isinstance(value, mc.Tensor) else value).tolist()


@pytest.mark.parametrize("order", [(False, True), (True, False)], ids=["copy_then_alias", "alias_then_copy"])
@pytest.mark.parametrize("name", sorted(TENSOR_ALIASING))
def test_a_tensor_reads_the_writes_to_the_array_it_wraps(backend, name, order):
    """``mc.Tensor(a)`` wraps ``a`` without copying.  ``f(mc.Tensor(a), a)`` writing ``a`` and
    then reading the tensor read the values from before the write: the tensor's data was in no
    alias group of the arguments.  Now a write into a tensor's memory breaks the graph (runs the
    frame as Python where a gradient is wanted), guarded on the sharing both ways, so one
    compiled function serves calls with and without it."""
    fn, make = TENSOR_ALIASING[name]
    compiled = mc.compile(fn, backend=backend)
    for alias in order:
        want_args, got_args = make(alias), make(alias)
        want = fn(*want_args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(*got_args)
        assert _contents(got) == _contents(want), (alias, got, want)
        assert _contents(got_args) == _contents(want_args), alias
        if isinstance(want, mc.Tensor) and want.requires_grad:
            want.backward()
            got.backward()
            np.testing.assert_allclose(got_args[0].grad, want_args[0].grad, rtol=1e-12)
