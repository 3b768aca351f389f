#!/usr/bin/env python3
"""Deterministic reference for the public `external-agent` handoff (no model calls).

The runner invokes it as
  <BENCHPACK_EXTERNAL_AGENT_ARGV...> --workspace W --case C --output-dir O --repetition N --context F
with the prepared workspace as working directory. It reads the context JSON,
checks the core public fields against its arguments, writes one marker file
in the workspace and one recommended model-call JSONL line, and exits 0.
Any mismatch is reported on stderr with exit status 2.

Use it as:  BENCHPACK_EXTERNAL_AGENT_ARGV='["python3", "examples/external-agent/reference-agent.py"]'
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MARKER = "benchpack-reference-agent.txt"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
        parser.add_argument(name, required=True)
    return parser.parse_args(argv)


def check_context(context: dict, args: argparse.Namespace) -> list[str]:
    """Mismatches between the context file and the appended arguments."""
    expected = {
        ("version",): 1,
        ("case", "id"): args.case,
        ("workspace", "path"): str(Path(args.workspace).resolve()),
        ("run", "output_dir"): str(Path(args.output_dir).resolve()),
        ("run", "repetition"): int(args.repetition),
    }
    problems = []
    for keys, want in expected.items():
        value = context
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value != want:
            problems.append(f"context {'.'.join(keys)} is {value!r}, expected {want!r}")
    for keys in (("pack", "id"), ("case", "prompt"), ("run", "model_call_log_path"), ("adapter", "model")):
        value = context
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, str) or not value:
            problems.append(f"context {'.'.join(keys)} is missing")
    return problems


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        context = json.loads(Path(args.context).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"reference-agent: cannot read context {args.context}: {exc}", file=sys.stderr)
        return 2
    problems = check_context(context if isinstance(context, dict) else {}, args)
    if problems:
        for problem in problems:
            print(f"reference-agent: {problem}", file=sys.stderr)
        return 2
    workspace = Path(args.workspace)
    (workspace / MARKER).write_text(f"case {args.case} repetition {int(args.repetition)}\n", encoding="utf-8")
    line = {"schema_version": 1, "sequence": 1, "model": context["adapter"]["model"], "ok": True}
    log = Path(context["run"]["model_call_log_path"])
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True) + "\n")
    print(f"reference-agent: wrote {MARKER} for case {args.case} repetition {int(args.repetition)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
