"""`benchpack list`: the bundled packs, one line each (`--all`: every released version)."""

from __future__ import annotations

import argparse

LINE_WIDTH = 100  # one line each on a 100-column terminal


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("list", help="list the bundled packs, one line each",
                                   description="Every pack shipped with benchpack: id, version, cases, "
                                   "what it measures. Run one with `benchpack run <id> …` (its newest "
                                   "version) or `benchpack run <id>@<version> …` (any version --all shows).")
    parser.add_argument("--all", action="store_true",
                        help="also every older released version still bundled (benchpacks/previous/)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # The catalogue reads manifests with tomllib alone: `list` must answer at once (docs/cli-startup.md).
    from benchpack.packs.catalogue import newest_versions, pack_versions

    packs = pack_versions() if args.all else newest_versions()
    # The newest as `id version` (what `benchpack run id` runs), an older one as `id@version` (how to run it).
    names = [f"{p.id} {p.version}" if p.newest else f"{p.id}@{p.version}" for p in packs]
    width = max((len(name) for name in names), default=0)
    for name, pack in zip(names, packs):
        kinds = sorted(set(pack.case_kinds))
        count = len(pack.case_kinds)
        cases = f"{count} case{'s' if count != 1 else ''}"
        description = pack.description if pack.newest else f"(older) {pack.description}"
        line = f"{name:<{width}}  {cases}, {'/'.join(kinds)}: {description}"
        print(line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 1] + "…")
    return 0
