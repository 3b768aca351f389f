"""Per-case medians, noise bands and prefill parity across result directories.

Pure functions over already-loaded `ResultDir`s. The numbers come from
`run.jsonl` rows only, never from `raw/` payloads, so a comparison means the
same thing whether or not those artifacts were kept; from
`run-metadata.json` only one fact is read: whether the run finished
(`complete`), because a median over half a run is not the run's median.

Choices a reader relies on (docs/compare-and-report.md):
- Only rows with `ok: true` feed medians and parity; failed rows are counted
  and announced in a warning instead of silently dragging a median.
- `prefill_tps` is a rate only when the server evaluated the prompt: a case
  whose rows were served from the prompt cache (`benchpack.results.cache_state`)
  in every run has parity `cached` (`cache-diff` when the runs differ), its
  prefill is `None` here and shown as "cached"
  (with the server's own prompt rate beside it), and a warning says so.
  Any other status but `comparable` hides it too.
- Every median carries a noise band (a bootstrap interval, `stats`), and
  every later run is set against the first with a ratio and a verdict:
  outside or within the noise.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Callable

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack.results.cache_state import CACHED, COLD, UNKNOWN, group_cache_state, server_prefill_tps
from benchpack.errors import BenchpackError, Problem
from benchpack.lanes import aggregate as lanes
from benchpack.results import metrics as metric_registry
from benchpack.results import placement
from benchpack.results.resultdir import RUN_FILE, ResultDir, field
from benchpack.measurement.stats import difference, is_number, median, median_interval, percentiles, sorted_numbers

FORMAT_VERSION = 2

PARITY_STATUSES = ("missing-case", "prompt-missing", "prompt-diff", "cache-missing", "cache-diff", "cached",
                   "comparable")


# name -> how to read it from a row; medians, bands and percentiles use these. Every figure but the
# server's own prefill rate is read as benchpack.results.metrics defines it (decode_rate = 1/tpot_s).
METRICS: dict[str, Callable[[dict], Any]] = {
    **{name: metric_registry.metric(name).read
       for name in ("wall_s", "ttft_s", "tpot_s", "decode_rate", "decode_tps", "total_tps", "prefill_tps")},
    "server_prefill_tps": server_prefill_tps,
    "output_tokens": metric_registry.metric("output_tokens").read,
}
# The figures a later run is set against the first run with (ratio + noise
# verdict), and the ones that get a noise band.
DIFFERENCE_METRICS = ("ttft_s", "decode_rate", "prefill_tps", "wall_s")
BAND_METRICS = ("ttft_s", "decode_rate", "prefill_tps", "wall_s")
# Kept for callers of the first format: the timing medians by row path.
TIMING_FIELDS = {name: f"timing.{name}" for name in ("wall_s", "ttft_s", "tpot_s", "decode_tps", "total_tps",
                                                     "prefill_tps")}
# Output lengths this far apart make decode and total rates describe different work.
OUTPUT_DIFF_RATIO = 1.10


class RunInfo(msgspec.Struct):
    label: str
    path: str
    packs: list[dict]  # [{"id", "version"}] in first-appearance order
    models: list[str]
    adapters: list[str]
    rows: int
    ok: int
    models_served: list[str] = msgspec.field(default_factory=list)
    complete: bool | None = None  # run-metadata.json `complete`; None when the file does not say
    incomplete_reason: str | None = None


class CaseStats(msgspec.Struct):
    """One case in one run. Medians are over ok rows; None when no ok row has the value."""

    run: str
    present: bool
    n: int = 0
    ok: int = 0
    failed: int = 0
    medians: dict[str, float | int | None] = msgspec.field(default_factory=dict)
    prompt_tokens_med: float | int | None = None
    cached_prompt_tokens_med: float | int | None = None
    cache_rows: int = 0  # ok rows that report a numeric cached_prompt
    scored: int = 0
    passed: int = 0
    # Parity inputs, kept so the status can be explained.
    all_prompt_numeric: bool = False
    all_cache_numeric: bool = False
    cache_state: str = UNKNOWN  # cold | cached | unknown (benchpack.results.cache_state)
    output_tokens_med: float | int | None = None
    finish_reasons: dict[str, int] = msgspec.field(default_factory=dict)
    # 95 % bootstrap interval of each median: {metric: [low, high]} (two or more values).
    bands: dict[str, list[float]] = msgspec.field(default_factory=dict)
    # p50/p90/p99 when there are enough values for them: {metric: {"p50": …}}.
    percentiles: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)
    # Against the first run that has the case: {metric: Difference.to_dict()}.
    vs_first: dict[str, dict] = msgspec.field(default_factory=dict)


class CaseComparison(msgspec.Struct):
    case: str
    parity: str
    runs: list[CaseStats]


class CompareWarning(msgspec.Struct):
    # pack-version-diff | pack-id-diff | prompt-diff | failed-rows | no-rows | prefill-cached |
    # cache-missing | cache-diff | output-diff | incomplete-run | model-mismatch | unplaced-timing
    code: str
    message: str
    case: str | None = None
    run: str | None = None


def _plain(value: Any) -> Any:
    """What dataclasses.asdict gave for these classes: a Struct as a dict of its fields, lists and tuples and
    dicts as copies of their own type, anything else deep-copied, all the way down."""
    if isinstance(value, msgspec.Struct):
        return {name: _plain(getattr(value, name)) for name in value.__struct_fields__}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    return copy.deepcopy(value)


class Comparison(msgspec.Struct):
    runs: list[RunInfo]
    cases: list[CaseComparison]
    warnings: list[CompareWarning]
    # Per run label: the depth lane's curves ({case: [points]}) and the
    # concurrency / rate lanes' per-level aggregates (benchpack.lanes.aggregate).
    lanes: dict[str, dict] = msgspec.field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "parity_statuses": list(PARITY_STATUSES),
            "runs": [_plain(r) for r in self.runs],
            "cases": [_plain(c) for c in self.cases],
            "lanes": self.lanes,
            "warnings": [_plain(w) for w in self.warnings],
        }


def row_problems(result: ResultDir) -> list[Problem]:
    """Rows that cannot be grouped or counted; compare refuses them instead of guessing."""
    problems = []
    source = str(result.path / RUN_FILE)
    for index, row in enumerate(result.rows, start=1):
        case = row.get("case")
        if not isinstance(case, str) or not case:
            problems.append(Problem(source, f"row {index}: case", "missing or not a non-empty string"))
        if not isinstance(row.get("ok"), bool):
            problems.append(Problem(source, f"row {index}: ok", "missing or not a boolean"))
    return problems


def run_labels(results: list[ResultDir]) -> list[str]:
    """Directory names, made unique when two compared dirs share a name."""
    labels: list[str] = []
    names = [r.path.name for r in results]
    for result, name in zip(results, names):
        label = name if names.count(name) == 1 else str(result.path)
        base, suffix = label, 2
        while label in labels:
            label, suffix = f"{base} ({suffix})", suffix + 1
        labels.append(label)
    return labels


def _rows_by_case(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows by case and lane (`short`, `short @depth=4096`, …): a lane's rows never share a median with another's."""
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(lanes.group_label(row), []).append(row)
    return grouped


