"""The settings table (``minicompile.config.SETTINGS``) against the code and the docs.

Every environment variable the package reads is in the table, every entry of
the table is read, every ``config`` field is in it; ``python -m minicompile
--help`` prints it and the README's "Settings" section shows it row for row.
Reads are found by parsing the source: ``os.environ.get("X")``,
``os.environ["X"]``, ``os.getenv("X")``, ``"X" in os.environ``,
``os.environ.setdefault("X", ...)``; a read whose name is not a literal is
allowed only where the table itself reads its fields (``config._setting``).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from minicompile import config, logs

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "minicompile").rglob("*.py")) + [ROOT / "minicompile_pytest.py"]


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" \
        or isinstance(node, ast.Name) and node.id == "environ"


def _read_key(node: ast.AST) -> ast.AST | None:
    """The key expression when ``node`` reads one environment variable by name."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if _is_environ(node.func.value) and node.func.attr in ("get", "setdefault", "pop"):
            return node.args[0]
        if node.func.attr == "getenv":
            return node.args[0]
    if isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
        return node.slice
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
            and _is_environ(node.comparators[0]):
        return node.left
    return None


def environment_reads() -> tuple[dict[str, list[str]], list[str]]:
    """Names read -> where (``file:line``); and the reads by a computed name."""
    named: dict[str, list[str]] = {}
    computed: list[str] = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(), str(path))
        scopes = {id(n): f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  for n in ast.walk(f)}  # innermost def wins: ast.walk visits outer defs first
        for node in ast.walk(tree):
            key = _read_key(node)
            if key is None:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                named.setdefault(key.value, []).append(where)
            else:
                computed.append(f"{where} (in {scopes.get(id(node), '<module>')})")
    return named, computed


def test_the_scan_finds_each_form_of_read():
    """The scanner itself, on a snippet with each form (so the other tests can fail)."""
    snippet = ast.parse('os.environ.get("A"); os.environ["B"]; os.getenv("C"); "D" in os.environ\n'
                        'os.environ.setdefault("E", "1"); os.environ["F"] = "1"; os.environ.get(name)')
    keys = [_read_key(n) for n in ast.walk(snippet)]
    found = sorted(k.value if isinstance(k, ast.Constant) else ast.unparse(k) for k in keys if k is not None)
    assert found == ["A", "B", "C", "D", "E", "name"]  # F is written, not read


def test_every_environment_variable_read_is_in_the_table():
    named, computed = environment_reads()
    missing = {name: where for name, where in named.items() if name not in config.SETTINGS}
    assert not missing, f"read but not in minicompile.config.SETTINGS: {missing}"
    assert computed and all(c.endswith("(in _setting)") and c.startswith("minicompile/config.py")
                            for c in computed), f"an environment variable read by a computed name: {computed}"


def test_every_table_entry_is_read():
    """A field's variable is read by the table itself; any other entry must be read where it is used."""
    named, _ = environment_reads()
    stale = [s.env for s in config.SETTINGS.values() if s.field is None and s.env not in named]
    assert not stale, f"in minicompile.config.SETTINGS but read nowhere: {stale}"


def test_every_config_field_is_in_the_table():
    fields = {name for name in vars(config) if not name.startswith("_") and name.islower()
              and isinstance(getattr(config, name), (bool, int, float, str, Path, type(None)))}
    assert fields == {s.field for s in config.SETTINGS.values() if s.field}
    for s in config.SETTINGS.values():
        assert s.meaning and s.default and "|" not in s.meaning  # a README table cell


def test_the_logs_entry_names_every_artifact():
    meaning = config.SETTINGS["MINICOMPILE_LOGS"].meaning
    assert all(name in meaning for name in logs.ARTIFACTS + logs.FLAGS)


def test_help_lists_every_setting_with_its_default():
    out = subprocess.run([sys.executable, "-m", "minicompile", "--help"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    for s in config.SETTINGS.values():
        field = f"config.{s.field}" if s.field else "(environment only)"
        assert f"  {s.env}  {field}  default: {s.default}\n" in out
        assert " ".join(s.meaning.split()) in " ".join(out.split())
    assert "~/.cache/minicompile" in out


def readme_rows(s: config.Setting) -> str:
    field = f"`{s.field}`" if s.field else "—"
    return f"| `{s.env}` | {field} | {s.default} | {s.meaning} |"


def test_readme_settings_section_is_the_table():
    readme = (ROOT / "README.md").read_text()
    assert "\n## Settings\n" in readme
    section = readme.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    shown = [line for line in section.splitlines() if line.startswith("| `")]
    expected = [readme_rows(s) for s in config.SETTINGS.values()]
    assert shown == expected, "README.md's Settings table differs from minicompile.config.SETTINGS; " \
                              "its rows should be:\n" + "\n".join(expected)
