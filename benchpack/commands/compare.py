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
    add_columns_option(parser)
    parser.add_argument("--charts", type=Path, metavar="DIR",
                        help="write the lanes' rate-vs-depth charts (SVG) to DIR and link them from the document")
    parser.set_defaults(handler=run)


COLUMN_NAMES = ("ok", "wall", "ttft", "prefill", "server-prefill", "decode", "total", "prompt", "cached", "output",
                "pass")  # benchpack.reporting.report.CASE_COLUMNS, in order (held equal by a test)
TERMINAL_DEFAULT = ("ok", "ttft", "prefill", "server-prefill", "decode", "output", "pass")


def _column_list(text: str) -> tuple[str, ...]:
    if text.strip() == "all":
        return COLUMN_NAMES
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in COLUMN_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown column {', '.join(unknown) or '(none given)'}; "
                                         f"choose from all, {', '.join(COLUMN_NAMES)}")
    return names


def add_columns_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--columns", type=_column_list, metavar="LIST",
                        help="the per-case table's columns, comma-separated, or `all`: "
                        f"{','.join(COLUMN_NAMES)}. Default: all in Markdown (a file or a pipe); "
                        f"{','.join(TERMINAL_DEFAULT)} on a terminal, to fit 100 columns")


def case_columns(args: argparse.Namespace) -> tuple[str, ...]:
    """--columns as given, else every column in Markdown and the compact set on a terminal."""
    import sys

    if args.columns:
        return args.columns
    markdown = args.output is not None or args.markdown or args.json or not sys.stdout.isatty()
    return COLUMN_NAMES if markdown else TERMINAL_DEFAULT


def load_result_dirs(paths: list[str]) -> list[ResultDir]:
    """Load every directory, reporting the problems of all of them at once."""
    from benchpack.results.resultdir import load_result_dir

    results, problems = [], []
    for path in paths:
        try:
            result = load_result_dir(path)
        except BenchpackError as exc:
            problems.extend(exc.problems)
            continue
        if not result.rows:
            # The seed's contract: nothing to compare is an error (exit 2), not an empty table.
            problems.append(Problem(str(result.path / "run.jsonl"), "", "has no rows (empty or whitespace only)"))
        results.append(result)
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
    emit(args, compare_blocks(comparison, results, charts=charts, case_columns=case_columns(args)),
         comparison.to_dict())
    return 0
