"""The compile cache: C++ source -> a loaded shared library.

In:  a C++ translation unit (a string); its ``#include "..."`` lines name
     headers by absolute path (and those headers name each other relative to
     their own directory).
Out: a ``ctypes.CDLL`` of it, compiled by the machine's C++ compiler.

Libraries are cached on disk under ``config.cache_dir``, named by the sha256 of
(source, the contents of the headers it includes, flags, compiler version,
host CPU), so a second process — or a second run — loads instead of
compiling, and editing a header compiles again.  Each ``<key>.so`` sits next to
``<key>.sha256``, the checksum of its bytes: a library that does not match
(a crash mid-write on a filesystem without atomic rename, a truncated copy) is
rebuilt, never loaded.  Writes are atomic: compile to a file unique to this
process and thread in the same directory, then ``os.replace`` it into place,
so processes compiling the same source at once each finish with a complete
library.  Within a process a dict remembers what is loaded.  The headers a
unit includes are read precompiled (precompiled_headers.py).  A cache
directory that cannot be written (read-only, not a directory, no space) is
not fatal: the process compiles into a private temporary directory instead,
with one warning saying which directory failed and why, and removes that
directory when it exits.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from .. import config, logs
from ..warn import warn
from .precompiled_headers import discard_prelude, prelude_flags


class CompilerNotFound(RuntimeError):
    """No C++ compiler: ``config.cxx`` (``$CXX``) is unset or missing and none is on PATH."""


class CompileError(RuntimeError):
    """The C++ compiler rejected the generated source (the message holds its output)."""


CANDIDATES = ("g++", "c++", "clang++")

# Exact IEEE semantics: no fast-math, no fused multiply-add contraction; integer
# overflow wraps as in NumPy.  NumPy never reads errno, so math functions need
# not set it (-fno-math-errno), and nothing here traps on floating-point
# exceptions (-fno-trapping-math: results are unchanged, but both sides of a
# select may be computed), which lets sqrt and branch-free math vectorize.  -march=native is safe here because the cache key
# includes the host CPU.
BASE_FLAGS = (
    "-O3", "-std=c++17", "-shared", "-fPIC", "-march=native",
    "-fwrapv", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno",
    "-fno-trapping-math", "-fopenmp",
)

_loaded: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()


def find_compiler() -> str:
    """The C++ compiler to use: ``config.cxx`` (``$CXX``) if it runs, else the
    first of CANDIDATES on PATH — with a warning, once per ``config.cxx``,
    naming the compiler asked for, why it was passed over and the one used."""
    requested = config.cxx
    passed_over = None
    if requested:
        path = shutil.which(requested)
        passed_over = "is not found" if path is None else _does_not_run(path)
        if passed_over is None:
            return path
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            if passed_over is not None and requested not in _passed_over:
                _passed_over.add(requested)
                warn(f"minicompile: the C++ compiler {requested} (CXX, config.cxx) {passed_over}; "
                     f"using {path} instead")
            return path
    tried = ([requested] if requested else []) + list(CANDIDATES)
    raise CompilerNotFound(f"no C++ compiler found (tried {', '.join(tried)}); set CXX or config.cxx")


_passed_over: set[str] = set()  # the values of config.cxx already warned about


def _does_not_run(path: str) -> str | None:
    """Why the compiler at ``path`` cannot be used, or None when it runs."""
    try:
        compiler_version(path)
    except CompilerNotFound as why:
        return f"cannot be used ({why})"
    return None


@lru_cache(maxsize=None)
def compiler_version(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError) as why:
        raise CompilerNotFound(f"C++ compiler {cxx} does not run: {why}") from None


@lru_cache(maxsize=None)
def _host() -> str:
    """What -march=native depends on: the machine and its CPU features.

    Where /proc/cpuinfo names them, ``platform.processor()`` adds nothing but
    a ``uname -p`` subprocess on every process's first cache lookup; it is
    asked only where there is no cpuinfo."""
    features = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags", "Features")):
                features += line
                if line.startswith(("flags", "Features")):
                    break
    except OSError:
        pass
    return f"{platform.machine()} {features or platform.processor()}"


def compile_flags() -> list[str]:
    return list(BASE_FLAGS)


# A quoted include: one of ours (<...> are the compiler's own, covered by its version).
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


@lru_cache(maxsize=256)
def _read_header(path: Path, stamp: tuple[int, int, int]) -> tuple[str, tuple[str, ...]]:
    """A header's sha256 and the names it includes; ``stamp`` (inode, size,
    mtime) makes an edited header a new entry."""
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), tuple(_QUOTED_INCLUDE.findall(data.decode(errors="replace")))


def included_headers(source: str) -> list[tuple[Path, str]]:
    """The headers ``source`` includes by absolute path, and those they
    include in turn (relative to their own directory), each once, with the
    sha256 of each."""
    found: dict[Path, str] = {}
    todo: list[tuple[tuple[str, ...], Path | None]] = [(tuple(_QUOTED_INCLUDE.findall(source)), None)]
    while todo:
        names, directory = todo.pop()
        for name in names:
            if not Path(name).is_absolute() and directory is None:
                continue  # found by the compiler's own search, not ours
            path = directory / name if directory is not None else Path(name)
            if path in found:
                continue
            try:
                st = path.stat()
            except OSError:
                continue  # the compiler will say so
            digest, inner = _read_header(path, (st.st_ino, st.st_size, st.st_mtime_ns))
            found[path] = digest
            todo.append((inner, path.parent))
    return list(found.items())


def headers_digest(source: str) -> str:
    """The sha256 of the included headers' paths and contents ("" when there are none)."""
    headers = included_headers(source)
    h = hashlib.sha256()
    for path, digest in headers:
        h.update(f"{path}\0{digest}\0".encode())
    return h.hexdigest() if headers else ""


