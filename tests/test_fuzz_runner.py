"""``make fuzz``'s runner (tests/fuzz.py): counts split into seeded chunks, chunks run and counted."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import fuzz  # noqa: E402


def test_counts_are_split_into_chunks_with_seeds_of_their_own():
    args = argparse.Namespace(seed=10, examples=12_000, compiled_examples=900, chunk=5_000, compiled_chunk=500)
    work = fuzz.chunks(args)
    by_backend = {b: [n for c, _, n in work if c == b] for b in fuzz.BACKENDS}
    assert by_backend == {"eager": [5000, 5000, 2000], "aot_eager": [5000, 5000, 2000],
                          "cpp": [500, 400], "triton": [500, 400], "cupy_double_eager": [500, 400],
                          "cupy_double_aot_eager": [500, 400]}
    seeds = [s for _, s, _ in work]
    assert sorted(seeds) == list(range(10, 10 + len(work)))
    assert [fuzz.BACKENDS[b] for b, _, _ in work][:8] == ["compiled_examples"] * 8  # slow chunks first


def test_a_chunk_runs_its_programs_and_counts_them(tmp_path):
    backend, seed, count, passed, failed = fuzz.run_chunk("eager", 3, 4, tmp_path)
    assert (backend, seed, count, passed, failed) == ("eager", 3, 4, 4, False)
    assert not list(tmp_path.iterdir())  # a log only for a failing chunk


def test_backends_can_be_chosen_and_a_chunk_past_the_time_limit_does_not_start(tmp_path):
    args = argparse.Namespace(seed=1, examples=10, compiled_examples=10, chunk=5, compiled_chunk=5,
                              backends=["cpp"])
    assert fuzz.chunks(args) == [("cpp", 1, 5), ("cpp", 2, 5)]
    assert fuzz.run_chunk("eager", 3, 4, tmp_path, deadline=0.0) is None


def test_a_commit_is_fuzzed_in_a_checkout_of_its_own(tmp_path):
    """--commit runs the chunks in a git worktree of that commit: edits made to the
    working tree during a long run do not reach the programs it tests."""
    tree, sha = fuzz.checkout("HEAD", tmp_path)
    try:
        assert (tree / "tests" / "fuzz.py").exists() and len(sha) == 40
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True).stdout
        assert head.strip() == sha
        assert fuzz.run_chunk("eager", 3, 2, tmp_path, tree=tree) == ("eager", 3, 2, 2, False)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=fuzz.ROOT, capture_output=True)
