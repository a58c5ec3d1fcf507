"""Compile time of the triton backend: repeated kernels compiled once, compiles spread over workers.

A model's layers generate the same kernel code again and again, on other
buffers: such a kernel is written once in the module and compiled, tuned and
launched as the first one (:meth:`TritonKernel.canonical`), within a graph and
across graphs of one process.  Before a graph's first call on the GPU, every
config autotuning will try is compiled on a pool of worker processes
(:mod:`minicompile.inductor.codegen.triton.workers`), which fill Triton's disk
cache.  The kernels run here in Triton's interpreter; compiling needs a GPU,
so the pool is checked for its protocol and its errors.
"""
from __future__ import annotations

import json
import types
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile import config  # noqa: E402
from minicompile.inductor.codegen.triton import runtime, workers  # noqa: E402
from minicompile.inductor.codegen.triton.compile import precompile_jobs  # noqa: E402


def block(x, w, b):
    return np.tanh(x @ w + b) * 0.5 + x


def three_blocks(x, w1, b1, w2, b2, w3, b3):
    return block(block(block(x, w1, b1), w2, b2), w3, b3)


def _weights(seed, n):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)).astype(np.float32) / n ** 0.5, rng.standard_normal(n).astype(np.float32)


def _args(rows=8, n=16):
    x = np.random.default_rng(9).standard_normal((rows, n)).astype(np.float32)
    return (x, *_weights(1, n), *_weights(2, n), *_weights(3, n))


def test_a_repeated_layer_is_written_and_launched_once():
    fn = mc.compile(three_blocks, backend="triton")
    args = _args()
    np.testing.assert_allclose(fn(*args), three_blocks(*args), rtol=1e-5, atol=1e-6)
    compiled = fn.cache[0].compiled
    kernels = list(compiled.module.kernels.values())
    firsts = [k for k in kernels if k.same_as is None]
    repeats = [k for k in kernels if k.same_as is not None]
    assert len(repeats) == 2 * len(firsts), [k.name for k in kernels]
    for k in repeats:
        assert f"def {k.name}(" not in compiled.kernel_source
        assert f"# {k.name}: the code of {k.same_as}" in compiled.kernel_source
        assert compiled.launchers[k.name] is compiled.launchers[k.same_as]
    assert compiled.kernel_source.count("\ndef g0_triton_") == len(firsts)


def test_kernels_of_the_same_code_share_one_compile_across_graphs():
    def g1(x, y):
        return np.exp(x) * y + 1.0

    def g2(a, b):
        return np.exp(a) * b + 1.0

    f1, f2 = mc.compile(g1, backend="triton"), mc.compile(g2, backend="triton")
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    np.testing.assert_array_equal(f1(x, 3 * x), g1(x, 3 * x))
    np.testing.assert_array_equal(f2(x, 2 * x), g2(x, 2 * x))
    (l1,) = f1.cache[0].compiled.launchers.values()
    (l2,) = f2.cache[0].compiled.launchers.values()
    assert l1.kernel.name == l2.kernel.name and l1.shared is l2.shared and l1.fn is l2.fn


def negate_around_a_sum(a, c, b):
    return a + a, c.sum(), b + b  # the sum between keeps the two additions in kernels of their own


