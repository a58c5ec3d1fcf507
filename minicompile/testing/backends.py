"""Where is a backend wrong?  Every op-info sample through it, reported per op and dtype.

In:  a backend — a name (``"cpp"``) or any callable ``(graph, example_inputs)
     -> callable`` — and optionally which ops (registry names: ``"add"``,
     ``"sum"``, ``"matmul"``) and dtypes to run.
Out: :class:`BackendReport`: for each op, dtype and code form of the op-info
     table (:mod:`minicompile.testing.opinfo`), ``pass`` (the compiled function
     gives eager NumPy's result: type, dtype, shape, values within
     :data:`~minicompile.testing.compare.TOLERANCE`, or within the tolerance
     of the float dtype the backend declares it computes in, its
     ``precision``: ``spyre`` computes in fp16), ``wrong`` (it gives
     another) or ``raised`` (compiling or running raised, or minicompile fell
     back to Python because the compiled code raised).  ``str(report)`` is a
     table; ``report.wrong`` lists the wrong ones with what differed.

Each code form is one function over one input set per dtype (the table's
batches), so the backend compiles one graph per form.  A wrong result is the
one a backend must never give: a backend that refuses a graph by raising is
honest, and minicompile users see the error.
"""
from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

import minicompile as mc

from .compare import backend_name, backend_precision, differences

STATUSES = ("pass", "wrong", "raised")


@dataclass
class OpResult:
    op: str
    dtype: str
    code: str
    status: str  # "pass" | "wrong" | "raised"
    detail: str = ""  # what differed, or what was raised
    source: str = ""  # the function that was compiled


class BackendReport:
    """The outcome of :func:`check_backend`: one :class:`OpResult` per op, dtype and code form."""

    def __init__(self, backend: str, results: list[OpResult], precision: Any = None):
        self.backend = backend
        self.results = results
        self.precision = precision  # the float dtype the backend declared it computes in, or None

    def _with(self, status: str) -> list[OpResult]:
        return [r for r in self.results if r.status == status]

    @property
    def passed(self) -> list[OpResult]:
        return self._with("pass")

    @property
    def wrong(self) -> list[OpResult]:
        return self._with("wrong")

    @property
    def raised(self) -> list[OpResult]:
        return self._with("raised")

    def status(self, op: str, dtype: Any) -> Counter:
        """How many code forms of ``op`` in ``dtype`` passed, were wrong, raised."""
        name = np.dtype(dtype).name
        return Counter(r.status for r in self.results if r.op == op and r.dtype == name)

    def table(self, details: bool = True, failing_only: bool = False) -> str:
        """A row per op and dtype (``failing_only``: only those with a wrong or raised
        result), then, with ``details``, each wrong or raised result and why."""
        rows: dict[tuple[str, str], Counter] = {}
        for r in self.results:
            rows.setdefault((r.op, r.dtype), Counter())[r.status] += 1
        if failing_only:
            rows = {key: counts for key, counts in rows.items() if counts["wrong"] or counts["raised"]}
        width = max([len(op) for op, _ in rows] + [2])
        held = f" (floats compared at {self.precision} precision)" if self.precision is not None else ""
        lines = [f"backend {self.backend!r}: {len(self.passed)} pass, {len(self.wrong)} wrong, "
                 f"{len(self.raised)} raised{held}"]
        if rows:
            lines.append(f"{'op':<{width}}  {'dtype':<8}  {'pass':>4}  {'wrong':>5}  {'raised':>6}")
        for (op, dtype), counts in rows.items():
            mark = "  <- WRONG" if counts["wrong"] else ""
            lines.append(f"{op:<{width}}  {dtype:<8}  {counts['pass']:>4}  {counts['wrong']:>5}  "
                         f"{counts['raised']:>6}{mark}")
        if details:
            for status in ("wrong", "raised"):
                for r in self._with(status):
                    lines.append(f"{status}: {r.op} {r.dtype}: {r.code}\n    {r.detail}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (f"<BackendReport {self.backend!r}: {len(self.passed)} pass, {len(self.wrong)} wrong, "
                f"{len(self.raised)} raised>")


