"""`benchpack compare RESULT_DIR RESULT_DIR...`: per-case medians and prefill parity."""

from __future__ import annotations

import argparse
import json

from benchpack.compare import compare_runs
from benchpack.errors import BenchpackError, ConfigError, Problem
from benchpack.report import render_compare
from benchpack.resultdir import ResultDir, load_result_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare result directories case by case (reads run.jsonl only)",
        description="Per-case medians over ok rows, prompt/cache token parity and gated prefill_tps, "
        "read from each directory's run.jsonl.",
    )
    parser.add_argument("result_dirs", nargs="+", metavar="RESULT_DIR", help="result directories (two or more)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of Markdown")
    parser.set_defaults(handler=run)


def load_result_dirs(paths: list[str]) -> list[ResultDir]:
    """Load every directory, reporting the problems of all of them at once."""
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
    comparison = compare_runs(load_result_dirs(args.result_dirs))
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2))
    else:
        print(render_compare(comparison), end="")
    return 0
