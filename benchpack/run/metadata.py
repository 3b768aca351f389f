"""`run-metadata.json`: what ran, how it was configured, and whether it finished.

Two sources meet in this file:

* the user's `--run-metadata` file, a permissive JSON object: known sections
  are checked for shape only (`runtime`, `model` and `operating_conditions`
  must be objects and `notes` a string when present); anything else is kept
  as given;
* the runner, which writes the file for every run (with or without
  `--run-metadata`): what the server said about itself (`runtime.name`,
  `runtime.version` when the user's file does not give them;
  `runtime.config` and `runtime.config_source`), the model asked for and the
  one served (`model.requested`, `model.served`), how the run was made
  (`benchpack`), and whether it finished (`complete`, `incomplete_reason`).

The user's object is kept **as given** (the seed's contract): every key and
value of it is in the file unchanged, and the runner adds its own sections
beside it. The runner's view of `runtime` and `model` (the user's values,
the server's added, the server's configuration winning where both give one)
is `benchpack.reported.{runtime,model}`; where the user gave no `runtime` or
`model` section, the runner's view is also that section. Readers that want
the full picture use `effective()` (docs/internals.md). Only the runner-owned
top-level keys (`RUNNER_KEYS`) of a user file are replaced.
  The file is written before the first request with `complete: false` and
  rewritten at the end, so a run killed outright still reads as incomplete.

`summary_lines()` renders the well-known keys the way the hand-written
summaries of the earlier results did (see docs/internals.md for the key
names), then every other value compactly so nothing supplied is hidden.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchpack import __version__
from benchpack.adapters.rxstamp import arrival_clock
from benchpack.errors import ConfigError, Problem

if TYPE_CHECKING:
    from benchpack.run.server_info import ServerInfo

# Top-level keys the runner owns; a user file's values for them are replaced.
RUNNER_KEYS = ("benchpack", "complete", "incomplete_reason", "started_at", "finished_at", "warnings")
RUNNING = "running (the run has not finished, or was killed before it could say)"

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
    "runtime": {"name", "provenance", "version", "server_command", "endpoint", "context", "config", "config_source"},
    "model": {"file", "sha256", "quantization", "quantization_detail", "context", "requested", "served"},
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
    """Write (or rewrite) run-metadata.json; a reader never sees half a file."""
    path = Path(out) / RUN_METADATA_FILE
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


# --- what the runner adds -------------------------------------------------------


@dataclass
class RunRecord:
    """What `start_run_metadata`/`finish_run_metadata` need from the runner."""

    options: Any  # runner.RunOptions
    pack: Any  # the effective packs.Pack
    server: ServerInfo
    endpoint: str  # the URL requested
    plan: dict  # the rows' run_plan


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def start_run_metadata(user: dict | None, record: RunRecord, warnings: list[str]) -> dict:
    """The metadata written before the first request: the user's file plus what the server said.

    Appends to `warnings` what the user must see (a configuration the file
    and the server disagree on, a model the server does not serve).
    """
    from benchpack.run.server_info import announced_runtime, merge_config, model_mismatch

    user = user or {}
    metadata = {k: copy.deepcopy(v) for k, v in user.items() if k not in RUNNER_KEYS}  # as given
    # The runner's view, built on copies: the user's sections are never changed.
    runtime = copy.deepcopy(_section(user, "runtime"))
    model = copy.deepcopy(_section(user, "model"))
    server = record.server
    for key, value in zip(("name", "version"), announced_runtime(server)):
        if value and not _present(runtime.get(key)):
            runtime[key] = value
        elif value and runtime.get(key) != value:
            warnings.append(f"run-metadata runtime.{key} is {runtime.get(key)!r}; the server says {value!r}")
    config, source = merge_config(server, runtime.get("config"), warnings.append)
    if source:
        runtime["config"], runtime["config_source"] = config, source
    if server.model_file and not _present(model.get("file")):
        model["file"] = server.model_file
    # The model's size as the server reports it; a value the user's file gives wins (it may know better,
    # e.g. the active share of a mixture of experts).
    for key, value in getattr(server, "model_size", {}).items():
        model.setdefault(key, value)
    requested = record.options.model
    model["requested"] = requested
    if server.sole_model:
        model["served"] = server.sole_model
        mismatch = model_mismatch(requested, server.sole_model)
        if mismatch:
            warnings.append(f"{mismatch} (it serves one model whatever name a request asks for)")
    elif server.served_models and record.options.adapter != "ollama-generate" and not any(
            model_mismatch(requested, m) is None for m in server.served_models):
        warnings.append(f"the server lists models {', '.join(map(repr, server.served_models))}; "
                        f"{requested!r} is not among them")
    if runtime and "runtime" not in user:
        metadata["runtime"] = runtime
    if "model" not in user:
        metadata["model"] = model
    metadata["benchpack"] = {
        "reported": {"runtime": runtime, "model": model},
        "version": __version__,
        "adapter": record.options.adapter,
        "endpoint": record.endpoint,
        "run_plan": record.plan,
        "server_probes": server.probes,
        "scripted_endpoint": server.scripted,
        "arrival_clock": arrival_clock(record.endpoint),
    }
    metadata.update(complete=False, incomplete_reason=RUNNING, started_at=_now(), finished_at=None,
                    warnings=list(warnings))
    return metadata


def finish_run_metadata(metadata: dict, record: RunRecord, rows: list[dict], complete: bool,
                        reason: str | None, warnings: list[str]) -> dict:
    """The metadata rewritten at the end: completeness, the model served, the warnings of the rows."""
    from benchpack.run.server_info import merge_config

    metadata = dict(metadata)
    user = record.options.run_metadata or {}
    bench = dict(_section(metadata, "benchpack"))
    reported = dict(_section(bench, "reported"))
    served = Counter(r.get("model_served") for r in rows if isinstance(r.get("model_served"), str))
    model = dict(_section(reported, "model"))
    if served:
        names = [name for name, _ in served.most_common()]
        model["served"] = names[0] if len(names) == 1 else names
    reported["model"] = model
    if "model" not in user:
        metadata["model"] = model
    runtime = dict(_section(reported, "runtime"))
    # Ollama reports the loaded model's context and GPU share only after the first request.
    if record.server.config and record.server.config != runtime.get("config"):
        config, source = merge_config(record.server, (record.options.run_metadata or {}).get("runtime", {}).get("config")
                                      if isinstance((record.options.run_metadata or {}).get("runtime"), dict) else None,
                                      lambda message: None)
        runtime["config"], runtime["config_source"] = config, source
        reported["runtime"] = runtime
        if "runtime" not in user:
            metadata["runtime"] = runtime
    bench["reported"] = reported
    metadata["benchpack"] = bench
    for row in rows:
        for warning in row.get("warnings") or []:
            message = warning.get("message") if isinstance(warning, dict) else None
            if message and not any(message in known for known in warnings):
                warnings.append(message)
    metadata.update(complete=complete, incomplete_reason=None if complete else reason, finished_at=_now(),
                    warnings=list(warnings))
    return metadata


def _code(value: Any) -> str:
    return f"`{value}`"


def effective(metadata: dict | None) -> dict:
    """The metadata with `runtime` and `model` as the runner saw them (`benchpack.reported`: the user's
    values plus what the server reported), for readers; the file keeps the user's sections as given.
    Files written before `reported` existed are returned unchanged."""
    if not isinstance(metadata, dict):
        return {}
    reported = _section(_section(metadata, "benchpack"), "reported")
    merged = dict(metadata)
    for name in ("runtime", "model"):
        if isinstance(reported.get(name), dict) and reported[name]:
            merged[name] = reported[name]
    return merged


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
    metadata = effective(metadata)
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
    lines.append(_config_line(runtime))
    lines.append(_served_line(model))
    lines.append(_other_values("Runtime details", runtime, _RENDERED["runtime"]))
    lines.append(_other_values("Model details", model, _RENDERED["model"]))
    lines.append(_other_values("Operating conditions", _section(metadata, "operating_conditions"), set()))
    extra = {k: v for k, v in metadata.items() if k not in (*OBJECT_SECTIONS, "notes", *RUNNER_KEYS)}
    lines.append(_other_values("Other metadata", extra, set()))
    if _present(metadata.get("notes")):
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
    if not _present(served):
        return None
    return f"Model served: {_code(served)}" + (f" (asked for {_code(requested)})" if served != requested else "")
