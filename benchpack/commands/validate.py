"""`benchpack validate PACK`: check a manifest and everything it points at.

Prints `ok: <id> <version> (<n> cases)` and exits 0, or prints one line per
problem on stderr and exits 2. Reads only; never sends a request or writes a
file.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check a pack manifest, its prompt files, fixtures and scoring files",
        description="Load a pack the way `benchpack run` would and report every problem found, "
        "one per line. Nothing is sent to any endpoint and nothing is written.",
    )
    parser.add_argument("pack", help="pack directory, benchpack.toml, or bundled pack id")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from benchpack.errors import BenchpackError
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.run.scoring import check_runnable

    try:
        pack = load_pack(resolve_pack_path(args.pack))
    except OSError as exc:  # e.g. a permission problem while probing the path
        print(f"{args.pack}: cannot be read: {exc.strerror or exc}", file=sys.stderr)
        return 2
    # Fixed wording (also for one case) so scripts can parse the line.
    print(f"ok: {pack.id} {pack.version} ({len(pack.cases)} cases)")
    try:
        check_runnable(pack)
    except BenchpackError as exc:
        # A reserved mode is valid manifest syntax; say now that `run` will refuse it.
        for line in exc.lines():
            print(f"warning: {line}", file=sys.stderr)
    return 0
