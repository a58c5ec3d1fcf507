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
    from minicompile.inductor.codegen.cpp.compile import compile_graph

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


# -- dynamic shapes: a varying batch (and sequence) keeps one compiled entry --------


def _symbolic_kernels(entry) -> bool:
    """The cpp entry compiled once with size arguments, not once per shape."""
    from minicompile.inductor.compiled import CompiledGraph

    compiled = entry.compiled
    return isinstance(compiled, CompiledGraph) and compiled.fallback_reason is None \
        and "const int64_t s0" in compiled.kernel_source


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_mobilenet_v2_dynamic_batch_compiles_twice(backend):
    params = mobilenet_v2.init_params()
    compiled = mc.compile(mobilenet_v2.forward, backend=backend)
    for batch in (1, 2, 3, 4, 5):
        images = mobilenet_v2.example_images(batch, 32, seed=batch)
        expected = mobilenet_v2.forward(params, images)
        result = compiled(params, images)
        assert result.shape == expected.shape and result.dtype == expected.dtype
        np.testing.assert_allclose(result, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
    assert len(compiled.cache) == 2
    dynamic = compiled.cache[-1]
    assert dynamic.compiled is not None and dynamic.capture.graph.is_dynamic  # a graph, not an eager run
    if backend == "cpp":
        assert _symbolic_kernels(dynamic)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
@pytest.mark.parametrize("varying", ["batch", "seq", "both"])
def test_decoder_dynamic_batch_and_sequence_compile_twice(backend, varying):
    cfg = decoder_block.Config()
    params = decoder_block.init_params(cfg)
    compiled = mc.compile(decoder_block.forward, backend=backend)
    sizes = {"batch": [(b, 8) for b in (1, 2, 3, 4, 5)], "seq": [(2, s) for s in (8, 12, 5, 16, 9)],
             "both": [(2, 8), (3, 12), (5, 6), (4, 16), (6, 9)]}[varying]
    for batch, seq in sizes:
        cos, sin = decoder_block.rotary_tables(decoder_block.Config(seq=seq))
        mask = decoder_block.causal_mask(decoder_block.Config(seq=seq))
        tokens = np.random.default_rng(batch * seq).integers(0, cfg.vocab, (batch, seq))
        expected = decoder_block.forward(params, tokens, cos, sin, mask)
        result = compiled(params, tokens, cos, sin, mask)
        assert result.shape == expected.shape and result.dtype == expected.dtype
        np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)
    assert len(compiled.cache) == 2
    dynamic = compiled.cache[-1]
    assert dynamic.compiled is not None and dynamic.capture.graph.is_dynamic
    if backend == "cpp":
        assert _symbolic_kernels(dynamic)
