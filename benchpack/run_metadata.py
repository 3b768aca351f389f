"""`run-metadata.json`: user-supplied runtime/model/operating conditions (D-025).

The file is a permissive JSON object. Known sections are checked for shape
only: `runtime`, `model` and `operating_conditions` must be objects and
`notes` a string when present; anything else is kept as given.

`summary_lines()` renders the well-known keys the way the hand-written
summaries of the earlier results did (see docs/internals.md for the key
names), then every other value compactly so nothing supplied is hidden.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchpack.errors import ConfigError, Problem

RUN_METADATA_FILE = "run-metadata.json"
OBJECT_SECTIONS = ("runtime", "model", "operating_conditions")

# (section, key, label): rendered as "Label: `value`" in this order.
_CODE_LINES = (
    ("runtime", "server_command", "Server command"),
    ("runtime", "endpoint", "Endpoint"),
    ("model", "file", "Model file"),
    ("model", "sha256", "Model SHA256"),
)
_RENDERED = {
    "runtime": {"name", "provenance", "version", "server_command", "endpoint", "context"},
    "model": {"file", "sha256", "quantization", "quantization_detail", "context"},
}


def validate_run_metadata(data: Any, source: str) -> dict:
    problems = []
    if not isinstance(data, dict):
        raise ConfigError(Problem(source, "", "must be a JSON object"))
    for section in OBJECT_SECTIONS:
        if section in data and not isinstance(data[section], dict):
            problems.append(Problem(source, section, "must be a JSON object"))
    if "notes" in data and not isinstance(data["notes"], str):
        problems.append(Problem(source, "notes", "must be a string"))
    if problems:
        raise ConfigError(problems)
    return dict(data)


def load_run_metadata(path: str | Path) -> dict:
    """Read and validate `--run-metadata <file>`; ConfigError names the file and field."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(Problem(source, "", "no such file")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(Problem(source, "", f"cannot read: {exc}")) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            Problem(source, f"line {exc.lineno}", f"not valid JSON ({exc.msg})")
        ) from None
    return validate_run_metadata(data, source)


def write_run_metadata(out: Path, metadata: dict) -> Path:
    path = Path(out) / RUN_METADATA_FILE
    path.write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _code(value: Any) -> str:
    return f"`{value}`"


def _section(metadata: dict, name: str) -> dict:
    value = metadata.get(name)
    return value if isinstance(value, dict) else {}


def _present(value: Any) -> bool:
    return value not in (None, "", [], {})


def _runtime_line(runtime: dict) -> str | None:
    if not _present(runtime.get("name")):
        return None
    parts = [f"Runtime: {_code(runtime['name'])}"]
    if _present(runtime.get("provenance")):
        parts.append(str(runtime["provenance"]))
    version = runtime.get("version")
    if _present(version):
        versions = version if isinstance(version, list) else [version]
        parts.append("(" + ", ".join(_code(v) for v in versions) + ")")
    return " ".join(parts)


def _quantization_line(model: dict) -> str | None:
    if not _present(model.get("quantization")):
        return None
    line = f"Quantization: {_code(model['quantization'])}"
    if _present(model.get("quantization_detail")):
        line += f" ({model['quantization_detail']})"
    return line


def _compact(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _other_values(label: str, values: dict, skip: set[str]) -> str | None:
    rest = [f"{k}={_compact(v)}" for k, v in sorted(values.items()) if k not in skip and _present(v)]
    return f"{label}: " + "; ".join(rest) if rest else None


def summary_lines(metadata: dict | None) -> list[str]:
    """Markdown lines for summary.md; empty when there is no metadata."""
    if not metadata:
        return []
    runtime, model = _section(metadata, "runtime"), _section(metadata, "model")
    sections = {"runtime": runtime, "model": model}
    lines = [_runtime_line(runtime)]
    for section, key, label in _CODE_LINES:
        if _present(sections[section].get(key)):
            lines.append(f"{label}: {_code(sections[section][key])}")
    lines.append(_quantization_line(model))
    context = model.get("context", runtime.get("context"))
    if _present(context):
        lines.append(f"Context: {_code(context)}")
    lines.append(_other_values("Runtime details", runtime, _RENDERED["runtime"]))
    lines.append(_other_values("Model details", model, _RENDERED["model"]))
    lines.append(_other_values("Operating conditions", _section(metadata, "operating_conditions"), set()))
    extra = {k: v for k, v in metadata.items() if k not in (*OBJECT_SECTIONS, "notes")}
    lines.append(_other_values("Other metadata", extra, set()))
    if _present(metadata.get("notes")):
        lines.append(f"Notes: {metadata['notes']}")
    return [line for line in lines if line]