def cache_key(source: str, cxx: str, flags: list[str]) -> str:
    h = hashlib.sha256()
    for part in (source, headers_digest(source), " ".join(flags), compiler_version(cxx), _host()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}_{threading.get_ident()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _try_load(lib_path: Path, sum_path: Path) -> ctypes.CDLL | None:
    """The cached library if it is complete and loads; None means rebuild."""
    try:
        if _sha256_file(lib_path) != sum_path.read_text().strip():
            return None
        return ctypes.CDLL(str(lib_path))
    except OSError:
        return None


def _compile(cxx: str, flags: list[str], source: str, lib_path: Path, sum_path: Path) -> ctypes.CDLL:
    unique = f"tmp{os.getpid()}_{threading.get_ident()}"
    src_tmp = lib_path.with_name(f"{lib_path.stem}.{unique}.cpp")
    lib_tmp = lib_path.with_name(f"{lib_path.stem}.{unique}.so")
    src_tmp.write_text(source)
    fingerprint = f"{headers_digest(source)}\0{_host()}"
    prelude = prelude_flags(source, cxx, flags, lib_path.parent, compiler_version(cxx), fingerprint)
    cmd = [cxx, *flags, *prelude, str(src_tmp), "-o", str(lib_tmp)]
    logs.log("output_code", lambda: "compile command: " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 and prelude:  # a damaged .gch: without it, and rebuilt next time
            discard_prelude(prelude)
            cmd = [cxx, *flags, str(src_tmp), "-o", str(lib_tmp)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"{cxx} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        # Load our own build before publishing it: whatever another process
        # writes to the shared name afterwards, this mapping stays ours.
        try:
            lib = ctypes.CDLL(str(lib_tmp))
        except OSError as why:
            raise CompileError(f"compiled library does not load: {why}") from None
        # Checksum first, so a reader that sees the new library finds its sum.
        _write_atomic(sum_path, _sha256_file(lib_tmp).encode())
        os.replace(lib_tmp, lib_path)
        os.replace(src_tmp, lib_path.with_suffix(".cpp"))
        return lib
    finally:
        for leftover in (src_tmp, lib_tmp):
            leftover.unlink(missing_ok=True)


def clear_memory_cache() -> None:
    """Forget the libraries loaded in this process (the disk cache stays)."""
    with _lock:
        _loaded.clear()


# libgomp's idle workers spin for a while after each parallel region.  Our
# kernels alternate with NumPy and BLAS calls that want those same cores, so
# spinning workers would slow them (badly, on a machine with few cores); a
# short spin keeps back-to-back kernels cheap and then yields.  Read by
# libgomp when it is first loaded; a value the user set wins.  The spin count
# is the default config.SETTINGS shows the user.
def _openmp_env() -> None:
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", config.SETTINGS["GOMP_SPINCOUNT"].default)


def load(source: str, cache_dir: Path | None = None) -> tuple[ctypes.CDLL, Path, list[str]]:
    """Compile (or find in the cache) and load ``source``; returns the library,
    its path and the compile flags.  Raises CompilerNotFound or CompileError.
    ``cache_dir`` overrides ``config.cache_dir`` (the C++ runtime has its own)."""
    _openmp_env()
    cxx = find_compiler()
    flags = compile_flags()
    key = cache_key(source, cxx, flags)
    cache_dir = Path(cache_dir if cache_dir is not None else config.cache_dir)
    lib_path = cache_dir / f"{key}.so"
    sum_path = cache_dir / f"{key}.sha256"
    with _lock:
        lib = _loaded.get(key)
        if lib is not None:
            return lib, lib_path, [cxx, *flags]
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            lib = _load_or_compile(cxx, flags, source, lib_path, sum_path)
        except OSError as why:  # the cache directory is not usable; the compile itself did not fail
            private = _private_dir(cache_dir, why)
            lib_path, sum_path = private / lib_path.name, private / sum_path.name
            lib = _load_or_compile(cxx, flags, source, lib_path, sum_path)
        _loaded[key] = lib
        return lib, lib_path, [cxx, *flags]


def _load_or_compile(cxx: str, flags: list[str], source: str, lib_path: Path, sum_path: Path) -> ctypes.CDLL:
    """The library at ``lib_path`` if it is there and intact, else a fresh build of ``source``."""
    lib = _try_load(lib_path, sum_path) if lib_path.exists() else None
    return lib if lib is not None else _compile(cxx, flags, source, lib_path, sum_path)


_private: Path | None = None


def _private_dir(unusable: Path, why: OSError) -> Path:
    """This process's own directory for libraries, made (and announced) once,
    and removed when the process exits: nothing else will ever load from it."""
    global _private
    if _private is None:
        _private = Path(tempfile.mkdtemp(prefix="minicompile-"))
        atexit.register(_remove_private_dir, _private, os.getpid())
        warn(f"minicompile: cannot use the compile cache directory {unusable} ({why}); "
             f"compiling into {_private} for this process instead. Set MINICOMPILE_CACHE_DIR "
             "(or config.cache_dir) to a writable directory to keep compiled kernels across runs.")
    return _private


def _remove_private_dir(path: Path, owner: int) -> None:
    """At exit, the private directory goes, unless this is a forked child of the
    process that made it (the parent still loads from it)."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)
