"""Shared fixtures for the inductor tests: a private disk cache per session."""
from __future__ import annotations

import pytest

from minicompile import config


@pytest.fixture(autouse=True, scope="session")
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Compiled libraries go to a fresh temporary directory, never ~/.cache."""
    old = config.cache_dir
    config.cache_dir = tmp_path_factory.mktemp("minicompile_cache")
    yield config.cache_dir
    config.cache_dir = old