def lane_figures(result: ResultDir) -> dict:
    """One run's lane figures: depth curves, and per-level aggregates with the run's SLO and level energy."""
    section = (result.run_metadata or {}).get("lanes")
    section = section if isinstance(section, dict) else {}
    slo = lanes.slo_from(section.get("slo"))
    return {"depth": lanes.depth_curves(result.rows),
            "levels": lanes.level_aggregates(result.rows, slo, section.get("levels") or []),
            "energy": lanes.energy_summary(result.rows)}


def compare_runs(results: list[ResultDir], *, noise: bool = True, lanes: bool = True) -> Comparison:
    """Compare result directories case by case. `noise=False` skips the
    bootstrap bands and run-vs-run verdicts (about a millisecond per case and run);
    `lanes=False` leaves `Comparison.lanes` empty (`benchpack run`'s closing table shows none, and
    summary.md has already summarised the levels from the same rows)."""
    problems = [p for result in results for p in row_problems(result)]
    if not results:
        problems.append(Problem("compare", "", "no result directories given"))
    if problems:
        raise BenchpackError(problems)

    labels = run_labels(results)
    runs = [_run_info(label, result) for label, result in zip(labels, results)]
    cases = []
    by_case = [_rows_by_case(result.rows) for result in results]  # one pass per run, not one per case
    for case in _case_order(results):
        groups = [rows.get(case, []) for rows in by_case]
        stats = [_case_stats(label, rows) for label, rows in zip(labels, groups)]
        status = parity_status(stats)
        if status != "comparable":
            for s in stats:
                s.medians["prefill_tps"] = None
        if noise:
            _set_noise(case, stats, groups)
        cases.append(CaseComparison(case=case, parity=status, runs=stats))
    figures = {label: lane_figures(result) for label, result in zip(labels, results)} if lanes else {}
    figures = {label: f for label, f in figures.items() if f["depth"] or f["levels"] or f["energy"]["rows"]}
    return Comparison(runs=runs, cases=cases, warnings=_warnings(runs, results, labels, cases), lanes=figures)


