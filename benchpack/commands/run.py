"""`benchpack run PACK --adapter A --model M --endpoint URL --out DIR`.

Exit status: 0 when every row is ok, 1 when any row failed (or the run
stopped early), 2 for invalid input (nothing written), 130 on Ctrl-C (the
rows done so far and their summary are kept).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchpack.progress import progress_for
from benchpack.runner import OPENAI_STREAM_USAGE, RunOptions, run_pack

ADAPTER_CHOICES = ("openai-chat", "ollama-generate")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a benchmark pack against an endpoint and write a result directory",
        description="Run every case of a pack (warmups and repetitions from the pack's defaults) "
        "and write run.jsonl, hardware.json, summary.md and raw/ into --out.",
    )
    parser.add_argument("pack", help="pack directory, benchpack.toml, or bundled pack id")
    parser.add_argument("--adapter", required=True, choices=ADAPTER_CHOICES)
    parser.add_argument("--model", required=True, help="model name sent to the endpoint")
    parser.add_argument("--endpoint", required=True, help="endpoint base URL, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--out", required=True, type=Path, help="result directory to create")
    parser.add_argument("--host-label", help="record this instead of the machine's hostname")
    parser.add_argument("--run-metadata", type=Path, metavar="FILE",
                        help="JSON object with runtime/model/operating_conditions/notes (run-metadata.json)")
    parser.add_argument("--openai-stream-usage", choices=OPENAI_STREAM_USAGE, default="include",
                        help="send stream_options.include_usage on streamed openai-chat requests (D-014)")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing non-empty result directory")
    parser.add_argument("--repetitions", type=int, metavar="N")
    parser.add_argument("--prompt-cache", choices=("cold", "server-default"))
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from benchpack.packs import load_pack, resolve_pack_path
    from benchpack.run_metadata import load_run_metadata

    pack = load_pack(resolve_pack_path(args.pack))
    metadata = load_run_metadata(args.run_metadata) if args.run_metadata else None
    options = RunOptions(
        adapter=args.adapter,
        model=args.model,
        endpoint=args.endpoint,
        out=args.out,
        host_label=args.host_label,
        run_metadata=metadata,
        openai_stream_usage=args.openai_stream_usage,
        force=args.force,
        repetitions=args.repetitions,
        prompt_cache=args.prompt_cache,
    )
    progress = progress_for(pack.defaults.repetitions, pack.defaults.warmup, sys.stdout)
    outcome = run_pack(pack, options, progress)
    failed = sum(1 for row in outcome.rows if not row["ok"])
    print(f"wrote {len(outcome.rows)} rows to {outcome.out} ({failed} failed)")
    if outcome.aborted:
        print(f"benchpack run: stopped early: {outcome.aborted}", file=sys.stderr)
    if outcome.interrupted:
        print("benchpack run: interrupted; kept the rows written so far", file=sys.stderr)
        return 130
    return 0 if outcome.all_ok else 1
