"""`benchpack compare` and `benchpack report` as documents (Markdown or terminal).

Written for someone deciding between runtimes: overview first, side-by-side
numbers next (per case: TTFT, prefill or "cached", the server's own prefill
rate, decode rate from `tpot_s`, output length and finish reason, pass
rate), the differences between runs with their noise verdicts, then
per-run detail (host, run metadata, spread, repo tasks). Every number comes
from `benchpack.reporting.compare` or from the row fields directly; nothing here
re-derives timings. The tables are built to fit a 100-column terminal.
"""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack.results.cache_state import CACHED
from benchpack.reporting.compare import CaseComparison, CaseStats, Comparison, RunInfo, compare_runs
from benchpack.errors import BenchpackError
from benchpack.lanes.aggregate import group_label
from benchpack.reporting.document import (
    DASH,
    Block,
    Bullets,
    Heading,
    Paragraph,
    Table,
    columns,
    to_markdown,
)
from benchpack.results.resultdir import HARDWARE_FILE, RUN_METADATA_FILE, ResultDir, field
from benchpack.measurement.stats import is_number, median, spread



def _lane_blocks(*args: Any) -> list[Block]:
    # reporting.lanes draws the lanes' charts (reporting.charts, xml.sax): imported only when a
    # document has lanes to show, not by `benchpack run`'s end-of-run table (run_cases_table).
    from benchpack.reporting.lanes import lane_blocks

    return lane_blocks(*args)


# The sections of run-metadata.json that are objects when present.
METADATA_SECTIONS = ("runtime", "model", "operating_conditions")
MAX_ERRORS_SHOWN = 5

PREFILL_NOTE = (
    "Medians over ok rows; ± is the 95 % bootstrap interval of the median, as a share of it. `decode` is "
    "1/tpot_s (tokens per second between tokens). `prefill` is prompt tokens / TTFT, shown only when the "
    "server evaluated the prompt in every compared run (parity `comparable`); `cached` means the prompt came "
    "from the server's prompt cache, so there is no rate to show. `server prefill` is the server's own "
    "prompt rate (llama-server `prompt_per_second`, Ollama's prompt_eval counters). "
    "Details: docs/compare-and-report.md."
)
PARITY_LEGEND = (
    "Prefill parity, first match wins: `missing-case` a run has no rows for the case · `prompt-missing` an ok "
    "row lacks a prompt-token count · `prompt-diff` prompt-token medians differ · `cache-missing` some rows do "
    "not say whether the prompt was cached · `cache-diff` cached-prompt medians differ, or one run was served "
    "from cache and another not · `cached` every run's prompt was served from cache · `comparable`."
)
VERDICTS = {"outside-noise": "outside the noise", "within-noise": "within the noise",
            "too-few": "too few repetitions to tell"}
DIFFERENCE_LABELS = {"ttft_s": "TTFT", "decode_rate": "decode", "prefill_tps": "prefill", "wall_s": "wall"}

# ---------------------------------------------------------------- formatting


def cell(value: Any) -> str:
    """One Markdown table cell (kept for callers of the first version)."""
    from benchpack.reporting.document import _md_cell

    return _md_cell(value)


def seconds(value: Any) -> str | None:
    # Four decimals keeps a 5 ms TTFT readable next to a 1.2 s wall time.
    return f"{value:.4f}" if is_number(value) else None


def rate(value: Any) -> str | None:
    return f"{value:.1f}" if is_number(value) else None


def count(value: Any) -> str | None:
    if not is_number(value):
        return None
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def with_band(formatted: str | None, med: Any, band: list[float] | None) -> str | None:
    """`0.2031 ±3%`: the larger distance from the median to its interval's ends, as a share of it."""
    if formatted is None or not band or not is_number(med) or med == 0:
        return formatted
    half = max(abs(med - band[0]), abs(band[1] - med)) / abs(med) * 100
    return f"{formatted} ±{half:.0f}%" if half >= 1 else f"{formatted} ±<1%"


