"""Markdown for `benchpack compare` and `benchpack report`.

Written for someone deciding between runtimes: overview first, side-by-side
numbers next, per-run detail (host, run metadata, spread, repo tasks) last.
Every number comes from `benchpack.compare` or from the row fields directly;
nothing here re-derives timings.
"""

from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from benchpack.compare import CaseStats, Comparison, compare_runs
from benchpack.errors import BenchpackError
from benchpack.resultdir import HARDWARE_FILE, RUN_METADATA_FILE, ResultDir, field
from benchpack.stats import is_number, median, spread

DASH = "—"
# D-025: the sections of run-metadata.json that are objects when present.
METADATA_SECTIONS = ("runtime", "model", "operating_conditions")
MAX_ERRORS_SHOWN = 5

COMPARE_NOTE = (
    "Medians use `ok` rows only. `prefill_tps med` is shown only when the case's prefill parity is "
    "`comparable`: every run has the case, and every ok row reports prompt and cached-prompt token "
    "counts whose medians agree across runs."
)
PARITY_LEGEND = "\n".join([
    "Prefill parity, first match wins:",
    "`missing-case` a run has no rows for the case ·",
    "`prompt-missing` an ok row lacks `tokens.prompt` (or a run has no ok row) ·",
    "`prompt-diff` prompt-token medians differ ·",
    "`cache-missing` an ok row lacks `tokens.cached_prompt` ·",
    "`cache-diff` cached-prompt medians differ ·",
    "`comparable`.",
])

# ---------------------------------------------------------------- formatting


