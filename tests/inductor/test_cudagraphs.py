"""``mode="reduce-overhead"``: what a caller sees when calls replay from CUDA graphs.

The recording logic (which inputs are read in place and which copied in, what
is handed out, when a signature records anew or runs plainly) runs here on the
CPU over the CuPy double.  Stream capture itself needs a GPU, so it is replaced
by a model of what a CUDA graph does: a replay reruns the recorded call on the
*recorded* input buffers and writes the *recorded* output buffers.  A runner
that read a caller's new array instead of copying it in, or handed out a buffer
a later replay overwrites, gives wrong numbers under this model as it would on
the GPU.  tests/inductor/test_triton_gpu.py runs the real capture on the H200.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.inductor.codegen.triton import cudagraphs


@pytest.fixture
def graphs(fake_cupy, monkeypatch):
    """The CuPy double, with captures modelled (see the module docstring)."""
    cp = fake_cupy.module
    peek = fake_cupy.peek
    captured = []

    def capture(compiled, inputs):
        outputs = compiled(*inputs)

        def launch():
            for buffer, new in zip(outputs, compiled(*inputs)):
                if cudagraphs.runtime.is_cupy(buffer):
                    np.copyto(peek(buffer), peek(new))
        captured.append(inputs)
        return launch, outputs, None

    monkeypatch.setattr(cudagraphs, "_capture", capture)
    monkeypatch.setattr(cudagraphs, "_buffer_like", lambda x: cp.asarray(np.empty_like(peek(x))))
    monkeypatch.setattr(cudagraphs, "_copy_in", lambda dst, src: np.copyto(peek(dst), peek(src)))
    monkeypatch.setattr(cudagraphs, "_same_memory", lambda a, b: np.shares_memory(peek(a), peek(b)))
    monkeypatch.setattr(cudagraphs, "_after", lambda previous: None)  # one host thread: in order
    monkeypatch.setattr(cudagraphs, "_mark", lambda event: None)
    monkeypatch.setattr(cudagraphs, "_copy_out", lambda buffer: cp.asarray(peek(buffer).copy()))
    return cp, peek, captured


def _runner(fn):
    (entry,) = fn.cache
    return entry.compiled


def test_results_kept_across_calls_are_never_overwritten(graphs):
    cp, peek, captured = graphs
    fn = mc.compile(lambda w, x: (x @ w + 1.0, (x * 2).sum()), backend="eager", mode="reduce-overhead")
    w = cp.asarray(np.arange(12.0).reshape(3, 4))
    results = []
    for k in range(5):
        x = cp.asarray(np.full((2, 3), float(k)))
        results.append((fn(w, x), k))
    for (got, k) in results:  # each result still holds its own call's values
        x = np.full((2, 3), float(k))
        np.testing.assert_array_equal(peek(got[0]), x @ peek(w) + 1.0)
        assert float(peek(got[1])) == (x * 2).sum()
    runner = _runner(fn)
    assert isinstance(runner, cudagraphs.CUDAGraphRunner)
    assert len(captured) == 1 and runner.replays == 4  # a warm-up, then one recording replayed


def test_weights_read_in_place_activations_copied_in(graphs):
    cp, peek, captured = graphs
    fn = mc.compile(lambda w, x: x * w, backend="eager", mode="reduce-overhead")
    w = cp.asarray(np.ones(4))
    for k in range(3):
        x = cp.asarray(np.full(4, float(k + 1)))
        np.testing.assert_array_equal(peek(fn(w, x)), np.full(4, float(k + 1)))
    (recording,) = _runner(fn).recordings.popitem()[1]
    assert len(recording.copied) == 1 and any(buffer is w for buffer in recording.inputs)
    peek(w)[:] = 5.0  # a weight updated in place between calls is read live
    np.testing.assert_array_equal(peek(fn(w, cp.asarray(np.full(4, 2.0)))), np.full(4, 10.0))


def test_the_last_replays_arguments_again_skip_the_lookup(graphs, monkeypatch):
    """The same weights with a new activation of the same signature replay without the
    signature lookup; a new size (a dynamic graph lets it through its guards) does not."""
    cp, peek, captured = graphs
    fn = mc.compile(lambda w, x: x @ w, backend="eager", mode="reduce-overhead", dynamic=True)
    w = cp.asarray(np.arange(6.0).reshape(3, 2))
    fn(w, cp.asarray(np.ones((4, 3)))), fn(w, cp.asarray(np.ones((4, 3))))  # a warm-up, a recording
    runner = _runner(fn)
    lookups = []
    slow = runner._call
    monkeypatch.setattr(runner, "_call", lambda inputs: lookups.append(inputs) or slow(inputs))
    for k in range(3):
        x = cp.asarray(np.full((4, 3), float(k)))
        np.testing.assert_array_equal(peek(fn(w, x)), peek(x) @ peek(w))
    assert not lookups and runner.replays == 4
    x = cp.asarray(np.full((5, 3), 2.0))  # a new size: looked up, warmed up, computed right
    np.testing.assert_array_equal(peek(fn(w, x)), peek(x) @ peek(w))
    assert len(lookups) == 1


def test_a_weight_replaced_by_another_array_records_anew(graphs):
    cp, peek, captured = graphs
    fn = mc.compile(lambda w, x: x + w, backend="eager", mode="reduce-overhead")
    w1, x = cp.asarray(np.ones(3)), cp.asarray(np.zeros(3))
    fn(w1, x), fn(w1, x)
    w2 = cp.asarray(np.full(3, 7.0))
    np.testing.assert_array_equal(peek(fn(w2, x)), np.full(3, 7.0))
    np.testing.assert_array_equal(peek(fn(cp.asarray(np.full(3, 3.0)), x)), np.full(3, 3.0))
    assert len(captured) == 2  # the second recording copies w in, so a third array needs none


def test_a_new_size_warms_up_and_records_its_own_graph(graphs):
    cp, peek, captured = graphs
    fn = mc.compile(lambda x: np.tanh(x) * 2, backend="eager", mode="reduce-overhead", dynamic=False)
    for n in (3, 3, 3, 5, 5, 5):
        x = cp.asarray(np.linspace(-1, 1, n))
        np.testing.assert_allclose(peek(fn(x)), np.tanh(np.linspace(-1, 1, n)) * 2)
    assert len(captured) == 2


def test_mutated_arguments_and_returned_inputs_are_the_callers(graphs):
    cp, peek, captured = graphs

    def step(p, g, lr):
        p -= lr * g
        return p, g

    fn = mc.compile(step, backend="eager", mode="reduce-overhead")
    p, g = cp.asarray(np.zeros(4)), cp.asarray(np.ones(4))
    expected = np.zeros(4)
    for k in range(4):
        g = cp.asarray(np.full(4, float(k)))
        got_p, got_g = fn(p, g, 0.5)
        expected -= 0.5 * k
        assert got_p is p and got_g is g
        np.testing.assert_array_equal(peek(p), expected)


def test_a_returned_view_of_an_argument_views_the_callers_array(graphs):
    cp, peek, captured = graphs
    fn = mc.compile(lambda x: (x * 2, x[1:], x.T), backend="eager", mode="reduce-overhead")
    for k in range(3):
        x = cp.asarray(np.full((2, 3), float(k)))
        doubled, tail, transposed = fn(x)
        np.testing.assert_array_equal(peek(doubled), np.full((2, 3), 2.0 * k))
        assert np.shares_memory(peek(tail), peek(x)) and np.shares_memory(peek(transposed), peek(x))


def test_a_call_that_cannot_be_captured_runs_plainly_with_one_warning(graphs, monkeypatch):
    cp, peek, captured = graphs

    def refuse(compiled, inputs):
        raise RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing")

    monkeypatch.setattr(cudagraphs, "_capture", refuse)
    fn = mc.compile(lambda x: x * 3, backend="eager", mode="reduce-overhead")
    with pytest.warns(UserWarning, match="minicompile: .*without CUDA graphs.*StreamCaptureUnsupported") as record:
        for k in range(4):
            np.testing.assert_array_equal(peek(fn(cp.asarray(np.full(2, float(k))))), np.full(2, 3.0 * k))
    assert len(record) == 1 and _runner(fn).replays == 0


def test_numpy_inputs_compile_as_without_the_mode():
    fn = mc.compile(lambda x: np.tanh(x) + 1, backend="eager", mode="reduce-overhead")
    x = np.linspace(-2, 2, 7)
    np.testing.assert_array_equal(fn(x), np.tanh(x) + 1)
    assert not isinstance(fn.cache[0].compiled, cudagraphs.CUDAGraphRunner)


def test_modes_are_checked():
    with pytest.raises(ValueError, match="unknown mode 'max-autotune'"):
        mc.compile(lambda x: x, mode="max-autotune")
    with pytest.raises(ValueError, match="not both"):
        mc.compile(lambda x: x, mode="reduce-overhead", options={"mode": "default"})
    fn = mc.compile(lambda x: x + 1, options={"mode": "reduce-overhead"}, backend="eager")
    np.testing.assert_array_equal(fn(np.zeros(2)), np.ones(2))


def test_training_steps_replay_forward_and_backward(graphs):
    """Each forward and backward graph records once; the saved activations of one
    step are the step's own (copied out), so gradients equal NumPy's every step."""
    cp, peek, captured = graphs
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 2))
    loss = mc.compile(lambda w, x: (np.tanh(x @ w) ** 2).sum(), backend="eager", mode="reduce-overhead")
    w_host, w = w0.copy(), mc.Tensor(cp.asarray(w0.copy()), requires_grad=True)
    for step in range(4):
        x = rng.standard_normal((5, 3))
        w.grad = None
        value = loss(w, cp.asarray(x))
        value.backward()
        t = np.tanh(x @ w_host)
        expected_grad = x.T @ (2 * t * (1 - t * t))
        np.testing.assert_allclose(float(peek(value.data)), (t ** 2).sum(), rtol=1e-12)
        np.testing.assert_allclose(peek(w.grad), expected_grad, rtol=1e-12)
        w_host -= 0.1 * expected_grad
        w = mc.Tensor(cp.asarray(w_host.copy()), requires_grad=True)
    assert len(captured) == 2  # the forward's and the backward's


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["same", "new", "mutated", "resized"]),
                          st.sampled_from(["same", "new", "mutated"]), st.booleans()),
                min_size=1, max_size=8), st.booleans())
def test_any_sequence_of_calls_matches_eager(graphs, calls, dynamic):
    """Calls that keep or replace or mutate each argument between calls, change a
    size, keep results or not: every result equals NumPy's at its call, and every
    kept result still does after the last call (a replay never overwrites one).
    Dynamic or not: a dynamic graph's guards let a new size through to the same
    runner, whose fast path (the last replay's arguments again) must notice it."""
    cp, peek, captured = graphs

    def f(w, x):
        return np.tanh(x @ w) + w.sum(), x * 2

    fn = mc.compile(f, backend="eager", mode="reduce-overhead", dynamic=dynamic)
    rng = np.random.default_rng(len(calls))
    w, x = cp.asarray(rng.standard_normal((3, 2))), cp.asarray(rng.standard_normal((4, 3)))
    kept = []
    for w_how, x_how, keep in calls:
        if w_how == "new":
            w = cp.asarray(rng.standard_normal((3, 2)))
        elif w_how == "mutated":
            peek(w)[...] = rng.standard_normal((3, 2))
        elif w_how == "resized":
            x = cp.asarray(rng.standard_normal((5, 3)))
        if x_how == "new":
            x = cp.asarray(rng.standard_normal(peek(x).shape))
        elif x_how == "mutated":
            peek(x)[...] = rng.standard_normal(peek(x).shape)
        expected = f(peek(w).copy(), peek(x).copy())
        got = fn(w, x)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(peek(g), e, rtol=1e-12, atol=1e-12)
        if keep:
            kept.append((got, expected))
    for got, expected in kept:
        for g, e in zip(got, expected):
            np.testing.assert_allclose(peek(g), e, rtol=1e-12, atol=1e-12)


def test_a_profile_shows_each_replay_on_the_host_and_on_the_gpu(graphs):
    cp, peek, captured = graphs
    fn = mc.compile(lambda w, x: x @ w + 1.0, backend="eager", mode="reduce-overhead")
    w, x = cp.asarray(np.ones((3, 4))), cp.asarray(np.ones((2, 3)))
    for _ in range(3):  # a warm-up, a recording, a replay
        fn(w, x)
    runner = _runner(fn)
    with mc.profile() as prof:
        for _ in range(4):
            fn(w, x)
    replays = [(e.cat, e.track) for e in prof.events if e.name == "CUDA graph replay"]
    assert replays.count(("kernel", 0)) == 4 and replays.count(("device", 3)) == 4
    assert "_replay" not in vars(runner)  # the method is the class's again
    assert runner.replays == 6 and "GPU busy" in prof.table()  # the recording call replays too