def pass_rate(stats: CaseStats) -> str | None:
    if not stats.scored:
        return None
    return f"{stats.passed}/{stats.scored}"


def finish_text(reasons: dict[str, int]) -> str:
    if not reasons:
        return ""
    if len(reasons) == 1:
        return next(iter(reasons))
    return ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))


def output_cell(stats: CaseStats) -> str | None:
    tokens = count(stats.output_tokens_med)
    reasons = finish_text(stats.finish_reasons)
    if tokens is None:
        return reasons or None
    return f"{tokens} {reasons}".strip()


def decode_cell(stats: CaseStats) -> str | None:
    """1/tpot_s with its band; rows without tpot_s (older formats) fall back to
    decode_tps, marked `*` because that formula overstates by n/(n−1)."""
    m = stats.medians
    if is_number(m.get("decode_rate")):
        return with_band(rate(m["decode_rate"]), m["decode_rate"], stats.bands.get("decode_rate"))
    fallback = rate(m.get("decode_tps"))
    return f"{fallback}*" if fallback else None


DECODE_FALLBACK_NOTE = ("* decode_tps = output / (wall − TTFT): these rows carry no tpot_s, the figure "
                        "`decode` is made from everywhere else.")


def prefill_cell(stats: CaseStats, comparable: bool) -> str | None:
    if stats.cache_state == CACHED:
        return "cached"
    if not comparable:
        return None
    return rate(stats.medians.get("prefill_tps"))


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


def _pack_labels(packs: list[dict]) -> list[str]:
    return [f"{p['id']} {p['version']}" for p in packs]


def _model_label(run: RunInfo) -> str:
    asked = ", ".join(run.models)
    served = [m for m in run.models_served if m not in run.models]
    return f"{', '.join(served)} (asked {asked})" if served else asked


# ---------------------------------------------------------------- compare


def cached_cell(stats: CaseStats) -> str | None:
    """The cached-prompt median and its coverage, `93 (3/3 rows)`: how many ok rows reported a count."""
    if not stats.ok:
        return None
    coverage = f"{stats.cache_rows}/{stats.ok} rows"
    med = count(stats.cached_prompt_tokens_med)
    return f"{med} ({coverage})" if med is not None and stats.cache_rows else f"— ({coverage})"


# The per-case table's columns: name -> (header, cell). Wall time, total rate, the prompt-token median and
# the cached-prompt median with its coverage are what explain a parity verdict (prompt-diff, cache-diff,
# cache-missing), so a Markdown document (a file, a pipe) carries every column (the seed's contract); a
# terminal gets the compact set that fits 100 columns. `--columns` chooses (docs/compare-and-report.md).
CASE_COLUMNS: dict[str, tuple[str, Callable[[CaseStats, bool], Any]]] = {
    "ok": ("#ok", lambda s, comparable: f"{s.ok}/{s.n}"),
    "wall": ("#wall s", lambda s, comparable: with_band(seconds(s.medians.get("wall_s")), s.medians.get("wall_s"),
                                                        s.bands.get("wall_s"))),
    "ttft": ("#TTFT s", lambda s, comparable: with_band(seconds(s.medians.get("ttft_s")), s.medians.get("ttft_s"),
                                                        s.bands.get("ttft_s"))),
    "prefill": ("#prefill tok/s", lambda s, comparable: prefill_cell(s, comparable)),
    "server-prefill": ("#server prefill", lambda s, comparable: rate(s.medians.get("server_prefill_tps"))),
    "decode": ("#decode tok/s", lambda s, comparable: decode_cell(s)),
    "total": ("#total tok/s", lambda s, comparable: rate(s.medians.get("total_tps"))),
    "prompt": ("#prompt tok", lambda s, comparable: count(s.prompt_tokens_med)),
    "cached": ("#cached prompt", lambda s, comparable: cached_cell(s)),
    "output": ("output", lambda s, comparable: output_cell(s)),
    "pass": ("#pass", lambda s, comparable: pass_rate(s)),
}
ALL_COLUMNS = tuple(CASE_COLUMNS)
TERMINAL_COLUMNS = ("ok", "ttft", "prefill", "server-prefill", "decode", "output", "pass")


