"""Helpers shared by the inductor tests: compare a compiled graph with the interpreter."""
from __future__ import annotations

import warnings

import numpy as np

from minicompile import ir, testing
from minicompile.inductor import compile_graph
from minicompile.ir import TensorMeta

# Tolerance per result dtype.  Integers and bools are exact; floats differ from
# NumPy only by libm rounding of transcendentals and by summation order.
TOLERANCE = {
    np.dtype(np.float16): dict(rtol=1e-2, atol=1e-2),
    np.dtype(np.float32): dict(rtol=1e-4, atol=1e-4),
    np.dtype(np.float64): dict(rtol=1e-9, atol=1e-9),
}


def run_both(graph: ir.Graph, inputs: list):
    """(eager outputs, compiled outputs, compiled graph); either may be an exception."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            # Dead nodes are dropped before compiling (every op is pure), so the
            # oracle is the graph without them: a dead node may raise in NumPy.
            expected = ir.dead_code_elimination(graph)(*inputs)
        except Exception as why:  # NumPy rejects the program at run time
            expected = why
        compiled = compile_graph(graph, inputs)
    # The NumPy fallback would agree trivially: these tests are about the kernels.
    assert compiled.fallback_reason is None, compiled.fallback_reason
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            actual = compiled(*inputs)
        except Exception as why:
            actual = why
    return expected, actual, compiled


def loosest_float(graph: ir.Graph) -> np.dtype | None:
    """The narrowest float dtype any value of ``graph`` passes through: a
    float32 exp promoted to float64 carries float32's rounding."""
    floats = [n.dtype for n in graph.nodes if n.meta is not None and n.dtype.kind == "f"]
    return min(floats, key=lambda d: d.itemsize) if floats else None


def assert_same(expected, actual, context: str = "", graph: ir.Graph | None = None) -> None:
    if isinstance(expected, Exception):
        assert isinstance(actual, type(expected)), f"{context}: eager raised {expected!r}, compiled gave {actual!r}"
        return
    assert not isinstance(actual, Exception), f"{context}: compiled raised {actual!r}"
    assert len(expected) == len(actual)
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        where = f"{context} output {i}"
        assert a.dtype == e.dtype, f"{where}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"{where}: shape {a.shape} != {e.shape}"
        if e.dtype.kind == "f":
            tol_dtype = e.dtype
            narrow = loosest_float(graph) if graph is not None else None
            if narrow is not None and narrow.itemsize < tol_dtype.itemsize:
                tol_dtype = narrow
            np.testing.assert_allclose(a, e, equal_nan=True, err_msg=where, **TOLERANCE[tol_dtype])
        else:
            np.testing.assert_array_equal(a, e, err_msg=where)


def check(graph: ir.Graph, inputs: list):
    """Compile, run, compare; returns the compiled graph for structural checks."""
    expected, actual, compiled = run_both(graph, inputs)
    assert_same(expected, actual, str(compiled), graph)
    return compiled


def assert_close(actual, expected):
    """``minicompile.testing.assert_close`` at :data:`TOLERANCE`: same Python type,
    dtype and shape, tuples member by member, integers and bools exact."""
    testing.assert_close(actual, expected, tolerances={d: (t["rtol"], t["atol"]) for d, t in TOLERANCE.items()})


def layer_norm_graph(shape: tuple) -> ir.Graph:
    """``(x - mean) / sqrt(var + 1e-5)`` over the last axis of a float32 ``x``."""
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(shape, np.dtype(np.float32)))
    c = g.call("subtract", x, g.call("mean", x, axis=-1, keepdims=True))
    var = g.call("mean", g.call("multiply", c, c), axis=-1, keepdims=True)
    g.output([g.call("divide", c, g.call("sqrt", g.call("add", var, 1e-5)))])
    return g


def assert_loop_vectorizes(headers: str, fn: str, ctype: str, directory) -> None:
    """A loop over the function ``fn`` of ``headers`` (#include lines) on ``ctype`` arrays compiles to
    vector code with the flags the cache uses (read from GCC's -fopt-info;
    skipped with another compiler)."""
    import subprocess

    import pytest

    from minicompile.inductor import codecache

    cxx = codecache.find_compiler()
    if "GCC" not in codecache.compiler_version(cxx) and "g++" not in codecache.compiler_version(cxx):
        pytest.skip("vectorization report read from GCC's -fopt-info")
    src = directory / "loop.cpp"
    src.write_text(headers + f"""
extern "C" void loop(const {ctype}* __restrict a, {ctype}* __restrict b, long n) {{
    #pragma omp simd
    for (long i = 0; i < n; ++i) b[i] = {fn}(a[i]);
}}
""")
    flags = [f for f in codecache.compile_flags() if f not in ("-shared", "-fPIC")]
    proc = subprocess.run([cxx, *flags, "-fopt-info-vec-optimized", "-c", str(src),
                           "-o", str(directory / "loop.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    last_line = len(src.read_text().splitlines()) - 1
    assert any(f"loop.cpp:{last_line}:" in line and "vectorized" in line for line in proc.stderr.splitlines()), \
        proc.stderr


def compiled_unary(op: str, x: np.ndarray, function: str) -> np.ndarray:
    """``op`` over ``x`` through a compiled one-op graph, whose kernel must call ``function``."""
    g = ir.Graph()
    p = g.placeholder("x", TensorMeta(x.shape, x.dtype))
    g.output([g.call(op, p)])
    compiled = compile_graph(g, [x])
    assert compiled.fallback_reason is None
    assert f"{function}(" in compiled.kernel_source.split('extern "C"', 1)[1]
    with np.errstate(all="ignore"):
        return compiled(x)[0]