def parity_status(stats: list[CaseStats]) -> str:
    """Whether the prefill figures of a case are rates that can be set side by side.

    The order is the seed format's (D-013), with `cached` added after it:
    cache counts mean something only once prompt counts agree; a difference
    between runs (`cache-diff`) is the more useful verdict, so it comes first;
    `cached` (no prefill rate at all) only when every compared run was served
    from cache. One run cached and another not is a difference between runs.
    """
    if any(not s.present for s in stats):
        return "missing-case"
    if any(not s.all_prompt_numeric for s in stats):
        return "prompt-missing"
    if len({s.prompt_tokens_med for s in stats}) > 1:
        return "prompt-diff"
    if any(s.cache_state == UNKNOWN for s in stats):
        return "cache-missing"
    if all(s.all_cache_numeric for s in stats) and len({s.cached_prompt_tokens_med for s in stats}) > 1:
        return "cache-diff"
    cached = [s.cache_state == CACHED for s in stats]
    if all(cached):
        return "cached"
    if any(cached):
        return "cache-diff"
    return "comparable"


def _case_order(results: list[ResultDir]) -> list[str]:
    seen: dict[str, None] = {}
    for result in results:
        for row in result.rows:
            seen.setdefault(lanes.group_label(row), None)
    return list(seen)


def _unique(values) -> list:
    return list(dict.fromkeys(v for v in values if v is not None))


def _run_info(label: str, result: ResultDir) -> RunInfo:
    packs = _unique((field(r, "pack.id"), field(r, "pack.version")) for r in result.rows)
    metadata = result.run_metadata or {}
    complete = metadata.get("complete")
    return RunInfo(
        label=label,
        path=str(result.path),
        packs=[{"id": pid, "version": version} for pid, version in packs],
        models=_unique(field(r, "model") for r in result.rows),
        adapters=_unique(field(r, "adapter") for r in result.rows),
        rows=len(result.rows),
        ok=sum(1 for r in result.rows if r["ok"] is True),
        models_served=[m for m in _unique(r.get("model_served") for r in result.rows) if isinstance(m, str)],
        complete=complete if isinstance(complete, bool) else None,
        incomplete_reason=metadata.get("incomplete_reason") if complete is False else None,
    )


