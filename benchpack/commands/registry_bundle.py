"""`benchpack registry bundle create|validate|pack|unpack` (docs/bundles.md).

Mounted by `commands/registry.py` through `register_bundle_commands`.
Exit status: 0 done/valid, 1 invalid bundle or refused archive, 2 bad usage
(and a refused `create`, which never leaves a partial bundle).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchpack.errors import ConfigError, Problem

from benchpack.results.provenance import CLAIMS as PROVENANCES
# Refusals that mean "you called it wrong", not "this archive is hostile".
_USAGE_CODES = {"archive.unsupported-type", "archive.not-found", "archive.destination-exists", "archive.destination-parent-missing"}


def register_bundle_commands(bundle_subparsers) -> None:
    p = bundle_subparsers.add_parser(
        "create",
        help="copy compact artifacts of result directories into a validated bundle",
        description="Copy run.jsonl, hardware.json, run-metadata.json, referenced patch diffs and safe "
        "model-call logs; record every other file by sha256 and size. Refuses (exit 2) when the "
        "secret scan or any validation check fails, or when a run did not finish (its run-metadata.json "
        "says complete: false) unless --allow-incomplete, leaving nothing behind.",
    )
    p.add_argument("--out", required=True, type=Path, help="bundle directory to create")
    p.add_argument("--provenance", required=True, choices=PROVENANCES,
                   help="who you say made the results (a claim, shown as such: the registry publishes "
                   "the provenance it earns itself): self-reported, operator-curated, independently-reproduced")
    p.add_argument("--force", action="store_true", help="replace an existing bundle directory (never anything else)")
    p.add_argument("--host-label", metavar="LABEL",
                   help="publish LABEL as every run's hostname; without it a real hostname becomes an opaque label")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="bundle runs that did not finish too; their run-metadata.json keeps saying complete: false")
    p.add_argument("result_dirs", nargs="+", type=Path, metavar="RESULT_DIR", help="result directories to bundle")
    p.set_defaults(handler=cmd_create)

    p = bundle_subparsers.add_parser(
        "validate",
        help="check a bundle offline: manifest, paths, hashes, rows, metadata, secrets, limits",
        description="Exit 0 when valid, 1 when any check reports an error, 2 on bad usage.",
    )
    p.add_argument("bundle_dir", type=Path, metavar="BUNDLE_DIR", help="the bundle directory")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.set_defaults(handler=cmd_validate)

    p = bundle_subparsers.add_parser("pack", help="write a bundle directory as .tar.gz or .zip (by --out's name)")
    p.add_argument("bundle_dir", type=Path, metavar="BUNDLE_DIR", help="the bundle directory")
    p.add_argument("--out", required=True, type=Path, help="archive path ending in .tar.gz, .tgz or .zip")
    p.set_defaults(handler=cmd_pack)

    p = bundle_subparsers.add_parser(
        "unpack",
        help="safely extract a bundle archive into a new directory",
        description="Refuses links, devices, absolute or '..' names, duplicates, and archives that expand "
        "too far; on refusal nothing is written. Run `validate` on the result.",
    )
    p.add_argument("archive", type=Path, metavar="ARCHIVE", help="a .tar.gz, .tgz or .zip bundle archive")
    p.add_argument("--out", required=True, type=Path, help="directory to create (must not exist)")
    p.set_defaults(handler=cmd_unpack)


def cmd_create(args: argparse.Namespace) -> int:
    from benchpack.bundles.create import create_bundle

    out = create_bundle(args.result_dirs, args.out, args.provenance, force=args.force,
                        host_label=args.host_label, allow_incomplete=args.allow_incomplete)
    print(f"created bundle {out} ({len(args.result_dirs)} runs, provenance {args.provenance})")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from benchpack.bundles.create import validate_bundle

    if not args.bundle_dir.is_dir():
        raise ConfigError(Problem(str(args.bundle_dir), "", "not a directory"))
    report = validate_bundle(args.bundle_dir)
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for finding in report.findings:
            where = finding.path or str(args.bundle_dir)
            if finding.line:
                where += f":{finding.line}"
            print(f"{finding.severity}: {where}: {finding.code}: {finding.message}")
        for label, run in report.plausibility.items():  # every run, unchecked ones too: never hidden
            verdict = run["verdict"]
            print(f"plausibility: run {label}: {verdict['status']}: {verdict['reason']}")
        verdict = "valid" if report.ok else f"INVALID ({len(report.errors)} errors)"
        if report.ok and not report.publishable:
            verdict += ", not publishable without an operator's written override (an implausible run)"
        print(f"{args.bundle_dir}: {verdict}")
    return 0 if report.ok else 1


def cmd_pack(args: argparse.Namespace) -> int:
    from benchpack.bundles.archives import ArchiveError, pack_archive
    from benchpack.bundles.create import validate_bundle

    report = validate_bundle(args.bundle_dir)
    if not report.ok:
        for finding in report.errors:
            print(f"error: {finding.path or args.bundle_dir}: {finding.code}: {finding.message}", file=sys.stderr)
        print(f"{args.bundle_dir}: not packed: the bundle is invalid", file=sys.stderr)
        return 1
    try:
        archive = pack_archive(args.bundle_dir, args.out)
    except ArchiveError as exc:
        raise ConfigError(Problem(str(args.out), exc.code, exc.message)) from None
    print(f"packed {args.bundle_dir} -> {archive}")
    return 0


def cmd_unpack(args: argparse.Namespace) -> int:
    from benchpack.bundles.archives import ArchiveError, safe_extract

    try:
        out = safe_extract(args.archive, args.out)
    except ArchiveError as exc:
        print(f"{args.archive}: {exc.code}: {exc.message}", file=sys.stderr)
        return 2 if exc.code in _USAGE_CODES else 1
    print(f"unpacked {args.archive} -> {out}")
    return 0
