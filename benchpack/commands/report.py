"""`benchpack report RESULT_DIR...`: a readable Markdown report of one or more runs."""

from __future__ import annotations

import argparse

from benchpack.commands.compare import load_result_dirs
from benchpack.report import render_report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="render a Markdown report of result directories",
        description="Host and run metadata, per-case medians and spread, cache rows, repo-task outcomes, "
        "and prefill parity across runs when more than one directory is given.",
    )
    parser.add_argument("result_dirs", nargs="+", metavar="RESULT_DIR", help="result directories")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(render_report(load_result_dirs(args.result_dirs)), end="")
    return 0