def case_table(case: CaseComparison, *, with_run: bool = True, case_columns: tuple[str, ...] = ALL_COLUMNS) -> Table:
    """One case, one line per run: the figures to decide with."""
    chosen = [CASE_COLUMNS[name] for name in case_columns]
    specs = (["run"] if with_run else []) + [header for header, _ in chosen]
    table = Table(columns(*specs), title=f"{case.case} · prefill parity: {case.parity}")
    comparable = case.parity == "comparable"
    for s in case.runs:
        row = [s.run] if with_run else []
        if not s.present:
            table.add(*(row + ["0/0" if name == "ok" else None for name in case_columns]))
            continue
        table.add(*(row + [cell_of(s, comparable) for _, cell_of in chosen]))
    return table


def _uses_decode_fallback(comparison: Comparison) -> bool:
    return any(not is_number(s.medians.get("decode_rate")) and is_number(s.medians.get("decode_tps"))
               for case in comparison.cases for s in case.runs)


def differences(comparison: Comparison) -> list[str]:
    lines = []
    for case in comparison.cases:
        first = next((s for s in case.runs if s.present), None)
        for s in case.runs:
            if not s.vs_first or s is first:
                continue
            parts = []
            for name, label in DIFFERENCE_LABELS.items():
                diff = s.vs_first.get(name)
                if not diff:
                    continue
                detail = VERDICTS[diff["verdict"]]
                if diff["verdict"] != "too-few":
                    detail += f", 95 % interval {diff['low']:.2f}–{diff['high']:.2f}"
                parts.append(f"{label} ×{diff['ratio']:.2f} ({detail})")
            if parts:
                lines.append(f"{case.case}: {s.run} vs {first.run}: " + "; ".join(parts))
    return lines


def percentile_table(comparison: Comparison) -> Table | None:
    table = Table(columns("case", "run", "#n", "#TTFT p50", "#p90", "#p99", "#decode p50", "#p90", "#p99"))
    for case in comparison.cases:
        for s in case.runs:
            ttft, decode = s.percentiles.get("ttft_s", {}), s.percentiles.get("decode_rate", {})
            if "p90" not in ttft and "p90" not in decode:
                continue
            table.add(case.case, s.run, s.ok, seconds(ttft.get("p50")), seconds(ttft.get("p90")),
                      seconds(ttft.get("p99")), rate(decode.get("p50")), rate(decode.get("p90")),
                      rate(decode.get("p99")))
    return table if table.rows else None


def warnings_list(comparison: Comparison) -> list[str]:
    return [f"{w.message} [{w.code}]" for w in comparison.warnings]


def runs_table(comparison: Comparison, results: list[ResultDir] | None = None) -> Table:
    table = Table(columns("run", "pack", "model", "runtime", "#ok/rows", "complete"))
    metadata = [r.run_metadata for r in results] if results else [None] * len(comparison.runs)
    for run, meta in zip(comparison.runs, metadata):
        complete = {True: "yes", False: "NO", None: None}[run.complete]
        table.add(run.label, _pack_labels(run.packs), _model_label(run), runtime_label(meta),
                  f"{run.ok}/{run.rows}", complete)
    return table


def compare_blocks(comparison: Comparison, results: list[ResultDir] | None = None, level: int = 1,
                   *, heading: str = "Compare", with_runs: bool = True, with_warnings: bool = True,
                   charts: list[Path] | None = None, case_columns: tuple[str, ...] = ALL_COLUMNS) -> list[Block]:
    blocks: list[Block] = [Heading(heading, level)]
    if with_runs:
        blocks.append(runs_table(comparison, results))
    blocks += [case_table(case, case_columns=case_columns) for case in comparison.cases]
    blocks.append(Paragraph(PREFILL_NOTE, muted=True))
    if _uses_decode_fallback(comparison):
        blocks.append(Paragraph(DECODE_FALLBACK_NOTE, muted=True))
    diffs = differences(comparison)
    if diffs:
        blocks += [Heading("Differences from the first run", level + 1), Bullets(diffs),
                   Paragraph("A ratio is the later run's median over the first run's; outside the noise means "
                             "the 95 % bootstrap interval of that ratio excludes 1.", muted=True)]
    spread_table = percentile_table(comparison)
    if spread_table:
        blocks += [Heading("Percentiles (cases with 10 or more ok rows)", level + 1), spread_table]
    blocks += _lane_blocks(comparison.lanes, level + 1, charts)
    if with_warnings:
        blocks += [Heading("Warnings", level + 1), Bullets(warnings_list(comparison))]
    blocks.append(Paragraph(PARITY_LEGEND, muted=True))
    return blocks


