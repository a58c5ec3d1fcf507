"""``make bench``, section "loops": time-stepping NumPy programs, one loop node each.

In:  the programs below — a heat-diffusion stencil stepped 1,000 times, a
     1-D wave equation (rotating three buffers), a forced wave keeping a clock
     (a Python float the loop carries) and a Mandelbrot set (complex
     ``z = z*z + c`` and an escape count) — in plain NumPy.
Out: a table (NumPy vs minicompile's C++ backend, median of repeated runs
     after warm-up) with compile times, and the same numbers as dicts.

The compile time is the first call's minus a warm call's, for the same
program stepped 100 and 1,000 times: the loop's body is traced and compiled
once, so the two should match (an unrolled loop grows with the step count).
The Mandelbrot set's escape counts must equal NumPy's exactly: its complex
product and sum are NumPy's own formulas in the C++ kernel.  The C++ loop calls each kernel, an OpenMP
parallel region, once per step: on a machine busier than its cores, OpenMP's
spinning threads cost more than the step (``OMP_WAIT_POLICY=passive`` or
``MINICOMPILE_NUM_THREADS=1`` avoid it).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

import minicompile as mc

from .timing import run_times


def heat(u, steps):
    for t in range(steps):
        un = u.copy()
        u[1:-1, 1:-1] = un[1:-1, 1:-1] + 0.1 * (un[2:, 1:-1] + un[:-2, 1:-1] + un[1:-1, 2:]
                                                + un[1:-1, :-2] - 4 * un[1:-1, 1:-1])
    return u


def wave(u, steps):
    prev = u.copy()
    for t in range(steps):
        nxt = 2 * u - prev
        nxt[1:-1] += 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        prev, u = u, nxt
    return u


def forced_wave(u, steps):
    """A damped wave driven at one end, with a clock: the Python float ``t`` the loop
    carries (``t += dt``) as a value of the loop node."""
    v = np.zeros_like(u)
    t, dt = 0.0, 0.05
    for _ in range(steps):
        v = 0.999 * v + dt * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
        v[0] = np.sin(t)
        u = u + dt * v
        t += dt
    return u


def mandelbrot(c, steps):
    z = np.zeros_like(c)
    count = np.zeros(c.shape, np.int64)
    for t in range(steps):
        z = z * z + c
        count += np.abs(z) <= 2.0
    return count


def _programs(quick: bool) -> list[tuple[str, Any, Any]]:
    side, length, plane = (96, 1 << 13, 64) if quick else (256, 1 << 16, 256)
    grid = np.zeros((side, side))
    grid[side // 4: side // 2, side // 4: side // 2] = 1.0
    line = np.sin(np.linspace(0, 8 * np.pi, length))
    re, im = np.meshgrid(np.linspace(-2.0, 0.6, plane), np.linspace(-1.2, 1.2, plane))
    return [("heat 2-D stencil", heat, grid), ("wave 1-D", wave, line), ("forced wave, clock", forced_wave, line),
            ("mandelbrot", mandelbrot, re + 1j * im)]


def _first_call(fn, u, steps) -> float:
    mc.reset()
    compiled = mc.compile(fn, backend="cpp")
    start = time.perf_counter()
    compiled(u.copy(), steps)
    first = time.perf_counter() - start
    start = time.perf_counter()
    compiled(u.copy(), steps)
    return first - (time.perf_counter() - start)


def main(quick: bool = False) -> list[dict[str, Any]]:
    print("loops: one loop node per program (C++ backend)")
    header = f"{'program':<20}{'steps':>7}{'numpy':>11}{'mc':>11}{'speedup':>9}{'compile@100':>13}{'compile@1000':>14}"
    print(header)
    rows = []
    budget = 0.5 if quick else 2.0
    for name, fn, u in _programs(quick):
        steps = 1000
        compiled = mc.compile(fn, backend="cpp")
        with np.errstate(all="ignore"):  # the Mandelbrot set's outside overflows to inf and NaN
            np.testing.assert_allclose(compiled(u.copy(), steps), fn(u.copy(), steps), rtol=1e-9, atol=1e-9)
            # NumPy takes seconds per run here: few runs, one warm-up
            t_np, _ = run_times(lambda: fn(u.copy(), steps), warmup=1, min_runs=3, budget_s=budget)
            t_mc, _ = run_times(lambda: compiled(u.copy(), steps), warmup=1, min_runs=3, budget_s=budget)
            c100, c1000 = _first_call(fn, u, 100), _first_call(fn, u, steps)
        rows.append(dict(workload=name, steps=steps, numpy_s=t_np, minicompile_s=t_mc,
                         speedup_over_numpy=t_np / t_mc, compile_100_steps_s=c100, compile_1000_steps_s=c1000))
        print(f"{name:<20}{steps:>7}{t_np * 1e3:>9.1f}ms{t_mc * 1e3:>9.1f}ms{t_np / t_mc:>8.1f}x"
              f"{c100:>12.2f}s{c1000:>13.2f}s", flush=True)
    print("compile@N: first call minus a warm call for N steps (the disk cache may hold the kernels)")
    return rows


if __name__ == "__main__":
    main()
