"""The graph IR: building nodes, shape/dtype meta, printing, running, dead-code elimination.

A node's meta (shape, dtype) is computed when the node is created, by the op's
meta rule.  The rule must agree with NumPy 2 — NEP 50 promotion included —
and must reject what NumPy rejects with the same exception type, because the
capture stage turns those exceptions into "let eager NumPy raise it".
"""
from __future__ import annotations

import numpy as np
import pytest

from minicompile import ir
from minicompile.ir import Graph, TensorMeta, dead_code_elimination

f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
i8, i32, i64 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int64)
b8 = np.dtype(np.bool_)


def graph_with(*metas: tuple) -> tuple[Graph, list[ir.Node]]:
    """A graph with one placeholder per (shape, dtype), named a, b, c..."""
    g = Graph()
    nodes = [g.placeholder("abcdefgh"[i], TensorMeta(shape, dtype)) for i, (shape, dtype) in enumerate(metas)]
    return g, nodes


def sample(meta: TensorMeta) -> np.ndarray:
    """A small array with this meta, positive values so that log/sqrt are defined."""
    return (np.arange(meta.size).reshape(meta.shape) % 3 + 1).astype(meta.dtype)


# ---------------------------------------------------------------------------
# Building nodes
# ---------------------------------------------------------------------------


def test_build_a_small_graph():
    g, (x,) = graph_with(((2, 3), f32))
    y = g.call("multiply", x, 2.0)
    z = g.call("sum", y, axis=1)
    g.output([z])

    assert [n.kind for n in g.nodes] == ["placeholder", "call", "call", "output"]
    assert g.placeholders == [x] and g.calls == [y, z] and g.outputs == (z,)
    assert (y.shape, y.dtype) == ((2, 3), f32)
    assert (z.shape, z.dtype) == ((2,), f32)
    assert y.inputs == [x] and z.inputs == [y]
    assert g.users()[x] == [y] and g.users()[y] == [z]
    assert g.op_count() == 2
    assert repr(g) == "<Graph 1 inputs, 2 ops>"


def test_arguments_are_bound_and_canonicalized():
    g, (x,) = graph_with(((2, 3, 4), f64))
    s = g.call("sum", x, axis=-1)
    # Every parameter of the op is stored, in signature order, in one spelling.
    assert s.op.param_names == ("a", "axis", "dtype", "keepdims")
    assert s.args == (x, (2,), None, False)
    assert s.arg("axis") == (2,)
    assert g.call("mean", x, axis=(-1, 0), keepdims=1).args[1:] == ((0, 2), None, True)
    assert g.call("max", x).arg("axis") == (0, 1, 2)
    assert g.call("transpose", x).arg("axes") == (2, 1, 0)
    assert g.call("astype", x, np.float32).arg("dtype") == f32


def test_node_names_are_unique_and_readable():
    g, (x,) = graph_with(((2,), f64))
    a = g.call("exp", x)
    b = g.call("exp", a)
    assert (a.name, b.name) == ("exp", "exp_1")
    assert g.placeholder("L['x'].w", TensorMeta((1,), f64)).name == "L__x___w"
    assert g.placeholder("1st", TensorMeta((1,), f64)).name == "v_1st"
    assert g.placeholder("exp", TensorMeta((1,), f64)).name == "exp_2"


def test_tensor_meta():
    meta = TensorMeta((2, 3), f32)
    assert (meta.ndim, meta.size, str(meta)) == (2, 6, "f32[2, 3]")
    assert str(TensorMeta((), f64)) == "f64[]"
    assert TensorMeta((0, 4), i32).size == 0


def test_unknown_op_and_bad_call():
    g, (x,) = graph_with(((2,), f64))
    with pytest.raises(ir.UnknownOp):
        g.call("not_an_op", x)
    with pytest.raises(TypeError):
        g.call("exp", x, x)  # one operand too many
    with pytest.raises(TypeError):
        g.call("sum", x, axiss=0)


def test_registering_an_op_twice_is_refused():
    with pytest.raises(ValueError, match="twice"):
        ir.register(ir.get_op("exp"))


