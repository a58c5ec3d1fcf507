"""The import graph of ``minicompile``: no cycles, and data flows one way.

Every module is parsed (not imported) and every import statement in it is
read, at the top of the file or inside a function, relative or absolute;
imports under ``if TYPE_CHECKING:`` are left out (they never run).
``from package import name`` depends on the module ``package.name`` when
there is one, else on ``package`` itself.  The rules (DESIGN.md, "Layout"):

* no cycle anywhere;
* ``ir`` imports no other stage (``dynamo``, ``aot``, ``inductor``, ``spyre``);
* the inductor (its shared stages and its backend packages) imports nothing of ``dynamo``;
* ``dynamo`` imports nothing of the inductor;
* neither imports ``per_shape``: how a backend meets symbolic sizes (one compile,
  or one per shape) is decided once, where ``api.py`` looks the backend up;
* ``spyre`` (the simulated card) imports nothing of the compiler (``inductor``, ``ir``);
* a backend package (``inductor/codegen/cpp``, ``triton``, ``spyre``) imports no
  other backend, and a shared stage of the inductor imports no backend
  (``inductor/__init__.py`` re-exports the C++ backend's entry point);
* ``testing`` (checks for users) reads the public API (``minicompile``,
  ``api``), ``ir`` and the names ``dynamo``'s package exports, and nothing of
  the compiler imports it.

A failure names each offending import as ``file:line``.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "minicompile"
INDUCTOR = "minicompile.inductor"
BACKENDS = tuple(f"{INDUCTOR}.codegen.{name}" for name in ("cpp", "triton", "spyre"))

Edges = dict[str, list[tuple[str, int]]]  # module -> [(module it imports, line)]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth, except under ``if TYPE_CHECKING:``."""
    found, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))
    return found


def _edges(modules: dict[str, Path], missing: list[str] | None = None) -> Edges:
    """Who imports what; ``missing`` collects imports of minicompile modules that do not exist."""
    edges: Edges = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = []
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - (node.level - 1)] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                if missing is not None and target.startswith("minicompile") and target not in modules \
                        and isinstance(node, ast.ImportFrom):
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: no module {target}")
                while target and target not in modules:  # ``import a.b`` where ``b`` is a name in ``a``
                    target = target.rpartition(".")[0]
                if target.startswith("minicompile") and target != name:
                    found.append((target, node.lineno))
        edges[name] = found
    return edges


@functools.cache
def _graph() -> tuple[dict[str, Path], Edges]:
    modules = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    return modules, _edges(modules)


