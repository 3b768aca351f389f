"""Compare 2–4 published runs side by side: the web page and the API share this.

The numbers come from `benchpack.reporting.compare.compare_runs` over the runs' stored
rows, so a comparison on the site says exactly what `benchpack compare` says
about the same result directories: per-case medians over ok rows, noise bands,
ratios against the first run with a verdict, and the D-013 prefill parity
(a prefill figure is shown only when the case is `comparable`).

A run stored without its rows (the synthetic catalogue keeps only per-case
medians) is compared from those medians instead: the same parity function
decides, built from what the medians say, and there is no noise band.

Only public runs can be named; an id that is not public is reported exactly
like one that does not exist, so a guessed id reveals nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field as dc_field
from pathlib import PurePosixPath

from benchpack.reporting import compare as core
from benchpack.results.cache_state import CACHED, COLD, COLD_MAX_CACHED_FRACTION, UNKNOWN
from benchpack.errors import BenchpackError
from benchpack.registry.fingerprint import major_minor
from benchpack.results import metrics as metric_registry
from benchpack.results.resultdir import ResultDir
from benchpack.measurement.stats import is_number

MIN_RUNS, MAX_RUNS = 2, 4
CASES_PER_PAGE = 50
# Shown per case, in this order; "higher" says which direction is faster/better.
# Labels, units and directions from benchpack.results.metrics: decode is 1/tpot_s, the figure
# benchpack.reporting.compare medians, bands and judges (its `decode_rate`).
METRICS = tuple((name, f"{metric_registry.label(name)} {metric_registry.metric(name).unit}",
                 metric_registry.metric(name).direction)
                for name in ("decode_rate", "ttft_s", "prefill_tps", "tpot_s", "wall_s"))
# Why a case's prefill figures cannot be set side by side, in words (benchpack.reporting.compare.PARITY_STATUSES).
PARITY_REASONS = {
    "missing-case": "not every run has this case",
    "prompt-missing": "a run does not report prompt-token counts, so the prompts may differ",
    "prompt-diff": "the prompt-token medians differ: the runs did not process the same prompt",
    "cache-missing": "a run does not say how much of the prompt came from the server's cache",
    "cached": "a run served the prompt from the server's prompt cache, so its prefill figure is not a rate",
    "cache-diff": "the cached-prompt counts differ between runs",
    "comparable": "",
}


class CompareRequestError(ValueError):
    """A request the comparison cannot answer; `parameter` names the input at fault."""

    def __init__(self, parameter: str, reason: str):
        super().__init__(f"{parameter}: {reason}")
        self.parameter = parameter
        self.reason = reason


@dataclass
class RunColumn:
    run_id: int
    label: str  # "#12"
    pack: str
    model: str
    runtime: str
    hardware_class: str
    provenance: str
    is_demo: bool
    from_rows: bool  # False: compared from stored medians (no noise band)
    pack_id: str = ""  # the page names the pack in words by it (registry_site.catalogue.pack_words)


@dataclass
class Cell:
    """One case of one run. `ratios`: metric -> {"ratio", "low", "high", "verdict"} against the first run."""

    present: bool
    ok: int = 0
    n: int = 0
    passed: int | None = None
    scored: int = 0
    medians: dict = dc_field(default_factory=dict)
    bands: dict = dc_field(default_factory=dict)
    ratios: dict = dc_field(default_factory=dict)


@dataclass
class CaseLine:
    case: str
    parity: str
    parity_reason: str
    cells: list[Cell]


@dataclass
class PublishedComparison:
    runs: list[RunColumn]
    cases: list[CaseLine]
    comparable: bool  # same pack id and major.minor version everywhere
    reasons: list[str]  # why not comparable, or empty
    warnings: list[dict]  # benchpack.reporting.compare warnings: {"code", "message", "case", "run"}
    case_count: int
    page: int
    pages: int

    def to_dict(self) -> dict:
        return asdict(self)


def parse_run_ids(values) -> list[int]:
    """`?runs=3,5&runs=9` -> [3, 5, 9]: 2–4 distinct positive integers, in the order given."""
    if isinstance(values, str):
        values = [values]
    parts = [p.strip() for value in (values or ()) for p in str(value).split(",") if p.strip()]
    ids: list[int] = []
    for part in parts:
        if not (part.isascii() and part.isdigit()) or int(part) <= 0:  # "¹".isdigit() is True; int("¹") fails
            raise CompareRequestError("runs", f"{part!r} is not a run id (a positive integer)")
        if int(part) not in ids:
            ids.append(int(part))
    if not MIN_RUNS <= len(ids) <= MAX_RUNS:
        raise CompareRequestError("runs", f"give {MIN_RUNS} to {MAX_RUNS} different run ids, e.g. runs=12,15 "
                                          f"(got {len(ids)})")
    return ids


def parse_page(value) -> int:
    if value in (None, ""):
        return 1
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise CompareRequestError("page", f"{value!r} is not a page number (1, 2, …)")
    return int(text)


def comparability_reasons(runs: list[dict]) -> list[str]:
    """Why these runs do not measure the same workload, in words; empty when they do.

    `runs`: {"label", "pack_id", "pack_version"}. A pack's major.minor version
    fixes its cases' content (benchpack-format: a patch release changes no prompt),
    so two runs of smoke-chat 1.2.0 and 1.2.3 are comparable, 1.2 and 1.3 are not.
    """
    reasons = []
    packs = {r["pack_id"] for r in runs}
    if len(packs) > 1:
        listing = ", ".join(f"{r['label']}: {r['pack_id']}" for r in runs)
        reasons.append(f"the runs measure different packs ({listing}); no case is shared by definition")
    else:
        versions = {major_minor(r["pack_version"]) for r in runs}
        if len(versions) > 1:
            listing = ", ".join(f"{r['label']}: {r['pack_version']}" for r in runs)
            reasons.append(f"the pack versions differ in major.minor ({listing}), so the cases' prompts or "
                           "scoring may differ")
    return reasons


def compare_published(run_ids: list[int], *, page: int = 1, per_page: int = CASES_PER_PAGE,
                      queryset=None) -> PublishedComparison:
    """Compare public runs by id (2–4, order kept: the first is the baseline of every ratio)."""
    from registry_site.catalogue.models import PublishedCase, PublishedRow, PublishedRun

    if not MIN_RUNS <= len(run_ids) <= MAX_RUNS:
        raise CompareRequestError("runs", f"give {MIN_RUNS} to {MAX_RUNS} different run ids")
    public = (queryset if queryset is not None else PublishedRun.objects.public())
    found = {run.pk: run for run in public.filter(pk__in=run_ids)}
    missing = [str(i) for i in run_ids if i not in found]
    if missing:
        raise CompareRequestError("runs", f"no public run with id {', '.join(missing)}")
    runs = [found[i] for i in run_ids]

    case_lists = {run_id: list(PublishedCase.objects.filter(run_id=run_id).order_by("pk")
                               .values_list("case", flat=True)) for run_id in run_ids}
    order = list(dict.fromkeys(case for run_id in run_ids for case in case_lists[run_id]))
    pages = max(1, -(-len(order) // per_page))
    if page > pages:
        raise CompareRequestError("page", f"there are {pages} page(s) of cases")
    on_page = order[(page - 1) * per_page: page * per_page]

    rows_by_run: dict[int, list[dict]] = {run_id: [] for run_id in run_ids}
    for run_id, raw in (PublishedRow.objects.filter(run_id__in=run_ids, case__in=on_page)
                        .order_by("pk").values_list("run_id", "raw")):
        rows_by_run[run_id].append(raw)
    # One indexed EXISTS a run (a DISTINCT over a 16,000-case run's rows would read them all).
    has_rows = {run_id for run_id in run_ids if PublishedRow.objects.filter(run_id=run_id).exists()}

    columns = [_column(run, from_rows=run.pk in has_rows) for run in runs]
    reasons = comparability_reasons([{"label": c.label, "pack_id": r.pack_id, "pack_version": r.pack_version}
                                     for c, r in zip(columns, runs)])
    cases = None
    if len(has_rows) == len(run_ids):
        try:
            cases, warnings = _from_rows(runs, columns, rows_by_run, on_page)
        except BenchpackError:
            # Stored rows passed the validator, so this should not happen; if it does, the
            # medians the catalogue stored at approval still compare (and the page does not fail).
            cases = None
            for column in columns:
                column.from_rows = False
    if cases is None:
        stored = PublishedCase.objects.filter(run_id__in=run_ids, case__in=on_page)
        medians = {(c.run_id, c.case): c for c in stored}
        cases, warnings = _from_medians(runs, medians, on_page), []
    return PublishedComparison(runs=columns, cases=cases, comparable=not reasons, reasons=reasons,
                               warnings=warnings, case_count=len(order), page=page, pages=pages)


def _column(run, *, from_rows: bool) -> RunColumn:
    return RunColumn(run_id=run.pk, label=f"#{run.pk}", pack=f"{run.pack_id} {run.pack_version}", model=run.model,
                     runtime=run.runtime, hardware_class=run.hardware_class, provenance=run.provenance,
                     is_demo=run.is_demo, from_rows=from_rows, pack_id=run.pack_id)


def _from_rows(runs, columns, rows_by_run, on_page) -> tuple[list[CaseLine], list[dict]]:
    """benchpack.reporting.compare over the stored rows of the cases on this page: the CLI's own numbers."""
    results = [ResultDir(path=PurePosixPath(column.label), rows=rows_by_run[run.pk], hardware=run.hardware,
                         run_metadata=run.run_metadata) for run, column in zip(runs, columns)]
    comparison = core.compare_runs(results)
    by_case = {c.case: c for c in comparison.cases}
    lines = []
    for case in on_page:
        found = by_case.get(case)
        if found is None:  # a case every run stored without ok-able rows: nothing to compare
            continue
        cells = [_cell_from_stats(s) for s in found.runs]
        _set_ratios(cells)
        lines.append(CaseLine(case=case, parity=found.parity, parity_reason=PARITY_REASONS[found.parity], cells=cells))
    warnings = [{"code": w.code, "message": w.message, "case": w.case, "run": w.run} for w in comparison.warnings]
    return lines, warnings


