"""Random straight-line programs over complex arrays, compiled vs NumPy, on every backend.

Hypothesis draws 2-6 statements from the templates below over complex64 and
complex128 inputs (0-d included, some components NaN or infinite), a float
array to mix with, and Python complex scalars (weak under NEP 50)::

    def f(a, b, x):
        v0 = np.conj(a) * (0.5-2j)
        v1 = v0 + x
        v2 = np.abs(v1)
        return v0, v1, v2

Each candidate statement is evaluated with NumPy while the program is drawn,
so only statements NumPy accepts are kept.  The compiled program must give
NumPy's types, dtypes, shapes and values (each part within a tolerance scaled
by the largest finite magnitude; NaN where NumPy has NaN) and be one graph.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import minicompile as mc
from test_complex import assert_same

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = [(), (1,), (3,), (2, 3)]
SCALARS = [1j, 2 - 0.5j, -1.5 + 0j, complex(0.0, -0.0), 3, 0.25]
UNARY = [
    "-{x}", "np.conj({x})", "np.abs({x})", "np.angle({x})", "{x}.real", "{x}.imag", "np.real({x})",
    "np.exp({x} * 0.1)", "np.sqrt({x})", "np.log({x})", "np.sin({x})", "np.tanh({x})", "np.square({x})",
    "{x} ** 2", "np.isnan({x})", "np.isfinite({x})", "np.isinf({x})", "{x}.sum()", "{x}.mean(axis=-1)",
    "np.cumsum({x}, axis=-1)", "np.prod({x})", "{x}.astype(np.complex64)", "{x} * {s}", "{s} / ({x} + 2)",
    "{x} - {s}", "np.where(np.isfinite({x}), {x}, 0)",
]
BINARY = ["{x} + {y}", "{x} * {y}", "{x} - {y}", "{x} / {y}", "{x} == {y}", "{x} != {y}", "{x} < {y}",
          "np.maximum({x}.real, {y}.real)", "np.power({x}, 2) + {y}"]
BACKENDS = ["eager", "aot_eager", "cpp", "triton", "spyre"]
RTOL = {np.dtype(np.complex64): 1e-4, np.dtype(np.float32): 1e-4, np.dtype(np.complex128): 1e-9,
        np.dtype(np.float64): 1e-9}


@st.composite
def complex_array(draw, shape):
    dtype = draw(st.sampled_from([np.complex64, np.complex128]))
    # eighths: no subnormals (Spyre computes float math in reduced precision and flushes them)
    parts = st.integers(-32, 32).map(lambda k: k / 8) | st.sampled_from([np.nan, np.inf, -np.inf, -0.0])
    n = int(np.prod(shape))
    re = draw(st.lists(parts, min_size=n, max_size=n))
    im = draw(st.lists(parts, min_size=n, max_size=n))
    return (np.array(re) + 1j * np.array(im)).astype(dtype).reshape(shape)


@st.composite
def programs(draw):
    shape = draw(st.sampled_from(SHAPES))
    args = {"a": draw(complex_array(shape)), "b": draw(complex_array(shape)),
            "x": np.linspace(-2.0, 3.0, max(int(np.prod(shape)), 1))[: int(np.prod(shape))].reshape(shape)}
    env = dict(args)
    names, lines = list(args), []
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(draw(st.integers(2, 6))):
            template = draw(st.sampled_from(UNARY + BINARY))
            code = template.format(x=draw(st.sampled_from(names)), y=draw(st.sampled_from(names)),
                                   s=repr(draw(st.sampled_from(SCALARS))))
            try:
                value = eval(code, {"np": np}, env)
            except Exception:
                continue
            if not isinstance(value, (np.ndarray, np.generic)):
                continue
            env[f"v{i}"] = value
            names.append(f"v{i}")
            lines.append(f"    v{i} = {code}")
    outputs = [n for n in names if n.startswith("v")] or ["a"]
    source = f"def f(a, b, x):\n" + "\n".join(lines) + f"\n    return ({', '.join(outputs)},)\n"
    return source, args


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs())
def test_random_complex_program(backend, program):
    source, args = program
    note(source)
    namespace: dict = {"np": np}
    exec(compile(source, "<complex program>", "exec"), namespace)
    f = namespace["f"]
    mc.reset()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = f(*[a.copy() for a in args.values()])
        explained = mc.explain(f)(*[a.copy() for a in args.values()])
        got = mc.compile(f, backend=backend)(*[a.copy() for a in args.values()])
    assert explained.graph_break_count == 0, [r.reason for r in explained.break_reasons]
    for e, g in zip(expected, got):
        rtol = 2e-2 if backend == "spyre" else RTOL.get(np.asarray(e).dtype, 1e-9)
        assert_same(e, g, rtol)
    assert type(got) is tuple and len(got) == len(expected)
