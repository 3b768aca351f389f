"""Runs the real aider on one benchpack task (the `aider` recipe, docs/agents.md).

Started by the external-agent harness with aider's own Python (its pinned
tool environment, never benchpack's), inside the sandbox:

    <venv>/bin/python aider_agent.py --agent-home <venv> \
        --workspace W --case C --output-dir O --repetition R --context CONTEXT

It imports nothing from benchpack. aider runs once, non-interactively
(`--message` with the task, `--yes-always`), in the workspace, against the
endpoint the context names (the measuring proxy), streaming as it does by
default. The workspace's files are added to the chat (aider edits only
files in its chat), its edit format is `whole`, and everything aider would
write beside the code (chat and input history, git commits, the repo map
cache, analytics, update checks) is turned off or sent to /tmp, so the
patch holds only its edits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-list download: the sandbox has no network
os.environ.setdefault("AIDER_ANALYTICS_DISABLE", "true")

SOURCE_SUFFIXES = (".py", ".md", ".toml", ".txt", ".cfg", ".json", ".rs", ".go", ".js", ".ts", ".html", ".css")
MAX_FILES = 40


def api_base(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    for suffix in ("/chat/completions", "/completions"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base if base.endswith("/v1") else base + "/v1"


def workspace_files(root: Path) -> list[str]:
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                   if p.is_file() and p.suffix in SOURCE_SUFFIXES and ".git" not in p.parts)
    return files[:MAX_FILES]


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--workspace", "--case", "--output-dir", "--repetition", "--context", "--agent-home"):
        parser.add_argument(name)
    args = parser.parse_args()
    context = json.loads(Path(args.context).read_text(encoding="utf-8"))
    adapter = context["adapter"]
    workspace = Path(args.workspace)
    os.chdir(workspace)
    scratch = Path(os.environ.get("TMPDIR") or "/tmp")
    argv = [
        "--model", f"openai/{adapter['model']}", "--openai-api-base", api_base(adapter["endpoint"]),
        "--openai-api-key", "benchpack-local", "--edit-format", "whole", "--yes-always",
        "--no-git", "--no-gitignore", "--no-auto-commits", "--no-dirty-commits", "--map-tokens", "0",
        "--no-check-update", "--no-show-model-warnings", "--no-analytics", "--no-pretty", "--no-fancy-input",
        "--no-detect-urls", "--no-auto-lint", "--no-auto-test", "--no-suggest-shell-commands",
        "--no-restore-chat-history", "--chat-history-file", str(scratch / "aider.chat.md"),
        "--input-history-file", str(scratch / "aider.input"), "--timeout", "600",
        "--message", context["case"]["prompt"],
    ]  # fmt: skip
    for name in workspace_files(workspace):
        argv += ["--file", name]
    from aider.main import main as aider_main

    try:
        code = aider_main(argv)
    except SystemExit as exc:
        code = exc.code
    except Exception as exc:  # aider's own failure is the task's outcome, not the harness's
        print(f"aider stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"aider: exit {code or 0}")
    return int(code or 0)


if __name__ == "__main__":
    raise SystemExit(main())
