"""Loop nodes on CuPy arrays with the Triton backend (the H200): a host loop launches
the body's kernels with its carried values, index and examples on the device.

Before, a loop node on device arrays fell back to Python: the host loop made its
index and contiguous copies with NumPy, which CuPy refuses to convert implicitly.
Run on the GPU machine: ``python3 -m pytest tests/inductor/test_loops_gpu.py``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpu_device import cp, requires_gpu  # noqa: E402  (skips without CuPy and Triton)

pytestmark = requires_gpu

import minicompile as mc  # noqa: E402


def heat(u, steps):
    t = 0.0
    for i in range(steps):
        u = u + 0.1 * (cp.roll(u, 1) - 2 * u + cp.roll(u, -1)) * (1.0 - t)
        t += 0.001
    return u, t


class Simulation:
    def __init__(self):
        self.u, self.t = cp.linspace(0.0, 1.0, 1 << 16), 0.0

    def run(self, steps):
        for _ in range(steps):
            self.u = self.u * 0.999 + 0.001
            self.u[0] = 0.0
            self.t += 0.5
        return self.u


def test_a_loop_on_device_arrays_runs_its_kernels_on_the_device():
    compiled = mc.compile(heat, backend="triton")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to Python
        for steps in (100, 250, 400, 1000, 17, 3):
            u = cp.linspace(0.0, 1.0, 4096)
            (got, t), (want, t_want) = compiled(u.copy(), steps), heat(u.copy(), steps)
            assert type(got) is type(want) and type(t) is float and t == t_want
            np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=1e-12, atol=1e-12)
    assert len(compiled.cache) <= 3  # 100, then one symbolic count (3 unrolls: below the limit)


def test_a_method_stepping_device_attributes_is_one_loop_node():
    got_sim, want_sim = Simulation(), Simulation()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mc.compile(got_sim.run, backend="triton")(300)
    want = want_sim.run(300)
    assert got is got_sim.u and got_sim.t == want_sim.t
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=1e-12)


def recurrence(x):
    for i in range(1, x.shape[0]):
        x[i] = 0.5 * x[i - 1] + x[i]
    return x


def rows_normalized(x, out):
    for i in range(x.shape[0]):
        r = x[i]
        out[i] = (r - r.mean()) / (r.std() + 1e-6)
    return out


def rows_written_through(x):
    for i in range(x.shape[0]):
        row = x[i, :]
        row += 1.0
    return x


@pytest.mark.parametrize("fn, shapes", [(recurrence, [(300, 64)]), (rows_normalized, [(200, 256), (200, 256)]),
                                        (rows_written_through, [(100, 32)])], ids=lambda v: getattr(v, "__name__", ""))
def test_subscripts_at_the_loop_index_on_device_arrays(fn, shapes):
    """``x[i]``, ``out[i] = ...`` and a write through ``x[i, :]`` in a loop node's body,
    on CuPy arrays: the gather and the store at the index run on the device, and every
    argument ends as CuPy's eager code leaves it."""
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(s) for s in shapes]
    got, want = [cp.asarray(h) for h in host], [cp.asarray(h) for h in host]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mc.compile(fn, backend="triton")(*got)
    fn(*want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), cp.asnumpy(w), rtol=1e-9, atol=1e-12)


def relax_while(u, n):
    k = 0
    while k < n:
        u = 0.5 * u + 0.25 * (cp.roll(u, 1) + cp.roll(u, -1)) + k * 1e-6
        k += 1
    return u, k


def smooth_enumerated(x):
    u = cp.zeros(x.shape[1])
    prev = 0
    for i, row in enumerate(x, start=3):
        u = u + (i + prev) * 1e-3 * row
        prev = i
    return u, prev


@pytest.mark.parametrize("fn, args", [(relax_while, lambda: (cp.linspace(0.0, 1.0, 4096), 300)),
                                      (smooth_enumerated, lambda: (cp.asarray(np.random.default_rng(0)
                                                                              .standard_normal((200, 64))),))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_while_loops_and_carried_ints_on_device_arrays(fn, args):
    """A while loop on a counter and a for loop carrying ints (the count of
    enumerate(x, start), the index before): the ints' start values, made from
    Python values alone, go to the device; results match CuPy's eager code."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mc.compile(fn, backend="triton")(*args())
    want = fn(*args())
    assert got[1] == want[1] and type(got[1]) is int
    np.testing.assert_allclose(cp.asnumpy(got[0]), cp.asnumpy(want[0]), rtol=1e-9, atol=1e-12)


def trajectory(u, w):
    for t in range(200):
        u = np.tanh(u * w) + 0.5 * np.sin(u)
    return (u * u).sum()


def test_a_gradient_through_a_loop_on_device_arrays_is_a_reversed_loop():
    """Training through a loop node on the GPU: the forward keeps the carries' history on the
    device, the backward runs the body's joint graph in reverse, one Triton launch sequence
    per iteration; the gradient matches NumPy's central differences."""
    rng = np.random.default_rng(0)
    u, w = rng.uniform(-1, 1, 256), rng.uniform(0.5, 1.5, 256)
    U, W = mc.Tensor(cp.asarray(u), requires_grad=True), mc.Tensor(cp.asarray(w), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to Python
        loss = mc.compile(trajectory, backend="triton")(U, W)
        loss.backward()
    assert isinstance(W.grad, cp.ndarray)
    np.testing.assert_allclose(float(loss.data), trajectory(u, w), rtol=1e-10)
    eps = 1e-6
    for e in np.eye(256)[:6]:
        numeric = (trajectory(u, w + eps * e) - trajectory(u, w - eps * e)) / (2 * eps)
        np.testing.assert_allclose(float(cp.asnumpy(W.grad) @ e), numeric, rtol=1e-5, atol=1e-8)
