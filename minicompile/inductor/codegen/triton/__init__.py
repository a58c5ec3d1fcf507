"""The Triton backend: a schedule -> one module of ``@triton.jit`` kernels and a Python wrapper.

``compile`` is the entry point (graph in, compiled callable out): it schedules
for Triton, turns matmuls into templates (``matmul``) and runs of kernels over
the same rows into persistent kernels (``rows``), and generates the module from
the loop kernels of ``kernel``; ``wrapper`` writes the Python that allocates
buffers, launches kernels and runs Externs; ``runtime`` loads and launches the
kernels (on the GPU with CuPy arrays, in Triton's interpreter with NumPy
arrays); ``versions`` holds what differs between Triton versions.
"""