def _case_stats(label: str, rows: list[dict]) -> CaseStats:
    if not rows:
        return CaseStats(run=label, present=False, medians={name: None for name in METRICS})
    ok_rows = [r for r in rows if r["ok"] is True]
    prompts = [field(r, "tokens.prompt") for r in ok_rows]
    cached = [field(r, "tokens.cached_prompt") for r in ok_rows]
    verdicts = [field(r, "scoring.passed") for r in rows]
    verdicts = [v for v in verdicts if isinstance(v, bool)]
    # Each metric's numbers sorted once: its median and percentiles read the same list.
    present = {name: sorted_numbers(read(r) for r in ok_rows) for name, read in METRICS.items()}
    medians = {name: median(vals) for name, vals in present.items()}
    return CaseStats(
        run=label,
        present=True,
        n=len(rows),
        ok=len(ok_rows),
        failed=len(rows) - len(ok_rows),
        medians=medians,
        prompt_tokens_med=median(prompts),
        cached_prompt_tokens_med=median(cached),
        cache_rows=sum(1 for v in cached if is_number(v)),
        scored=len(verdicts),
        passed=sum(verdicts),
        # With no ok rows there is nothing to establish parity from.
        all_prompt_numeric=bool(ok_rows) and all(is_number(v) for v in prompts),
        all_cache_numeric=bool(ok_rows) and all(is_number(v) for v in cached),
        cache_state=group_cache_state(ok_rows) if ok_rows else UNKNOWN,
        output_tokens_med=medians["output_tokens"],
        finish_reasons=dict(Counter(r.get("finish_reason") for r in ok_rows if isinstance(r.get("finish_reason"), str))),
        percentiles={name: p for name, p in ((n, percentiles(v)) for n, v in present.items()) if len(p) > 1},
    )


def _set_noise(case: str, stats: list[CaseStats], groups: list[list[dict]]) -> None:
    """Noise bands of every run's medians, and every later run against the first.

    Each run's values are resampled once (seeded by run and case; every
    metric reads the same resampled positions of its sorted values), and the
    same resamples give its band and its side of every ratio."""
    values: list[dict[str, list]] = []
    for s, rows in zip(stats, groups):
        ok_rows = [r for r in rows if r["ok"] is True]
        values.append({name: [METRICS[name](r) for r in ok_rows] for name in BAND_METRICS})
        if not s.present:
            continue
        for name in BAND_METRICS:
            if name == "prefill_tps" and s.medians.get("prefill_tps") is None:
                continue  # no prefill rate (cached, unknown or not comparable): no band either
            band = median_interval(values[-1][name], _resample_name(s, case))
            if band is not None:
                s.bands[name] = list(band)
    present = [i for i, s in enumerate(stats) if s.present]
    if len(present) < 2:
        return
    first, rest = present[0], present[1:]
    for i in rest:
        for name in DIFFERENCE_METRICS:
            if name == "prefill_tps" and stats[i].medians.get("prefill_tps") is None:
                continue
            diff = difference(values[first][name], values[i][name],
                              names=(_resample_name(stats[first], case), _resample_name(stats[i], case)))
            if diff is not None:
                stats[i].vs_first[name] = diff.to_dict()


def _resample_name(s: CaseStats, case: str) -> str:
    return f"{s.run}\0{case}"


def _warnings(runs: list[RunInfo], results: list[ResultDir], labels: list[str], cases: list[CaseComparison]) -> list[CompareWarning]:
    warnings: list[CompareWarning] = []
    versions_by_pack: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        for pack in run.packs:
            versions_by_pack.setdefault(str(pack["id"]), {}).setdefault(str(pack["version"]), []).append(run.label)

    if len(versions_by_pack) > 1:
        listing = "; ".join(f"{pid} in {', '.join(_labels_of(v))}" for pid, v in versions_by_pack.items())
        warnings.append(CompareWarning("pack-id-diff", f"runs use different packs: {listing}"))
    for pack_id, by_version in versions_by_pack.items():
        if len(by_version) > 1:
            listing = "; ".join(f"{version} in {', '.join(where)}" for version, where in by_version.items())
            warnings.append(CompareWarning("pack-version-diff", f"pack {pack_id} versions differ: {listing}"))

    for run in runs:
        if run.rows == 0:
            warnings.append(CompareWarning("no-rows", f"{run.label}: run.jsonl has no rows", run=run.label))
        if run.complete is False:
            reason = run.incomplete_reason or "no reason recorded"
            warnings.append(CompareWarning("incomplete-run", f"{run.label}: the run did not finish ({reason}); "
                                           "its medians cover only the rows it wrote", run=run.label))
    for result, label in zip(results, labels):
        mismatches = _unique(w.get("message") for r in result.rows for w in (r.get("warnings") or [])
                             if isinstance(w, dict) and w.get("code") == "model-mismatch")
        for message in mismatches:
            warnings.append(CompareWarning("model-mismatch", f"{label}: {message}", run=label))
        note = placement.placement_note(result.rows)
        if note:  # rows whose reads could not place their tokens: left out of TPOT, or TTFT only a bound
            warnings.append(CompareWarning("unplaced-timing", f"{label}: {note}", run=label))

    for case in cases:
        warnings += _case_warnings(case)

    for label in labels:
        failed = [(c.case, s.failed) for c in cases for s in c.runs if s.run == label and s.failed]
        if failed:
            total = sum(n for _, n in failed)
            detail = ", ".join(f"{case}: {n}" for case, n in failed)
            warnings.append(CompareWarning("failed-rows", f"{label}: {total} failed row{'s' if total != 1 else ''} excluded from medians ({detail})", run=label))
    return warnings