def test_the_same_code_on_other_dtypes_is_another_kernel():
    """Triton types a kernel by its pointers: ``a + a`` on int64 and on float32 is the
    same text but two binaries (launching the int64 binary on float32 data would
    be a wrong answer on the GPU; the interpreter specializes every call itself)."""
    ints, floats, ones = np.arange(5, dtype=np.int64), np.linspace(-1, 1, 5, dtype=np.float32), np.ones(3)
    fn = mc.compile(negate_around_a_sum, backend="triton")
    for got, expected in zip(fn(ints, ones, floats), negate_around_a_sum(ints, ones, floats)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    compiled = fn.cache[0].compiled
    first, _, last = compiled.module.kernels.values()
    assert replace(first, dtypes=()).canonical() == replace(last, dtypes=()).canonical()  # but for dtypes
    assert first.dtypes != last.dtypes and last.same_as is None
    assert compiled.launchers[last.name].shared is not compiled.launchers[first.name].shared
    # The same two kernels with the dtypes swapped, in another graph: each shares
    # the binary of the first graph's kernel of its own dtypes.
    again = mc.compile(negate_around_a_sum, backend="triton")
    again(floats, ones, ints)
    swapped = list(again.cache[0].compiled.launchers.values())
    assert swapped[0].shared is compiled.launchers[last.name].shared
    assert swapped[-1].shared is compiled.launchers[first.name].shared


def test_canonical_code_ignores_names_but_not_constants():
    def kernel(name, param, scale):
        source = (f"@triton.jit\ndef {name}(in_{param}, out_r, XBLOCK: tl.constexpr):\n"
                  f"    tmp0 = tl.load(in_{param} + xindex)\n    tl.store(out_r + xindex, tmp0 * {scale})")
        return runtime.TritonKernel(name, "pointwise", [param, "r"], ("flat", 8, "XBLOCK"),
                                    [dict(XBLOCK=8)], source, ["r"])

    assert kernel("k_0", "a", 2.0).canonical() == kernel("k_7", "mul_3", 2.0).canonical()
    assert kernel("k_0", "a", 2.0).canonical() != kernel("k_0", "a", 3.0).canonical()


class _DeviceArray:
    """What precompile_jobs reads of a CuPy input: its address and shape."""

    def __init__(self, ptr, shape):
        self.data = types.SimpleNamespace(ptr=ptr)
        self.shape = shape


def test_precompile_plans_each_distinct_kernel_and_config_once(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    fn = mc.compile(three_blocks, backend="triton")
    args = _args(128, 128)  # large enough for several matmul tilings to be worth trying
    fn(*args)
    compiled = fn.cache[0].compiled
    firsts = [k for k in compiled.module.kernels.values() if k.same_as is None]
    # The first input sits 4 bytes off a 16-byte boundary; the others are aligned.
    inputs = [_DeviceArray(4 if i == 0 else 256 * i, a.shape) for i, a in enumerate(args)]
    monkeypatch.setattr(runtime, "device_name", lambda: "test GPU")
    jobs = precompile_jobs(compiled.scheduled, compiled.module, compiled.launchers, "m.py", inputs)
    assert {j.kernel for j in jobs} == {k.name for k in firsts}
    assert len(jobs) == sum(len(k.configs) for k in firsts)
    x_name = compiled.scheduled.inputs[0].name
    for job in jobs:
        k = compiled.module.kernels[[i for i, kk in compiled.module.kernels.items() if kk.name == job.kernel][0]]
        assert [aligned for _, aligned in job.pointers] == [b != x_name for b in k.params]
        assert all(dtype == "float32" for dtype, _ in job.pointers)
    # A job a worker of an earlier process compiled is not planned again.
    marker = workers._marker(jobs[0])
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    assert jobs[0] not in precompile_jobs(compiled.scheduled, compiled.module, compiled.launchers, "m.py", inputs)
    # A winner remembered on disk for one kernel: only that config is compiled.
    k = next(k for k in firsts if len(k.configs) > 1)
    path = runtime._cache_file(k)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"best": k.configs[-1]}))
    again = precompile_jobs(compiled.scheduled, compiled.module, compiled.launchers, "m.py", inputs)
    assert [dict(j.options) for j in again if j.kernel == k.name] == [k.configs[-1]]


def test_worker_pool_reports_each_job_and_replaces_a_dead_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "triton_compile_workers", 2)
    # A module of plain functions: the protocol, not Triton, is under test (compiling
    # needs a GPU; here every job reports its error, none is raised).
    module = tmp_path / "kernels.py"
    module.write_text("def k(x_ptr):\n    pass\n")
    jobs = [workers.Job(str(module), name, (("float32", True),), (), 1, (("XBLOCK", 16 * i),))
            for i, name in enumerate(["k", "missing", "k"], start=1)]
    jobs.append(workers.Job(str(tmp_path / "nowhere.py"), "k", (), (), 1, ()))
    results = workers.precompile(jobs)
    assert set(results) == set(jobs)
    assert "has no attribute 'missing'" in results[jobs[1]] and "No such file" in results[jobs[3]]
    assert "has no attribute 'warmup'" in results[jobs[0]]  # k is no Triton kernel
    for w in workers._pool:
        w.process.kill()
        w.process.wait()
    assert set(workers.precompile(jobs[:2])) == set(jobs[:2])  # new workers took over
    workers.shutdown()
    assert workers._pool == []
