"""`benchpack list`: the bundled packs, one line each."""

from __future__ import annotations

import argparse

LINE_WIDTH = 100  # one line each on a 100-column terminal


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("list", help="list the bundled packs, one line each",
                                   description="Every pack shipped with benchpack: id, version, cases, "
                                   "what it measures. Run one with `benchpack run <id> …`.")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from benchpack.packs.loader import bundled_packs_dir, load_pack

    packs = [load_pack(p.parent) for p in sorted(bundled_packs_dir().glob("*/benchpack.toml"))]
    width = max((len(f"{p.id} {p.version}") for p in packs), default=0)
    for pack in packs:
        kinds = sorted({c.kind for c in pack.cases})
        cases = f"{len(pack.cases)} case{'s' if len(pack.cases) != 1 else ''}"
        line = f"{f'{pack.id} {pack.version}':<{width}}  {cases}, {'/'.join(kinds)}: {pack.description}"
        print(line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 1] + "…")
    return 0
