"""The C++ backend's hand-written C++ lives in headers (codegen/cpp/include/*.h).

A generated translation unit includes them by path instead of carrying them
(the compile cache's key covers their contents: test_inductor_codecache.py),
and they are installed with the package.
"""
from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest

from minicompile import ir
from minicompile.inductor import codecache, compile_graph
from minicompile.inductor.codegen.cpp import attention, interleave, matmul, runtime, streaming
from minicompile.inductor.codegen.cpp.ops import COMPLEX_HEADER, HEADERS, INCLUDE_DIR
from minicompile.ir import TensorMeta

REPO = Path(__file__).resolve().parents[2]
F32 = np.dtype(np.float32)


def tanh_graph() -> ir.Graph:
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((64, 256), F32))
    g.output([g.call("multiply", g.call("tanh", x), 2.0)])
    return g


def test_generated_code_names_the_headers_instead_of_pasting_them():
    compiled = compile_graph(tanh_graph(), [np.zeros((64, 256), F32)])
    source = compiled.kernel_source
    for header in HEADERS + (interleave.HEADER,):  # GELU-like: our tanh, interleaved
        assert f'#include "{INCLUDE_DIR / header}"' in source
    assert "mc_tanh_f32(t" in source and "static inline float mc_tanh_f32" not in source
    assert len(source.splitlines()) < 150


def test_every_header_a_translation_unit_names_exists():
    names = HEADERS + (COMPLEX_HEADER, streaming.HEADER, interleave.HEADER, matmul.HEADER,
                       matmul.RUNTIME_HEADER, runtime.ALLOCATOR_HEADER, attention.HEADER, attention.RUNTIME_HEADER,
                       attention.PROBLEM_HEADER)
    assert sorted(names) == sorted(p.name for p in INCLUDE_DIR.glob("*.h"))
    runtime_headers = [p.name for p, _ in codecache.included_headers(runtime.SOURCE)]
    assert runtime_headers[:3] == [matmul.RUNTIME_HEADER, runtime.ALLOCATOR_HEADER, attention.RUNTIME_HEADER]
    assert set(runtime_headers[3:]) == {attention.PROBLEM_HEADER, "mc_math_f32.h", "mc_math_f64.h"}


def test_the_headers_are_package_data():
    """A non-editable install carries them (``pip wheel .`` reads this table)."""
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = package_data["minicompile.inductor.codegen.cpp"]
    for header in INCLUDE_DIR.glob("*.h"):
        assert any(fnmatch(str(header.relative_to(INCLUDE_DIR.parent)), p) for p in patterns), header


@pytest.mark.parametrize("name", sorted(p.name for p in INCLUDE_DIR.glob("*.h")))
def test_each_header_says_what_it_holds(name):
    first = (INCLUDE_DIR / name).read_text().splitlines()[0]
    assert first.startswith("// ") and "#pragma once" in (INCLUDE_DIR / name).read_text()
