"""NumPy functions written in the NumPy that capture follows (TorchDynamo's polyfills).

In:  nothing; importing this package registers every polyfill.
Out: :data:`POLYFILLS` (NumPy function -> its polyfill), :data:`TRACE_TIME`,
     :func:`python_bool` — read by dynamo/variables/numpy_calls.py.

A NumPy function that is no single op of the registry (``np.cov``,
``np.fliplr``, ``np.select``) is captured by tracing its *polyfill* instead: a
plain Python function with NumPy's signature, written with the NumPy calls
the interpreter captures (ufuncs, reductions, ``concatenate``, ``take``,
``copyto``...).  When user code calls ``np.cov(x)``, the interpreter inlines
``statistics.cov`` in its place, so the graph holds the ops it is made of:
every backend compiles them, and gradients come from their derivative rules.

Each polyfill follows NumPy's own source (the same ops in the same order, the
same Python scalars), so values, dtypes and errors agree by construction; run
eagerly on real arrays it is NumPy's function, which is how the tests check
it.  What NumPy computes with Python values (axes, index lists) runs at trace
time (:func:`~.base.at_trace_time`); a check NumPy makes is
:func:`~.base.require` (on shapes and Python values) or
:func:`~.base.checked` (on array values: a ``check`` op, raising when the
graph runs); a Python bool computed from arrays is :func:`~.base.python_bool`.

==============  ==============================================================
``elementwise``  sinc, angle, real, imag, isneginf, isposinf, isreal, iscomplex, select,
                 array_equal, array_equiv, allclose
``shapes``       append, delete, insert, fliplr, flipud, diagflat, hsplit,
                 vsplit, dsplit, indices, tril_indices, triu_indices (+ _from)
``statistics``   average, cov, corrcoef, trapezoid, ediff1d, vander, logspace,
                 geomspace
==============  ==============================================================
"""
from .base import POLYFILLS, TRACE_TIME, at_trace_time, checked, polyfill, python_bool, require
from . import elementwise, shapes, statistics  # noqa: E402,F401  (registers)

__all__ = ["POLYFILLS", "TRACE_TIME", "at_trace_time", "checked", "polyfill", "python_bool", "require"]
