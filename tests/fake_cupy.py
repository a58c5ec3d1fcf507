"""A test double for CuPy: its array semantics on the CPU, for machines without a GPU.

In:  NumPy arrays, Python values, NumPy functions and ufuncs called on them.
Out: :class:`ndarray` objects (``type(x).__module__ == "cupy"``, so minicompile
     takes them for CuPy arrays) and a module-like namespace installed as
     ``sys.modules["cupy"]`` by the ``fake_cupy`` fixture of ``tests/conftest.py``.

What it models, because minicompile's device code depends on it:

* an array never turns into a NumPy array implicitly: ``__array__`` raises
  CuPy's TypeError, so ``np.asarray(x)`` fails as on the GPU; ``get()`` and
  ``cupy.asnumpy`` are the explicit copies to the host (counted in
  ``HOST_COPIES``, as are ``item()``, ``float()``, ``int()``, ``bool()``);
* NumPy functions and ufuncs dispatch to CuPy through ``__array_function__``
  and ``__array_ufunc__`` (calls and the ufunc methods ``reduce``,
  ``accumulate``, ``reduceat``, ``outer``, ``at``), but only those CuPy 14
  really has (``CUPY_NAMES``); any other returns NotImplemented and NumPy
  raises its TypeError; a keyword argument CuPy's function lacks is CuPy's
  TypeError (``SIGNATURES``, read from CuPy 14);
* a NumPy array mixed with a CuPy array raises TypeError, as CuPy does, except
  as an index (CuPy copies an index array to the device);
* results are arrays, never NumPy scalars: a 0-d result is a 0-d ``ndarray``,
  and so is the bool of ``allclose``, ``array_equal`` and ``array_equiv``;
* views stay views (``x.T``, ``x[1:]``, ``reshape``) and write through;
* ``cupy.add`` and the other ufuncs are objects with CuPy's methods
  (``cupy.add.at(a, (rows,), b)``); NumPy's ``np.add.at`` reaches them through
  ``__array_ufunc__`` only when every input is an array or a scalar (a tuple
  of index arrays is refused, as CuPy's input check refuses it);
* operators defer to an operand that opts out of ufuncs, and otherwise go
  through NumPy's dispatch (so ``mc.Tensor``'s ``__array_ufunc__`` answers
  ``cupy_array * tensor``), as CuPy's do.

CUDA events (``cupy.cuda.Event``, ``get_elapsed_time``) model a device that runs
each launch as it is made: an event's time is the host's when it is recorded.
``CURRENT_STREAM.capturing`` says whether a CUDA graph is being recorded.

What it does not model: a device, memory pools, streams, kernels (``data.ptr``
is the host address of the first element), ``__cuda_array_interface__``; asynchrony; CuPy's own dtype rules where they
differ from NumPy's; integer-array indices out of range, which CuPy wraps
around (``mode="wrap"``) and this double, computing with NumPy, refuses.
"""
from __future__ import annotations

import json
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

