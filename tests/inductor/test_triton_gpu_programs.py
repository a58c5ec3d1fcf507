"""Whole programs on the GPU: the op-info table, gathers and the decoder on CuPy arrays.

Skipped unless CuPy sees a CUDA device and Triton is installed.  The oracle is
CuPy eager: the same NumPy code given CuPy arrays (NumPy hands every call to
CuPy), so compiled equals eager includes CuPy's own conventions (0-d arrays for
scalars, gathers that wrap an index out of range).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_device import HAVE_GPU, cp, requires_gpu  # noqa: E402  (skips without CuPy and Triton)

pytestmark = requires_gpu

import minicompile as mc  # noqa: E402
from device_results import check_batch_on_device, with_known_divergences  # noqa: E402
from minicompile.examples import decoder_block as D  # noqa: E402


def _opinfo():
    spec = importlib.util.spec_from_file_location("opinfo", Path(__file__).parents[1] / "ir" / "test_opinfo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["opinfo"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


OPINFO = _opinfo() if HAVE_GPU else None
# Every eighth code form of the op-info table (each batch is one graph over all its
# dtypes, shapes and layouts): the table's reach at an eighth of its compile time.
# MINICOMPILE_GPU_OPINFO_FROM=k starts at the k-th form (another eighth).
BATCHES = OPINFO.CPP_BATCHES[int(os.environ.get("MINICOMPILE_GPU_OPINFO_FROM", 0))::8] if OPINFO else []
PARAMS = with_known_divergences(BATCHES)


@pytest.mark.parametrize("batch", PARAMS, ids=[b.id for b in BATCHES])
def test_opinfo_on_cupy_matches_cupy_eager(batch):
    check_batch_on_device(batch, cp, "triton", OPINFO)


def test_gathers_on_the_gpu_wrap_as_cupy_does():
    def f(table, tokens, pos):
        return table[tokens] + pos, np.take(table, tokens[0], axis=0) * 2

    table = cp.asarray(np.random.default_rng(0).standard_normal((100, 64)).astype(np.float32))
    tokens = cp.asarray([[3, -1, 99, 120], [0, 7, 7, -100]])  # 120 is out of range: CuPy wraps it
    pos = cp.ones((4, 64), cp.float32)
    fn = mc.compile(f, backend="triton")
    for got, expected in zip(fn(table, tokens, pos), f(table, tokens, pos)):
        cp.testing.assert_array_equal(got, expected)
    assert "extern" not in fn.cache[0].compiled.schedule


def test_decoder_from_token_ids_is_one_graph_on_the_gpu():
    cfg = D.Config()
    params = {k: ({kk: cp.asarray(vv) for kk, vv in v.items()} if isinstance(v, dict) else cp.asarray(v))
              for k, v in D.init_params(cfg).items()}
    cos, sin = (cp.asarray(t) for t in D.rotary_tables(cfg))
    tokens, _ = D.synthetic_tokens(cfg, 2)
    args = (params, cp.asarray(tokens), cos, sin, cp.asarray(D.causal_mask(cfg)), cfg.heads, cfg.layers)
    got = mc.compile(D.forward, backend="triton")(*args)
    assert isinstance(got, cp.ndarray)
    cp.testing.assert_allclose(got, D.forward(*args), rtol=1e-4, atol=1e-4)
    explained = mc.explain(D.forward)(*args)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