def _case_warnings(case: CaseComparison) -> list[CompareWarning]:
    warnings = []
    with_case = [s for s in case.runs if s.present and s.ok]
    # D-013: only warn when every compared row has a prompt count; otherwise
    # the difference could be an artefact of missing data.
    if len(with_case) > 1 and all(s.all_prompt_numeric for s in with_case):
        if len({s.prompt_tokens_med for s in with_case}) > 1:
            listing = ", ".join(f"{s.run}: {_num(s.prompt_tokens_med)}" for s in with_case)
            warnings.append(CompareWarning("prompt-diff", f"case {case.case}: prompt-token medians differ ({listing})", case=case.case))
    cached = [s for s in with_case if s.cache_state == CACHED]
    if cached:
        listing = ", ".join(f"{s.run}: {_num(s.cached_prompt_tokens_med)} of {_num(s.prompt_tokens_med)} prompt tokens"
                            for s in cached)
        warnings.append(CompareWarning(
            "prefill-cached", f"case {case.case}: the prompt was served from the server's prompt cache ({listing}); "
            "its prefill figure is not a rate and is shown as cached (run with cold prompts: --prompt-cache cold)",
            case=case.case))
    unknown = [s.run for s in with_case if s.cache_state == UNKNOWN and s.all_prompt_numeric]
    if unknown and len(with_case) > 1:
        warnings.append(CompareWarning(
            "cache-missing", f"case {case.case}: {', '.join(unknown)} report no cached-prompt count, so whether the "
            "prompt was evaluated or served from cache is unknown; prefill is not compared", case=case.case))
    cold_counts = [s for s in with_case if s.cache_state == COLD and s.all_cache_numeric]
    if len(cold_counts) > 1 and len({s.cached_prompt_tokens_med for s in cold_counts}) > 1:
        listing = ", ".join(f"{s.run}: {_num(s.cached_prompt_tokens_med)}" for s in cold_counts)
        warnings.append(CompareWarning("cache-diff", f"case {case.case}: cached-prompt medians differ ({listing})",
                                       case=case.case))
    outputs = [s for s in with_case if is_number(s.output_tokens_med) and s.output_tokens_med > 0]
    if len(outputs) > 1 and max(s.output_tokens_med for s in outputs) > OUTPUT_DIFF_RATIO * min(s.output_tokens_med for s in outputs):
        listing = ", ".join(f"{s.run}: {_num(s.output_tokens_med)} ({_finish_text(s.finish_reasons)})" for s in outputs)
        warnings.append(CompareWarning(
            "output-diff", f"case {case.case}: the runs wrote different amounts ({listing} output tokens); "
            "decode and total rates describe different work", case=case.case))
    return warnings


def _finish_text(reasons: dict[str, int]) -> str:
    return ", ".join(f"{k}" if len(reasons) == 1 else f"{k} {v}" for k, v in reasons.items()) or "finish unknown"


def _labels_of(by_version: dict[str, list[str]]) -> list[str]:
    return list(dict.fromkeys(label for labels in by_version.values() for label in labels))


def _num(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


__all__ = ["Comparison", "CaseComparison", "CaseStats", "CompareWarning", "RunInfo", "compare_runs",
           "parity_status", "PARITY_STATUSES", "FORMAT_VERSION", "METRICS"]