# Read from CuPy 14's namespaces (dir(cupy), dir(cupy.linalg), dir(cupy.fft)):
# the names that are also NumPy functions or ufuncs.  A NumPy function outside
# these has no CuPy implementation, so __array_function__ refuses it.
CUPY_NAMES = {"numpy": frozenset("""
abs absolute acos acosh add all allclose amax amin angle any append apply_along_axis apply_over_axes arange arccos
arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort argwhere around array array2string
array_equal array_equiv array_repr array_split array_str asanyarray asarray asarray_chkfinite ascontiguousarray
asfortranarray asin asinh astype atan atan2 atanh atleast_1d atleast_2d atleast_3d average bartlett base_repr
binary_repr bincount bitwise_and bitwise_count bitwise_invert bitwise_left_shift bitwise_not bitwise_or
bitwise_right_shift bitwise_xor blackman broadcast_arrays broadcast_shapes broadcast_to can_cast cbrt ceil choose
clip column_stack common_type compress concat concatenate conj conjugate convolve copy copysign copyto corrcoef
correlate cos cosh count_nonzero cov cross cumprod cumsum cumulative_prod cumulative_sum deg2rad degrees delete diag
diag_indices diag_indices_from diagflat diagonal diff digitize divide divmod dot dsplit dstack ediff1d einsum empty
empty_like equal exp exp2 expand_dims expm1 extract eye fabs fill_diagonal fix flatnonzero flip fliplr flipud
float_power floor floor_divide fmax fmin fmod format_float_positional format_float_scientific frexp from_dlpack
frombuffer fromfile fromfunction fromiter fromstring full full_like gcd genfromtxt get_printoptions gradient greater
greater_equal hamming hanning heaviside histogram histogram2d histogramdd hsplit hstack hypot i0 identity imag
indices inner interp intersect1d invert isclose iscomplex iscomplexobj isdtype isfinite isfortran isin isinf isnan
isneginf isposinf isreal isrealobj isscalar issubdtype iterable ix_ kaiser kron lcm ldexp left_shift less less_equal
lexsort linspace load loadtxt log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or
logical_xor logspace mask_indices matmul matrix_transpose max maximum may_share_memory mean median meshgrid min
min_scalar_type minimum mintypecode mod modf moveaxis multiply nan_to_num nanargmax nanargmin nancumprod nancumsum
nanmax nanmean nanmedian nanmin nanprod nanstd nansum nanvar ndim negative nextafter nonzero not_equal ones
ones_like outer packbits pad partition percentile permute_dims piecewise place poly polyadd polyfit polymul polysub
polyval positive pow power printoptions prod promote_types ptp put put_along_axis putmask quantile rad2deg radians
ravel ravel_multi_index real real_if_close reciprocal remainder repeat require reshape resize result_type
right_shift rint roll rollaxis roots rot90 round row_stack save savetxt savez savez_compressed searchsorted select
set_printoptions setdiff1d setxor1d shape shares_memory show_config sign signbit sin sinc sinh size sort
sort_complex split sqrt square squeeze stack std subtract sum swapaxes take take_along_axis tan tanh tensordot tile
trace transpose trapezoid tri tril tril_indices tril_indices_from trim_zeros triu triu_indices triu_indices_from
true_divide trunc typename union1d unique unique_all unique_counts unique_inverse unique_values unpackbits
unravel_index unwrap vander var vdot vsplit vstack where zeros zeros_like""".split()),
              "numpy.linalg": frozenset("""
cholesky cond cross det eig eigh eigvals eigvalsh inv lstsq matmul matrix_power matrix_rank matrix_transpose norm
pinv qr slogdet solve svd tensorinv tensorsolve""".split()),
              "numpy.fft": frozenset("""
fft fft2 fftfreq fftn fftshift hfft ifft ifft2 ifftn ifftshift ihfft irfft irfft2 irfftn rfft rfft2 rfftfreq rfftn""".split())}
# The parameters of CuPy 14's functions (inspect.signature on the device; "**":
# any keyword): a keyword NumPy takes and CuPy lacks (``np.take(..., mode=)``,
# ``np.sort(..., stable=)``) is CuPy's TypeError, as on the GPU.
SIGNATURES = json.loads((Path(__file__).parent / "cupy14_signatures.json").read_text())["signatures"]
BOOL_AS_ARRAY = frozenset({"allclose", "array_equal", "array_equiv"})
UFUNC_METHODS = frozenset({"__call__", "reduce", "accumulate", "reduceat", "outer", "at"})
# cupy.ndarray's methods that this double forwards to NumPy's (results wrapped).
METHODS = frozenset("""all any argmax argmin argpartition argsort astype choose clip compress conj
copy cumprod cumsum diagonal dot fill flatten max mean min nonzero partition prod ptp put ravel
repeat reshape round sort squeeze std sum swapaxes take trace transpose var view""".split())
HOST_COPIES: list[tuple[str, tuple]] = []  # (how, shape) of every copy to the host


_BASES: dict[int, tuple[np.ndarray, "ndarray"]] = {}  # id of a NumPy base -> (it, its wrapper)


def _base_of(data: np.ndarray) -> "ndarray | None":
    base = data.base
    if not isinstance(base, np.ndarray):
        return None
    kept = _BASES.get(id(base))
    if kept is None or kept[0] is not base:
        kept = _BASES[id(base)] = (base, ndarray(base))
    return kept[1]


def peek(a: "ndarray") -> np.ndarray:
    """The data, for a test's own assertions: not counted as a copy to the host."""
    return a._a


def _host_copy(how: str, a: np.ndarray) -> np.ndarray:
    HOST_COPIES.append((how, a.shape))
    return a


