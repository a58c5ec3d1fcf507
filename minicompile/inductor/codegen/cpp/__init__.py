"""The C++/OpenMP backend: a schedule -> one C++ translation unit and a Python wrapper.

``compile`` is the entry point (graph in, compiled callable out).  ``kernel``
writes each scheduled kernel as a C++ function; ``ops`` is its table of C++
for each op and dtype.  Each technique a kernel may take decides whether it
applies and writes its loops in a module of its own: ``reductions``
(accumulators, lane sums, column and arg-reductions), ``tiling``
(transposes), ``streaming`` (non-temporal stores), ``interleave`` (several
vectors at a time), ``matmul`` (float32 matmuls as calls of a GEMM, with
their epilogues).  ``wrapper`` writes the Python that allocates buffers and
calls the kernels; ``runtime`` is the C++ library every graph's kernels share
(the GEMM, and the caching allocator that ``allocator`` installs).

The C++ that is not generated lives in ``include/*.h``; a translation unit
includes the headers it needs by path.
"""
