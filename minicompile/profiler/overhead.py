"""What the profiler costs compiled code when no profile runs.

``python -m minicompile.profiler.overhead`` times one small compiled call
through :class:`~minicompile.dynamo.eval_frame.OptimizedFunction` as shipped
(with its ``profiler_hooks.active`` test) against the same ``__call__``
without that test, interleaved in one process, and prints the minima.
"""
from __future__ import annotations

import timeit

import numpy as np

import minicompile as mc
from minicompile.dynamo.eval_frame import OptimizedFunction


def _call_without_flag(self: OptimizedFunction, *args, **kwargs):
    # OptimizedFunction.__call__ minus the profiler test, for comparison only.
    try:
        L = self._bind(*args, **kwargs)
    except TypeError:
        return self.fn(*args, **kwargs)
    G = self.fn.__globals__
    for entry in self.cache:
        try:
            hit = entry.guard(L, G)
        except Exception:
            hit = False
        if hit:
            return entry.run(L, G, args, kwargs)
    return self._miss(L, G, args, kwargs)


class _WithoutFlag(OptimizedFunction):
    __call__ = _call_without_flag


def _small(x):
    return np.tanh(x * 2 + 1)


def measure(rounds: int = 15, number: int = 20000) -> tuple[float, float]:
    """(seconds per call with the flag test, without it): minima over interleaved rounds."""
    x = np.ones(8)
    shipped = mc.compile(_small, backend="cpp")
    plain = _WithoutFlag(_small, shipped.backend, False, "cpp")
    shipped(x), plain(x)
    with_flag, without = [], []
    for _ in range(rounds):
        with_flag.append(min(timeit.repeat(lambda: shipped(x), number=number, repeat=3)) / number)
        without.append(min(timeit.repeat(lambda: plain(x), number=number, repeat=3)) / number)
    return min(with_flag), min(without)


def main() -> None:
    a, b = measure()
    print(f"compiled call, profiler off: {a * 1e6:.3f} us with the flag test, {b * 1e6:.3f} us without "
          f"({(a - b) * 1e9:+.0f} ns, {(a / b - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
