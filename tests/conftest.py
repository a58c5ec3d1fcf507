"""Test-wide settings: strict mode (internal errors raise) and a private disk cache."""
import os
import tempfile

import pytest

# Set before minicompile is imported anywhere, so config picks them up.
os.environ.setdefault("MINICOMPILE_STRICT", "1")
os.environ.setdefault("MINICOMPILE_CACHE_DIR", tempfile.mkdtemp(prefix="minicompile-test-cache-"))

import minicompile as mc  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_caches():
    mc.reset()
    yield
    mc.reset()