def test_unsupported_dtypes_are_refused():
    g = Graph()
    for dtype in (np.clongdouble, np.longdouble, object, np.str_, "datetime64[s]"):
        with pytest.raises(ir.UnsupportedDtype):
            g.placeholder("x", TensorMeta((2,), np.dtype(dtype)))
    _, (x,) = graph_with(((2,), f64))
    with pytest.raises(ir.UnsupportedDtype):
        Graph().call("astype", x, np.clongdouble)
    assert issubclass(ir.UnsupportedDtype, TypeError)


# ---------------------------------------------------------------------------
# Meta follows NumPy 2
# ---------------------------------------------------------------------------

# (op, argument metas or Python scalars, keyword arguments, expected shape, expected dtype)
META_CASES = [
    ("add", [((2, 3), f32), ((3,), f32)], {}, (2, 3), f32),
    ("add", [((2, 1), i32), ((1, 4), i64)], {}, (2, 4), i64),
    ("add", [((), f64), ((5,), f32)], {}, (5,), f64),
    ("multiply", [((4,), f32), 2.0], {}, (4,), f32),             # NEP 50: weak float
    ("multiply", [((4,), f32), np.float64(2)], {}, (4,), f64),   # NEP 50: strong NumPy scalar
    ("multiply", [((4,), i32), 2.5], {}, (4,), f64),
    ("multiply", [((4,), i8), 3], {}, (4,), i8),                 # weak int keeps int8
    ("add", [((4,), b8), True], {}, (4,), b8),
    ("add", [((4,), b8), 1], {}, (4,), i64),
    ("divide", [((4,), i32), ((4,), i32)], {}, (4,), f64),
    ("floor_divide", [((4,), b8), ((4,), b8)], {}, (4,), i8),
    ("power", [((4,), f16), 2], {}, (4,), f16),
    ("less", [((2, 3), f32), 0.5], {}, (2, 3), b8),
    ("bitwise_and", [((3,), b8), ((3,), b8)], {}, (3,), b8),
    ("invert", [((3,), i32)], {}, (3,), i32),
    ("exp", [((3,), b8)], {}, (3,), f16),                        # the smallest float that holds bool
    ("exp", [((3,), i8)], {}, (3,), f16),
    ("exp", [((3,), i32)], {}, (3,), f64),
    ("sqrt", [((3,), f32)], {}, (3,), f32),
    ("absolute", [((3,), i32)], {}, (3,), i32),
    ("maximum", [((3,), i32), ((3,), f32)], {}, (3,), f64),
    ("where", [((3,), b8), ((3,), f32), 0.0], {}, (3,), f32),
    ("where", [((2, 1), b8), ((3,), i32), ((2, 3), i64)], {}, (2, 3), i64),
    ("sum", [((2, 3), i32)], {}, (), i64),                       # sum(int32) -> int64
    ("sum", [((2, 3), b8)], {"axis": 0}, (3,), i64),
    ("sum", [((2, 3), f32)], {"axis": 1, "keepdims": True}, (2, 1), f32),
    ("sum", [((2, 3), i32)], {"dtype": np.float32}, (), f32),
    ("prod", [((2, 3), i8)], {"axis": -1}, (2,), i64),
    ("mean", [((2, 3), i32)], {}, (), f64),                      # mean(int) -> float64
    ("mean", [((2, 3), f16)], {"axis": 0}, (3,), f16),
    ("mean", [((2, 3, 4), f32)], {"axis": (0, 2)}, (3,), f32),
    ("max", [((2, 3), i32)], {"axis": 1}, (2,), i32),
    ("min", [((2, 3), b8)], {}, (), b8),
    ("transpose", [((2, 3, 4), f32)], {"axes": (1, 2, 0)}, (3, 4, 2), f32),
    ("transpose", [((2, 3), f32)], {}, (3, 2), f32),
    ("reshape", [((2, 6), f64)], {"shape": (3, -1)}, (3, 4), f64),
    ("reshape", [((2, 6), f64)], {"shape": -1}, (12,), f64),
    ("reshape", [((1,), f64)], {"shape": ()}, (), f64),
    ("astype", [((2,), f64)], {"dtype": "int32"}, (2,), i32),
    ("matmul", [((2, 3), f32), ((3, 4), f32)], {}, (2, 4), f32),
    ("matmul", [((5, 2, 3), f64), ((3,), f64)], {}, (5, 2), f64),
    ("matmul", [((3,), i32), ((3,), i32)], {}, (), i32),
    ("matmul", [((3,), b8), ((3, 2), i32)], {}, (2,), i32),
]


