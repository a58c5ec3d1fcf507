"""The op registry: every array operation minicompile knows, defined once.

In:  nothing; importing this package registers every op family.
Out: :data:`OPS` (name -> :class:`OpDef`), :func:`get_op`, :func:`register`,
     and the helpers the other stages share (:func:`ufunc_loop_dtypes`,
     :data:`POINTWISE_UFUNCS`, :func:`normalize_axes`, ...).

The registry and what an entry holds are described in :mod:`.registry`;
each family lives in its own module, in the order a reader meets them:

==============  ==============================================================
``pointwise``   ufuncs, ``where``, ``astype``, ``clip``, ``round``, ``isclose``;
                ``copyto`` and ``<ufunc>_at``, the functional forms of in-place writes
``reductions``  ``sum`` ... ``var``/``std``, ``argmax``, ``any``, ``nan*``, ``median``,
                ``percentile``, ``nanpercentile``, ``norm``
``scans``       ``cumsum``, ``cumprod``, ``diff``
``views``       reshape, transpose, squeeze, diagonal, concatenate, tile, pad,
                roll, sliding windows; :func:`split_keys` for split's pieces
``parts``       real, imag (views of a complex array) and the writes through them
``creation``    zeros, ones, full, empty (deterministic), ``_like``, arange,
                linspace, eye, tri, asarray
``linalg``      matmul, dot, vdot, inner, outer, tensordot, einsum, convolve, cross;
                ``attention`` (softmax(q @ kt) @ v, formed by backends from those ops)
``indexing``    getitem, setitem (functional), take, take_along_axis, put_along_axis
``sorting``     sort, argsort, searchsorted, interp, digitize, partition, argpartition
``checks``      check: an error NumPy raises on array values, raised when the graph runs
``control``     loop (a body graph run ``n`` times) and loop_result (one of its results)
==============  ==============================================================
"""
from .registry import (
    OPS,
    DataDependent,
    OpDef,
    TensorMeta,
    UnknownOp,
    broadcast_shapes,
    get_op,
    normalize_axes,
    normalize_axis,
    register,
)
from .pointwise import AT_UFUNCS, COMPARISONS, POINTWISE_UFUNCS, ufunc_loop_dtypes  # noqa: E402
from . import reductions, scans, views, parts, creation, linalg, indexing, sorting, checks, control  # noqa: E402,F401
from .views import split_keys  # noqa: E402

__all__ = [
    "AT_UFUNCS", "COMPARISONS", "DataDependent", "OPS", "OpDef", "POINTWISE_UFUNCS", "TensorMeta",
    "UnknownOp", "broadcast_shapes", "get_op", "normalize_axes", "normalize_axis", "register",
    "split_keys", "ufunc_loop_dtypes",
]
