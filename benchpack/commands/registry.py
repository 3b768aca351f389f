"""`benchpack registry …`: the local SQLite result registry (docs/registry.md).

import / migrate / agent-wrap import write the database; report / site /
query open it read-only; fingerprint reads result directories only.
`registry bundle …` mounts the bundle commands (create/validate/pack/unpack)
from `benchpack.commands.registry_bundle` when present, plus `bundle import`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from benchpack.errors import ConfigError, Problem
from benchpack.reporting.output import add_output_options, emit

DB_HELP = "the registry's SQLite file, e.g. var/local.sqlite3"
QUERY_FILTERS = {
    "pack": "pack id, e.g. runtime-sweep",
    "pack-version": "pack version, e.g. 1.0.0",
    "case": "case id, e.g. short",
    "model": "model name as given to `benchpack run --model`",
    "adapter": "openai-chat, ollama-generate, anthropic-messages or openai-responses",
    "run": "run label (the result directory's name)",
    "fingerprint": "comparability fingerprint (sha256 hex, from `registry fingerprint`)",
    "workload": "case-stats: workload key (what was asked; sha256 hex)",
    "system": "case-stats: system key (model + runtime + hardware; sha256 hex)",
    "status": "agent-wrap: pass / fail / …",
    "harness": "agent-wrap: the agent harness",
    "provider": "agent-wrap: the model provider",
    "thinking": "agent-wrap: the thinking level",
}


def register(subparsers) -> None:
    parser = subparsers.add_parser("registry", help="index result directories in a local SQLite registry",
                                   description="A local SQLite index of result directories: import them, "
                                   "query them, report on them, export a static site, make and import bundles.")
    group = parser.add_subparsers(dest="registry_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: _usage(parser))

    p = group.add_parser("import", help="index result directories (run.jsonl, hardware.json, run-metadata.json)")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP + "; created when missing")
    p.add_argument("result_dirs", nargs="+", type=Path, metavar="RESULT_DIR", help="result directories to index")
    p.set_defaults(handler=cmd_import)

    p = group.add_parser("migrate", help="upgrade a registry database to the current schema")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP)
    p.set_defaults(handler=cmd_migrate)

    p = group.add_parser("report", help="report rebuilt from the registry alone, one section per pack (read-only)")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP + " (opened read-only)")
    p.add_argument("--run", action="append", metavar="LABEL", help="only this run (repeatable)")
    p.add_argument("--pack", help="only this pack id (default: every pack, one section each)")
    add_output_options(p)
    p.set_defaults(handler=cmd_report)

    p = group.add_parser("site", help="static index.html + report.md from the registry (read-only)")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP + " (opened read-only)")
    p.add_argument("--out", required=True, type=Path, help="directory to write index.html and report.md into")
    p.set_defaults(handler=cmd_site)

    p = group.add_parser("query", help="JSON array of exact-filtered registry records (read-only)",
                         description="Every filter is an exact match; filters combine with AND. Not every "
                         "filter applies to every table (an inapplicable one is refused, never ignored).")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP + " (opened read-only)")
    p.add_argument("--table", default="rows", choices=["runs", "rows", "case-stats", "agent-wrap"],
                   help="runs: one record per imported run; rows: one per run.jsonl row (default); "
                   "case-stats: per run and case medians; agent-wrap: curated one-shot wrap runs")
    for name, help_text in QUERY_FILTERS.items():
        p.add_argument(f"--{name}", metavar=name.upper().replace("-", "_"), help=help_text)
    p.add_argument("--ok", choices=["true", "false"], help="rows: only rows whose request succeeded (true) or failed")
    p.add_argument("--limit", type=int, default=1000, help="at most N records (0 = all; default 1000)")
    p.add_argument("--raw", action="store_true", help="include each row's original run.jsonl object")
    p.add_argument("--explain", action="store_true", help="print SQLite's query plan instead of results")
    p.set_defaults(handler=cmd_query)

    p = group.add_parser("fingerprint", help="show the comparability fingerprint of result directories")
    p.add_argument("result_dirs", nargs="+", type=Path, metavar="RESULT_DIR", help="result directories")
    p.set_defaults(handler=cmd_fingerprint)

    wrap = group.add_parser("agent-wrap", help="curated one-shot Django/Electron wrap runs (hand-kept records of "
                            "agent runs that are not ordinary result directories)")
    wrap_group = wrap.add_subparsers(dest="agent_wrap_command", metavar="SUBCOMMAND")
    wrap.set_defaults(handler=lambda args: _usage(wrap))
    p = wrap_group.add_parser("import", help="import curated wrap rows idempotently by label")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP + "; created when missing")
    p.add_argument("curated", type=Path, metavar="CURATED_JSON", help="the curated JSON file")
    p.set_defaults(handler=cmd_agent_wrap_import)

    bundle = group.add_parser("bundle", help="compact, validated result bundles for sharing (docs/bundles.md)")
    bundle_group = bundle.add_subparsers(dest="bundle_command", metavar="SUBCOMMAND")
    bundle.set_defaults(handler=lambda args: _usage(bundle))
    try:
        bundle_commands = importlib.import_module("benchpack.commands.registry_bundle")
    except ImportError:
        bundle_commands = None
    if bundle_commands is not None:
        bundle_commands.register_bundle_commands(bundle_group)
    p = bundle_group.add_parser("import", help="validate bundles, then index their run directories")
    p.add_argument("--db", required=True, type=Path, help=DB_HELP + "; created when missing")
    p.add_argument("bundle_dirs", nargs="+", type=Path, metavar="BUNDLE_DIR", help="bundle directories")
    p.set_defaults(handler=cmd_bundle_import)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def cmd_import(args) -> int:
    from benchpack.registry.importer import RunSource, import_result_dirs

    summaries = import_result_dirs(args.db, [RunSource(path) for path in args.result_dirs])
    for s in summaries:
        verb = "re-imported" if s.replaced else "imported"
        print(f"{verb} {s.label}: {s.rows} row{'s' if s.rows != 1 else ''} ({s.ok_rows} ok), "
              f"{s.cases} case group{'s' if s.cases != 1 else ''}")
    return 0


def cmd_migrate(args) -> int:
    from benchpack.registry.schema import SCHEMA_VERSION, migrate_file

    before = migrate_file(args.db)
    print(f"{args.db}: schema version {before} -> {SCHEMA_VERSION}" if before < SCHEMA_VERSION
          else f"{args.db}: already at schema version {SCHEMA_VERSION}")
    return 0


def cmd_report(args) -> int:
    from benchpack.registry.report import registry_report
    from benchpack.registry.schema import open_read_only

    conn = open_read_only(args.db)
    try:
        blocks, data = registry_report(conn, args.run, args.pack)
    finally:
        conn.close()
    emit(args, blocks, data)
    return 0


def cmd_site(args) -> int:
    from benchpack.registry.schema import open_read_only
    from benchpack.registry.site import write_site

    conn = open_read_only(args.db)
    try:
        written = write_site(conn, args.out)
    finally:
        conn.close()
    for path in written:
        print(f"wrote {path}")
    return 0


def cmd_query(args) -> int:
    from benchpack.registry.query import Query, explain_plan, run_query
    from benchpack.registry.schema import open_read_only

    if args.limit < 0:
        raise ConfigError(Problem("registry query", "--limit", "must be 0 (all) or more"))
    filters = {
        "pack": args.pack, "pack_version": args.pack_version, "case": args.case, "model": args.model,
        "adapter": args.adapter, "run": args.run, "fingerprint": args.fingerprint,
        "workload": args.workload, "system": args.system,
        "ok": None if args.ok is None else int(args.ok == "true"),
        "status": args.status, "harness": args.harness, "provider": args.provider, "thinking": args.thinking,
    }
    query = Query(table=args.table, filters=filters, limit=args.limit or None, include_raw=args.raw)
    conn = open_read_only(args.db)
    try:
        if args.explain:
            for line in explain_plan(conn, query):
                print(line)
            return 0
        records = run_query(conn, query)
    finally:
        conn.close()
    _print_json(records)
    if args.limit and len(records) == args.limit:
        print(f"benchpack: {len(records)} records shown (the --limit); pass --limit 0 for all", file=sys.stderr)
    return 0


def cmd_fingerprint(args) -> int:
    from benchpack.registry.fingerprint_report import fingerprint_report

    _print_json(fingerprint_report(args.result_dirs))
    return 0


def cmd_agent_wrap_import(args) -> int:
    from benchpack.registry.agent_wrap import import_curated

    inserted, updated = import_curated(args.db, args.curated)
    print(f"agent-wrap: {inserted} new, {updated} updated")
    return 0


def cmd_bundle_import(args) -> int:
    from benchpack.registry.bundle_import import import_bundles

    for s in import_bundles(args.db, args.bundle_dirs):
        verb = "re-imported" if s.replaced else "imported"
        print(f"{verb} {s.label}: {s.rows} row{'s' if s.rows != 1 else ''} ({s.ok_rows} ok), "
              f"{s.cases} case group{'s' if s.cases != 1 else ''}")
    return 0
