"""The pytest plugin: ``--minicompile-backend=NAME`` picks the backend of minicompile.testing's checks.

In:  pytest's command line (the plugin is registered through the ``pytest11``
     entry point when minicompile is installed, or with ``-p minicompile_pytest``).
Out: with ``--minicompile-backend=cpp``, ``assert_same(fn, *args)`` with no
     backend compiles with ``cpp``, and ``check(...)`` with no ``backends``
     runs on ``cpp`` alone; without the option nothing changes.

It is a module of its own, beside the package: pytest loads every installed
plugin before any conftest.py, and importing a module of ``minicompile``
would import the package, whose settings are read from the environment when
it is first imported — which a project's conftest.py may still be setting
up.  minicompile is imported only when the option is given.
"""
from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("minicompile")
    group.addoption("--minicompile-backend", default=None, metavar="NAME",
                    help="the backend minicompile.testing's assert_same and check compile with when "
                         "none is given: eager, aot_eager, cpp, triton, spyre or auto")


def pytest_configure(config: Any) -> None:
    name = config.getoption("minicompile_backend", None)
    if not name:
        return
    import pytest

    from minicompile.api import BACKENDS
    from minicompile.testing.compare import DEFAULTS

    if name not in BACKENDS:
        raise pytest.UsageError(f"--minicompile-backend={name}: unknown backend; use one of {sorted(BACKENDS)}")
    DEFAULTS["backend"] = name
    DEFAULTS["backends"] = (name,)


def pytest_report_header(config: Any) -> str | None:
    name = config.getoption("minicompile_backend", None)
    return f"minicompile.testing backend: {name}" if name else None
