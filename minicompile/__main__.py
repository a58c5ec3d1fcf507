"""``python -m minicompile demo``, ``bench``, ``report FILE.py:FUNCTION`` and ``runtime``;
``--help`` also lists every setting (``config.SETTINGS``)."""
from __future__ import annotations

import argparse
import sys
import textwrap

from . import config


def settings_help(width: int = 88) -> str:
    """The settings table as ``--help`` ends: each environment variable, its
    ``config`` field and default, then what it does."""
    lines = ["settings: environment variables, read when minicompile is first imported; one",
             "with a config field can also be set at run time (minicompile.config.FIELD = value).",
             "Flags are 0 or 1."]
    for s in config.SETTINGS.values():
        field = f"config.{s.field}" if s.field else "(environment only)"
        lines += ["", f"  {s.env}  {field}  default: {s.default}"]
        lines += textwrap.wrap(s.meaning, width, initial_indent="      ", subsequent_indent="      ",
                               break_on_hyphens=False)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minicompile", epilog=settings_help(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compile the built-in example and show every stage")
    demo.add_argument("--rows", type=int, default=2048)
    demo.add_argument("--cols", type=int, default=1024)
    bench = sub.add_parser("bench", help="benchmark compiled code against eager NumPy")
    bench.add_argument("--json", default="bench.json", help="where to write the results")
    bench.add_argument("--quick", action="store_true", help="small sizes, short runs")
    bench.add_argument("--gpu", action="store_true", help="the GPU suite: CuPy, triton backend, torch")
    report = sub.add_parser("report", help="write an HTML page showing every stage of compiling a function")
    report.add_argument("target", help="FILE.py:FUNCTION; inputs from FUNCTION_example_inputs() in that file")
    report.add_argument("-o", "--output", help="the HTML file (default FUNCTION_report.html)")
    report.add_argument("--backend", default="auto", help="eager, aot_eager, cpp, triton, spyre or auto")
    report.add_argument("--repeat", type=int, default=3, help="rounds of example calls (warm calls are timed)")
    sub.add_parser("runtime", help="build the C++ runtime library (the generated GEMM) ahead of first use")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import main as run_demo

        return run_demo(args.rows, args.cols)
    if args.command == "runtime":
        from .inductor.codegen.cpp.runtime import build

        return build()
    if args.command == "report":
        from .report.cli import main as run_report

        return run_report(args.target, args.output, args.backend, args.repeat)
    if args.gpu:
        from .benchmarks.gpu import main as run_gpu_bench

        return run_gpu_bench(args.json if args.json != "bench.json" else "bench_gpu.json", quick=args.quick)
    from .benchmarks.suite import main as run_bench

    return run_bench(args.json, quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
