"""Where `compare`/`report` send their document: a terminal, a pipe, a file, or JSON.

On a terminal the tables are drawn with rich to fit it; piped or written to
a file (`--output FILE`) the same document is Markdown; `--json` prints the
data instead, for scripts. `--markdown` forces Markdown on a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO

from benchpack.errors import ConfigError, Problem
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchpack.reporting.document import Block


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the data as JSON (for scripts)")
    parser.add_argument("--markdown", action="store_true", help="Markdown even on a terminal")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write Markdown (or JSON with --json) to FILE instead of the terminal")


def emit(args: argparse.Namespace, blocks: list[Block], data: dict, stream: IO[str] | None = None) -> None:
    from benchpack.reporting.document import print_blocks, terminal_console, to_markdown

    stream = stream or sys.stdout
    text = json.dumps(data, indent=2) + "\n" if args.json else None
    if args.output is not None:
        if args.output.is_dir():
            raise ConfigError(Problem(str(args.output), "--output", "is a directory"))
        try:
            args.output.write_text(text if text is not None else to_markdown(blocks), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(Problem(str(args.output), "--output", f"cannot write: {exc.strerror or exc}")) from None
        print(f"wrote {args.output}", file=stream)
        return
    if text is not None:
        stream.write(text)
    elif args.markdown or not stream.isatty():
        stream.write(to_markdown(blocks))
    else:
        print_blocks(blocks, terminal_console(stream))