def _first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    cause = error.__cause__
    if cause is not None:
        text += f" (from {type(cause).__name__}: {cause})"
    return text.splitlines()[0][:300]


def _quietly(fn: Any, args: list) -> tuple[Any, list[str]]:
    with np.errstate(all="ignore"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [str(w.message) for w in caught if str(w.message).startswith("minicompile")]


def check_backend(backend: Any, ops: Iterable[str] | None = None,
                  dtypes: Iterable[Any] | None = None) -> BackendReport:
    """Run ``backend`` over the op-info table (``ops``: only these registry ops;
    ``dtypes``: only these dtypes) and report pass / wrong / raised per op,
    dtype and code form, float values compared at the backend's declared
    precision (:func:`~minicompile.testing.compare.backend_precision`).
    Raises ``ValueError`` for an op the table lacks."""
    from . import opinfo  # the table runs every sample through NumPy once when first imported

    known = {info.op for info in opinfo.INFOS}
    wanted = set(ops) if ops is not None else known
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(f"check_backend: no op-info samples for {unknown}; known ops: {sorted(known)}")
    dtype_names = None if dtypes is None else {np.dtype(d).name for d in dtypes}
    precision = backend_precision(backend)
    results: list[OpResult] = []
    for batch in opinfo.CPP_BATCHES:
        if batch.info.op not in wanted:
            continue
        members = [m for m in batch.members if dtype_names is None or np.dtype(m.dtype).name in dtype_names]
        if members:
            results += check_batch(opinfo.Batch(batch.info, batch.code, members), backend, precision)
    return BackendReport(backend_name(backend), results, precision)


def check_batch(batch: Any, backend: Any, precision: Any = None, tolerances: dict | None = None) -> list[OpResult]:
    """One :class:`~minicompile.testing.opinfo.Batch` compiled with ``backend``: an
    :class:`OpResult` per member (``precision``: the backend's; ``tolerances``:
    a dtype -> (rtol, atol) table in place of :data:`~.compare.TOLERANCE`).
    A batch that raises is compiled again member by member, to say which raise."""
    from . import opinfo

    fn, args = batch.function(), batch.args()
    source = batch.source()

    def result(member: Any, status: str, detail: str = "") -> OpResult:
        return OpResult(batch.info.op, np.dtype(member.dtype).name, batch.code, status, detail, source)

    expected, _ = _quietly(fn, args)
    try:
        actual, fallbacks = _quietly(mc.compile(fn, backend=backend), args)
        if fallbacks:  # the compiled code raised and minicompile ran the function as Python
            raise RuntimeError(fallbacks[0].splitlines()[0])
    except Exception as error:  # noqa: BLE001  (reported, not raised)
        if len(batch.members) == 1:
            return [result(batch.members[0], "raised", _first_line(error))]
        # Which dtypes raise: each on its own (one compile each).
        return [r for m in batch.members
                for r in check_batch(opinfo.Batch(batch.info, batch.code, [m]), backend, precision, tolerances)]
    if batch.code in opinfo.UNDEFINED_VALUES:
        actual, expected = (tuple(np.zeros_like(v) for v in r) if isinstance(r, tuple) else r
                            for r in (actual, expected))
    if type(actual) is not tuple or len(actual) != len(expected):
        found = differences(actual, expected, "result", tolerances=tolerances, precision=precision)
        return [result(m, "wrong", found[0] if found else "") for m in batch.members]
    out = []
    for i, member in enumerate(batch.members):
        found = differences(actual[i], expected[i], f"{batch.code} on {member.shapes} {member.layout}",
                            tolerances=tolerances, precision=precision)
        out.append(result(member, "wrong", "; ".join(found)) if found else result(member, "pass"))
    return out