class ndarray:
    """A "device" array: a NumPy array that NumPy itself cannot read implicitly."""

    __module__ = "cupy"  # how minicompile tells a CuPy array: type(x).__module__
    __array_priority__ = 100  # CuPy's: an operand with a higher one gets the reflected operator

    def __init__(self, data: np.ndarray):
        self._a = data

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method not in UFUNC_METHODS or ufunc.__name__ not in CUPY_NAMES["numpy"] \
                or not _handled(inputs + tuple(kwargs.get("out", ()))):
            return NotImplemented
        _refuse_host(inputs)
        out = kwargs.get("out")
        result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        if out is not None:  # written in place: the caller's arrays are the result
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        if func.__name__ not in CUPY_NAMES.get(func.__module__, ()) \
                or not all(issubclass(t, (ndarray, np.ndarray)) for t in types_):
            return NotImplemented
        _refuse_keywords(func.__name__, kwargs, func.__module__)
        result = _call(func, args, kwargs)
        # CuPy's forms of NumPy's Python-bool functions return 0-d arrays (checked on CuPy 14)
        return ndarray(np.asarray(result)) if func.__name__ in BOOL_AS_ARRAY else result

    # -- attributes ---------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    strides = property(lambda self: self._a.strides)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    # CuPy's flags: no ``writeable`` (its arrays always are).
    flags = property(lambda self: types.SimpleNamespace(
        c_contiguous=self._a.flags.c_contiguous, f_contiguous=self._a.flags.f_contiguous,
        owndata=self._a.flags.owndata))
    T = property(lambda self: ndarray(self._a.T))
    # The array a view was made from, None for an array that owns its memory; one
    # wrapper per base, so ``x.base is y.base`` for views of one array, as on CuPy.
    base = property(lambda self: _base_of(self._a))
    # The memory pointer: ``.ptr`` is the address of the first element (views included),
    # which capture reads to tell arrays that may share memory.
    data = property(lambda self: types.SimpleNamespace(ptr=self._a.__array_interface__["data"][0]))

    def __getattr__(self, name: str) -> Any:
        if name not in METHODS:
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        method = getattr(self._a, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            _refuse_keywords(name, kwargs)  # a method takes its function's parameters (less the array)
            return _wrap(method(*_unwrap(_refuse_host(args)), **_unwrap(kwargs)), (self,))
        return call

    # -- copies to the host: explicit, or of one value ---------------------------------------
    def get(self) -> np.ndarray:
        return _host_copy("get", self._a.copy())

    def item(self) -> Any:
        return _host_copy("item", self._a).item()

    def tolist(self) -> Any:
        return _host_copy("tolist", self._a).tolist()

    def __float__(self) -> float:
        return float(_host_copy("float", self._a))

    def __int__(self) -> int:
        return int(_host_copy("int", self._a))

    def __index__(self) -> int:
        return _host_copy("index", self._a).__index__()

    def __bool__(self) -> bool:
        return bool(_host_copy("bool", self._a))

    # -- Python protocols -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        return (ndarray(np.asarray(row)) for row in self._a)

    def __repr__(self) -> str:
        return repr(self._a)

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key)])  # a NumPy index array: CuPy copies it to the device

    def __setitem__(self, key, value):
        self._a[_unwrap(key)] = _unwrap(_refuse_host(value))

    __hash__ = None  # type: ignore[assignment]  # unhashable, as any ndarray


def _should_use_rop(other: Any) -> bool:
    """CuPy's rule for its operators: defer to the other operand's reflected one when it
    opts out of ufuncs (``__array_ufunc__ = None``) or, having no ``__array_ufunc__``,
    has a higher ``__array_priority__``; otherwise NumPy's ufunc dispatch decides."""
    if not hasattr(other, "__array_ufunc__"):
        return getattr(other, "__array_priority__", 0) > ndarray.__array_priority__
    return other.__array_ufunc__ is None


def _binary(ufunc: np.ufunc, reflected: bool = False):
    def op(self, other):
        if _should_use_rop(other):
            return NotImplemented
        return ufunc(other, self) if reflected else ufunc(self, other)
    return op


def _inplace(ufunc: np.ufunc):
    def op(self, other):
        ufunc(self, other, out=(self,))
        return self
    return op


OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide, "floordiv": np.floor_divide,
             "mod": np.remainder, "pow": np.power, "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
             "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift}
for _name, _uf in OPERATORS.items():
    setattr(ndarray, f"__{_name}__", _binary(_uf))
    setattr(ndarray, f"__r{_name}__", _binary(_uf, reflected=True))
    setattr(ndarray, f"__i{_name}__", _inplace(_uf))
for _name, _uf in {"divmod": np.divmod, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(ndarray, f"__{_name}__", _binary(_uf))
ndarray.__rdivmod__ = _binary(np.divmod, reflected=True)
for _name, _uf in {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}.items():
    setattr(ndarray, f"__{_name}__", lambda self, _uf=_uf: _uf(self))


# -- wrapping and unwrapping ---------------------------------------------------------------------

def _handled(values: tuple) -> bool:
    """CuPy handles its own arrays, NumPy's (to refuse them) and scalars; not other array types."""
    return all(isinstance(v, (ndarray, np.ndarray, np.generic, int, float, complex, bool)) or v is None
               for v in values)


def _refuse_host(value: Any) -> Any:
    """A NumPy array where CuPy wants its own: CuPy's TypeError."""
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}")
    if isinstance(value, (tuple, list)):
        for v in value:
            _refuse_host(v)
    elif isinstance(value, dict):
        _refuse_host(tuple(value.values()))
    return value


