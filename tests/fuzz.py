"""``make fuzz``: the random mutation programs at large counts, on every core.

In:  ``--seed S``, the programs per backend (``--examples`` for eager and
     aot_eager, ``--compiled-examples`` for cpp, triton and the CuPy test double's
     two), ``--workers W``
     (default: the machine's cores), ``--chunk``/``--compiled-chunk``, and
     optionally ``--backends`` (a comma-separated subset), ``--time-limit T``
     (no chunk starts after T seconds: for a machine lent for a fixed time) and
     ``--commit REV`` (fuzz that commit, checked out apart as a git worktree, so
     edits to the working tree during a long run change nothing it tests).
Out: each backend's count split into chunks, each chunk one
     ``pytest -m fuzz -k test_mutation_programs_<backend>`` process with a seed of
     its own (``S`` + its number), W of them at a time; a line per chunk as it
     ends, then the programs that passed per backend, the chunks skipped by the
     time limit, and for each failing chunk its log (``build/fuzz/``) and the
     command that replays it.  Exit status 1 if any chunk failed.

Hypothesis runs one test in one process, so a single run of 100,000 programs
uses one core; chunks with their own seeds use them all, and together draw as
many programs (different ones: each seed starts its own search).  A chunk
replays exactly with its seed and count, on the same code.

    python tests/fuzz.py --seed 1 --examples 100000 --compiled-examples 40000
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# backend -> which count it runs; the cupy_double ones run the programs on CuPy's test
# double's arrays (tests/fake_cupy.py) against CuPy eager.
BACKENDS = {"eager": "examples", "aot_eager": "examples", "cpp": "compiled_examples", "triton": "compiled_examples",
            "cupy_double_eager": "compiled_examples", "cupy_double_aot_eager": "compiled_examples"}
PASSING = re.compile(r"during generate phase.*?(\d+) passing", re.S)


def command(backend: str, seed: int, count: int) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "MINICOMPILE_FUZZ": "1", "MINICOMPILE_FUZZ_EXAMPLES": str(count),
           "MINICOMPILE_FUZZ_COMPILED_EXAMPLES": str(count), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", "-m", "fuzz", "-p", "no:cacheprovider", "-x",
           f"--hypothesis-seed={seed}", "--hypothesis-show-statistics",
           "-k", f"test_mutation_programs_{backend}", "tests/dynamo/test_mutation_programs.py"]
    return cmd, env


def run_chunk(backend: str, seed: int, count: int, logs: Path, deadline: float = float("inf"),
              tree: Path = ROOT) -> tuple[str, int, int, int, bool] | None:
    """One chunk, run in ``tree``: (backend, seed, count, programs that passed, failed?),
    or None when it would start after ``deadline`` (a ``time.time()``)."""
    if time.time() > deadline:
        return None
    cmd, env = command(backend, seed, count)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    passed = PASSING.search(text)
    failed = proc.returncode not in (0, 5)  # 5: nothing collected (a backend not installed)
    if failed:
        (logs / f"{backend}-{seed}.log").write_text(text)
    return backend, seed, count, int(passed.group(1)) if passed else 0, failed


def checkout(rev: str, logs: Path) -> tuple[Path, str]:
    """``rev`` checked out as a git worktree under ``logs``: (its folder, the full hash)."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    tree = logs / f"tree-{sha[:12]}"
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=ROOT, check=True,
                       capture_output=True)
    return tree, sha


def chunks(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(backend, seed, count) for every chunk, seeds counted up from ``args.seed``."""
    out, seed = [], args.seed
    wanted = getattr(args, "backends", None) or list(BACKENDS)
    for backend, kind in BACKENDS.items():
        total = getattr(args, kind) if backend in wanted else 0
        size = args.chunk if kind == "examples" else args.compiled_chunk
        while total > 0:
            out.append((backend, seed, min(size, total)))
            total -= size
            seed += 1
    # The slow compiled chunks first, so the fast ones fill the gaps at the end.
    return sorted(out, key=lambda c: BACKENDS[c[0]] != "compiled_examples")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--compiled-examples", type=int, default=40_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chunk", type=int, default=5_000)
    parser.add_argument("--compiled-chunk", type=int, default=500)
    parser.add_argument("--backends", type=lambda s: s.split(","), default=list(BACKENDS))
    parser.add_argument("--time-limit", type=float, default=float("inf"))
    parser.add_argument("--commit", help="fuzz this commit (a git worktree), not the working tree")
    args = parser.parse_args()
    if unknown := set(args.backends) - set(BACKENDS):
        parser.error(f"unknown backends {sorted(unknown)}: choose from {', '.join(BACKENDS)}")
    logs = ROOT / "build" / "fuzz"
    logs.mkdir(parents=True, exist_ok=True)
    work = chunks(args)
    tree, sha = checkout(args.commit, logs) if args.commit else (ROOT, "the working tree")
    print(f"fuzz: {len(work)} chunks on {args.workers} workers, seeds {args.seed}..{max(s for _, s, _ in work)}, "
          f"testing {sha}", flush=True)
    start, totals, failures, skipped = time.time(), dict.fromkeys(args.backends, 0), [], 0
    with ThreadPoolExecutor(args.workers) as pool:
        for done in as_completed([pool.submit(run_chunk, *c, logs, start + args.time_limit, tree) for c in work]):
            if done.result() is None:
                skipped += 1
                continue
            backend, seed, count, passed, failed = done.result()
            totals[backend] += passed
            status = f"FAILED: see {logs / f'{backend}-{seed}.log'}" if failed else "ok"
            print(f"{backend} seed {seed}: {passed} of {count} passed at {time.time() - start:.0f} s, {status}",
                  flush=True)
            if failed:
                failures.append((backend, seed, count))
    print(f"fuzz: programs passed {totals} in {time.time() - start:.0f} s"
          + (f"; {skipped} chunks not started (time limit)" if skipped else ""))
    for backend, seed, count in failures:
        cmd, _ = command(backend, seed, count)
        print(f"replay (at {sha}): MINICOMPILE_FUZZ=1 MINICOMPILE_FUZZ_EXAMPLES={count} "
              f"MINICOMPILE_FUZZ_COMPILED_EXAMPLES={count} {' '.join(cmd[1:])}")
    if tree != ROOT:  # the logs stay; the checkout goes
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
