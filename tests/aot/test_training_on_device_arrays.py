"""Training on a device's array type: ``mc.Tensor``, ``mc.grad`` and ``mc.value_and_grad``
over CuPy arrays, eagerly on the tape and compiled (``backend="aot_eager"``).

Run against ``tests/fake_cupy.py``, CuPy's semantics on the CPU: an array that
NumPy refuses to convert (``np.asarray`` raises as on the GPU), that refuses
NumPy arrays mixed into its operations, and that counts every copy to the host.
Each program runs twice, on NumPy arrays and on "CuPy" arrays holding the same
values; the double computes with NumPy underneath, so values, gradients, dtypes
and shapes must be *identical*, and every result and gradient a CuPy array.
"""
import fake_cupy
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from test_derivatives import BINARY, GETITEM_KEYS, MORE_UNARY, UNARY, domain_array

import minicompile as mc
from minicompile.aot.aot_function import AotFunction
from minicompile.aot.functional import tree_map
from minicompile.examples import decoder_block, mlp_train


@pytest.fixture
def cp(fake_cupy):
    return fake_cupy.module


def same(got, expected, cp):
    """``got`` (CuPy) holds exactly ``expected`` (NumPy): type, dtype, shape and values."""
    assert type(got) is cp.ndarray, type(got)
    host = fake_cupy.peek(got)
    assert host.dtype == np.asarray(expected).dtype and host.shape == np.shape(expected)
    np.testing.assert_array_equal(host, expected)


def same_tree(got, expected, cp):
    if isinstance(expected, dict):
        assert got.keys() == expected.keys()
        for k in expected:
            same_tree(got[k], expected[k], cp)
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            same_tree(g, e, cp)
    else:
        same(got, expected, cp)


def test_the_double_behaves_as_cupy(cp, fake_cupy):
    x = cp.asarray(np.arange(6.0).reshape(2, 3))
    for implicit in (lambda: np.asarray(x), lambda: x + np.ones(3), lambda: np.ones(3) * x,
                     lambda: np.concatenate([x, np.ones((1, 3))]), lambda: np.insert(x, 0, 1.0)):
        with pytest.raises(TypeError):
            implicit()  # no implicit host copy, no mixing, no function CuPy lacks
    assert type(np.sum(x)) is cp.ndarray and np.sum(x).shape == ()  # never a NumPy scalar
    y = x.copy()
    y[:, 0] += 1.0  # views write through
    rows = (cp.asarray(np.array([1, 1])),)
    with pytest.raises(TypeError):
        np.add.at(y, rows, 1.0)  # NumPy's dispatch to CuPy refuses a tuple input...
    cp.add.at(y, rows, 1.0)  # ...which CuPy's own ufunc takes
    np.testing.assert_array_equal(y.get(), [[1, 1, 2], [6, 6, 7]])
    assert [how for how, _ in fake_cupy.HOST_COPIES] == ["get"]


# -- the eager tape ---------------------------------------------------------------------------

def test_tensor_forward_and_backward_stay_on_the_device(cp, fake_cupy):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)

    def run(xp):
        tw, tb = mc.Tensor(xp.asarray(w), requires_grad=True), mc.Tensor(xp.asarray(b), requires_grad=True)
        h = np.tanh(xp.asarray(x) @ tw + tb)
        y = (np.exp(h - h.max(axis=1, keepdims=True)).sum(axis=1) * h.T[0]).mean() + (h[1:, ::-1] ** 2).sum()
        y.backward()
        return y.data, tw.grad, tb.grad

    for got, expected in zip(run(cp), run(np)):
        same(got, expected, cp)
    assert fake_cupy.HOST_COPIES == []


def _program(unary: str, binary: str, reduction: str, key: tuple):
    """A scalar of (x, y): a table unary op, a broadcasting binary op, a getitem and a
    reduction, projected onto fixed weights so every element of the result counts."""
    fn = {**UNARY, **MORE_UNARY}[unary][0]

    def f(x, y, xp):
        index = tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)  # where the data is
        r = getattr(np, reduction)(BINARY[binary](fn(x), y)[index], axis=-1)
        return (r * xp.asarray(np.random.default_rng(5).standard_normal(r.shape))).sum()
    return f


@given(unary=st.sampled_from(sorted({**UNARY, **MORE_UNARY})), binary=st.sampled_from(sorted(BINARY)),
       reduction=st.sampled_from(["sum", "mean", "max", "min", "prod", "var", "std"]),
       key=st.sampled_from(GETITEM_KEYS), y_shape=st.sampled_from([(3,), (5, 1), (1, 3)]),
       seed=st.integers(0, 50))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_gradients_of_table_programs_equal_numpys(fake_cupy, unary, binary, reduction, key, y_shape, seed):
    cp = fake_cupy.module
    x = domain_array((4, 5, 3), {**UNARY, **MORE_UNARY}[unary][1], seed)
    y = np.abs(domain_array(y_shape, None, seed + 1)) + 0.5
    f = _program(unary, binary, reduction, key)
    with np.errstate(all="ignore"):  # NaNs (a power of a negative) are compared as values too
        expected = mc.value_and_grad(lambda a, b: f(a, b, np), (0, 1))(x, y)
        got = mc.value_and_grad(lambda a, b: f(a, b, cp), (0, 1))(cp.asarray(x), cp.asarray(y))
    same(got[0], np.asarray(expected[0]), cp)
    same_tree(got[1], expected[1], cp)
    assert fake_cupy.HOST_COPIES == []