def _case_id(case) -> str:
    op, args, kwargs = case[:3]
    parts = [str(TensorMeta(*a)) if isinstance(a, tuple) else repr(a) for a in args]
    parts += [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{op}({', '.join(parts)})"


@pytest.mark.parametrize("op, args, kwargs, shape, dtype", META_CASES, ids=map(_case_id, META_CASES))
def test_meta_matches_numpy(op, args, kwargs, shape, dtype):
    g = Graph()
    graph_args, values = [], []
    for i, a in enumerate(args):
        if isinstance(a, tuple):
            node = g.placeholder(f"in{i}", TensorMeta(*a))
            graph_args.append(node)
            values.append(sample(node.meta))
        else:
            graph_args.append(a)
    node = g.call(op, *graph_args, **kwargs)
    assert (node.shape, node.dtype) == (shape, dtype)

    # And NumPy agrees, when the graph runs.
    g.output([node])
    (result,) = g(*values)
    assert (np.shape(result), np.asarray(result).dtype) == (shape, dtype)


# (op, argument metas or scalars, keyword arguments, the exception NumPy raises)
ERROR_CASES = [
    ("add", [((4,), i8), 300], {}, OverflowError),
    ("multiply", [((4,), i32), 2**40], {}, OverflowError),
    ("add", [((2, 3), f32), ((4,), f32)], {}, ValueError),
    ("subtract", [((3,), b8), ((3,), b8)], {}, TypeError),
    ("negative", [((3,), b8)], {}, TypeError),
    ("invert", [((3,), f32)], {}, TypeError),
    ("sum", [((2, 3), f32)], {"axis": 2}, np.exceptions.AxisError),
    ("mean", [((2, 3), f32)], {"axis": -3}, np.exceptions.AxisError),
    ("sum", [((2, 3), f32)], {"axis": (0, 0)}, ValueError),
    ("max", [((0, 3), f32)], {"axis": 0}, ValueError),
    ("transpose", [((2, 3), f32)], {"axes": (0,)}, ValueError),
    ("transpose", [((2, 3), f32)], {"axes": (0, 0)}, ValueError),
    ("reshape", [((2, 6), f64)], {"shape": (5, -1)}, ValueError),
    ("reshape", [((2, 6), f64)], {"shape": (-1, -1)}, ValueError),
    ("reshape", [((2, 6), f64)], {"shape": (3, 3)}, ValueError),
    ("matmul", [((2, 3), f32), ((2, 3), f32)], {}, ValueError),
    ("matmul", [((), f32), ((2, 3), f32)], {}, ValueError),
]


@pytest.mark.parametrize("op, args, kwargs, error", ERROR_CASES, ids=map(_case_id, ERROR_CASES))
def test_meta_raises_what_numpy_raises(op, args, kwargs, error):
    g = Graph()
    graph_args = [g.placeholder(f"in{i}", TensorMeta(*a)) if isinstance(a, tuple) else a
                  for i, a in enumerate(args)]
    values = [sample(a.meta) if isinstance(a, ir.Node) else a for a in graph_args]
    numpy_fn = getattr(np, op) if op != "astype" else None
    with pytest.raises(error):
        numpy_fn(*values, **kwargs)  # NumPy itself...
    with pytest.raises(error):
        g.call(op, *graph_args, **kwargs)  # ...and the meta rule agree


def test_compare_with_huge_int():
    g, (x,) = graph_with(((3,), i32))
    for op in ("less", "equal", "greater_equal"):
        expected = getattr(np, op)(np.ones(3, np.int32), 3_000_000_000)
        node = g.call(op, x, 3_000_000_000)
        assert (node.shape, node.dtype) == (expected.shape, expected.dtype)


def test_nep50_examples_from_the_docs():
    g, (x32, i8_arr, flags, ints) = graph_with(((3,), f32), ((3,), i8), ((3,), b8), ((3,), i32))
    assert g.call("multiply", x32, 2.0).dtype == f32
    assert g.call("multiply", x32, np.float64(2)).dtype == f64
    with pytest.raises(OverflowError):
        g.call("add", i8_arr, 300)
    assert g.call("exp", flags).dtype == f16
    assert g.call("sum", ints).dtype == i64
    assert g.call("mean", ints).dtype == f64


# ---------------------------------------------------------------------------
# Printing and running
# ---------------------------------------------------------------------------


def tanh_sum_graph() -> Graph:
    g, (x,) = graph_with(((8, 16), f32))
    y = g.call("multiply", x, 2)
    y = g.call("add", y, 1)
    y = g.call("tanh", y)
    y = g.call("sum", y, axis=1)
    g.output([y])
    return g


def test_graph_prints_as_python():
    assert tanh_sum_graph().python_code("f") == (
        'def f(a: "f32[8, 16]"):\n'
        "    multiply = np.multiply(a, 2)  # f32[8, 16]\n"
        "    add = np.add(multiply, 1)  # f32[8, 16]\n"
        "    tanh = np.tanh(add)  # f32[8, 16]\n"
        "    sum = np.sum(tanh, axis=(1,))  # f32[8]\n"
        "    return (sum,)"
    )
    assert str(tanh_sum_graph()).startswith("def graph(a: ")


def test_printed_graph_is_runnable_python():
    g, (x, w) = graph_with(((4, 3), f64), ((3, 2), f64))
    h = g.call("matmul", x, w)
    h = g.call("maximum", h, 0.0)
    m = g.call("mean", h, axis=-1, keepdims=True)
    t = g.call("transpose", g.call("reshape", h, (2, -1)))
    c = g.call("astype", g.call("less", h, m), np.float32)
    s = g.call("sum", c, dtype=np.float64)
    g.output([m, t, s])

    namespace = {"np": np}
    exec(g.python_code("printed"), namespace)
    inputs = (np.random.default_rng(0).standard_normal((4, 3)),
              np.random.default_rng(1).standard_normal((3, 2)))
    for got, want in zip(namespace["printed"](*inputs), g(*inputs)):
        np.testing.assert_array_equal(got, want)


def test_calling_the_graph_runs_numpy():
    g = tanh_sum_graph()
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    (result,) = g(x)
    np.testing.assert_allclose(result, np.tanh(x * 2 + 1).sum(axis=1), rtol=1e-6)
    assert result.dtype == np.float32
    with pytest.raises(TypeError):
        g(x, x)


def test_constants_print_with_their_type():
    g, (x,) = graph_with(((2,), f32))
    y = g.call("multiply", x, np.float64(0.5))
    z = g.call("astype", y, np.int8)
    g.output([z, x])
    text = g.python_code()
    assert "np.multiply(a, np.float64(0.5))" in text
    assert "np.astype(multiply, np.int8)" in text
    assert text.endswith("return (astype, a)")


# ---------------------------------------------------------------------------
# Dead-code elimination
# ---------------------------------------------------------------------------


def test_dead_code_elimination_removes_unused_nodes():
    g, (x, unused_input) = graph_with(((3,), f64), ((3,), f64))
    dead = g.call("exp", x)
    also_dead = g.call("add", dead, unused_input)
    live = g.call("tanh", x)
    out = g.call("multiply", live, 2.0)
    g.output([out])

    clean = dead_code_elimination(g)
    assert [n.name for n in clean.nodes] == ["a", "b", "tanh", "multiply", "output"]
    assert dead not in clean.nodes and also_dead not in clean.nodes
    assert clean.placeholders == [x, unused_input]  # the signature stays
    assert len(g.nodes) == 7  # the input graph is left alone

    values = (np.arange(3.0), np.ones(3))
    np.testing.assert_array_equal(clean(*values)[0], g(*values)[0])


def test_dead_code_elimination_keeps_everything_an_output_needs():
    g = tanh_sum_graph()
    assert [n.name for n in dead_code_elimination(g).nodes] == [n.name for n in g.nodes]


def test_new_nodes_after_dce_get_fresh_names():
    g, (x,) = graph_with(((3,), f64))
    g.call("exp", x)
    keep = g.call("tanh", x)
    g.output([keep])
    clean = dead_code_elimination(g)
    clean.nodes.pop()  # drop the output to extend the graph
    assert clean.call("tanh", keep).name == "tanh_1"
