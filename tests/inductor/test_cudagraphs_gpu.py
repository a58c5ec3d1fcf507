"""``mode="reduce-overhead"`` on the GPU: real stream capture and replay of CUDA graphs.

Skipped unless CuPy sees a CUDA device and Triton is installed.  The recording
logic itself is tested on the CPU in tests/inductor/test_cudagraphs.py; here the
driver captures Triton launches, CuPy externs and cuBLAS, and the results are
compared with the same compiled function launched kernel by kernel.
"""
from __future__ import annotations

import numpy as np
import pytest

from gpu_device import cp, requires_gpu  # noqa: E402  (skips without CuPy and Triton)

pytestmark = requires_gpu

import minicompile as mc  # noqa: E402
from minicompile.examples import decoder_block as D  # noqa: E402
from minicompile.inductor.codegen.triton.cudagraphs import CUDAGraphRunner  # noqa: E402


def _decoder_args(cfg, tokens):
    params = {k: ({kk: cp.asarray(vv) for kk, vv in v.items()} if isinstance(v, dict) else cp.asarray(v))
              for k, v in D.init_params(cfg).items()}
    cos, sin = (cp.asarray(t) for t in D.rotary_tables(cfg))
    return params, (cp.asarray(tokens), cos, sin, cp.asarray(D.causal_mask(cfg)), cfg.heads, cfg.layers)


def test_decoder_replays_and_every_kept_result_stays_its_own():
    cfg = D.Config(seq=8)
    params, (tokens, *rest) = _decoder_args(cfg, D.synthetic_tokens(cfg, 1)[0])
    plain = mc.compile(D.forward, backend="triton")
    graphed = mc.compile(D.forward, backend="triton", mode="reduce-overhead")
    rng = np.random.default_rng(0)
    kept = []
    for _ in range(6):
        t = cp.asarray(rng.integers(0, cfg.vocab, tokens.shape))  # a new array each call: copied in
        kept.append((graphed(params, t, *rest), plain(params, t, *rest)))
    for got, expected in kept:
        cp.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    runner = graphed.cache[0].compiled
    assert isinstance(runner, CUDAGraphRunner) and runner.replays == 5


def test_weights_updated_in_place_are_read_live():
    fn = mc.compile(lambda w, x: np.tanh(x @ w).sum(axis=1), backend="triton", mode="reduce-overhead")
    w, x = cp.ones((16, 8), cp.float32), cp.ones((4, 16), cp.float32)
    for k in range(4):
        w *= 0.5  # in place, between calls
        cp.testing.assert_allclose(fn(w, x), np.tanh(x @ w).sum(axis=1), rtol=1e-6)


def test_training_steps_on_the_gpu_follow_the_plain_compile():
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((32, 8)).astype(np.float32)
    xs = [cp.asarray(rng.standard_normal((16, 32)).astype(np.float32)) for _ in range(4)]
    runs = []
    for mode in ("default", "reduce-overhead"):
        loss = mc.compile(lambda w, x: (np.tanh(x @ w) ** 2).mean(), backend="triton", mode=mode)
        w = cp.asarray(w0)
        values = []
        for x in xs:
            t = mc.Tensor(w, requires_grad=True)
            value = loss(t, x)
            value.backward()
            w = w - 0.5 * t.grad
            values.append(float(value.data))
        runs.append((values, w))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-6)
    cp.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-6)


def test_a_call_that_reads_back_to_the_host_runs_plainly_with_one_warning():
    """A copy to the host synchronizes, which the driver refuses in a capture."""
    def compiled(x):
        return (x * float(x.sum().get()),)  # reads a value back to the host

    runner = CUDAGraphRunner(compiled)
    with pytest.warns(UserWarning, match="without CUDA graphs") as record:
        for k in range(4):
            x = cp.full(3, float(k))
            cp.testing.assert_array_equal(runner(x)[0], x * float(3 * k))
    assert len(record) == 1 and runner.replays == 0 and runner.plain
    cp.testing.assert_array_equal(cp.ones(2) + 1, cp.full(2, 2.0))  # the device works on


def test_attention_matmuls_are_templates_so_the_decoder_is_captured():
    cfg = D.Config(seq=8)
    params, args = _decoder_args(cfg, D.synthetic_tokens(cfg, 1)[0])
    fn = mc.compile(D.forward, backend="triton", mode="reduce-overhead")
    for _ in range(3):
        fn(params, *args)
    runner = fn.cache[0].compiled
    assert not runner.plain and runner.replays == 2  # the recording's call and the third

    assert not [line for line in runner.schedule.splitlines() if line.startswith("extern matmul")]


def test_threads_on_their_own_streams_never_share_a_replay():
    """Replays write one set of buffers: each waits for the previous one's event,
    whichever thread's stream it ran on."""
    import threading

    fn = mc.compile(lambda w, x: np.tanh(x @ w) * 2, backend="triton", mode="reduce-overhead")
    w = cp.asarray(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        with cp.cuda.Stream(non_blocking=True):
            for _ in range(25):
                x = cp.asarray(rng.standard_normal((32, 64)).astype(np.float32))
                got = fn(w, x)
                if not cp.allclose(got, np.tanh(x @ w) * 2, rtol=1e-4, atol=1e-5):
                    failures.append(seed)
    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
