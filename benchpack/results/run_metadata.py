"""The read side of `run-metadata.json`: the view readers use and the summary's lines.

`effective()` is the metadata with `runtime` and `model` as the runner saw them
(`benchpack.reported`: the user's values plus what the server reported);
`summary_lines()` renders the well-known keys the way the hand-written summaries
of the earlier results did (docs/internals.md names them), then every other value
compactly so nothing supplied is hidden. Result vocabulary: run/, reporting/,
registry/ and the service read it; the runner's write side is `benchpack.run.metadata`.
"""

from __future__ import annotations

import json
from typing import Any

# Top-level keys the runner owns; a user file's values for them are replaced.
RUNNER_KEYS = ("benchpack", "complete", "incomplete_reason", "started_at", "finished_at", "warnings")
OBJECT_SECTIONS = ("runtime", "model", "operating_conditions")

# (section, key, label): rendered as "Label: `value`" in this order.
_CODE_LINES = (
    ("runtime", "server_command", "Server command"),
    ("runtime", "endpoint", "Endpoint"),
    ("model", "file", "Model file"),
    ("model", "sha256", "Model SHA256"),
)
_RENDERED = {
    "runtime": {"name", "provenance", "version", "server_command", "endpoint", "context", "config", "config_source"},
    "model": {"file", "sha256", "quantization", "quantization_detail", "context", "requested", "served"},
}


def _code(value: Any) -> str:
    return f"`{value}`"


def effective(metadata: dict | None) -> dict:
    """The metadata with `runtime` and `model` as the runner saw them (`benchpack.reported`: the user's
    values plus what the server reported), for readers; the file keeps the user's sections as given.
    Files written before `reported` existed are returned unchanged."""
    if not isinstance(metadata, dict):
        return {}
    reported = section_of(section_of(metadata, "benchpack"), "reported")
    merged = dict(metadata)
    for name in ("runtime", "model"):
        if isinstance(reported.get(name), dict) and reported[name]:
            merged[name] = reported[name]
    return merged


def section_of(metadata: dict, name: str) -> dict:
    value = metadata.get(name)
    return value if isinstance(value, dict) else {}


def present(value: Any) -> bool:
    return value not in (None, "", [], {})


def _runtime_line(runtime: dict) -> str | None:
    if not present(runtime.get("name")):
        return None
    parts = [f"Runtime: {_code(runtime['name'])}"]
    if present(runtime.get("provenance")):
        parts.append(str(runtime["provenance"]))
    version = runtime.get("version")
    if present(version):
        versions = version if isinstance(version, list) else [version]
        parts.append("(" + ", ".join(_code(v) for v in versions) + ")")
    return " ".join(parts)


def _quantization_line(model: dict) -> str | None:
    if not present(model.get("quantization")):
        return None
    line = f"Quantization: {_code(model['quantization'])}"
    if present(model.get("quantization_detail")):
        line += f" ({model['quantization_detail']})"
    return line


def _compact(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _other_values(label: str, values: dict, skip: set[str]) -> str | None:
    rest = [f"{k}={_compact(v)}" for k, v in sorted(values.items()) if k not in skip and present(v)]
    return f"{label}: " + "; ".join(rest) if rest else None


def summary_lines(metadata: dict | None) -> list[str]:
    """Markdown lines for summary.md; empty when there is no metadata."""
    if not metadata:
        return []
    metadata = effective(metadata)
    runtime, model = section_of(metadata, "runtime"), section_of(metadata, "model")
    sections = {"runtime": runtime, "model": model}
    lines = [_runtime_line(runtime)]
    for section, key, label in _CODE_LINES:
        if present(sections[section].get(key)):
            lines.append(f"{label}: {_code(sections[section][key])}")
    lines.append(_quantization_line(model))
    context = model.get("context", runtime.get("context"))
    if present(context):
        lines.append(f"Context: {_code(context)}")
    lines.append(_config_line(runtime))
    lines.append(_served_line(model))
    lines.append(_other_values("Runtime details", runtime, _RENDERED["runtime"]))
    lines.append(_other_values("Model details", model, _RENDERED["model"]))
    lines.append(_other_values("Operating conditions", section_of(metadata, "operating_conditions"), set()))
    extra = {k: v for k, v in metadata.items() if k not in (*OBJECT_SECTIONS, "notes", *RUNNER_KEYS)}
    lines.append(_other_values("Other metadata", extra, set()))
    if present(metadata.get("notes")):
        lines.append(f"Notes: {metadata['notes']}")
    if metadata.get("complete") is False:
        lines.append(f"**Incomplete run**: {metadata.get('incomplete_reason') or 'no reason recorded'}")
    for warning in metadata.get("warnings") or []:
        lines.append(f"Warning: {warning}")
    return [line for line in lines if line]


def _config_line(runtime: dict) -> str | None:
    config = runtime.get("config")
    if not isinstance(config, dict) or not config:
        return None
    values = ", ".join(f"{k}={_compact(v)}" for k, v in sorted(config.items()))
    source = runtime.get("config_source")
    return f"Runtime config ({source}): {values}" if source else f"Runtime config: {values}"


def _served_line(model: dict) -> str | None:
    served, requested = model.get("served"), model.get("requested")
    if not present(served):
        return None
    return f"Model served: {_code(served)}" + (f" (asked for {_code(requested)})" if served != requested else "")
