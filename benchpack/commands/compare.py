"""`benchpack compare RESULT_DIR RESULT_DIR...`: per-case medians, noise bands, prefill parity."""

from __future__ import annotations

import argparse
from pathlib import Path

from typing import TYPE_CHECKING

from benchpack.errors import BenchpackError, ConfigError, Problem
from benchpack.reporting.output import add_output_options

if TYPE_CHECKING:
    from benchpack.results.resultdir import ResultDir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare result directories case by case",
        description="Per case and run: TTFT, prefill (or 'cached' when the prompt came from the server's "
        "cache) beside the server's own prompt rate, decode rate, output tokens and finish reasons, pass "
        "rate; each median with its noise band, each later run against the first with a ratio and whether "
        "it is outside the noise. Tables on a terminal, Markdown when piped or written with --output.",
    )
    parser.add_argument("result_dirs", nargs="+", metavar="RESULT_DIR", help="result directories (two or more)")
    add_output_options(parser)
    parser.add_argument("--charts", type=Path, metavar="DIR",
                        help="write the lanes' rate-vs-depth charts (SVG) to DIR and link them from the document")
    parser.set_defaults(handler=run)


def load_result_dirs(paths: list[str]) -> list[ResultDir]:
    """Load every directory, reporting the problems of all of them at once."""
    from benchpack.results.resultdir import load_result_dir

    results, problems = [], []
    for path in paths:
        try:
            results.append(load_result_dir(path))
        except BenchpackError as exc:
            problems.extend(exc.problems)
    if problems:
        raise BenchpackError(problems)
    return results


def run(args: argparse.Namespace) -> int:
    if len(args.result_dirs) < 2:
        raise ConfigError(Problem("compare", "RESULT_DIR", "needs at least two result directories (use `benchpack report` for one)"))
    # Imported here, not at the top: `benchpack --help` builds every parser and must not pay for them.
    from benchpack.reporting.compare import compare_runs
    from benchpack.reporting.lanes import write_charts
    from benchpack.reporting.output import emit
    from benchpack.reporting.report import compare_blocks

    results = load_result_dirs(args.result_dirs)
    comparison = compare_runs(results)
    charts = write_charts(comparison.lanes, args.charts) if args.charts else None
    emit(args, compare_blocks(comparison, results, charts=charts), comparison.to_dict())
    return 0