def _cell_from_stats(s: core.CaseStats) -> Cell:
    if not s.present:
        return Cell(present=False)
    medians = {name: s.medians.get(name) for name, _, _ in METRICS}
    bands = {name: band for name, band in s.bands.items() if name in medians}
    return Cell(present=True, ok=s.ok, n=s.n, passed=s.passed if s.scored else None, scored=s.scored,
                medians=medians, bands=bands, ratios=dict(s.vs_first))


def _set_ratios(cells: list[Cell]) -> None:
    """Every present cell after the first present one gets the ratio of its medians to the first's.

    The noise verdict is benchpack.reporting.compare's where it judged that figure (its
    `vs_first`, already in `cell.ratios`). Without a verdict (stored medians only, or fewer than 3 values) it is "too-few".
    """
    present = [c for c in cells if c.present]
    if len(present) < 2:
        for cell in present:
            cell.ratios = {}
        return
    first = present[0]
    first.ratios = {}
    for cell in present[1:]:
        judged, ratios = cell.ratios, {}
        for name, _, _ in METRICS:
            ratio = _ratio(first.medians.get(name), cell.medians.get(name))
            if ratio is None:
                continue
            verdict = judged.get(name) or {}
            ratios[name] = {"ratio": ratio, "low": verdict.get("low"), "high": verdict.get("high"),
                            "verdict": verdict.get("verdict", "too-few")}
        cell.ratios = ratios


