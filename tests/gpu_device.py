"""The start every GPU test module shares: CuPy and Triton, or the module skipped.

``from gpu_device import cp, HAVE_GPU, requires_gpu`` skips the importing module
when CuPy or Triton is missing; ``pytestmark = requires_gpu`` skips its tests
when CuPy sees no CUDA device (no driver, or no GPU).
"""
from __future__ import annotations

import pytest

cp = pytest.importorskip("cupy")
pytest.importorskip("triton")
try:
    HAVE_GPU = cp.cuda.runtime.getDeviceCount() > 0
except Exception:  # no driver
    HAVE_GPU = False
requires_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA device")
