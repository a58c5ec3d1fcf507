"""The C++/OpenMP backend: a schedule -> one C++ translation unit and a Python wrapper.

``compile`` is the entry point (graph in, compiled callable out); ``kernel``
writes each scheduled kernel as a C++ function, helped by ``reductions``
(argmax/argmin loops), ``tiling`` (transposes), ``streaming`` (non-temporal
stores), ``interleave`` (several vectors at a time), ``matmul`` (float32
matmuls as a generated GEMM) and the C++ helpers of ``prelude`` and
``math_f64``; ``wrapper`` writes the Python that allocates buffers and calls
the kernels; ``runtime`` is the C++ library every graph's kernels share (the
GEMM and the caching allocator that ``allocator`` installs).
"""
