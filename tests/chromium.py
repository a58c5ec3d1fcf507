"""Headless Chromium for the tests that open a page: find it, run it, read its console.

``find_browser()`` finds Chromium (or skips the test); ``headless(browser, *args,
cwd)`` runs it with its log on stderr; ``console_lines(stderr)`` keeps the
pages' console messages (a script error shows up there as ``Uncaught ...``);
``open_pages(browser, paths, cwd)`` loads many pages in one run and reads
their links and pictures.  The HTML report's tests and the docs site's tests
use them.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest


def find_browser() -> str:
    """Chromium's path; skips the test when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium found: `make test` installs Debian's chromium (apt-get install chromium)")


def headless(browser, *args, cwd, timeout=120):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
           "--user-data-dir=" + str(cwd / "profile"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def console_lines(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


# Run in the harness page once every frame has loaded: what each page holds, as JSON.
_COLLECT = """
window.addEventListener("load", () => {
  const all = (doc, selector, read) => [...doc.querySelectorAll(selector)].map(read);
  const pages = [...document.querySelectorAll("iframe")].map(frame => {
    const doc = frame.contentDocument;
    if (!doc) return {url: frame.src, readable: false};
    return {
      url: frame.src, readable: true, title: doc.title,
      ids: all(doc, "[id]", e => e.id).concat(all(doc, "a[name]", e => e.name)),
      links: all(doc, "a[href]", a => a.href),
      images: all(doc, "img", i => ({src: i.src, loaded: i.complete && i.naturalWidth > 0})),
      resources: all(doc, "script[src]", s => s.src).concat(all(doc, "link[rel=stylesheet]", l => l.href)),
    };
  });
  document.getElementById("pages").textContent = JSON.stringify(pages);
});
"""


def open_pages(browser, paths, cwd, timeout=300):
    """Load every page of ``paths`` (local HTML files) at once in one headless Chromium.

    Returns ``(console, pages)``: the console lines of all of them (each names its
    page as ``source:``), and per page, from its DOM once loaded: ``url``, ``title``,
    ``ids`` (every ``id`` and ``<a name>``), ``links`` (every ``<a href>``, resolved),
    ``images`` (``src`` and whether it ``loaded``: decoded with a width) and
    ``resources`` (scripts and stylesheets).  The pages load as frames of one
    page, which may read them because local files are let read each other
    (``--allow-file-access-from-files``); starting Chromium once per page would
    cost two seconds each."""
    harness = cwd / "all_pages.html"
    frames = "\n".join(f'<iframe src="{Path(p).resolve().as_uri()}"></iframe>' for p in paths)
    harness.write_text(f"<!DOCTYPE html><html><body>{frames}<pre id=\"pages\"></pre>"
                       f"<script>{_COLLECT}</script></body></html>")
    run = headless(browser, "--allow-file-access-from-files", "--dump-dom", harness.as_uri(),
                   cwd=cwd, timeout=timeout)
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r'<pre id="pages">(.*?)</pre>', run.stdout, re.S)
    assert found and found.group(1), f"the pages were not read:\n{run.stderr[-2000:]}"
    return console_lines(run.stderr), json.loads(html.unescape(found.group(1)))
