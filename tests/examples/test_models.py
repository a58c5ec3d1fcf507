"""The example models compile whole (zero graph breaks) and equal eager NumPy."""
import numpy as np
import pytest

import minicompile as mc
from minicompile.examples import decoder_block, mobilenet_v2

pytestmark = pytest.mark.skipif("getitem" not in mc.ir.OPS, reason="needs the indexing ops")


@pytest.fixture(scope="module")
def decoder():
    cfg = decoder_block.Config()
    cos, sin = decoder_block.rotary_tables(cfg)
    tokens, targets = decoder_block.synthetic_tokens(cfg)
    return decoder_block.init_params(cfg), tokens, targets, cos, sin, decoder_block.causal_mask(cfg)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_decoder_inference(decoder, backend):
    params, tokens, _, cos, sin, mask = decoder
    expected = decoder_block.forward(params, tokens, cos, sin, mask)
    explanation = mc.explain(decoder_block.forward)(params, tokens, cos, sin, mask)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    result = mc.compile(decoder_block.forward, backend=backend)(params, tokens, cos, sin, mask)
    assert result.dtype == expected.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


def test_decoder_training_gradients_match_the_tape(decoder):
    params, tokens, targets, cos, sin, mask = decoder
    expected = mc.grad(decoder_block.loss)(params, tokens, targets, cos, sin, mask)
    tensors = {k: ({kk: mc.Tensor(vv, requires_grad=True) for kk, vv in v.items()}
                   if isinstance(v, dict) else mc.Tensor(v, requires_grad=True)) for k, v in params.items()}
    loss = mc.compile(decoder_block.loss, backend="aot_eager")(tensors, tokens, targets, cos, sin, mask)
    loss.backward()
    np.testing.assert_allclose(tensors["embed"].grad, expected["embed"], rtol=1e-4, atol=1e-6)
    for name, grad in expected["layer1"].items():
        np.testing.assert_allclose(tensors["layer1"][name].grad, grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_mobilenet_v2_inference(backend):
    params, images = mobilenet_v2.init_params(), mobilenet_v2.example_images(1, 64)
    expected = mobilenet_v2.forward(params, images)
    explanation = mc.explain(mobilenet_v2.forward)(params, images)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    result = mc.compile(mobilenet_v2.forward, backend=backend)(params, images)
    np.testing.assert_allclose(result, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())


def test_mobilenet_v2_unfolded_batch_norm_compiles_to_the_folded_kernels():
    from minicompile.inductor.compile_fx import compile_graph

    images = mobilenet_v2.example_images(1, 32)
    kept = mobilenet_v2.freeze(mobilenet_v2.init_params(batch_norm=True))
    folded = mobilenet_v2.fold_batch_norm(kept)
    expected = mobilenet_v2.forward(kept, images)
    np.testing.assert_allclose(mobilenet_v2.forward(folded, images), expected, rtol=1e-4, atol=1e-4)
    compiled = {}

    def recording(name):
        def backend(graph, example_inputs):
            compiled[name] = compile_graph(graph, example_inputs)
            return compiled[name]
        return backend

    got = mc.compile(mobilenet_v2.forward, backend=recording("unfolded"), options={"freezing": True})(kept, images)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
    mc.compile(mobilenet_v2.forward, backend=recording("folded"))(folded, images)
    assert len(compiled["unfolded"].kernels) == len(compiled["folded"].kernels)
    assert "sqrt" not in [n.op.name for n in compiled["unfolded"].graph.calls]
