"""Precompiled headers for the C++ backend's translation units.

Reading our headers, and the C++ library headers they pull in, is most of the
time g++ spends on a small kernel.  A precompiled header (GCC's ``.gch``) keeps
that parse, so each later compile loads it instead (Inductor's C++ backend
precompiles its prelude header for the same reason).

In:  a translation unit whose first lines (after comments and blank lines) are
     ``#include "..."`` lines of headers guarded by ``#pragma once``; the
     compiler, its flags, the cache directory and a fingerprint of what the
     headers' meaning depends on (their contents, the compiler, the host).
Out: extra flags, ``-include <dir>/prelude.h``, under which the compiler reads
     those headers from ``<dir>/prelude.h.gch``; none where the unit does not
     start with includes or the compiler is not GCC.

The prelude holds exactly the unit's own include lines in the unit's order, so
the unit means the same with it or without it: included first, the prelude
makes the unit's own include lines no-ops (``#pragma once``).  GCC uses the
``.gch`` only where it was built for the same compiler and flags, else it
reads ``prelude.h`` itself.  Each prelude lives in
``<cache>/pch/<key>/``, keyed by its lines, the fingerprint and the flags,
built once (to a name unique to the process, then renamed into place, as the
libraries are) and shared by every process using the cache.  A prelude that
fails to build is not tried again in this process, and its units compile as
plain source; so does a unit that fails to compile with its prelude (a damaged
``.gch``), and that ``.gch`` is removed, to be built afresh by the next process.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
from pathlib import Path

from .. import logs

_LEADING_INCLUDES = re.compile(r'\A(?:[ \t]*(?://[^\n]*)?\n)*((?:[ \t]*#[ \t]*include[ \t]*"[^"]+"[ \t]*\n)+)')
_failed: set[str] = set()  # keys of preludes that did not build, in this process


def is_gcc(version: str) -> bool:
    """Does ``version`` (the compiler's ``--version`` text) name GCC?  (Clang's
    precompiled headers are another format, found by other flags.)"""
    text = version.lower()
    return "clang" not in text and ("g++" in text or "gcc" in text or "free software foundation" in text)


def prelude_flags(source: str, cxx: str, flags: list[str], cache_dir: Path, version: str,
                  fingerprint: str) -> list[str]:
    """The flags that make ``cxx`` read ``source``'s leading includes precompiled
    (building the ``.gch`` on first use), or ``[]``."""
    match = _LEADING_INCLUDES.match(source)
    if match is None or not is_gcc(version):
        return []
    lines = match.group(1)
    if not all(_guarded(Path(name)) for name in re.findall(r'"([^"]+)"', lines)):
        return []  # included twice (by the prelude, then by the unit), it would be defined twice
    key = hashlib.sha256("\0".join((lines, fingerprint, " ".join(flags), version)).encode()).hexdigest()[:32]
    if key in _failed:
        return []
    directory = cache_dir / "pch" / key
    header, gch = directory / "prelude.h", directory / "prelude.h.gch"
    if not gch.exists():
        try:
            _build(cxx, flags, lines, header, gch)
        except (OSError, subprocess.SubprocessError, RuntimeError) as why:
            _failed.add(key)
            logs.log("output_code", lambda: f"precompiled header not built ({why}); compiling without it")
            return []
    return ["-include", str(header)]


def _guarded(header: Path) -> bool:
    try:
        return header.is_absolute() and "#pragma once" in header.read_text(errors="replace")
    except OSError:
        return False


def discard_prelude(flags: list[str]) -> None:
    """A unit failed to compile under ``flags`` (from :func:`prelude_flags`): this
    process compiles without that prelude from now on, and its ``.gch`` is
    removed, so the next process builds it afresh."""
    header = Path(flags[-1])
    _failed.add(header.parent.name)
    Path(f"{header}.gch").unlink(missing_ok=True)


def _build(cxx: str, flags: list[str], lines: str, header: Path, gch: Path) -> None:
    directory = header.parent
    directory.mkdir(parents=True, exist_ok=True)
    unique = f"tmp{os.getpid()}_{threading.get_ident()}"
    header_tmp = directory / f"prelude.h.{unique}"
    header_tmp.write_text(lines)
    os.replace(header_tmp, header)
    gch_tmp = directory / f"prelude.h.gch.{unique}"
    # The flags of the units that will use it (GCC checks that they match), less
    # the link-only -shared.
    cmd = [cxx, *(f for f in flags if f != "-shared"), "-x", "c++-header", str(header), "-o", str(gch_tmp)]
    logs.log("output_code", lambda: "precompiled header: " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{cxx} exit {proc.returncode}: {proc.stderr.strip()[:500]}")
        os.replace(gch_tmp, gch)
    finally:
        gch_tmp.unlink(missing_ok=True)