def cell(value: Any) -> str:
    """One Markdown table cell: `|` would split the cell, newlines would end the row."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value) or DASH
    if isinstance(value, dict):
        return ", ".join(f"{k}: {cell(v)}" for k, v in value.items()) or DASH
    text = str(value).replace("\r\n", " ").replace("\n", " ").replace("|", "\\|")
    return text if text.strip() else DASH


def table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def seconds(value: Any) -> str | None:
    # Four decimals keeps a 5 ms TTFT readable next to a 1.2 s wall time.
    return f"{value:.4f}" if is_number(value) else None


def rate(value: Any) -> str | None:
    return f"{value:.1f}" if is_number(value) else None


def count(value: Any) -> str | None:
    if not is_number(value):
        return None
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def pass_rate(stats: CaseStats) -> str | None:
    if not stats.scored:
        return None
    return f"{stats.passed}/{stats.scored}"


def redact_endpoint(endpoint: Any) -> Any:
    """Reports get shared; drop URL credentials and query strings."""
    if not isinstance(endpoint, str):
        return endpoint
    parts = urlsplit(endpoint)
    if not parts.netloc:
        return endpoint
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"***@{host}" if "@" in parts.netloc else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# ---------------------------------------------------------------- compare


def render_compare(comparison: Comparison, heading_level: int = 1) -> str:
    h = "#" * heading_level
    parts = [f"{h} Compare", "", runs_table(comparison), "", f"{h}# Cases", "", cases_table(comparison), ""]
    parts += [COMPARE_NOTE, "", PARITY_LEGEND, ""]
    parts += [f"{h}# Warnings", "", warnings_list(comparison), ""]
    return "\n".join(parts)


def runs_table(comparison: Comparison) -> str:
    rows = [
        [run.label, _pack_labels(run.packs), run.models, run.adapters, run.rows, run.ok]
        for run in comparison.runs
    ]
    return table(["run", "pack", "model", "adapter", "rows", "ok"], rows)


def cases_table(comparison: Comparison) -> str:
    headers = [
        "case", "run", "n", "ok", "wall_s med", "ttft_s med", "tpot_s med", "decode_tps med",
        "total_tps med", "prompt med", "cached med", "prefill_tps med", "pass", "prefill parity",
    ]
    rows = []
    for case in comparison.cases:
        for stats in case.runs:
            m = stats.medians
            rows.append([
                case.case, stats.run, stats.n, stats.ok, seconds(m.get("wall_s")), seconds(m.get("ttft_s")),
                seconds(m.get("tpot_s")), rate(m.get("decode_tps")), rate(m.get("total_tps")),
                count(stats.prompt_tokens_med), count(stats.cached_prompt_tokens_med),
                rate(m.get("prefill_tps")) if case.parity == "comparable" else None,
                pass_rate(stats), case.parity,
            ])
    return table(headers, rows)


def warnings_list(comparison: Comparison) -> str:
    if not comparison.warnings:
        return "None."
    return "\n".join(f"- {w.message}" for w in comparison.warnings)


# ---------------------------------------------------------------- artifacts (the only file reads)


@dataclass
class RunArtifacts:
    """What the report needs from files other than run.jsonl."""

    patch_bytes: list[tuple[str, int | None]] = dc_field(default_factory=list)  # (case, size or unknown)
    model_call_logs: dict[str, list[Path]] = dc_field(default_factory=dict)  # case -> files


def is_repo_task_row(row: dict) -> bool:
    return any(key in row for key in ("repo_task", "patch", "workspace"))


def artifact_size(result: ResultDir, relative: Any) -> int | None:
    """Size of a run-relative artifact, or None when it is absent or points outside the run."""
    if not isinstance(relative, str) or not relative:
        return None
    root = result.path.resolve()
    target = (root / relative).resolve()
    if Path(relative).is_absolute() or not target.is_relative_to(root) or not target.is_file():
        return None
    return target.stat().st_size


def repo_task_cases(rows: list[dict]) -> list[str]:
    """Cases with any repo-task row; a failed execution may lack the repo-task fields but still counts."""
    return _cases_in_order([r for r in rows if is_repo_task_row(r)])


def collect_artifacts(result: ResultDir) -> RunArtifacts:
    artifacts = RunArtifacts()
    cases = set(repo_task_cases(result.rows))
    for row in result.rows:
        if row.get("case") in cases:
            artifacts.patch_bytes.append((str(row.get("case")), artifact_size(result, field(row, "patch.path"))))
    for path in sorted(result.path.glob("task/*/rep-*.model-calls.jsonl")):
        artifacts.model_call_logs.setdefault(path.parent.name, []).append(path)
    return artifacts


def default_model_call_summarizer() -> Callable[[list[Path]], dict] | None:
    # Owned by the repo-task work; the report works without it.
    try:
        module = importlib.import_module("benchpack.repo_task.model_calls")
    except ImportError:
        return None
    return getattr(module, "summarize_model_calls", None)


# ---------------------------------------------------------------- report

_UNSET = object()


def render_report(results: list[ResultDir], model_call_summarizer: Any = _UNSET) -> str:
    if model_call_summarizer is _UNSET:
        model_call_summarizer = default_model_call_summarizer()
    comparison = compare_runs(results)
    parts = ["# Benchpack report", "", overview_table(results, comparison), ""]
    if len(results) > 1:
        parts += ["## Across runs", "", cases_table(comparison), ""]
        parts += [COMPARE_NOTE, "", PARITY_LEGEND, ""]
    parts += ["## Warnings", "", warnings_list(comparison), ""]
    for run, result in zip(comparison.runs, results):
        parts.append(render_run(run.label, result, collect_artifacts(result), model_call_summarizer))
    return "\n".join(parts).rstrip() + "\n"


def overview_table(results: list[ResultDir], comparison: Comparison) -> str:
    rows = []
    for run, result in zip(comparison.runs, results):
        metadata = result.run_metadata or {}
        runtime = metadata.get("runtime") if isinstance(metadata.get("runtime"), dict) else {}
        hardware = result.hardware or {}
        verdicts = [v for v in (field(r, "scoring.passed") for r in result.rows) if isinstance(v, bool)]
        rows.append([
            run.label,
            _pack_labels(run.packs),
            run.models,
            _runtime_label(runtime),
            hardware.get("chip") or hardware.get("cpu_model"),
            f"{run.ok}/{run.rows}",
            f"{sum(verdicts)}/{len(verdicts)}" if verdicts else None,
        ])
    return table(["run", "pack", "model", "runtime", "host", "ok rows", "scoring pass"], rows)


def _pack_labels(packs: list[dict]) -> list[str]:
    return [f"{p['id']} {p['version']}" for p in packs]


def _runtime_label(runtime: dict) -> str | None:
    name = runtime.get("name") or runtime.get("id")
    version = runtime.get("version")
    if name and version:
        return f"{name} {version}"
    return name or version


def render_run(label: str, result: ResultDir, artifacts: RunArtifacts, model_call_summarizer) -> str:
    single = compare_runs([result])
    (info,) = single.runs
    endpoints = list(dict.fromkeys(redact_endpoint(r.get("endpoint")) for r in result.rows if r.get("endpoint")))
    parts = [f"## Run: {label}", "", f"Path: `{result.path}`", ""]
    parts += [
        f"- Pack: {cell(_pack_labels(info.packs))}",
        f"- Model: {cell(info.models)}",
        f"- Adapter: {cell(info.adapters)}",
        f"- Endpoint: {cell(endpoints)}",
        f"- Rows: {info.rows} ({info.ok} ok, {info.rows - info.ok} failed)",
        "",
    ]
    parts += [hardware_section(result.hardware), "", metadata_section(result.run_metadata), ""]
    parts += ["### Per-case medians", "", run_cases_table(single), ""]
    parts += [
        "Medians over `ok` rows. `prefill_tps med` is shown only when every ok row of the case "
        "reports both `tokens.prompt` and `tokens.cached_prompt`.",
        "",
    ]
    parts += ["### Repetition spread", "", spread_table(result), ""]
    parts += ["### Cache rows", "", cache_table(single), ""]
    if artifacts.patch_bytes:
        parts += ["### Repo tasks", "", repo_task_table(result, artifacts), ""]
    if artifacts.model_call_logs:
        parts += ["### Model calls", "", model_calls_section(artifacts, model_call_summarizer), ""]
    failures = failed_rows_list(result)
    if failures:
        parts += ["### Failed rows", "", failures, ""]
    return "\n".join(parts)


def hardware_section(hardware: dict | None) -> str:
    if not hardware:
        return f"### Host\n\n_No {HARDWARE_FILE}._"
    return "### Host\n\n" + key_value_table(hardware)


def metadata_section(metadata: dict | None) -> str:
    if metadata is None:
        return f"### Run metadata\n\n_No {RUN_METADATA_FILE} (pass `--run-metadata` to `benchpack run`)._"
    parts = ["### Run metadata"]
    for section in METADATA_SECTIONS:
        value = metadata.get(section)
        if isinstance(value, dict) and value:
            parts += ["", f"**{section}**", "", key_value_table(value)]
    notes = metadata.get("notes")
    if isinstance(notes, str) and notes.strip():
        # Notes are free prose; keep their paragraphs, quoted so they cannot open headings.
        parts += ["", "**notes**", "", "\n".join(f"> {line}" for line in notes.strip().splitlines())]
    other = {k: v for k, v in metadata.items() if k not in (*METADATA_SECTIONS, "notes")}
    if other:
        parts += ["", "**other**", "", key_value_table(other)]
    if len(parts) == 1:
        parts += ["", "_Empty._"]
    return "\n".join(parts)


def key_value_table(data: dict) -> str:
    return table(["key", "value"], [[f"`{key}`", value] for key, value in data.items()])


def run_cases_table(single: Comparison) -> str:
    headers = [
        "case", "n", "ok", "wall_s med", "ttft_s med", "tpot_s med", "decode_tps med",
        "total_tps med", "prefill_tps med", "prompt med", "pass",
    ]
    rows = []
    for case in single.cases:
        (stats,) = case.runs
        m = stats.medians
        rows.append([
            case.case, stats.n, stats.ok, seconds(m.get("wall_s")), seconds(m.get("ttft_s")),
            seconds(m.get("tpot_s")), rate(m.get("decode_tps")), rate(m.get("total_tps")),
            rate(m.get("prefill_tps")) if case.parity == "comparable" else None,
            count(stats.prompt_tokens_med), pass_rate(stats),
        ])
    return table(headers, rows)


SPREAD_FIELDS = (("wall_s", "timing.wall_s", seconds), ("ttft_s", "timing.ttft_s", seconds),
                 ("tpot_s", "timing.tpot_s", seconds), ("decode_tps", "timing.decode_tps", rate))


def spread_table(result: ResultDir) -> str:
    rows = []
    for case in _cases_in_order(result.rows):
        ok_rows = [r for r in result.rows if r.get("case") == case and r.get("ok") is True]
        row: list[Any] = [case, len(ok_rows)]
        for _, path, fmt in SPREAD_FIELDS:
            s = spread(field(r, path) for r in ok_rows)
            row.append(f"{fmt(s.min)} / {fmt(s.median)} / {fmt(s.max)}" if s else None)
        wall = spread(field(r, "timing.wall_s") for r in ok_rows)
        row.append(f"{(wall.max - wall.min) / wall.median * 100:.1f}%" if wall and wall.median else None)
        rows.append(row)
    headers = ["case", "ok reps"] + [f"{name} min / med / max" for name, _, _ in SPREAD_FIELDS] + ["wall_s range"]
    return table(headers, rows) + "\n\n`wall_s range` is (max − min) / median: how much repetitions disagree."


def cache_table(single: Comparison) -> str:
    if not any(s.cache_rows for case in single.cases for s in case.runs):
        return "_No row reports `tokens.cached_prompt` (older rows, or the backend did not report it)._"
    rows = []
    for case in single.cases:
        (stats,) = case.runs
        rows.append([case.case, stats.ok, stats.cache_rows, count(stats.prompt_tokens_med), count(stats.cached_prompt_tokens_med)])
    return table(["case", "ok rows", "rows reporting cached_prompt", "prompt med", "cached med"], rows)


def repo_task_table(result: ResultDir, artifacts: RunArtifacts) -> str:
    rows = []
    for case in repo_task_cases(result.rows):
        case_rows = [r for r in result.rows if r.get("case") == case]
        statuses = Counter(_status(r) for r in case_rows)
        sizes = [size for c, size in artifacts.patch_bytes if c == case]
        known = [s for s in sizes if s is not None]
        rows.append([
            case, len(case_rows), statuses.pop("passed", 0), statuses.pop("failed", 0),
            ", ".join(f"{k} {v}" for k, v in statuses.items()) or None,
            ", ".join(str(s) if s is not None else "unknown" for s in sizes),
            count(median(known)), sum(1 for s in known if s == 0),
        ])
    headers = ["case", "rows", "passed", "failed", "other status", "patch bytes per rep", "patch bytes med", "empty patches"]
    return table(headers, rows) + "\n\nPatch sizes are read from `patch.path`; `unknown` means the row has no path or the file is not in the result directory."


def _status(row: dict) -> str:
    status = field(row, "repo_task.status")
    return status if isinstance(status, str) and status else "unknown"


def model_calls_section(artifacts: RunArtifacts, summarizer) -> str:
    files = sum(len(paths) for paths in artifacts.model_call_logs.values())
    if summarizer is None:
        return f"{files} model-call log file(s) present; the summarizer is not available in this build."
    summaries: dict[str, dict] = {}
    for case, paths in artifacts.model_call_logs.items():
        try:
            summaries[case] = _flatten(summarizer(paths))
        except (BenchpackError, ValueError, OSError) as exc:  # a broken log should not sink the whole report
            summaries[case] = {"summary": f"could not be summarized ({type(exc).__name__})"}
    keys = list(dict.fromkeys(k for summary in summaries.values() for k in summary))
    rows = [[f"`{key}`"] + [summaries[case].get(key) for case in summaries] for key in keys]
    note = "Only allowlisted telemetry fields are summarized; prompts, responses and error text are never shown."
    return table(["field"] + list(summaries), rows) + "\n\n" + note


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict):
        return {prefix or "value": data}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name))
        else:
            flat[name] = value
    return flat


def failed_rows_list(result: ResultDir) -> str:
    failed = [r for r in result.rows if r.get("ok") is not True]
    if not failed:
        return ""
    lines = []
    for row in failed[:MAX_ERRORS_SHOWN]:
        where = row.get("case")
        if row.get("repetition") is not None:
            where = f"{where} rep {row['repetition']}"
        error = cell(str(row.get("error") or "no error recorded")[:160])
        lines.append(f"- `{where}`: {error}")
    if len(failed) > MAX_ERRORS_SHOWN:
        lines.append(f"- … and {len(failed) - MAX_ERRORS_SHOWN} more")
    return "\n".join(lines)


def _cases_in_order(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r.get("case") for r in rows))
