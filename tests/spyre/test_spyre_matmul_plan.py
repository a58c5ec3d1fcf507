"""The hand-written matmul planner: right values for any shape, plans that fit.

Shapes come from hypothesis and include ones that divide neither across the
32 cores nor into tiles; values are compared with NumPy in fp32 (fp16 in,
fp32 accumulation, so only summation order differs)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicompile.spyre import (Matmul, RingRecv, RingSend, SpyreConfig, simulate)
from minicompile.spyre.matmul_plan import MatmulTiling, choose_tiling, plan_matmul, working_set


def run_matmul(M, N, K, seed=0, **options):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    program = plan_matmul(M, N, K, **options)
    out, report = simulate(program, {"A": A, "B": B})
    return program, out["C"], A.astype(np.float32) @ B.astype(np.float32), report


def assert_close(C, ref, out_dtype):
    if out_dtype == "fp32":
        np.testing.assert_allclose(C, ref, rtol=1e-4, atol=1e-3 * np.sqrt(ref.shape[0]))
    else:  # rounding the fp32 result to fp16: half an fp16 ulp
        np.testing.assert_allclose(C.astype(np.float32), ref, rtol=2 ** -10, atol=1e-3)


dims = st.integers(1, 140)


@settings(max_examples=30, deadline=None)
@given(M=dims, N=dims, K=dims, out_dtype=st.sampled_from(["fp32", "fp16"]),
       double_buffer=st.booleans())
def test_matches_numpy(M, N, K, out_dtype, double_buffer):
    program, C, ref, _ = run_matmul(M, N, K, out_dtype=out_dtype, double_buffer=double_buffer)
    assert C.dtype == (np.float32 if out_dtype == "fp32" else np.float16)
    assert_close(C, ref, out_dtype)


@settings(max_examples=15, deadline=None)
@given(M=st.integers(1, 70), N=st.integers(1, 70), K=st.integers(16, 300),
       split_k=st.sampled_from([2, 3, 4, 8]), cores=st.sampled_from([3, 5, 32]))
def test_split_k_over_the_ring_matches_numpy(M, N, K, split_k, cores):
    cfg = SpyreConfig(cores=cores)
    t = MatmulTiling(32, 32, 16, split_k)
    program, C, ref, report = run_matmul(M, N, K, config=cfg, tiling=t)
    assert_close(C, ref, "fp32")
    sends = [i for core in program.cores for i in core if isinstance(i, RingSend)]
    recvs = [i for core in program.cores for i in core if isinstance(i, RingRecv)]
    tiles = -(-M // 32) * -(-N // 32)
    members = min(split_k, -(-K // 16), cores)  # at most one member per K chunk and core
    assert len(sends) == len(recvs) == tiles * (members - 1)  # a tree: one message per member
    assert (report.max_ring_utilization > 0) == (members > 1)


@pytest.mark.parametrize("M,N,K", [(256, 256, 256), (33, 250, 129), (1, 1, 1), (7, 300, 5)])
def test_fixed_shapes(M, N, K):
    _, C, ref, report = run_matmul(M, N, K)
    assert_close(C, ref, "fp32")
    assert report.matrix_utilization <= 1.0


def test_output_tiles_spread_over_cores_first():
    """With enough output tiles for every core, cores never talk to each other."""
    program = plan_matmul(1024, 1024, 256)  # 32 output tiles or more: no need to split K
    busy = [c for c, instructions in enumerate(program.cores) if instructions]
    assert len(busy) == 32
    assert not any(isinstance(i, RingSend) for core in program.cores for i in core)


def test_few_output_tiles_split_k_across_cores():
    """One 64x64 output, a long K: only splitting K keeps the cores busy."""
    t = choose_tiling(64, 64, 8192, SpyreConfig())
    assert t.split_k >= 16, t
    program = plan_matmul(64, 64, 8192)
    assert sum(bool(core) for core in program.cores) >= 16
    _, split = simulate(program, functional=False)
    _, alone = simulate(plan_matmul(64, 64, 8192, split_k=1), functional=False)
    assert split.total_cycles * 2 < alone.total_cycles


@pytest.mark.parametrize("double_buffer", [True, False])
def test_chosen_tiling_fits_the_scratchpad(double_buffer):
    cfg = SpyreConfig()
    for shape in [(4096, 4096, 4096), (100, 5000, 3000), (8, 8, 100000)]:
        t = choose_tiling(*shape, cfg, "fp16", double_buffer)
        assert working_set(t, "fp16", double_buffer) <= cfg.scratchpad_usable_bytes
        program = plan_matmul(*shape, out_dtype="fp16", double_buffer=double_buffer)
        _, report = simulate(program, functional=False)
        assert max(report.scratchpad_high_water) <= cfg.scratchpad_usable_bytes


def test_double_buffering_alternates_buffers():
    program = plan_matmul(64, 64, 512, config=SpyreConfig(cores=1),
                          tiling=MatmulTiling(64, 64, 64))
    operands = [i.a.buffer for i in program.cores[0] if isinstance(i, Matmul)]
    assert operands == ["a0", "a1"] * 4
    single = plan_matmul(64, 64, 512, config=SpyreConfig(cores=1),
                         tiling=MatmulTiling(64, 64, 64), double_buffer=False)
    assert {i.a.buffer for i in single.cores[0] if isinstance(i, Matmul)} == {"a0"}
