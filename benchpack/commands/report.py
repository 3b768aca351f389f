"""`benchpack report RESULT_DIR...`: a readable report of one or more runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchpack.commands.compare import add_columns_option
from benchpack.reporting.output import add_output_options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="a report of result directories: tables on a terminal, Markdown in a file",
        description="Host and run metadata, per-case medians with noise bands, spread, cache state, "
        "repo-task outcomes, and the comparison across runs when more than one directory is given.",
    )
    parser.add_argument("result_dirs", nargs="+", metavar="RESULT_DIR", help="result directories")
    add_output_options(parser)
    add_columns_option(parser)
    parser.add_argument("--charts", type=Path, metavar="DIR",
                        help="write the lanes' rate-vs-depth charts (SVG) to DIR and link them from the document")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `benchpack --help` builds every parser and must not pay for them.
    from benchpack.commands.compare import case_columns, load_result_dirs
    from benchpack.reporting.compare import compare_runs
    from benchpack.reporting.lanes import write_charts
    from benchpack.reporting.output import emit
    from benchpack.reporting.report import report_blocks

    results = load_result_dirs(args.result_dirs)
    comparison = compare_runs(results)
    charts = write_charts(comparison.lanes, args.charts) if args.charts else None
    data = {
        "comparison": comparison.to_dict(),
        "runs": [{"path": str(r.path), "hardware": r.hardware, "run_metadata": r.run_metadata} for r in results],
    }
    emit(args, report_blocks(results, charts=charts, case_columns=case_columns(args)), data)
    return 0
