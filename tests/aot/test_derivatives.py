"""Every derivative rule against central finite differences in float64.

Each case is a scalar function of one or two arrays built from one op (plus a
fixed random projection of its output, so every output element matters);
hypothesis draws shapes, broadcasting and axes.  The eager tape's gradient
must match ``(f(x + h e) - f(x - h e)) / 2h`` for random directions ``e``.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile.aot import DERIVATIVES, NonDifferentiable, Tensor

SHAPES = [(), (3,), (2, 3), (3, 1), (1, 3), (2, 1, 3)]


def directional_check(f, args, seed=0, eps=1e-6, rtol=1e-5, atol=1e-7):
    """Compare the gradient with finite differences along random directions."""
    value, grads = mc.value_and_grad(f, tuple(range(len(args))))(*args)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        dirs = [rng.standard_normal(np.shape(a)) for a in args]
        plus = f(*[a + eps * d for a, d in zip(args, dirs)])
        minus = f(*[a - eps * d for a, d in zip(args, dirs)])
        numeric = (np.asarray(plus, float) - np.asarray(minus, float)) / (2 * eps)
        analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, dirs))
        assert np.isclose(analytic, numeric, rtol=rtol, atol=atol), (analytic, numeric)
    for g, a in zip(grads, args):
        assert g.shape == np.shape(a) and g.dtype == np.asarray(a).dtype


def project(y, seed=1):
    """A scalar that depends on every element of y: sum(y * fixed random weights)."""
    y_data = y.data if isinstance(y, Tensor) else y
    w = np.random.default_rng(seed).standard_normal(np.shape(y_data))
    return (y * w).sum()


def unwrap(v):
    return v.data if isinstance(v, Tensor) else v


UNARY = {
    "negative": (np.negative, None), "exp": (np.exp, None), "tanh": (np.tanh, None),
    "log": (np.log, "positive"), "sqrt": (np.sqrt, "positive"), "square": (np.square, None),
    "absolute": (np.abs, "nonzero"), "sin": (np.sin, None), "cos": (np.cos, None),
}
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "power": np.power}


def arrays(shape, domain=None, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    if domain == "positive":
        x = np.abs(x) + 0.5
    if domain == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return x


@pytest.mark.parametrize("name", sorted(UNARY))
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 100))
@settings(max_examples=10, deadline=None)
def test_unary_rules(name, shape, seed):
    fn, domain = UNARY[name]
    x = arrays(shape, domain, seed)
    directional_check(lambda a: project(fn(a)), [x])


@pytest.mark.parametrize("name", sorted(BINARY))
@given(s1=st.sampled_from(SHAPES), s2=st.sampled_from(SHAPES), seed=st.integers(0, 100))
@settings(max_examples=10, deadline=None)
def test_binary_rules_with_broadcasting(name, s1, s2, seed):
    try:
        np.broadcast_shapes(s1, s2)
    except ValueError:
        return
    fn = BINARY[name]
    a = arrays(s1, "positive" if name == "power" else None, seed)
    b = arrays(s2, None, seed + 1) + (0.0 if name != "divide" else 3.0)
    directional_check(lambda x, y: project(fn(x, y)), [a, b])


@pytest.mark.parametrize("reduction", ["sum", "mean", "max", "min", "prod"])
@given(shape=st.sampled_from([(3,), (2, 3), (2, 3, 4)]), data=st.data())
@settings(max_examples=12, deadline=None)
def test_reduction_rules(reduction, shape, data):
    ndim = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    keepdims = data.draw(st.booleans())
    x = arrays(shape, None, data.draw(st.integers(0, 50)))
    if reduction in ("sum", "mean", "prod"):  # smooth at zeros and ties: draw exact zeros and repeats
        n = x.size
        zeros = data.draw(st.lists(st.integers(0, n - 1), max_size=n))
        ties = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3))
        for i, j in ties:
            x.flat[i] = x.flat[j]
        x.flat[zeros] = 0.0
    directional_check(lambda a: project(getattr(a, reduction)(axis=axis, keepdims=keepdims)), [x])


@given(a_shape=st.sampled_from([(3,), (2, 3), (4, 2, 3), (2, 4, 2, 3)]),
       b_shape=st.sampled_from([(3,), (3, 2), (4, 3, 2)]))
@settings(max_examples=20, deadline=None)
def test_matmul_rule_with_vectors_and_batches(a_shape, b_shape):
    a, b = arrays(a_shape, seed=1), arrays(b_shape, seed=2)
    directional_check(lambda x, y: project(x @ y), [a, b])


def test_shared_weight_gradient_is_one_matmul_over_the_batch_rows():
    """x (batch, rows, K) @ w (K, N): dw is (batch*rows, K)^T @ (batch*rows, N), one 2-D
    product, not a batched product summed over the batch."""
    x, w = arrays((3, 4, 5), seed=1), arrays((5, 2), seed=2)
    graphs = []

    def keep(graph, example_inputs):
        graphs.append(graph)
        return graph

    def f(x, w):
        return (x @ w).sum()

    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    mc.compile(f, backend=keep)(tx, tw).backward()
    backward = graphs[-1]
    assert [n.op.name for n in backward.nodes if n.kind == "call" and n.op.name == "sum"] == []
    products = [n for n in backward.nodes if n.kind == "call" and n.op.name == "matmul"]
    assert sorted(tuple(n.meta.shape) for n in products) == [(3, 4, 5), (5, 2)]
    np.testing.assert_allclose(tw.grad, x.reshape(-1, 5).T @ np.ones((12, 2)), rtol=1e-12)


def test_layout_and_where_rules():
    x, y = arrays((2, 3)), arrays((2, 3), seed=3)
    directional_check(lambda a: project(a.T.reshape(3, 2) * 2.0), [x])
    directional_check(lambda a: project(a.transpose(1, 0)), [x])
    directional_check(lambda a, b: project(np.where(unwrap(a) > 0, a, b)), [x, y])
    # linear, so a large step is exact; a small one would only measure float32 rounding
    directional_check(lambda a: project(a.astype(np.float32).astype(np.float64)), [x], eps=0.1, rtol=1e-4)


def test_an_mlp_loss():
    rng = np.random.default_rng(0)
    W1, W2, x = rng.standard_normal((4, 8)), rng.standard_normal((8, 2)), rng.standard_normal((5, 4))

    def loss(w1, w2):
        h = np.tanh(x @ w1)
        logits = h @ w2
        m = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - m)
        return -(np.log(e / e.sum(axis=1, keepdims=True))).mean()

    directional_check(loss, [W1, W2])


def test_every_rule_is_registered_for_an_existing_op():
    assert set(DERIVATIVES) <= set(mc.ir.OPS) | {"broadcast_to"}


def test_errors_are_clear():
    t = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="scalar"):
        (t * 2).backward()
    with pytest.raises(TypeError, match="floating-point"):
        Tensor(np.ones(3, np.int64), requires_grad=True)
    y = (t * t).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    np.testing.assert_allclose(t.grad, 2 * np.ones(3))


def test_no_grad_records_nothing():
    t = Tensor(np.ones(3), requires_grad=True)
    with mc.no_grad():
        y = (t * 2).sum()
    assert not y.requires_grad


def test_comparisons_carry_no_gradient():
    t = Tensor(np.arange(3.0), requires_grad=True)
    assert not (t > 1).requires_grad


def test_missing_rule_names_the_op():
    t = Tensor(np.ones(3), requires_grad=True)
    from minicompile.aot import derivatives
    saved = derivatives.DERIVATIVES.pop("exp")
    try:
        z = np.exp(t).sum()
        with pytest.raises(NonDifferentiable, match="np.exp"):
            z.backward()
    finally:
        derivatives.DERIVATIVES["exp"] = saved


MORE_UNARY = {
    "tan": (np.tan, "small"), "sinh": (np.sinh, None), "cosh": (np.cosh, None),
    "arcsin": (np.arcsin, "unit"), "arccos": (np.arccos, "unit"), "arctan": (np.arctan, None),
    "arcsinh": (np.arcsinh, None), "arccosh": (np.arccosh, "above_one"), "arctanh": (np.arctanh, "unit"),
    "exp2": (np.exp2, None), "expm1": (np.expm1, None), "log2": (np.log2, "positive"),
    "log10": (np.log10, "positive"), "log1p": (np.log1p, "positive"), "cbrt": (np.cbrt, "positive"),
    "reciprocal": (np.reciprocal, "positive"), "deg2rad": (np.deg2rad, None), "rad2deg": (np.rad2deg, None),
    "fabs": (np.fabs, "nonzero"),
}


def domain_array(shape, domain, seed):
    x = np.random.default_rng(seed).standard_normal(shape)
    return {"small": 0.5 * np.tanh(x), "unit": 0.8 * np.tanh(x), "above_one": np.abs(x) + 1.5,
            "positive": np.abs(x) + 0.5, "nonzero": np.where(np.abs(x) < 0.1, 0.5, x)}.get(domain, x)


@pytest.mark.parametrize("name", sorted(MORE_UNARY))
def test_more_unary_rules(name):
    fn, domain = MORE_UNARY[name]
    for seed, shape in enumerate([(3,), (2, 3)]):
        directional_check(lambda a: project(fn(a)), [domain_array(shape, domain, seed)])


@pytest.mark.parametrize("fn", [np.hypot, np.arctan2, np.logaddexp, np.fmax, np.fmin, np.float_power],
                         ids=lambda f: f.__name__)
def test_more_binary_rules(fn):
    a = np.abs(arrays((2, 3), seed=4)) + 0.5
    b = np.abs(arrays((3,), seed=5)) + 0.7
    directional_check(lambda x, y: project(fn(x, y)), [a, b])


def test_variance_and_standard_deviation():
    x = arrays((3, 4), seed=6)
    for ddof in (0, 1):
        directional_check(lambda a: project(np.var(a, axis=1, ddof=ddof)), [x])
        directional_check(lambda a: project(np.std(a, axis=0, ddof=ddof, keepdims=True)), [x])


def test_layout_rules():
    x, y = arrays((2, 3), seed=7), arrays((2, 3), seed=8)
    directional_check(lambda a: project(np.clip(a, -0.5, 0.5)), [x])
    directional_check(lambda a: project(np.cumsum(a, axis=1)), [x])
    directional_check(lambda a: project(np.cumsum(a)), [x])
    directional_check(lambda a: project(np.cumsum(a, axis=0)), [np.array(0.7)])
    directional_check(lambda a, lo, hi: project(np.clip(a, lo, hi)), [x, x.T[:1].T - 0.2, np.full(3, 0.4)])
    directional_check(lambda v: project(np.full((2, 3), v)), [np.array([0.5, -1.0, 2.0])])
    directional_check(lambda a, v: project(np.full_like(a, v) * a), [x, np.array(0.3)])
    directional_check(lambda a: project(np.broadcast_to(a, (4, 2, 3))), [x])
    directional_check(lambda a: project(np.squeeze(np.expand_dims(a, 0), 0)), [x])
    directional_check(lambda a: project(np.swapaxes(a, 0, 1)), [x])
    directional_check(lambda a: project(np.moveaxis(a, 0, 1)), [x])
    directional_check(lambda a: project(np.flip(a, 1)), [x])
    directional_check(lambda a, b: project(np.concatenate((a, b), axis=1)), [x, y])
    directional_check(lambda a, b: project(np.stack((a, b), axis=1)), [x, y])
    directional_check(lambda a: project(a[1:, ::-1]), [x])
    directional_check(lambda a: project(np.outer(a, a)), [arrays((3,), seed=9)])
    directional_check(lambda a, b: project(np.dot(a, b.T)), [x, y])


GETITEM_KEYS = [
    (Ellipsis, slice(None, 2)),       # rotary embedding's first half: zeros padded after
    (slice(1, None), 2),              # a slice and an integer: a box
    (None, slice(1, 3), Ellipsis),    # a new axis
    (-1,),                            # the last row
    (slice(3, 1),),                   # an empty slice
    (slice(None, None, 2), 1),        # a step: basic, scattered with setitem
    (slice(None, None, -1),),         # reversed
    (np.array([0, 2, 0]),),           # an element twice: gradients add up (add_at)
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=[str(k) for k in GETITEM_KEYS])
def test_getitem_rule_for_every_kind_of_key(key):
    x = arrays((4, 5, 3), seed=11)
    directional_check(lambda a: project(a[key]), [x])


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=[str(k) for k in GETITEM_KEYS])
def test_getitem_rule_compiled_equals_eager(key):
    """The joint graph's backward (a zero pad, a setitem or an add_at) gives
    the eager tape's gradient exactly."""
    x = arrays((4, 5, 3), seed=12).astype(np.float32)
    w = np.random.default_rng(3).standard_normal(x[key].shape).astype(np.float32)

    def loss(a):
        return (np.tanh(a[key]) * w).sum()

    expected = mc.grad(loss)(x)
    got = mc.grad(mc.compile(loss))(x)
    assert got.dtype == expected.dtype and got.shape == x.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
