"""The Spyre backend: a schedule -> programs for the simulated card (:mod:`minicompile.spyre`).

``compile`` is the entry point (graph in, compiled callable out, run in the
simulator); it maps each schedule step to the card: ``loops`` (pointwise and
row kernels as vector instructions on tiles, with ``tiles`` turning loop-IR
values into those instructions), ``matmul`` (the matrix unit and its
epilogue), ``copy`` (concatenation by DMA) and ``gather`` (strided and
transposed reads by DMA); ``merge`` joins consecutive device steps into one
program.
"""