def render_compare(comparison: Comparison, heading_level: int = 1, results: list[ResultDir] | None = None) -> str:
    return to_markdown(compare_blocks(comparison, results, heading_level))


# ---------------------------------------------------------------- artifacts (the only file reads)


class RunArtifacts(msgspec.Struct):
    """What the report needs from files other than run.jsonl."""

    patch_bytes: list[tuple[str, int | None]] = msgspec.field(default_factory=list)  # (case, size or unknown)
    model_call_logs: dict[str, list[Path]] = msgspec.field(default_factory=dict)  # case -> files


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


def report_blocks(results: list[ResultDir], model_call_summarizer: Any = _UNSET,
                  charts: list[Path] | None = None, case_columns: tuple[str, ...] = ALL_COLUMNS) -> list[Block]:
    if model_call_summarizer is _UNSET:
        model_call_summarizer = default_model_call_summarizer()
    comparison = compare_runs(results)
    blocks: list[Block] = [Heading("Benchpack report", 1), overview_table(results, comparison)]
    if len(results) > 1:
        # The runs are in the overview already.
        blocks += compare_blocks(comparison, results, 2, heading="Across runs", with_runs=False, with_warnings=False,
                                 charts=charts, case_columns=case_columns)
    else:
        blocks += _lane_blocks(comparison.lanes, 2, charts)
    labels = [run.label for run in comparison.runs]
    blocks += [Heading("Warnings", 2), Bullets(warnings_list(comparison) + run_metadata_warnings(labels, results))]
    for run, result in zip(comparison.runs, results):
        blocks += run_blocks(run.label, result, collect_artifacts(result), model_call_summarizer)
    return blocks


def render_report(results: list[ResultDir], model_call_summarizer: Any = _UNSET) -> str:
    return to_markdown(report_blocks(results, model_call_summarizer))


def overview_table(results: list[ResultDir], comparison: Comparison) -> Table:
    table = Table(columns("run", "pack", "model", "runtime", "host", "#ok rows", "#scoring pass", "complete"))
    for run, result in zip(comparison.runs, results):
        hardware = result.hardware or {}
        verdicts = [v for v in (field(r, "scoring.passed") for r in result.rows) if isinstance(v, bool)]
        table.add(run.label, _pack_labels(run.packs), _model_label(run), runtime_label(result.run_metadata),
                  hardware.get("chip") or hardware.get("cpu_model"), f"{run.ok}/{run.rows}",
                  f"{sum(verdicts)}/{len(verdicts)}" if verdicts else None,
                  {True: "yes", False: "NO", None: None}[run.complete])
    return table


def runtime_label(metadata: dict | None) -> str | None:
    """`llama-server b6100 (context_size=4096, parallel_slots=1)` from run-metadata.json."""
    from benchpack.results.run_metadata import effective  # the user's runtime plus what the server reported

    runtime = effective(metadata).get("runtime")
    if not isinstance(runtime, dict):
        return None
    name = runtime.get("name") or runtime.get("id")
    version = runtime.get("version")
    if isinstance(version, list):
        version = ", ".join(map(str, version))
    label = " ".join(str(v) for v in (name, version) if v) or None
    config = runtime.get("config")
    if isinstance(config, dict) and config:
        detail = ", ".join(f"{k}={v}" for k, v in sorted(config.items()))
        label = f"{label} ({detail})" if label else detail
    return label


