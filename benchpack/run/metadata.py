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

The read side (`effective()`, `summary_lines()`) is `benchpack.results.run_metadata`.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack import __version__
from benchpack.adapters.rxstamp import arrival_clock
from benchpack.errors import ConfigError, Problem
from benchpack.results.run_metadata import OBJECT_SECTIONS, RUNNER_KEYS, present, section_of

if TYPE_CHECKING:
    from benchpack.run.server_info import ServerInfo

RUNNING = "running (the run has not finished, or was killed before it could say)"

RUN_METADATA_FILE = "run-metadata.json"



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


class RunRecord(msgspec.Struct):
    """What `start_run_metadata`/`finish_run_metadata` need from the runner."""

    options: Any  # runner.RunOptions
    pack: Any  # the effective packs.Pack
    server: ServerInfo
    endpoint: str  # the URL requested
    plan: dict  # the rows' run_plan


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def server_reported(server: ServerInfo) -> dict:
    """The server's own figures: model size (and expert counts where it gives them), model file, config."""
    model = {k: v for k, v in (getattr(server, "model_size", None) or {}).items()}
    if server.model_file:
        model["file"] = server.model_file
    config = dict(server.config or {}) if server.config_source else {}
    return {"model": model, "config": config, "config_source": server.config_source}


def start_run_metadata(user: dict | None, record: RunRecord, warnings: list[str]) -> dict:
    """The metadata written before the first request: the user's file plus what the server said.

    Appends to `warnings` what the user must see (a configuration the file
    and the server disagree on, a model the server does not serve).
    """
    from benchpack.run.server_info import announced_runtime, merge_config, model_mismatch

    user = user or {}
    metadata = {k: copy.deepcopy(v) for k, v in user.items() if k not in RUNNER_KEYS}  # as given
    # The runner's view, built on copies: the user's sections are never changed.
    runtime = copy.deepcopy(section_of(user, "runtime"))
    model = copy.deepcopy(section_of(user, "model"))
    server = record.server
    for key, value in zip(("name", "version"), announced_runtime(server)):
        if value and not present(runtime.get(key)):
            runtime[key] = value
        elif value and runtime.get(key) != value:
            warnings.append(f"run-metadata runtime.{key} is {runtime.get(key)!r}; the server says {value!r}")
    config, source = merge_config(server, runtime.get("config"), warnings.append)
    if source:
        runtime["config"], runtime["config_source"] = config, source
    if server.model_file and not present(model.get("file")):
        model["file"] = server.model_file
    # The model's size as the server reports it, shown where the user's file gives none. The user's value
    # wins in this view only: plausibility bounds read `benchpack.server_reported`, never the user's claim.
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
        # What the server itself said, kept apart from the user's values: plausibility bounds read only this
        # (a user's `model.params: 1000` or a config key naming a draft model is a claim, not evidence).
        "server_reported": server_reported(server),
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
    bench = dict(section_of(metadata, "benchpack"))
    reported = dict(section_of(bench, "reported"))
    served = Counter(r.get("model_served") for r in rows if isinstance(r.get("model_served"), str))
    model = dict(section_of(reported, "model"))
    if served:
        names = [name for name, _ in served.most_common()]
        model["served"] = names[0] if len(names) == 1 else names
    reported["model"] = model
    if "model" not in user:
        metadata["model"] = model
    runtime = dict(section_of(reported, "runtime"))
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
    bench["server_reported"] = server_reported(record.server)
    metadata["benchpack"] = bench
    for row in rows:
        for warning in row.get("warnings") or []:
            message = warning.get("message") if isinstance(warning, dict) else None
            if message and not any(message in known for known in warnings):
                warnings.append(message)
    metadata.update(complete=complete, incomplete_reason=None if complete else reason, finished_at=_now(),
                    warnings=list(warnings))
    return metadata
