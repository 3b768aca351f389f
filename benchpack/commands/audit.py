"""`benchpack audit PACK`: check that a pack's verifiers reach the verdicts their audit fixtures expect.

Exit status: 0 when every fixture's verdict matches, 1 when any does not,
2 for invalid input (unknown pack, missing or malformed audit fixtures).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="run a pack's verifier audit fixtures through the real repo-task pipeline",
        description="For every repo-task case, replay each fixture in audit/<case>/audit.toml "
        "(known-good, alternative-valid, wrong, shortcut, collateral, corrupt/missing evidence) "
        "through the runner, executor and verifier in a fresh workspace, and compare the verdict "
        "with the expected one. See docs/audits.md.",
    )
    parser.add_argument("pack", help="pack directory, benchpack.toml, or bundled pack id")
    parser.add_argument("--case", action="append", dest="cases", metavar="ID", help="audit only this case (repeatable)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the result directories here (DIR/<case>/<fixture>/) instead of a temporary directory")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="play the fixtures without bubblewrap (where none is available); guarded-path "
                             "detection is then the only defence against the cheat fixtures")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from benchpack.selfcheck.audit import audit_pack, load_audit, missing_coverage, results_to_dict
    from benchpack.errors import ConfigError, Problem
    from benchpack.packs.loader import load_pack, resolve_pack_path

    pack = load_pack(resolve_pack_path(args.pack))
    fixtures = load_audit(pack, args.cases)
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        raise ConfigError(Problem(str(args.keep), "--keep", "exists and is not empty"))
    err = Console(stderr=True)
    for case_id, kinds in sorted(missing_coverage(fixtures).items()):
        err.print(f"warning: audit/{case_id}: no fixture of kind {', '.join(kinds)}", markup=False, highlight=False)

    def progress(result) -> None:
        if not args.json:
            mark = "ok" if result.ok else "MISMATCH"
            err.print(f"{result.fixture.case_id}/{result.fixture.id}: {result.actual} ({mark})", markup=False, highlight=False)

    results = audit_pack(pack, fixtures, workdir=args.keep, on_result=progress, unsandboxed=args.unsandboxed)
    if args.json:
        print(json.dumps(results_to_dict(pack, results), indent=2))
    else:
        sandbox = "none (--unsandboxed)" if args.unsandboxed else "bubblewrap"
        table = Table(title=f"audit {pack.id} {pack.version} (sandbox: {sandbox})")
        for column in ("case", "fixture", "kind", "expected", "actual", "ok", "note"):
            table.add_column(column, overflow="fold")
        for r in results:
            expected = r.fixture.expected + (f" ({r.fixture.failed_check})" if r.fixture.failed_check else "")
            table.add_row(r.fixture.case_id, r.fixture.id, r.fixture.kind, expected, r.actual,
                          "ok" if r.ok else "MISMATCH", r.note)  # fmt: skip
        console = Console(width=max(Console().width, 160)) if not sys.stdout.isatty() else Console()
        console.print(table)
        mismatches = sum(not r.ok for r in results)
        console.print(f"{len(results) - mismatches}/{len(results)} verdicts as expected", highlight=False)
    return 0 if all(r.ok for r in results) else 1