def run_blocks(label: str, result: ResultDir, artifacts: RunArtifacts, model_call_summarizer) -> list[Block]:
    single = compare_runs([result])
    (info,) = single.runs
    endpoints = list(dict.fromkeys(redact_endpoint(r.get("endpoint")) for r in result.rows if r.get("endpoint")))
    blocks: list[Block] = [Heading(f"Run: {label}", 2), Bullets([
        f"Path: `{result.path}`",
        f"Pack: {', '.join(_pack_labels(info.packs)) or DASH}",
        f"Model: {_model_label(info) or DASH}",
        f"Adapter: {', '.join(info.adapters) or DASH}",
        f"Endpoint: {', '.join(map(str, endpoints)) or DASH}",
        f"Rows: {info.rows} ({info.ok} ok, {info.rows - info.ok} failed)",
        counts_line(result.rows),
    ] + ([f"**Incomplete**: {info.incomplete_reason or 'the run did not finish'}"] if info.complete is False else []))]
    blocks += hardware_blocks(result.hardware) + metadata_blocks(result.run_metadata)
    blocks += [Heading("Per-case medians", 3), run_cases_table(single)]
    if _uses_decode_fallback(single):
        blocks.append(Paragraph(DECODE_FALLBACK_NOTE, muted=True))
    blocks += [Paragraph("Medians over `ok` rows. `prefill` is shown when every ok row of the case was evaluated "
                         "cold (the server's cached-prompt count, or a nonce prompt); `cached` when the prompt "
                         "came from the server's cache.", muted=True)]
    blocks += [Heading("Repetition spread", 3), spread_table(result),
               Paragraph("`wall_s range` is (max − min) / median: how much repetitions disagree.", muted=True)]
    percentiles = percentile_table(single)
    if percentiles:
        blocks += [Heading("Percentiles (cases with 10 or more ok rows)", 3), percentiles]
    blocks += [Heading("Cache rows", 3)] + cache_blocks(single)
    if artifacts.patch_bytes:
        blocks += [Heading("Repo tasks", 3), repo_task_table(result, artifacts),
                   Paragraph("Patch sizes are read from `patch.path`; `unknown` means the row has no path or the "
                             "file is not in the result directory.", muted=True)]
    if artifacts.model_call_logs:
        blocks += [Heading("Model calls", 3)] + model_calls_blocks(artifacts, model_call_summarizer)
    sessions = agent_session_table(result.rows)
    if sessions is not None:
        blocks += [Heading("Agent sessions", 3), sessions,
                   Paragraph("One row per repo-task execution whose agent went through the measuring proxy: the "
                             "verdict beside the speed of the agent's own model requests (`agent-turns.jsonl`, "
                             "docs/agents.md). decode p90 is the slow tail.", muted=True)]
    failures = failed_rows_list(result)
    if failures:
        blocks += [Heading("Failed rows", 3), Bullets(failures)]
    return blocks


def agent_session_table(rows: list[dict]) -> Table | None:
    """Pass/fail beside time to solution, turns, tokens, TTFT and decode over the turns (docs/agents.md)."""
    sessions = [r for r in rows if isinstance(r.get("agent_session"), dict)]
    if not sessions:
        return None
    table = Table(columns("case", "#rep", "pass", "#time to solution", "#turns", "#tokens in", "#tokens out",
                          "#TTFT p50", "#p90", "#decode p50", "#p90", "#prompt growth/turn", "#cache hits"))
    for row in sessions:
        s = row["agent_session"]
        passed = (row.get("scoring") or {}).get("passed")
        share = s.get("cache_hit_share")
        growth = s.get("prompt_growth_per_turn")
        table.add(row.get("case"), row.get("repetition", 1),
                  DASH if passed is None else ("yes" if passed else "no"),
                  seconds(s.get("time_to_solution_s")), count(s.get("turns")), count(s.get("prompt_tokens")),
                  count(s.get("output_tokens")), seconds(s.get("ttft_p50_s")), seconds(s.get("ttft_p90_s")),
                  rate(s.get("decode_tps_p50")), rate(s.get("decode_tps_p90")),
                  DASH if growth is None else f"{growth:.1f}", DASH if share is None else f"{share:.0%}")
    return table