def _from_medians(runs, medians: dict, on_page) -> list[CaseLine]:
    """Stored per-case medians: parity from what they say, plain ratios (no noise verdict)."""
    lines = []
    for case in on_page:
        stored = [medians.get((run.pk, case)) for run in runs]
        parity = core.parity_status([_stats_from_case(run, c) for run, c in zip(runs, stored)])
        cells = []
        for c in stored:
            if c is None:
                cells.append(Cell(present=False))
                continue
            values = {name: getattr(c, name, None) for name, _, _ in METRICS}
            if parity != "comparable":
                values["prefill_tps"] = None
            cells.append(Cell(present=True, ok=c.ok_rows, n=c.rows, passed=c.passed_rows,
                              scored=(c.scored_rows if c.scored_rows is not None else c.ok_rows)
                              if c.passed_rows is not None else 0, medians=values))
        _set_ratios(cells)
        lines.append(CaseLine(case=case, parity=parity, parity_reason=PARITY_REASONS[parity], cells=cells))
    return lines


def _stats_from_case(run, case) -> core.CaseStats:
    if case is None:
        return core.CaseStats(run=f"#{run.pk}", present=False)
    prompt, cached = case.prompt_tokens, case.cached_prompt_tokens
    return core.CaseStats(
        run=f"#{run.pk}", present=True, n=case.rows, ok=case.ok_rows,
        prompt_tokens_med=prompt, cached_prompt_tokens_med=cached,
        all_prompt_numeric=case.ok_rows > 0 and prompt is not None,
        all_cache_numeric=case.ok_rows > 0 and cached is not None,
        cache_state=_cache_state_of(case),
    )


def _cache_state_of(case) -> str:
    """The D-013 state a case was measured under: the workload key records it; else the medians decide."""
    recorded = getattr(case, "cache_state", None)
    if recorded in (COLD, CACHED, UNKNOWN):
        return recorded
    prompt, cached = case.prompt_tokens, case.cached_prompt_tokens
    if not is_number(prompt) or not is_number(cached) or prompt <= 0:
        return UNKNOWN
    return COLD if cached <= COLD_MAX_CACHED_FRACTION * prompt else CACHED


def _ratio(base, other) -> float | None:
    if not is_number(base) or not is_number(other) or base == 0:
        return None
    return other / base
