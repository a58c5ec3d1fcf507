"""``python -m minicompile.docs notebooks OUT`` and ``python -m minicompile.docs site OUT``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import notebooks


def _selected(numbers: list[str] | None, scripts: list[Path]) -> list[Path]:
    """The scripts whose number (``07``) or name (``07_min_cut_partitioning``) is given; None: all."""
    if numbers is None:
        return scripts
    chosen = [s for s in scripts if s.stem[:2] in numbers or s.stem in numbers]
    unknown = set(numbers) - {s.stem[:2] for s in chosen} - {s.stem for s in chosen}
    if unknown:
        raise SystemExit(f"no tutorial {sorted(unknown)} in {notebooks.TUTORIALS}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minicompile.docs")
    sub = parser.add_subparsers(dest="command", required=True)
    nb = sub.add_parser("notebooks", help="write the tutorials as executed notebooks")
    nb.add_argument("out", type=Path, help="the folder (make tutorials: build/notebooks)")
    site = sub.add_parser("site", help="build the documentation site")
    site.add_argument("out", type=Path, help="the folder (make docs: build/docs)")
    site.add_argument("--notebooks", type=Path, default=Path("build/notebooks"),
                      help="where executed notebooks are kept between builds")
    for command in (nb, site):
        command.add_argument("--only", nargs="+", metavar="NN",
                             help="only these tutorials (their numbers), for a quick look")
        command.add_argument("--jobs", type=int, help="kernels at once (default: one per CPU)")
    args = parser.parse_args(argv)
    if not notebooks.TUTORIALS.is_dir():
        raise SystemExit(f"no tutorials in {notebooks.TUTORIALS}: run this in a source checkout of minicompile")
    scripts = _selected(args.only, notebooks.tutorials())
    try:
        if args.command == "notebooks":
            for path in notebooks.write(scripts, args.out, jobs=args.jobs):
                print(path)
            return 0
        from .site import build

        print(f"site: {build(args.out, args.notebooks, scripts, jobs=args.jobs)}")
        return 0
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
