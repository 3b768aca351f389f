"""Safe summaries of harness-owned `task/<case>/rep-NNN.model-calls.jsonl` files (D-028).

Only the allowlisted telemetry fields are read, and only aggregate counts,
sums and short labels come out. A line with any other key, a wrong type, a
long or control-character string, or a URL-looking endpoint is *unsafe*: it
is counted and never echoed — not even its error text.
"""

from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path
from typing import Any

from benchpack.repo_task.nofollow import read_regular

ALLOWED_FIELDS = frozenset({
    "schema_version", "sequence", "model", "ok", "started_at", "ended_at", "duration_s", "adapter",
    "endpoint", "response_format", "token_budget_field", "finish_reason", "prompt_tokens",
    "output_tokens", "cached_prompt_tokens", "error",
})  # fmt: skip
LABEL_FIELDS = ("model", "adapter", "endpoint", "response_format", "token_budget_field", "finish_reason")
LABEL_KEYS = {"model": "models", "adapter": "adapters", "endpoint": "endpoints",
              "response_format": "response_formats", "token_budget_field": "token_budget_fields",
              "finish_reason": "finish_reasons"}  # fmt: skip
TOKEN_FIELDS = ("prompt_tokens", "output_tokens", "cached_prompt_tokens")
MAX_SAFE_STRING = 200
URL_MARKERS = ("://", "?", "@")


def is_safe_string(value: Any) -> bool:
    """Short, and no control or separator characters except plain spaces."""
    if not isinstance(value, str) or len(value) > MAX_SAFE_STRING:
        return False
    return all(ch == " " or unicodedata.category(ch)[0] not in "CZ" for ch in value)


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _is_duration(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def is_safe_line(obj: Any) -> bool:
    """Whether one parsed JSONL value is a safe, summarisable model-call record."""
    if not isinstance(obj, dict) or not set(obj) <= ALLOWED_FIELDS:
        return False
    if obj.get("schema_version") != 1 or isinstance(obj.get("schema_version"), bool):
        return False
    if not _is_int(obj.get("sequence"), 1) or not isinstance(obj.get("ok"), bool):
        return False
    if not is_safe_string(obj.get("model")) or obj["model"] == "":
        return False
    for key in (*LABEL_FIELDS, "started_at", "ended_at", "error"):
        if key in obj and obj[key] is not None and not is_safe_string(obj[key]):
            return False
    endpoint = obj.get("endpoint")
    if isinstance(endpoint, str) and any(marker in endpoint for marker in URL_MARKERS):
        return False  # a label, never a URL: schemes, userinfo and query strings leak secrets
    if "duration_s" in obj and obj["duration_s"] is not None and not _is_duration(obj["duration_s"]):
        return False
    return all(obj.get(key) is None or _is_int(obj[key], 0) for key in TOKEN_FIELDS)


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def summarize_model_calls(paths) -> dict:
    """Aggregate safe telemetry over model-call JSONL files (missing files are skipped)."""
    summary: dict[str, Any] = {"files": 0, "calls": 0, "valid": 0, "invalid": 0, "ok": 0, "failed": 0, "errors": 0}
    labels: dict[str, set[str]] = {name: set() for name in LABEL_KEYS.values()}
    durations: list[float] = []
    tokens: dict[str, int | None] = {key: None for key in TOKEN_FIELDS}
    for path in paths:
        try:  # written inside the sandbox: never read through a link the agent left in its place
            data = read_regular(Path(path))
        except OSError:
            continue
        summary["files"] += 1
        for raw in data.splitlines():
            if not raw.strip():
                continue
            summary["calls"] += 1
            obj = _parse(raw)
            if not is_safe_line(obj):
                summary["invalid"] += 1
                continue
            summary["valid"] += 1
            summary["ok" if obj["ok"] else "failed"] += 1
            if obj.get("error"):
                summary["errors"] += 1
            for field, name in LABEL_KEYS.items():
                if obj.get(field):
                    labels[name].add(obj[field])
            if obj.get("duration_s") is not None:
                durations.append(float(obj["duration_s"]))
            for key in TOKEN_FIELDS:
                if obj.get(key) is not None:
                    tokens[key] = (tokens[key] or 0) + obj[key]
    summary.update({name: sorted(values) for name, values in labels.items()})
    summary["duration_s"] = round(math.fsum(durations), 6) if durations else None
    summary.update(tokens)
    return summary
