"""Test-wide settings: strict mode (internal errors raise), a private disk cache, and
hypothesis profiles (seeded under CI, exploring locally)."""
import atexit
import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import settings

# CI runs the property tests with a fixed seed so a submission's result does not
# depend on luck; local runs keep exploring new examples (the failing blob is
# printed, so any counter-example found can be replayed and pinned).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(
    os.environ.get("MINICOMPILE_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)

# Set before minicompile is imported anywhere, so config picks them up.  The
# cache directory made here goes when the process that made it exits (processes
# started under it, pytest-xdist's workers among them, inherit the setting).
os.environ.setdefault("MINICOMPILE_STRICT", "1")
if "MINICOMPILE_CACHE_DIR" not in os.environ:
    os.environ["MINICOMPILE_CACHE_DIR"] = tempfile.mkdtemp(prefix="minicompile-test-cache-")
    atexit.register(shutil.rmtree, os.environ["MINICOMPILE_CACHE_DIR"], ignore_errors=True)

import minicompile as mc  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_caches():
    mc.reset()
    yield
    mc.reset()


@pytest.fixture
def fake_cupy(monkeypatch):
    """CuPy's stand-in (tests/fake_cupy.py) as ``import cupy``, for this test only."""
    import fake_cupy as double

    monkeypatch.setitem(sys.modules, "cupy", double.module)
    double.HOST_COPIES.clear()
    return double


def pytest_terminal_summary(terminalreporter):
    """After the run: the op-info batches' outcomes per backend, as check_backend reports
    them (tests/ir/test_opinfo.py records them; here they are gathered from every worker)."""
    import numpy as np

    from minicompile.testing.backends import BackendReport, OpResult

    found: dict[str, tuple] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for key, value in getattr(report, "user_properties", ()):
                if key == "check_backend":
                    backend, precision, results = value
                    found.setdefault(backend, (precision, []))[1].extend(OpResult(*r) for r in results)
    if not found:
        return
    terminalreporter.section("check_backend: the op-info table per backend (tests/ir/test_opinfo.py)")
    for backend, (precision, results) in found.items():
        report = BackendReport(backend, results, precision and np.dtype(precision))
        terminalreporter.write_line(report.table(failing_only=True))