def _in(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _backend(name: str) -> str | None:
    return next((b.rpartition(".")[2] for b in BACKENDS if _in(name, b)), None)


def _forbidden(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target``; None when it may."""
    def stage(name: str) -> str:
        return f"minicompile.{name}"

    if _in(source, stage("ir")):
        for other in ("dynamo", "aot", "inductor", "spyre"):
            if _in(target, stage(other)):
                return f"ir imports no other stage ({other})"
    if _in(source, INDUCTOR) and _in(target, stage("dynamo")):
        return "the inductor imports nothing of dynamo"
    if _in(source, stage("dynamo")) and _in(target, INDUCTOR):
        return "dynamo imports nothing of the inductor"
    if _in(target, stage("per_shape")) and (_in(source, stage("dynamo")) or _in(source, INDUCTOR)):
        return "per-shape compilation is decided where api.py looks the backend up"
    if _in(source, stage("spyre")):
        for other in ("inductor", "ir"):
            if _in(target, stage(other)):
                return f"the simulated card imports nothing of the compiler ({other})"
    if _in(target, stage("testing")) and not _in(source, stage("testing")):
        return "nothing in the compiler imports minicompile.testing"
    if _in(source, stage("testing")) and not (_in(target, stage("testing")) or _in(target, stage("ir"))
                                              or target in ("minicompile", stage("api"), stage("dynamo"))):
        return "minicompile.testing uses the public API, ir and the names of dynamo's package"
    src, dst = _backend(source), _backend(target)
    if dst is not None and src is not None and src != dst:
        return f"the {src} backend imports the {dst} backend"
    if dst is not None and src is None and _in(source, INDUCTOR) and source != INDUCTOR:
        return f"a shared stage of the inductor imports the {dst} backend"
    return None


def _cycles(edges: Edges) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _ in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return components


def _one_cycle(edges: Edges, component: list[str]) -> list[tuple[str, str, int]]:
    """A shortest cycle through the component's first module, as (importer, imported, line)."""
    inside, start = set(component), component[0]
    came_from: dict[str, tuple[str, int]] = {}  # breadth first from ``start`` back to it
    frontier = [start]
    while start not in came_from:
        assert frontier, "a strongly connected component without a cycle"
        reached = []
        for v in frontier:
            for w, line in edges.get(v, ()):
                if w in inside and w not in came_from:
                    came_from[w] = (v, line)
                    reached.append(w)
        frontier = reached
    path, node = [], start
    while not path or node != start:
        prev, line = came_from[node]
        path.append((prev, node, line))
        node = prev
    return path[::-1]


def _cycle_messages(modules: dict[str, Path], edges: Edges) -> list[str]:
    messages = []
    for component in _cycles(edges):
        steps = _one_cycle(edges, component)
        chain = " -> ".join([steps[0][0]] + [dst for _, dst, _ in steps])
        lines = "\n".join(f"    {modules[src].relative_to(ROOT)}:{line}: imports {dst}" for src, dst, line in steps)
        messages.append(f"import cycle among {', '.join(component)}:\n  {chain}\n{lines}")
    return messages


def test_the_graph_is_read() -> None:
    modules, edges = _graph()
    assert f"{INDUCTOR}.lowering" in modules
    targets = {t for t, _ in edges["minicompile.api"]}
    assert "minicompile.dynamo" in targets  # a top-level import
    assert f"{BACKENDS[1]}.compile" in targets  # an import inside a function
    assert f"{INDUCTOR}.scheduler" in {t for t, _ in edges[f"{BACKENDS[0]}.kernel"]}  # ``from ...scheduler``


def test_a_cycle_is_found_and_named() -> None:
    edges = {"a": [("b", 3)], "b": [("c", 5)], "c": [("a", 7), ("d", 1)], "d": []}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _one_cycle(edges, ["a", "b", "c"]) == [("a", "b", 3), ("b", "c", 5), ("c", "a", 7)]


def test_the_rules_say_why() -> None:
    cpp, triton, spyre = BACKENDS
    assert _forbidden(f"{cpp}.kernel", f"{triton}.kernel") == "the cpp backend imports the triton backend"
    assert _forbidden(f"{INDUCTOR}.scheduler", f"{spyre}.loops") is not None
    assert _forbidden("minicompile.dynamo.convert_frame", f"{INDUCTOR}.lowering") is not None
    assert _forbidden("minicompile.dynamo.convert_frame", "minicompile.per_shape") is not None
    assert _forbidden(f"{cpp}.compile", "minicompile.per_shape") is not None
    assert _forbidden("minicompile.api", "minicompile.per_shape") is None
    assert _forbidden("minicompile.spyre.isa", "minicompile.ir.graph") is not None
    assert _forbidden("minicompile.ir.passes", "minicompile.aot.joint") is not None
    assert _forbidden(INDUCTOR, f"{cpp}.compile") is None  # the package re-exports the C++ entry point
    assert _forbidden(f"{cpp}.kernel", f"{INDUCTOR}.lowering") is None
    assert _forbidden("minicompile.dynamo.output_graph", "minicompile.aot.tensor") is None


def test_every_imported_module_exists() -> None:
    modules = _graph()[0]
    missing: list[str] = []
    _edges(modules, missing)
    assert not missing, "\n".join(missing)


def test_no_import_cycle() -> None:
    messages = _cycle_messages(*_graph())
    assert not messages, "\n".join(messages)


def test_imports_flow_one_way() -> None:
    modules, edges = _graph()
    bad = [f"{modules[src].relative_to(ROOT)}:{line}: {src} imports {dst}: {why}"
           for src in sorted(edges) for dst, line in edges[src]
           if (why := _forbidden(src, dst)) is not None]
    assert not bad, "forbidden imports:\n" + "\n".join(bad)