def counts_line(rows: list[dict]) -> str:
    """The seed's counts line: rows, ok, and every row's verdict — passed, failed (its check said no), or
    unscored (no check ran: the pack scores nothing, or the row failed to run)."""
    verdicts = [field(r, "scoring.passed") for r in rows]
    passed = sum(1 for v in verdicts if v is True)
    failed = sum(1 for v in verdicts if v is False)
    ok = sum(1 for r in rows if r.get("ok") is True)
    return (f"Counts: {len(rows)} row{'s' if len(rows) != 1 else ''}, {ok} ok, {passed} passed, {failed} failed, "
            f"{len(rows) - passed - failed} unscored")


def run_metadata_warnings(labels: list[str], results: list[ResultDir]) -> list[str]:
    """What `benchpack run` warned about and kept in run-metadata.json (`warnings`), per run."""
    lines = []
    for label, result in zip(labels, results):
        warnings = (result.run_metadata or {}).get("warnings")
        for warning in warnings if isinstance(warnings, list) else []:
            text = warning.get("message") if isinstance(warning, dict) else warning
            if isinstance(text, str) and text.strip():
                lines.append(f"{label}: {text.strip()} [run]")
    return lines


def hardware_blocks(hardware: dict | None) -> list[Block]:
    if not hardware:
        return [Heading("Host", 3), Paragraph(f"_No {HARDWARE_FILE}._")]
    return [Heading("Host", 3), key_value_table(hardware)]


def metadata_blocks(metadata: dict | None) -> list[Block]:
    blocks: list[Block] = [Heading("Run metadata", 3)]
    if metadata is None:
        return blocks + [Paragraph(f"_No {RUN_METADATA_FILE} (pass `--run-metadata` to `benchpack run`)._")]
    for section in METADATA_SECTIONS:
        value = metadata.get(section)
        if isinstance(value, dict) and value:
            blocks += [Paragraph(f"**{section}**"), key_value_table(value)]
    notes = metadata.get("notes")
    if isinstance(notes, str) and notes.strip():
        # Notes are free prose; keep their paragraphs, quoted so they cannot open headings.
        blocks += [Paragraph("**notes**"), Paragraph("\n".join(f"> {line}" for line in notes.strip().splitlines()))]
    other = {k: v for k, v in metadata.items() if k not in (*METADATA_SECTIONS, "notes")}
    if other:
        blocks += [Paragraph("**other**"), key_value_table(other)]
    if len(blocks) == 1:
        blocks.append(Paragraph("_Empty._"))
    return blocks


def key_value_table(data: dict) -> Table:
    return Table(columns("key", "value"), [[f"`{key}`", value] for key, value in data.items()])


def run_cases_table(single: Comparison) -> Table:
    table = Table(columns("case", "#ok", "#TTFT s", "#prefill tok/s", "#server prefill", "#decode tok/s",
                          "output", "#pass"))
    for case in single.cases:
        (s,) = case.runs
        m = s.medians
        table.add(case.case, f"{s.ok}/{s.n}",
                  with_band(seconds(m.get("ttft_s")), m.get("ttft_s"), s.bands.get("ttft_s")),
                  prefill_cell(s, case.parity == "comparable"), rate(m.get("server_prefill_tps")),
                  decode_cell(s), output_cell(s), pass_rate(s))
    return table


SPREAD_FIELDS = (("wall_s", "timing.wall_s", seconds), ("ttft_s", "timing.ttft_s", seconds),
                 ("tpot_s", "timing.tpot_s", seconds))


