"""`benchpack export harbor PACK[@VERSION] --out DIR`: a coding pack's repo-task cases as Harbor tasks."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="write a coding pack's repo-task cases as Harbor tasks (+ dataset.toml with digests)",
        description="One Harbor task (format 1.4) per repo-task case: instruction.md, environment/Dockerfile "
        "(pinned base image, non-root agent, the repo fixture at /app), tests/test.sh (the pack's own verifier "
        "in a separate, offline verifier container; reward.txt 1/0 and reward.json per check; an "
        "infrastructure fault writes no reward), solution/solve.sh (the known-good audit fixture), and a "
        "dataset.toml with each task's content digest as Harbor computes it (docs/interop.md).")
    parser.add_argument("target", choices=("harbor",), help="the format to export to")
    parser.add_argument("pack", metavar="PACK[@VERSION]", help="a bundled pack id (its newest version), ID@VERSION, or a pack directory")
    parser.add_argument("--out", type=Path, required=True, help="the directory to create (must not exist)")
    parser.add_argument("--mode", choices=("agent", "answer"), default="agent",
                        help="agent: the agent edits /app and the verifier compares it with the pristine fixture; "
                        "answer: the agent writes its final reply to /logs/artifacts/answer.md and the verifier "
                        "applies it with Benchpack's fenced-patch executor first, the scoring of `benchpack run`")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from benchpack.interop.harbor_export import export_pack

    tasks = export_pack(args.pack, args.out, args.mode)
    for task in tasks:
        print(f"{task.name}  sha256:{task.digest}  {args.out / task.directory}")
    print(f"{len(tasks)} task(s); {args.out / 'dataset.toml'}")
    return 0
