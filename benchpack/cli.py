"""`benchpack` entry point.

Each sub-command lives in its own module under `benchpack.commands` and
exposes `register(subparsers)`, which adds its parser and sets
`handler(args) -> int` as the parser default. This file only wires them and
turns BenchpackError into one line per problem with exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from benchpack import __version__
from benchpack.errors import BenchpackError

# Order is the order shown in `benchpack --help`.
COMMAND_MODULES = [
    "benchpack.commands.validate",
    "benchpack.commands.run",
    "benchpack.commands.compare",
    "benchpack.commands.report",
    "benchpack.commands.registry",
    "benchpack.commands.submit",
    "benchpack.commands.selftest",
    "benchpack.commands.audit",
    "benchpack.commands.refserver",
    "benchpack.commands.list",
    "benchpack.commands.import",
    "benchpack.commands.export",
]
# Command name -> its module (each module registers the command named as its last component).
COMMANDS = {name.rsplit(".", 1)[1]: name for name in COMMAND_MODULES}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with `command` (a name in COMMANDS) only that command's sub-parser.

    `benchpack run …` then imports and builds one command module instead of all ten: every process
    that names its command pays for that command only (a short `benchpack run` is dominated by its
    fixed costs, docs/measurement.md "The whole process's cost"). Its parsing, help and errors are
    the same: a sub-command's parser never depends on the others.
    """
    parser = argparse.ArgumentParser(
        prog="benchpack",
        description="Run versioned LLM benchmark packs and keep their results honest.",
    )
    parser.add_argument("--version", action="version", version=f"benchpack {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in ([COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES):
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args))
    except BenchpackError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchpack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_went_away()


SIGPIPE_STATUS = 128 + 13


def _reader_went_away() -> int:
    """`benchpack … | head`: the reader closed the pipe. Stop quietly, as Unix
    tools do (status 141, as if killed by SIGPIPE), and keep Python from
    complaining when it flushes stdout on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return SIGPIPE_STATUS


def run_process() -> None:
    """`main` as the process's whole life (the console script, `python -m benchpack`, `-m benchpack.cli`):
    its status, and an exit that does not scan every object the command left.

    When the interpreter exits, it runs the cyclic collector over everything still alive — every module's
    classes, functions and dicts, and a run's rows — and then tears the modules down: 24–35 ms of CPU after
    a 64-stream `benchpack run` (docs/measurement.md, "Issue 34 item 2: stop 40"), for memory the process
    gives back anyway. Frozen (gc.freeze), those objects are left out of that collection; exit handlers,
    stream flushing and the modules' teardown run as before. Only here, never in `main`: a process that
    calls `main` repeatedly (the tests) keeps its collector whole.
    """
    status = main()
    import gc

    gc.freeze()
    raise SystemExit(status)


if __name__ == "__main__":
    run_process()