def _unwrap(value: Any) -> Any:
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _wrap(value: Any, inputs: tuple = ()) -> Any:
    """NumPy results as device arrays; 0-d included (CuPy returns no NumPy scalars).
    A result that is an input's own data is that input (``squeeze`` with nothing to
    squeeze returns its argument itself, in CuPy as in NumPy)."""
    for given in inputs:
        if isinstance(given, ndarray) and value is given._a:
            return given
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, np.dtype):
        return ndarray(np.asarray(value))
    if isinstance(value, (tuple, list)):
        return type(value)(_wrap(v, inputs) for v in value)
    return value


def _refuse_keywords(name: str, kwargs: dict, module: str = "numpy") -> None:
    """CuPy's TypeError for a keyword its function ``name`` lacks."""
    params = SIGNATURES.get(module, {}).get(name)
    unknown = [k for k in kwargs if params is not None and "**" not in params and k not in params]
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument '{unknown[0]}'")


def _call(func: Any, args: tuple, kwargs: dict) -> Any:
    _refuse_host(args)
    _refuse_host(kwargs)
    return _wrap(func(*_unwrap(args), **_unwrap(kwargs)), tuple(args) + tuple(kwargs.values()))


# -- the module: ``import cupy`` finds this namespace ------------------------------------------

def asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """To the device: a device array as it is (or cast), host data copied."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return ndarray(np.array(a, dtype=dtype, order=order or "K", copy=True))


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", ndmin: int = 0) -> ndarray:
    data = obj._a if isinstance(obj, ndarray) else obj
    return ndarray(np.array(data, dtype=dtype, copy=True if copy else None, order=order, ndmin=ndmin))


def asnumpy(a: Any) -> np.ndarray:
    return a.get() if isinstance(a, ndarray) else np.asarray(a)


class ufunc:
    """A CuPy ufunc: a call or a method (``reduce``, ``at``...) of NumPy's on the data."""

    __module__ = "cupy"

    def __init__(self, numpy_ufunc: np.ufunc):
        self._ufunc, self.__name__ = numpy_ufunc, numpy_ufunc.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._ufunc, args, kwargs)

    def __getattr__(self, method: str) -> Any:
        if method not in UFUNC_METHODS:
            raise AttributeError(f"'cupy.ufunc' object has no attribute {method!r}")
        return lambda *args, **kwargs: _call(getattr(self._ufunc, method), args, kwargs)


def _module_attr(names: frozenset, numpy_namespace: Any):
    def __getattr__(name: str) -> Any:
        value = getattr(numpy_namespace, name, None)
        if name in names and isinstance(value, np.ufunc):
            return ufunc(value)
        if name in names and callable(value) and not isinstance(value, type):
            def call(*args: Any, **kwargs: Any) -> Any:
                _refuse_keywords(name, kwargs, numpy_namespace.__name__)
                return _call(value, args, kwargs)
            return call
        if isinstance(value, type) and issubclass(value, np.generic) or name in ("dtype", "finfo", "iinfo"):
            return value  # CuPy's dtypes are NumPy's
        raise AttributeError(f"module 'cupy' has no attribute {name!r}")
    return __getattr__


def _namespace(name: str, numpy_namespace: Any, names: frozenset, **members: Any) -> types.ModuleType:
    namespace = types.ModuleType(name, "A CuPy stand-in (tests/fake_cupy.py).")
    namespace.__dict__.update(members)
    namespace.__getattr__ = _module_attr(names, numpy_namespace)  # type: ignore[attr-defined]
    return namespace


class _Event:
    """A CUDA event of a device that runs each launch as it is made."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False):
        self.ns: int | None = None

    def record(self, stream: Any = None) -> None:
        self.ns = time.perf_counter_ns()

    def synchronize(self) -> None:
        pass


class _Stream:
    capturing = False

    def is_capturing(self) -> bool:
        return self.capturing


CURRENT_STREAM = _Stream()
cuda = types.SimpleNamespace(
    Event=_Event, get_current_stream=lambda: CURRENT_STREAM,
    Device=lambda device=None: types.SimpleNamespace(synchronize=lambda: None),
    get_elapsed_time=lambda start, end: (end.ns - start.ns) / 1e6)

module = _namespace(
    "cupy", np, CUPY_NAMES["numpy"], ndarray=ndarray, asarray=asarray, array=array, asnumpy=asnumpy, cuda=cuda,
    pi=np.pi, e=np.e, inf=np.inf, nan=np.nan, newaxis=None,
    linalg=_namespace("cupy.linalg", np.linalg, CUPY_NAMES["numpy.linalg"]),
    fft=_namespace("cupy.fft", np.fft, CUPY_NAMES["numpy.fft"]))
