"""Per-case medians and prefill parity across result directories (D-011, D-013).

Pure functions over already-loaded `ResultDir`s. Only `run.jsonl` rows are
used: never `raw/` payloads and never `run-metadata.json`, so a comparison
means the same thing whether or not those artifacts were kept.

Choices a reader relies on:
- Only rows with `ok: true` feed medians and parity; failed rows are counted
  and announced in a warning instead of silently dragging a median.
- `prefill_tps` is only reported for a case whose parity status is
  `comparable`; otherwise it is `None` here and `—` when rendered, even if
  the rows carry timing values (a warm cache or a different prompt makes
  prefill speed meaningless to compare).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field as dc_field

from benchpack.errors import BenchpackError, Problem
from benchpack.resultdir import RUN_FILE, ResultDir, field
from benchpack.stats import is_number, median

FORMAT_VERSION = 1

PARITY_STATUSES = ("missing-case", "prompt-missing", "prompt-diff", "cache-missing", "cache-diff", "comparable")

# Row fields whose medians are reported, by the name used in tables and JSON.
TIMING_FIELDS = {
    "wall_s": "timing.wall_s",
    "ttft_s": "timing.ttft_s",
    "tpot_s": "timing.tpot_s",
    "decode_tps": "timing.decode_tps",
    "total_tps": "timing.total_tps",
    "prefill_tps": "timing.prefill_tps",
}


@dataclass
class RunInfo:
    label: str
    path: str
    packs: list[dict]  # [{"id", "version"}] in first-appearance order
    models: list[str]
    adapters: list[str]
    rows: int
    ok: int


@dataclass
class CaseStats:
    """One case in one run. Medians are over ok rows; None when no ok row has the value."""

    run: str
    present: bool
    n: int = 0
    ok: int = 0
    failed: int = 0
    medians: dict[str, float | int | None] = dc_field(default_factory=dict)
    prompt_tokens_med: float | int | None = None
    cached_prompt_tokens_med: float | int | None = None
    cache_rows: int = 0  # ok rows that report a numeric cached_prompt
    scored: int = 0
    passed: int = 0
    # Parity inputs, kept so the status can be explained.
    all_prompt_numeric: bool = False
    all_cache_numeric: bool = False


@dataclass
class CaseComparison:
    case: str
    parity: str
    runs: list[CaseStats]


@dataclass
class CompareWarning:
    code: str  # pack-version-diff | pack-id-diff | prompt-diff | failed-rows | no-rows
    message: str
    case: str | None = None
    run: str | None = None


@dataclass
class Comparison:
    runs: list[RunInfo]
    cases: list[CaseComparison]
    warnings: list[CompareWarning]

    def to_dict(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "parity_statuses": list(PARITY_STATUSES),
            "runs": [asdict(r) for r in self.runs],
            "cases": [asdict(c) for c in self.cases],
            "warnings": [asdict(w) for w in self.warnings],
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


def compare_runs(results: list[ResultDir]) -> Comparison:
    problems = [p for result in results for p in row_problems(result)]
    if not results:
        problems.append(Problem("compare", "", "no result directories given"))
    if problems:
        raise BenchpackError(problems)

    labels = run_labels(results)
    runs = [_run_info(label, result) for label, result in zip(labels, results)]
    case_ids = _case_order(results)
    cases = []
    for case in case_ids:
        stats = [_case_stats(label, [r for r in result.rows if r["case"] == case]) for label, result in zip(labels, results)]
        status = parity_status(stats)
        if status != "comparable":
            for s in stats:
                s.medians["prefill_tps"] = None
        cases.append(CaseComparison(case=case, parity=status, runs=stats))
    return Comparison(runs=runs, cases=cases, warnings=_warnings(runs, results, labels, cases))


def parity_status(stats: list[CaseStats]) -> str:
    """D-013 priority order; cache counts only mean something once prompt counts match."""
    if any(not s.present for s in stats):
        return "missing-case"
    if any(not s.all_prompt_numeric for s in stats):
        return "prompt-missing"
    if len({s.prompt_tokens_med for s in stats}) > 1:
        return "prompt-diff"
    if any(not s.all_cache_numeric for s in stats):
        return "cache-missing"
    if len({s.cached_prompt_tokens_med for s in stats}) > 1:
        return "cache-diff"
    return "comparable"


def _case_order(results: list[ResultDir]) -> list[str]:
    seen: dict[str, None] = {}
    for result in results:
        for row in result.rows:
            seen.setdefault(row["case"], None)
    return list(seen)


def _unique(values) -> list:
    return list(dict.fromkeys(v for v in values if v is not None))


def _run_info(label: str, result: ResultDir) -> RunInfo:
    packs = _unique((field(r, "pack.id"), field(r, "pack.version")) for r in result.rows)
    return RunInfo(
        label=label,
        path=str(result.path),
        packs=[{"id": pid, "version": version} for pid, version in packs],
        models=_unique(field(r, "model") for r in result.rows),
        adapters=_unique(field(r, "adapter") for r in result.rows),
        rows=len(result.rows),
        ok=sum(1 for r in result.rows if r["ok"] is True),
    )


def _case_stats(label: str, rows: list[dict]) -> CaseStats:
    if not rows:
        return CaseStats(run=label, present=False, medians={name: None for name in TIMING_FIELDS})
    ok_rows = [r for r in rows if r["ok"] is True]
    prompts = [field(r, "tokens.prompt") for r in ok_rows]
    cached = [field(r, "tokens.cached_prompt") for r in ok_rows]
    verdicts = [field(r, "scoring.passed") for r in rows]
    verdicts = [v for v in verdicts if isinstance(v, bool)]
    return CaseStats(
        run=label,
        present=True,
        n=len(rows),
        ok=len(ok_rows),
        failed=len(rows) - len(ok_rows),
        medians={name: median(field(r, path) for r in ok_rows) for name, path in TIMING_FIELDS.items()},
        prompt_tokens_med=median(prompts),
        cached_prompt_tokens_med=median(cached),
        cache_rows=sum(1 for v in cached if is_number(v)),
        scored=len(verdicts),
        passed=sum(verdicts),
        # With no ok rows there is nothing to establish parity from.
        all_prompt_numeric=bool(ok_rows) and all(is_number(v) for v in prompts),
        all_cache_numeric=bool(ok_rows) and all(is_number(v) for v in cached),
    )


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

    for case in cases:
        with_case = [s for s in case.runs if s.present]
        # D-013: only warn when every compared row has a prompt count; otherwise
        # the difference could be an artefact of missing data.
        if len(with_case) > 1 and all(s.all_prompt_numeric for s in with_case):
            medians = [s.prompt_tokens_med for s in with_case]
            if len(set(medians)) > 1:
                listing = ", ".join(f"{s.run}: {_num(s.prompt_tokens_med)}" for s in with_case)
                warnings.append(CompareWarning("prompt-diff", f"case {case.case}: prompt-token medians differ ({listing})", case=case.case))

    for label in labels:
        failed = [(c.case, s.failed) for c in cases for s in c.runs if s.run == label and s.failed]
        if failed:
            total = sum(n for _, n in failed)
            detail = ", ".join(f"{case}: {n}" for case, n in failed)
            warnings.append(CompareWarning("failed-rows", f"{label}: {total} failed row{'s' if total != 1 else ''} excluded from medians ({detail})", run=label))
    return warnings


def _labels_of(by_version: dict[str, list[str]]) -> list[str]:
    return list(dict.fromkeys(label for labels in by_version.values() for label in labels))


def _num(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
