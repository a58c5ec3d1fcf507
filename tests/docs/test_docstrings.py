"""The docstring habits autodoc is taught (minicompile.docs.docstrings) and the public names it is given."""
from __future__ import annotations

import sys
import textwrap

import minicompile as mc
from minicompile import config
from minicompile.docs import api, docstrings


def test_in_and_out_paragraphs_become_fields():
    lines = ["In:  a graph and", "     its inputs.", "Out: a callable.", "", "    In: code, not a field"]
    assert docstrings.fields(lines) == [":In: a graph and", "     its inputs.", ":Out: a callable.", "",
                                        "    In: code, not a field"]


def test_a_value_is_documented_by_the_comment_above_it_where_it_is_assigned(tmp_path, monkeypatch):
    package = tmp_path / "pkg_with_values"
    package.mkdir()
    (package / "__init__.py").write_text("from .tables import LIMITS\n")
    (package / "tables.py").write_text(textwrap.dedent("""\
        import os

        # Unrelated.

        # The most of each thing:
        # two lines.
        LIMITS: dict = {"a": 1}
        UNDOCUMENTED = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import pkg_with_values

    try:
        assert docstrings.value_comment("pkg_with_values.LIMITS", pkg_with_values.LIMITS) == [
            "The most of each thing:", "two lines."]
        tables = sys.modules["pkg_with_values.tables"]
        assert docstrings.value_comment("pkg_with_values.tables.UNDOCUMENTED", tables.UNDOCUMENTED) == []
    finally:
        for name in ("pkg_with_values", "pkg_with_values.tables"):
            sys.modules.pop(name, None)


def test_a_settings_module_without_all_lists_what_it_assigns():
    names = api.public_names(config)
    assert "recompile_limit" in names and "strict" in names
    assert not any(name.startswith("_") for name in names)
    assert "Path" not in names and "os" not in names and "annotations" not in names  # imported


def test_every_public_name_gets_a_directive():
    text = api.pages()["api/minicompile.md"]
    for name in mc.__all__:
        if name == "ir":
            assert "## `minicompile.ir`" in text
        else:
            assert f":: minicompile.{name}\n" in text, name