# -- grad and value_and_grad on pytrees, eager and compiled --------------------------------------

def _tree_loss(params, x):
    h = np.tanh(x @ params["w"][0] + params["b"])
    h = h @ params["w"][1]
    return (h * h).mean() + 0.1 * (params["w"][0] ** 2).sum()


def _tree(rng):
    return {"w": [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)],
            "b": rng.standard_normal(4).astype(np.float32)}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_grad_of_a_pytree_of_device_arrays(cp, fake_cupy, compiled):
    rng = np.random.default_rng(3)
    params, x = _tree(rng), rng.standard_normal((5, 3)).astype(np.float32)
    device = tree_map(cp.asarray, params)
    loss = mc.compile(_tree_loss, backend="aot_eager") if compiled else _tree_loss
    value, grads = mc.value_and_grad(loss)(params, x)
    got_value, got_grads = mc.value_and_grad(loss)(device, cp.asarray(x))
    same(got_value, np.asarray(value), cp)
    same_tree(got_grads, grads, cp)
    same_tree(mc.grad(loss)(device, cp.asarray(x)), grads, cp)
    if compiled:  # one compiled forward/backward pair per array module, told apart by a guard
        assert len(loss.cache) == 2 and all(isinstance(e.compiled, AotFunction) for e in loss.cache)
    assert fake_cupy.HOST_COPIES == []


def test_the_backend_gets_the_device_arrays(cp):
    seen = []

    def backend(graph, example_inputs):
        seen.append({type(x).__module__.split(".")[0] for x in example_inputs})
        return graph

    f = mc.compile(lambda w, x: np.sum(np.exp(x @ w)), backend=backend)
    w, x = np.ones((3, 2)), np.ones((4, 3))
    f(mc.Tensor(w, requires_grad=True), x).backward()
    t = mc.Tensor(cp.asarray(w), requires_grad=True)
    f(t, cp.asarray(x)).backward()
    assert seen == [{"numpy"}, {"numpy"}, {"cupy"}, {"cupy"}]  # forward, backward, on each
    assert type(t.grad) is cp.ndarray


def test_gradients_flow_through_a_graph_break_on_the_device(cp, fake_cupy):
    def loss(w, x):
        h = np.tanh(x @ w)
        scale = float(h.mean().item())  # one value to the host: a graph break
        return (h * h).sum() * scale

    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    expected = mc.grad(loss)(w, x)
    t = mc.Tensor(cp.asarray(w), requires_grad=True)
    mc.compile(loss, backend="aot_eager")(t, cp.asarray(x)).backward()
    same(t.grad, expected, cp)
    assert [shape for _, shape in fake_cupy.HOST_COPIES] == [()]


# -- the examples: a decoder trained with SGD, an MLP with Adam ----------------------------------

SMALL = decoder_block.Config(vocab=16, dim=16, heads=2, layers=1, hidden=32, seq=8)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_decoder_training_on_the_device_follows_numpy(cp, fake_cupy, compiled):
    kwargs = dict(cfg=SMALL, steps=3, batch=2, compiled=compiled, backend="aot_eager")
    expected = decoder_block.train(**kwargs)
    got = decoder_block.train(**kwargs, xp=cp)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got, decoder_block.train(cfg=SMALL, steps=3, batch=2), rtol=1e-5)
    assert got[-1] < got[0]
    # The one copy to the host per step is the loss the loop reads (float(value)).
    assert fake_cupy.HOST_COPIES == [("float", ())] * 3


def test_decoder_sgd_step_returns_device_parameters(cp, fake_cupy):
    params = decoder_block.to_module(decoder_block.init_params(SMALL), cp)
    cos, sin = decoder_block.rotary_tables(SMALL)
    tokens, targets = decoder_block.synthetic_tokens(SMALL, 2)
    data = decoder_block.to_module((tokens, targets, cos, sin, decoder_block.causal_mask(SMALL),
                                    SMALL.heads, SMALL.layers), cp)
    loss = mc.compile(decoder_block.loss, backend="aot_eager")
    new, value = decoder_block.sgd_step(loss, params, data, 0.02)
    expected, expected_value = decoder_block.sgd_step(
        loss, decoder_block.init_params(SMALL),
        (tokens, targets, cos, sin, decoder_block.causal_mask(SMALL), SMALL.heads, SMALL.layers), 0.02)
    same_tree(new, expected, cp)
    assert value == expected_value


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "aot_eager"])
def test_mlp_with_adam_on_the_device_follows_numpy(cp, fake_cupy, compiled):
    kwargs = dict(steps=4, compiled=compiled, backend="aot_eager", dtype=np.float32)
    expected = mlp_train.train(**kwargs)
    got = mlp_train.train(**kwargs, xp=cp)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got, mlp_train.train(steps=4, dtype=np.float32), rtol=1e-5)
    assert fake_cupy.HOST_COPIES == [("float", ())] * 4
