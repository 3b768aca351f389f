"""`task/<case>/rep-NNN.context.json`: the runner-owned input of an external agent (D-027).

Version 1. Only explicit, non-secret runner context: no environment
variables, no credentials, no request bodies. The file is harness input and is
never copied into run.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path

CONTEXT_VERSION = 1


def build_context(
    *,
    pack,
    case,
    workspace,  # workspace.PreparedWorkspace
    out: Path,
    repetition: int,
    paths,  # executors.TaskPaths
    adapter_id: str,
    model: str,
    endpoint: str | None,
    openai_stream_usage: str | None = None,
    run_metadata_path: Path | None = None,
) -> dict:
    harness = None if case.harness is None else {"id": case.harness.id, "timeout_s": case.harness.timeout_s}
    defaults = pack.defaults
    return {
        "version": CONTEXT_VERSION,
        "pack": {"id": pack.id, "version": pack.version, "description": pack.description},
        "case": {
            "id": case.id,
            "kind": case.kind,
            "prompt": case.prompt,
            "fixture_refs": list(case.fixture_refs),
            "harness": harness,
        },
        "workspace": {
            "path": str(Path(workspace.path).resolve()),
            "source_fixture_id": workspace.source_fixture_id,
            "source_path": workspace.source_path,
        },
        "run": {
            "output_dir": str(Path(out).resolve()),
            "repetition": repetition,
            "task_stdout_path": str(paths.stdout),
            "task_stderr_path": str(paths.stderr),
            "run_metadata_path": None if run_metadata_path is None else str(Path(run_metadata_path).resolve()),
            "model_call_log_path": str(paths.model_calls),
        },
        "adapter": {
            "id": adapter_id,
            "model": model,
            "endpoint": endpoint,
            "defaults": {
                "temperature": defaults.temperature,
                "max_tokens": defaults.max_tokens,
                "stream": defaults.stream,
            },
            "compatibility": {"openai_stream_usage": openai_stream_usage},
        },
        "fixtures": [
            {"id": f.id, "kind": f.kind, "path": f.path, "description": f.description} for f in pack.fixtures
        ],
    }


def write_context(path: Path, context: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(context, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