def spread_table(result: ResultDir) -> Table:
    headers = ["case", "#ok reps"] + [f"#{name} min / med / max" for name, _, _ in SPREAD_FIELDS] + ["#wall_s range"]
    table = Table(columns(*headers))
    for case in _cases_in_order(result.rows):
        ok_rows = [r for r in result.rows if group_label(r) == case and r.get("ok") is True]
        row: list[Any] = [case, len(ok_rows)]
        for _, path, fmt in SPREAD_FIELDS:
            s = spread(field(r, path) for r in ok_rows)
            row.append(f"{fmt(s.min)} / {fmt(s.median)} / {fmt(s.max)}" if s else None)
        wall = spread(field(r, "timing.wall_s") for r in ok_rows)
        row.append(f"{(wall.max - wall.min) / wall.median * 100:.1f}%" if wall and wall.median else None)
        table.add(*row)
    return table


def cache_blocks(single: Comparison) -> list[Block]:
    if not any(s.cache_rows or s.cache_state != "unknown" for case in single.cases for s in case.runs):
        return [Paragraph("_No row reports `tokens.cached_prompt` (older rows, or the backend did not report it)._")]
    table = Table(columns("case", "#ok rows", "#reporting cached", "#prompt med", "#cached med", "state"))
    for case in single.cases:
        (s,) = case.runs
        table.add(case.case, s.ok, s.cache_rows, count(s.prompt_tokens_med), count(s.cached_prompt_tokens_med),
                  s.cache_state)
    return [table]


def repo_task_table(result: ResultDir, artifacts: RunArtifacts) -> Table:
    table = Table(columns("case", "#rows", "#passed", "#failed", "other status", "patch bytes per rep",
                          "#patch bytes med", "#empty patches"))
    for case in repo_task_cases(result.rows):
        case_rows = [r for r in result.rows if r.get("case") == case]
        statuses = Counter(_status(r) for r in case_rows)
        sizes = [size for c, size in artifacts.patch_bytes if c == case]
        known = [s for s in sizes if s is not None]
        table.add(
            case, len(case_rows), statuses.pop("passed", 0), statuses.pop("failed", 0),
            ", ".join(f"{k} {v}" for k, v in statuses.items()) or None,
            ", ".join(str(s) if s is not None else "unknown" for s in sizes),
            count(median(known)), sum(1 for s in known if s == 0),
        )
    return table


def _status(row: dict) -> str:
    status = field(row, "repo_task.status")
    return status if isinstance(status, str) and status else "unknown"


def model_calls_blocks(artifacts: RunArtifacts, summarizer) -> list[Block]:
    files = sum(len(paths) for paths in artifacts.model_call_logs.values())
    if summarizer is None:
        return [Paragraph(f"{files} model-call log file(s) present; the summarizer is not available in this build.")]
    summaries: dict[str, dict] = {}
    for case, paths in artifacts.model_call_logs.items():
        try:
            summaries[case] = _flatten(summarizer(paths))
        except (BenchpackError, ValueError, OSError) as exc:  # a broken log should not sink the whole report
            summaries[case] = {"summary": f"could not be summarized ({type(exc).__name__})"}
    keys = list(dict.fromkeys(k for summary in summaries.values() for k in summary))
    table = Table(columns("field", *summaries), [[f"`{key}`"] + [summaries[c].get(key) for c in summaries] for key in keys])
    note = "Only allowlisted telemetry fields are summarized; prompts, responses and error text are never shown."
    return [table, Paragraph(note, muted=True)]


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


def failed_rows_list(result: ResultDir) -> list[str]:
    failed = [r for r in result.rows if r.get("ok") is not True]
    lines = []
    for row in failed[:MAX_ERRORS_SHOWN]:
        where = row.get("case")
        if row.get("repetition") is not None:
            where = f"{where} rep {row['repetition']}"
        error = " ".join(str(row.get("error") or "no error recorded")[:160].split())
        lines.append(f"`{where}`: {error}")
    if len(failed) > MAX_ERRORS_SHOWN:
        lines.append(f"… and {len(failed) - MAX_ERRORS_SHOWN} more")
    return lines


def _cases_in_order(rows: list[dict]) -> list[str]:
    """Case labels with their lane (`short @depth=4096`): a lane's rows are never pooled with another's."""
    return list(dict.fromkeys(group_label(r) for r in rows))
