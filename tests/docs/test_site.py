"""The documentation site in a browser: every page loads without a console message, and
every local link, anchor, picture, script and stylesheet a page names is there.

Two sizes, marked ``docs``:

* ``make test`` builds a small site here: every page, and of the tutorials
  only 07 (it draws a picture);
* ``make docs`` builds the whole site into ``build/docs`` and then runs
  ``MINICOMPILE_DOCS_SITE=build/docs pytest -m docs tests/docs``, which checks
  that site, every tutorial in it.
"""
from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

import minicompile as mc
from chromium import find_browser, open_pages
from minicompile import config, testing
from minicompile.docs import api, notebooks
from minicompile.ir.drawing import dot_program

pytestmark = pytest.mark.docs

BUILT = os.environ.get("MINICOMPILE_DOCS_SITE")  # a site make docs built, checked whole
SMALL = ["07"]  # the tutorials of the small site: 07 shows an SVG


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> tuple[Path, list[str]]:
    """The site's folder and the tutorials it shows (their file stems)."""
    if BUILT:
        return Path(BUILT), [t.stem for t in notebooks.tutorials()]
    for module in ("sphinx", "myst_nb", "furo", "jupytext", "nbclient", "ipykernel"):
        pytest.importorskip(module, reason="pip install -e '.[docs]'")
    from minicompile.docs.site import build

    # Built once per session: pytest-xdist's workers share the folder above their own.
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out, built = root / "docs-site", root / "docs-site.built"
    shown = [t for t in notebooks.tutorials() if t.stem[:2] in SMALL]
    with open(root / "docs-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():  # not after a failed build, which may have written pages
            build(out, root / "docs-notebooks", shown)
            built.touch()
    return out, [t.stem for t in shown]


def broken(pages: list[dict], root: Path) -> list[str]:
    """What the loaded ``pages`` name that is not there: one line each."""
    root = root.resolve()
    ids = {unquote(urlparse(p["url"]).path): set(p["ids"]) for p in pages if p["readable"]}
    problems = []

    def local(url: str) -> Path | None:
        parsed = urlparse(url)
        return Path(unquote(parsed.path)) if parsed.scheme == "file" else None

    for page in pages:
        name = local(page["url"]).relative_to(root) if page["readable"] else page["url"]
        if not page["readable"]:
            problems.append(f"{name}: could not be read")
            continue
        for url in page["links"]:
            path = local(url)
            if path is None:
                continue  # http(s), mailto: not this site's
            fragment = urlparse(url).fragment
            if not path.exists() or root not in path.resolve().parents:
                problems.append(f"{name}: link to {url}: no such file in the site")
            elif fragment and str(path) in ids and unquote(fragment) not in ids[str(path)]:
                problems.append(f"{name}: link to {url}: no id {fragment!r} there")
        for image in page["images"]:
            path = local(image["src"])
            if (path is not None and not path.exists()) or not image["loaded"]:
                problems.append(f"{name}: picture {image['src']} does not load")
        for url in page["resources"]:
            path = local(url)
            if path is not None and not path.exists():
                problems.append(f"{name}: script or stylesheet {url} is missing")
    return problems


def test_the_check_finds_what_is_broken(tmp_path):
    """Each kind of defect the site check looks for is found on a page made to have it."""
    browser = find_browser()
    root = tmp_path / "site"
    root.mkdir()
    (root / "good.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    (root / "b.html").write_text('<html><body><h1 id="here">b</h1></body></html>')
    (root / "a.html").write_text(
        '<html><head><script src="gone.js"></script></head><body>'
        '<a href="b.html#here">fine</a> <a href="b.html#nowhere">anchor</a> <a href="c.html">file</a>'
        '<a href="https://example.org/">external</a>'
        '<img src="good.svg"> <img src="missing.png"> <script>notDefined();</script></body></html>')
    console, pages = open_pages(browser, [root / "a.html", root / "b.html"], cwd=tmp_path)
    assert any("notDefined" in line and "a.html" in line for line in console)
    problems = broken(pages, root)
    assert sorted(p.replace(root.resolve().as_uri() + "/", "") for p in problems) == sorted([
        "a.html: link to b.html#nowhere: no id 'nowhere' there",
        "a.html: link to c.html: no such file in the site",
        "a.html: picture missing.png does not load",
        "a.html: script or stylesheet gone.js is missing",
    ])


def test_every_page_loads_with_no_console_message_and_nothing_broken(site, tmp_path):
    root, _ = site
    paths = sorted(root.rglob("*.html"))
    console, pages = open_pages(find_browser(), paths, cwd=tmp_path)
    assert len(pages) == len(paths)
    assert console == []
    assert broken(pages, root) == []


def test_every_part_is_there(site):
    """The README as the home page, the architecture, the whole API, every tutorial."""
    root, shown = site
    index = (root / "index.html").read_text()
    assert "pipeline rebuilt from scratch in Python, for NumPy code" in index
    for page in ("architecture.html", "api/index.html", "tutorials/index.html"):
        assert f'href="{page}"' in index, page
    assert "Stage contracts" in (root / "architecture.html").read_text()
    reference = {m.__name__: (root / f"api/{page}.html").read_text()
                 for m, page in ((mc, "minicompile"), (config, "config"), (testing, "testing"))}
    for module, text in reference.items():
        names = api.public_names(__import__(module, fromlist=["_"]))
        missing = [n for n in names if f'id="{module}.{n}"' not in text and f'id="module-{module}.{n}"' not in text]
        assert not missing, f"{module}: {missing}"
    backends = (root / "api/backends.html").read_text()
    for backend in ("cpp", "triton", "spyre"):
        assert f'id="minicompile.inductor.codegen.{backend}.compile.compile_graph"' in backends
    tutorials_index = (root / "tutorials/index.html").read_text()
    assert sorted(p.stem for p in (root / "tutorials").glob("[0-9][0-9]_*.html")) == sorted(shown)
    for stem in shown:
        assert f'href="{stem}.html"' in tutorials_index, stem
        assert 'class="cell_output' in (root / "tutorials" / f"{stem}.html").read_text(), f"{stem}: no outputs"
    if dot_program() is None:
        return  # no Graphviz (make test installs it): the tutorial says so in place of its pictures
    picture_page = (root / "tutorials" / "07_min_cut_partitioning.html").read_text()
    assert re.search(r'<div class="cell_output[^>]*>.*?<img [^>]*src="[^"]+\.svg"', picture_page, re.S)
