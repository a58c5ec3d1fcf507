"""``make demo``: compile the built-in example and show every stage's artifact.

GELU followed by a row-wise layer norm (``examples/gelu_layernorm.py``) is
captured from its bytecode, guarded, fused and compiled to C++/OpenMP; the
demo prints the graph, the guards, the generated code, checks the result
against eager NumPy and times both, in under 300 lines.  The generated code
includes the backend's hand-written C++ helpers by path (the headers of
``inductor/codegen/cpp/include/``) rather than showing them.
"""
from __future__ import annotations

import numpy as np

import minicompile as mc

from .benchmarks.timing import format_seconds, median_seconds
from .inductor.codegen.cpp.ops import INCLUDE_DIR
from .examples.gelu_layernorm import example_input, gelu_layernorm


def banner(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def main(rows: int = 2048, cols: int = 1024) -> int:
    x = example_input(rows, cols)
    compiled = mc.compile(gelu_layernorm)

    banner(f"1. Capture: the bytecode of gelu_layernorm becomes a graph (x: float32[{rows}, {cols}])")
    explanation = mc.explain(gelu_layernorm)(x)
    print(explanation)

    banner("2. Compile: fused kernels, generated C++ and the Python wrapper that calls them")
    result = compiled(x)
    entry = compiled.cache[0]
    print(entry.compiled)
    print(f"# The #include lines name the hand-written C++ the kernels call (exp, tanh, reductions, ...):\n"
          f"#   {INCLUDE_DIR}/*.h\n"
          "# MINICOMPILE_LOGS=output_code prints each graph's generated code and wrapper as it compiles.")

    banner("3. Check: compiled against eager NumPy")
    expected = gelu_layernorm(x)
    err = float(np.max(np.abs(result.astype(np.float64) - expected)))
    same = result.dtype == expected.dtype and result.shape == expected.shape
    ok = same and np.allclose(result, expected, rtol=1e-4, atol=1e-4)
    print(f"dtype {result.dtype} / {expected.dtype}, shape {result.shape} / {expected.shape}, "
          f"max abs error {err:.2e}: {'OK' if ok else 'MISMATCH'}")

    banner("4. Time: median of repeated runs after warm-up")
    t_eager = median_seconds(gelu_layernorm, x)
    t_compiled = median_seconds(compiled, x)
    kernels = len(getattr(entry.compiled, "kernels", []))
    print(f"eager NumPy       {format_seconds(t_eager):>10}")
    print(f"minicompile (cpp) {format_seconds(t_compiled):>10}   ({kernels} kernels)")
    print(f"speedup           {t_eager / t_compiled:>9.2f}x   (compiled/eager time ratio "
          f"{t_compiled / t_eager:.3f})")
    return 0 if ok else 1
