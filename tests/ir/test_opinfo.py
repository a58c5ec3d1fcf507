"""The op-info table, run eagerly and compiled: every NumPy function minicompile captures.

The table itself — :class:`OpInfo`, its samples and batches — lives in
``minicompile.testing.opinfo`` (``minicompile.testing.check_backend`` runs it
through any backend); its names are imported here too, for the modules that
load this one.  Each sample's function runs through NumPy and through
``mc.compile(f, backend="eager")``; the batches (one function per code form,
every dtype at once) through "cpp", "spyre" (floats at its fp16 precision) and
"triton" (in its interpreter, when installed), and the run ends with their
check_backend reports, one per backend (tests/conftest.py).  Results must agree on value (exact for bools and
integers; rtol/atol per float dtype in :data:`TOLERANCE`), dtype, shape and
Python type (a 0-d result is a NumPy scalar exactly where NumPy gives one).
When NumPy raises, the compiled function raises the same exception type.

The cpp backend lowers what it can to C++ and runs every other op as an Extern
call of the op's NumPy reference, so each op below is checked on both paths.

Ops that capture cannot reach yet (indexing, creation from constants, several
results, writes into arguments) are checked one level down, on graphs built
directly, in test_op_graphs.py.
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import minicompile as mc
from minicompile import ir
from minicompile.api import BACKENDS
from minicompile.testing import assert_close
from minicompile.testing.backends import check_batch
from minicompile.testing.opinfo import (  # noqa: F401  (re-exported: other test modules load this one)
    ALL, BOOL, CPP_BATCHES, FLOATS, GRAPH_BREAKS, INFOS, INTS, LAYOUTS, NUMS, SAMPLES, TOLERANCE,
    UNDEFINED_VALUES, Batch, OpInfo, Sample, cpp_batches, make_array, run, samples, ufunc_info,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:minicompile:UserWarning"),
]


def test_every_op_reaches_the_cpp_backend():
    # Code forms that NumPy refuses in every dtype (a bad axis) have no batch.
    assert {b.info.op for b in CPP_BATCHES} == {i.op for i in INFOS}
    assert len(CPP_BATCHES) > 0.8 * sum(len(i.code) for i in INFOS)


def check_sample(sample: Sample, backend: str) -> bool:
    """Compare; True when NumPy ran the sample, False when it raised."""
    fn = sample.function()
    args = sample.args()
    try:
        expected = run(fn, args)
    except Exception as eager_error:
        compiled = mc.compile(fn, backend=backend)
        with pytest.raises(Exception) as info:
            run(compiled, args)
        assert type(info.value) is type(eager_error), (
            f"NumPy raised {type(eager_error).__name__}: {eager_error}; "
            f"compiled raised {type(info.value).__name__}: {info.value}")
        return False
    compiled = mc.compile(fn, backend=backend)
    actual = run(compiled, args)
    if sample.code in UNDEFINED_VALUES:
        actual, expected = (np.zeros_like(v) for v in (actual, expected))
    assert_close(actual, expected, sample.source(), tolerances=TOLERANCE)
    return True


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_eager_backend_matches_numpy(sample):
    if not check_sample(sample, "eager"):
        return
    # What NumPy runs, capture takes whole: one graph, no break (but where the
    # result's shape depends on values: then the break says so, at the user's line).
    explanation = mc.explain(sample.function())(*sample.args())
    if sample.code in GRAPH_BREAKS:
        (why,) = explanation.break_reasons
        assert GRAPH_BREAKS[sample.code] in why.reason and why.filename.startswith("<opinfo"), why
        return
    assert explanation.break_reasons == [], explanation.break_reasons


def _refused(sample: Sample) -> bool:
    try:
        run(sample.function(), sample.args())
    except Exception:
        return True
    return False


REFUSED = [s for s in SAMPLES if _refused(s)]


@pytest.mark.parametrize("sample", REFUSED, ids=[s.id for s in REFUSED])
def test_cpp_backend_raises_where_numpy_raises(sample):
    """What NumPy refuses (a bad axis, a Python int its dtype cannot hold), the
    compiled code refuses too: the eager backend runs NumPy's own functions,
    so only a backend that computes for itself can compute an answer instead."""
    assert not check_sample(sample, "cpp")


def test_squeeze_of_a_numpy_scalar():
    def f(a):
        return np.squeeze(a.sum())

    x = np.ones(3)
    assert type(mc.compile(f, backend="eager")(x)) is type(f(x))


def check_batch_reported(batch: Batch, backend: Any, name: str, record_property: Any) -> None:
    """``batch`` through ``backend`` as :func:`minicompile.testing.check_backend` runs it
    (``precision``: the backend's own), each member's outcome recorded for the
    run's summary (tests/conftest.py prints it per backend); every member must pass."""
    precision = BACKENDS[name].precision
    results = check_batch(batch, backend, precision, tolerances=TOLERANCE)
    record_property("check_backend", (name, precision and precision.name,
                                      [(r.op, r.dtype, r.code, r.status, r.detail) for r in results]))
    failing = [f"{r.status}: {r.dtype}: {r.detail}" for r in results if r.status != "pass"]
    assert not failing, "\n".join(failing) + "\n" + batch.source()


@pytest.mark.parametrize("batch", CPP_BATCHES, ids=[b.id for b in CPP_BATCHES])
def test_cpp_backend_matches_numpy(batch, record_property):
    compiled = []

    def cpp(graph, example_inputs):
        compiled.append(BACKENDS["cpp"](graph, example_inputs))
        return compiled[-1]

    check_batch_reported(batch, cpp, "cpp", record_property)
    # Ops without a loop lowering run as Externs inside the compiled graph; the
    # graph as a whole never falls back to NumPy.
    assert [getattr(c, "fallback_reason", None) for c in compiled] == [None] * len(compiled)


@pytest.mark.parametrize("batch", CPP_BATCHES, ids=[b.id for b in CPP_BATCHES])
def test_triton_backend_matches_numpy(batch, record_property):
    """The same batches through the triton backend, its kernels in Triton's
    interpreter (on CuPy arrays the GPU module tests/inductor/test_triton_gpu_programs.py
    runs a slice of them against CuPy eager)."""
    pytest.importorskip("triton")
    check_batch_reported(batch, "triton", "triton", record_property)


@pytest.mark.parametrize("batch", CPP_BATCHES, ids=[b.id for b in CPP_BATCHES])
def test_spyre_backend_matches_numpy(batch, record_property):
    """The same batches on the simulated Spyre card, floats compared at its fp16
    precision; what the card cannot run, the host runs, and says so."""
    check_batch_reported(batch, "spyre", "spyre", record_property)


# ---------------------------------------------------------------------------
# The tables themselves
# ---------------------------------------------------------------------------

KINDS = {"pointwise", "reduction", "scan", "view", "layout", "creation", "index", "extern", "loop"}


def test_every_op_has_a_documented_kind_and_a_printable_signature():
    for name, op in ir.OPS.items():
        assert op.kind in KINDS, name
        for param in op.signature.parameters.values():
            # Every argument is stored on the node and printed as Python.
            assert param.kind is param.POSITIONAL_OR_KEYWORD, (name, param)
            assert param.default is not np._NoValue, (name, param)


def test_call_rules_name_registered_ops_and_bind_like_numpy():
    from minicompile.dynamo.variables import numpy_calls as nc

    rules = list(nc.FUNCTIONS.values()) + list(nc.METHODS.values()) + \
        [m.rule for m in (*nc.MUTATIONS.values(), *nc.METHOD_MUTATIONS.values())]
    for rule in rules:
        op = ir.get_op(rule.op)
        stub = inspect.signature(rule.stub)
        names = {rule.rename.get(p, p) for p in stub.parameters}
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in stub.parameters.values())
        # The op's array argument comes first in NumPy's spelling too, and
        # every op parameter is one NumPy's signature can pass.
        missing = set(op.param_names) - names
        assert not missing or takes_kwargs, (rule.op, rule.stub, missing)
    assert len(ir.OPS) >= 170


@pytest.mark.parametrize("fn", [np.random.rand, np.random.default_rng, np.random.normal, np.load, np.save,
                                np.loadtxt, np.savetxt, np.fromfile, np.genfromtxt])
def test_random_numbers_and_io_are_not_captured(fn):
    from minicompile.dynamo.variables.numpy_calls import FUNCTIONS

    assert fn not in FUNCTIONS


def test_random_numbers_break_the_graph():
    def noisy(x):
        return x + np.random.rand(*x.shape)

    explanation = mc.explain(noisy)(np.zeros(3))
    assert explanation.graph_break_count >= 1
