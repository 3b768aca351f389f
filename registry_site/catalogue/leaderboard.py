"""Leaderboards: one row per system on one workload, over public runs only.

Maintenance: `refresh_for_runs` / `refresh` rewrite the `LeaderboardEntry` rows
of the (workload, system) pairs a change touched; callers run them inside the
transaction that made the change (approval, withdrawal, unpublish, flag,
reproduction verdict), so a ranking never shows a run that is not public.
`refresh_systems` rewrites many systems' entries one system at a time, each
system's case rows read once as columns (an import's refresh, `manage.py
refresh_leaderboards`); `rebuild_all` recomputes every entry in one pass
holding every run (seeding, migrations). Each of them also keeps the run list's
precomputed counts (`run_counts`) exact: the per-change path recounts the
changed runs' groups, the bulk paths rebuild every group.

Queries: the pages (`registry_site.catalogue.pages`) and the API (`registry_site.catalogue.api`)
both call the functions below; neither writes its own ranking query.
Interface and rules: docs/leaderboards.md.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, fields as dataclass_fields

from django.db.models import Case, Count, F, Max, Min, Q, QuerySet, Sum, When

from benchpack.measurement import stats
from benchpack.results import provenance
from benchpack.results import metrics as metric_registry
from benchpack.results.plausibility import IMPLAUSIBLE, PLAUSIBLE, UNCHECKED
from registry_site.catalogue import cache, run_counts
from registry_site.catalogue.bulk import insert
from registry_site.catalogue.models import METRICS, LeaderboardEntry, PublishedCase, PublishedRun

# Earned provenance only (benchpack.results.provenance); a bundle's claim is never ranked or filtered on.
PROVENANCE_RANK = provenance.RANK
PROVENANCES = provenance.EARNED
# Metrics where more is better (benchpack.results.metrics); the rest (times) rank ascending.
HIGHER_IS_BETTER = {m for m in METRICS if metric_registry.metric(m).direction == metric_registry.HIGHER}
# What a board may rank by: the registry's rankable figures. decode_tps (output ÷ (wall − TTFT)) is never ranked.
RANKED = tuple(m for m in METRICS if metric_registry.metric(m).rankable)
# Sortable columns: every ranked metric, its spread ends, and the descriptive columns.
SORTABLE = (
    *RANKED, *(f"{m}_min" for m in RANKED), *(f"{m}_max" for m in RANKED),
    "run_count", "answered", "correct", "model", "model_family", "model_quantization", "runtime_name",
    "runtime_version", "hardware_class", "accelerator", "provenance", "first_published_at", "last_published_at",
)
DEFAULT_ORDER = "decode_rate"
CASE_METRIC_FIELDS = ("decode_rate", "decode_tps", "ttft_s", "prefill_tps", "tpot_s", "wall_s",
                      *metric_registry.AGENT_METRICS)


class QueryError(ValueError):
    """A query parameter the catalogue cannot answer; `param` names it (the API's 400 body)."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param
        self.message = message


# --- maintenance ------------------------------------------------------------------


def _median_min_max(values: Iterable) -> tuple:
    present = [v for v in values if v is not None]
    if not present:
        return None, None, None
    return stats.median(present), min(present), max(present)


_pass_rate = metric_registry.pass_rate

# Checked rows rank ahead of unchecked ones, implausible (published on an operator's written override) last.
PLAUSIBILITY_TIER = {PLAUSIBLE: 0, UNCHECKED: 1, IMPLAUSIBLE: 2}


def plausibility_of(statuses: Iterable[str]) -> tuple[str, dict[str, int]]:
    """The row's verdict over its runs' verdicts, and the count per verdict: implausible if any run
    is, plausible if every run is, else unchecked (a run judged before verdicts were stored counts as
    unchecked)."""
    counts: dict[str, int] = {}
    for status in statuses:
        status = status or UNCHECKED
        counts[status] = counts.get(status, 0) + 1
    if counts.get(IMPLAUSIBLE):
        return IMPLAUSIBLE, counts
    if counts and set(counts) == {PLAUSIBLE}:
        return PLAUSIBLE, counts
    return UNCHECKED, counts


@dataclass(slots=True)  # a million of these while rebuilding
class RunFigures:
    """One run's contribution to one entry: its medians, counts and identity."""

    run: PublishedRun
    rows: int
    answered: int
    scored: int | None
    correct: int | None
    suspicious: int = 0  # of scored: answers whose repo-task verdict is `suspicious` (failed, counted apart)
    decode_rate: float | None = None
    decode_tps: float | None = None
    ttft_s: float | None = None
    prefill_tps: float | None = None
    tpot_s: float | None = None
    wall_s: float | None = None
    agent_decode_rate: float | None = None
    agent_ttft_s: float | None = None
    time_to_solution_s: float | None = None
    workload_fields: dict | None = None
    cache_state: str = ""
    case_id: int | None = None  # the case row's (a case figure's): its workload fields are read for the latest only

    @property
    def pass_rate(self):
        return _pass_rate(self.correct, self.scored)


def _case_figures(case: PublishedCase, run: PublishedRun) -> RunFigures:
    return RunFigures(run=run, rows=case.rows, answered=case.ok_rows, scored=case.scored_rows,
                      correct=case.passed_rows, suspicious=getattr(case, "suspicious_rows", None) or 0,
                      workload_fields=case.workload_fields, cache_state=case.cache_state, case_id=case.id,
                      **{name: getattr(case, name, None) for name in CASE_METRIC_FIELDS})


def _is_lane_case(case) -> bool:
    """A lane's case row (`short @depth=4096`, benchpack.lanes.aggregate.group_label), not a base case."""
    return " @" in (case.case or "")


def _pack_figures(run: PublishedRun, cases: list) -> RunFigures:
    """A run over its whole pack: medians of its base case medians, pass rate over every scored row.

    Lane rows (depths, concurrency levels) stay out: a whole-pack TTFT is never a median over one
    stream and eight, or over an empty context and a full one (issue 32 item 4); each lane level has
    its own board."""
    cases = [c for c in cases if not _is_lane_case(c)] or cases
    scored = [c for c in cases if c.scored_rows]
    states = {c.cache_state for c in cases}
    figures = RunFigures(
        run=run, rows=sum(c.rows for c in cases), answered=sum(c.ok_rows for c in cases),
        scored=sum(c.scored_rows for c in scored) if scored else None,
        correct=sum(c.passed_rows or 0 for c in scored) if scored else None,
        suspicious=sum(getattr(c, "suspicious_rows", None) or 0 for c in scored),
        cache_state=states.pop() if len(states) == 1 else "mixed",
        # completed by _complete_pack_workloads once the case workloads' completeness is known
        workload_fields={"kind": "pack-workload", "pack_id": run.pack_id, "pack_version": run.pack_version,
                         "adapter": run.adapter, "cases": sorted({c.workload_key for c in cases}), "complete": None},
    )
    if len(cases) == 1:  # most runs of a bulk import: the median of one value is that value, if a number
        for metric in CASE_METRIC_FIELDS:
            value = getattr(cases[0], metric)
            setattr(figures, metric, value if stats.is_number(value) else None)
    else:
        for metric in CASE_METRIC_FIELDS:
            setattr(figures, metric, stats.median(getattr(c, metric) for c in cases))
    return figures


def _complete_pack_workloads(entries: list[LeaderboardEntry], case_model=PublishedCase, known=None) -> None:
    """A whole-pack workload is complete when every case workload in it is. `known`: workload fields already
    read, by key (a key's completeness is a function of its fields, which its digest is of); the rest are read."""
    pack_entries = [e for e in entries if not e.case and e.workload_fields]
    keys = {k for e in pack_entries for k in e.workload_fields["cases"]}
    fields_of = {k: known[k] for k in keys if (known or {}).get(k)}
    fields_of.update(_workload_fields_of(keys - set(fields_of), case_model))
    complete = {key: bool((fields or {}).get("complete")) for key, fields in fields_of.items()}
    for entry in pack_entries:
        entry.workload_complete = all(complete.get(k) for k in entry.workload_fields["cases"])
        entry.workload_fields = {**entry.workload_fields, "complete": entry.workload_complete}


@functools.lru_cache(maxsize=8)
def _field_names(model) -> frozenset:
    return frozenset(f.name for f in model._meta.concrete_fields)


def _entry(workload_key: str, system_key: str, case: str, figures: list[RunFigures],
           entry_model=LeaderboardEntry) -> LeaderboardEntry:
    real = [f for f in figures if not f.run.is_demo]
    figures = real or figures  # demo runs never mix into a real row's medians
    latest = max(figures, key=lambda f: (f.run.published_at, f.run.pk))
    run = latest.run
    scored = [f for f in figures if f.scored]
    notes = sorted({f.run.flag_note for f in figures if f.run.flag_note})
    workload = latest.workload_fields or {}
    verdict, verdicts = plausibility_of(getattr(f.run, "plausibility_status", "") for f in figures)
    scored_count = sum(f.scored for f in scored) if scored else None
    correct_count = sum(f.correct or 0 for f in scored) if scored else None
    suspicious_count = sum(f.suspicious for f in scored)  # of scored_count, not in correct_count
    # A migration's historical entry model may predate a column: give it only what it has.
    known = _field_names(entry_model)
    optional = {"plausibility": verdict, "plausibility_runs": verdicts,
                "imported_from": getattr(run, "imported_from", ""), "suspicious_answers": suspicious_count}
    entry = entry_model(
        **{name: value for name, value in optional.items() if name in known},
        workload_key=workload_key, system_key=system_key, pack_id=run.pack_id, pack_version=run.pack_version,
        case=case, workload_fields=workload or None, workload_complete=bool(workload.get("complete")),
        system_fields=getattr(run, "system_fields", None),
        system_complete=bool((getattr(run, "system_fields", None) or {}).get("complete")),
        adapter=run.adapter, cache_state=latest.cache_state[:8], model=run.model, model_family=run.model_family,
        model_quantization=run.model_quantization, runtime_name=run.runtime_name,
        runtime_version=run.runtime_version, hardware_class=run.hardware_class, accelerator=run.accelerator,
        provenance=max((f.run.provenance for f in figures), key=lambda p: PROVENANCE_RANK.get(p, -1)),
        reproduced=any(f.run.reproduction_state == "reproduced" for f in figures),
        flagged=bool(notes), flag_note="\n".join(notes), is_demo=not real,
        run_count=len(figures), rows=sum(f.rows for f in figures), answered=sum(f.answered for f in figures),
        scored=scored_count, correct=correct_count,
        first_published_at=min(f.run.published_at for f in figures),
        last_published_at=run.published_at, representative_run_id=run.pk,
    )
    for metric in METRICS:
        median, low, high = _median_min_max(getattr(f, metric) for f in figures)
        setattr(entry, metric, median)
        setattr(entry, f"{metric}_min", low)
        setattr(entry, f"{metric}_max", high)
    # The one pass rate (issue 32): tasks passed ÷ tasks scored over every run behind the row, not the
    # median of the runs' own rates (which called 2 of 3 correct 100 %). The spread stays per run.
    entry.pass_rate = metric_registry.pass_rate(correct_count, scored_count)
    return entry


def refresh(case_pairs: set[tuple[str, str]], pack_pairs: set[tuple[str, str]]) -> None:
    """Rewrite the entries of these (workload, system) pairs from the public runs behind them.

    The per-change path (approval, withdrawal, flag, …; inside the caller's transaction): per system, only
    the case rows of the pairs' workloads and the cases of the runs behind its whole-pack pairs are read."""
    new = []
    for system, (workloads, packs) in _by_system(case_pairs, pack_pairs).items():
        new.extend(_refresh_system(system, workloads, packs, whole=False)[0])
    # COPY on PostgreSQL (bulk.insert): bulk_create's array parameters were quoted element by element
    # client-side, ~1.7 ms of CPU an entry.
    insert(LeaderboardEntry, new)
    cache.bump()  # cached public responses rendered before this change are never served again


def refresh_pairs(case_pairs: set[tuple[str, str]], pack_pairs: set[tuple[str, str]], say=lambda text: None,
                  counts: bool = True) -> int:
    """`refresh` for many pairs (a bulk import): `refresh_systems` over the pairs' systems, each system's
    case rows read once. Returns the pairs. `counts`: as for `refresh_systems`."""
    by_system = _by_system(case_pairs, pack_pairs)
    refresh_systems(sorted(by_system), say=say, pairs=by_system, counts=counts)
    return len(case_pairs) + len(pack_pairs)


# A bulk refresh says where it is at least this often (seconds), and when it ends.
PROGRESS_EVERY = 30.0


def refresh_systems(systems: list[str], say=lambda text: None, pairs: dict | None = None,
                    counts: bool = True) -> tuple[int, int]:
    """The entries of these systems, one system at a time, each in its own transaction (a bulk import, or
    `manage.py refresh_leaderboards`): memory holds one system's case rows, never the catalogue's
    (rebuild_all holds every run). Each system's public case rows are read once, in one statement, and serve
    both its case entries and its whole-pack entries.

    `pairs`: {system: (case workloads, pack workloads)} to rewrite only those pairs' entries (an import);
    None rewrites every entry of each system (a system's entries that no public run is behind any more go).
    `counts`: then rebuild the run list's counts (`run_counts.rebuild`, one GROUP BY); False for a process
    refreshing a share of the systems, whose parent rebuilds them once after every share has ended.
    Says progress every PROGRESS_EVERY seconds. Returns (entries written, case rows read)."""
    from django.db import transaction

    started = last = time.monotonic()
    written = read = 0
    for done, system in enumerate(systems, start=1):
        workloads, packs = pairs[system] if pairs is not None else (None, None)
        with transaction.atomic():
            entries, rows = _refresh_system(system, workloads, packs, whole=True)
            insert(LeaderboardEntry, entries)
            cache.bump()
        written += len(entries)
        read += rows
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY or done == len(systems):
            last = now
            say(f"  leaderboard rows of {done:,} of {len(systems):,} systems: {written:,} rows from "
                f"{read:,} case rows in {now - started:.0f} s")
    if counts:
        run_counts.rebuild()
    return written, read


def public_systems() -> list[str]:
    """The system key of every public run, sorted (what `manage.py refresh_leaderboards` refreshes)."""
    return sorted(set(PublishedRun.objects.public().exclude(system_key="").order_by()
                      .values_list("system_key", flat=True).distinct()))


def delete_entries_of_other_systems(systems: list[str]) -> int:
    """Delete the entries of systems that are not in `systems` (no public run behind them); how many."""
    return LeaderboardEntry.objects.exclude(system_key__in=systems).delete()[0]


def _by_system(case_pairs: set[tuple[str, str]], pack_pairs: set[tuple[str, str]]) -> dict[str, tuple[set, set]]:
    """{system: (its case workloads, its pack workloads)}; a pair missing either key has no entry."""
    by_system: dict[str, tuple[set, set]] = defaultdict(lambda: (set(), set()))
    for workload, system in case_pairs:
        if workload and system:
            by_system[system][0].add(workload)
    for workload, system in pack_pairs:
        if workload and system:
            by_system[system][1].add(workload)
    return dict(by_system)


def _chunks(keys, size: int = 500) -> Iterable[list]:
    keys = sorted(keys)
    return (keys[start:start + size] for start in range(0, len(keys), size))


def _refresh_system(system: str, workloads: set | None, packs: set | None, whole: bool) -> tuple[list, int]:
    """One system's new entries (for the caller to insert) with its old ones deleted, and the case rows read.

    `workloads`, `packs`: the case and whole-pack workloads whose entries to rewrite; None for both: every
    entry of the system. `whole`: read the case rows of every public run of the system in one statement
    (a bulk refresh, which rewrites most of a system's pairs); else only those of `workloads` and of the
    runs behind `packs` (a change, which touches a few pairs of a system that may have 30,000 case rows)."""
    rows = _SystemRows()
    public = PublishedCase.objects.public()
    if whole:
        rows.read(public.filter(run__system_key=system))
    else:
        for chunk in _chunks(workloads or ()):
            rows.read(public.filter(system_key=system, workload_key__in=chunk))
        for chunk in _chunks(packs or ()):
            rows.read(public.filter(run__system_key=system, run__pack_workload_key__in=chunk))
    entries = _system_entries(system, rows, workloads, packs)
    stale = LeaderboardEntry.objects.filter(system_key=system)
    if workloads is None and packs is None:
        stale.delete()
    else:
        for chunk in _chunks(workloads or ()):
            stale.filter(workload_key__in=chunk).exclude(case="").delete()
        for chunk in _chunks(packs or ()):
            stale.filter(workload_key__in=chunk, case="").delete()
    return entries, len(rows.cases)


def _newest_first(runs: Iterable) -> list:
    """Runs as PublishedRun's ordering has them (newest first, then by id): the order main's queries gave."""
    return sorted(sorted(runs, key=lambda r: r.id), key=lambda r: r.published_at, reverse=True)


def _system_entries(system: str, rows: "_SystemRows", workloads: set | None, packs: set | None) -> list:
    """The entries of one system's pairs (None: all of them) from its case rows: a case entry per (workload,
    case) over the case rows with the system's key, a whole-pack entry per pack workload over the system's
    runs, each run with all its case rows (`_pack_figures`). Representative JSON (the latest case row's
    workload fields, the latest run's system fields) is read afterwards for the entries only."""
    grouped: dict[tuple[str, str], list[RunFigures]] = defaultdict(list)
    cases_of: dict[int, list] = defaultdict(list)
    runs = rows.runs
    for case in rows.cases.values():
        cases_of[case.run_id].append(case)
        if case.system_key == system and case.workload_key and (workloads is None or case.workload_key in workloads):
            grouped[(case.workload_key, case.case)].append(_case_figures(case, runs[case.run_id]))
    entries, representative_case = [], {}
    for (workload, name), figures in grouped.items():
        entry = _entry(workload, system, name, figures)
        # A case name is unique within a run: the representative run's figure is the latest case row's.
        representative_case[next(f.case_id for f in figures if f.run.pk == entry.representative_run_id)] = entry
        entries.append(entry)
    _fill_from_cases(representative_case)
    per_pack: dict[str, list[RunFigures]] = defaultdict(list)
    for run in _newest_first(runs.values()):
        key = run.pack_workload_key
        if run.system_key == system and key and (packs is None or key in packs):
            per_pack[key].append(_pack_figures(run, cases_of[run.id]))
    entries.extend(_entry(key, system, "", figures) for key, figures in per_pack.items())
    _fill_system_fields(entries)
    # The pack workloads' case workloads are this system's case workloads: their fields were just read.
    _complete_pack_workloads(entries, known={e.workload_key: e.workload_fields for e in entries
                                             if e.case and e.workload_fields})
    return entries


def _fill_from_cases(entries_by_case: dict[int, LeaderboardEntry]) -> None:
    """Each case entry's workload fields: those of its latest case row (by the row's id)."""
    for chunk in _chunks(entries_by_case, 1000):
        for case_id, fields in PublishedCase.objects.filter(pk__in=chunk).values_list("id", "workload_fields"):
            entry = entries_by_case[case_id]
            entry.workload_fields = fields or None
            entry.workload_complete = bool((fields or {}).get("complete"))


def pairs_of(runs: Iterable[PublishedRun]) -> tuple[set, set]:
    runs = list(runs)
    # No ordering: the model's (by the run's date) would join every run and make DISTINCT return each case row.
    case_pairs = set(PublishedCase.objects.filter(run__in=[r.pk for r in runs]).order_by()
                     .values_list("workload_key", "system_key").distinct())
    pack_pairs = {(r.pack_workload_key, r.system_key) for r in runs}
    return case_pairs, pack_pairs


def refresh_for_runs(runs: Iterable[PublishedRun]) -> None:
    """After publishing, withdrawing, unpublishing or flagging `runs` (same transaction): their entries, and
    their groups' run counts (after `refresh`'s generation bump, whose row lock orders concurrent writers)."""
    runs = list(runs)
    refresh(*pairs_of(runs))
    run_counts.recount(runs)


CASE_COLUMNS = ("id", "run_id", "case", "workload_key", "system_key", "rows", "ok_rows", "scored_rows", "passed_rows",
                "suspicious_rows", "cache_state", *CASE_METRIC_FIELDS)
# What an entry needs of a run; not its JSON (system_fields is fetched for the representative runs only).
RUN_COLUMNS = ("id", "pack_id", "pack_version", "adapter", "model", "model_family", "model_quantization",
               "runtime_name", "runtime_version", "hardware_class", "accelerator", "provenance", "is_demo",
               "published_at", "reproduction_state", "flag_note", "system_key", "pack_workload_key",
               "plausibility_status", "imported_from")


def _assign(row, columns, values, intern) -> None:
    """Set `row`'s attributes `columns` to `values`; strings through `intern` (a dict's setdefault) if given.
    Two loops, not one with a test a value: this runs for every case row a refresh reads."""
    if intern is None:
        for name, value in zip(columns, values):
            setattr(row, name, value)
    else:
        for name, value in zip(columns, values):
            setattr(row, name, intern(value, value) if isinstance(value, str) else value)


class _Run:
    """A public run's columns (rebuild_all, the refresh): a million case rows point at half a million of these."""

    __slots__ = (*RUN_COLUMNS, "system_fields")

    def __init__(self, values, intern=None, columns=RUN_COLUMNS):
        self.plausibility_status = ""  # a historical model without the column: unchecked
        self.imported_from = ""  # nor this one: measured by Benchpack, as every run was before imports
        _assign(self, columns, values, intern)
        self.system_fields = None

    @property
    def pk(self):
        return self.id


class _Case:
    """A case row's columns (rebuild_all, the refresh)."""

    __slots__ = CASE_COLUMNS

    def __init__(self, values, intern=None, columns=CASE_COLUMNS):
        if columns is not CASE_COLUMNS:
            for name in CASE_COLUMNS:  # a column the (historical) model lacks reads as None
                setattr(self, name, None)
        _assign(self, columns, values, intern)

    workload_fields = None


# The run's columns read beside each of its case rows (one statement for both; ~2 case rows a run).
RUN_OF_CASE = tuple(f"run__{name}" for name in RUN_COLUMNS)


class _SystemRows:
    """One system's public case rows and their runs, read as columns (no model instances, no JSON), by id in
    the order read: newest run first, then by run and case id (PublishedRun's and PublishedCase's ordering)."""

    def __init__(self):
        self.runs: dict[int, _Run] = {}
        self.cases: dict[int, _Case] = {}

    def read(self, cases: QuerySet) -> None:
        runs, known, width = self.runs, self.cases, len(CASE_COLUMNS)
        # Fetched whole, not through a server-side cursor (three more round trips a statement): one system's
        # rows are held in full anyway.
        for values in cases.order_by("-run__published_at", "run_id", "id").values_list(*CASE_COLUMNS, *RUN_OF_CASE):
            if values[0] in known:  # read already by another of the refresh's statements
                continue
            case = known[values[0]] = _Case(values[:width])
            if case.run_id not in runs:
                runs[case.run_id] = _Run(values[width:])


def rebuild_all(batch_size: int = 5000, say=lambda text: None, models=None) -> int:
    """Recompute every entry from the public runs, streaming the case rows once (seeding, migrations).

    `models`: (PublishedRun, PublishedCase, LeaderboardEntry), the historical
    ones when a migration calls this; the current ones otherwise. Memory: one
    small slotted object per run and two per case row (~0.5 GB at 1M case rows).
    """
    from registry_site.catalogue.querysets import PUBLIC_RUN

    run_model, case_model, entry_model = models or (PublishedRun, PublishedCase, LeaderboardEntry)
    entry_model.objects.all().delete()
    public_runs = run_model.objects.filter(PUBLIC_RUN)
    intern = {}.setdefault  # the same model, runtime and key strings recur on every row
    run_known = {f.attname for f in run_model._meta.concrete_fields}
    run_columns = tuple(c for c in RUN_COLUMNS if c in run_known)
    runs = {values[0]: _Run(values, intern, run_columns)
            for values in public_runs.values_list(*run_columns).iterator(chunk_size=batch_size)}
    grouped: dict[tuple[str, str, str], list[RunFigures]] = defaultdict(list)
    per_run: dict[int, list] = defaultdict(list)
    total = 0
    # A migration's historical case model may predate a column (decode_rate before 0005): read what it has.
    known = {f.attname for f in case_model._meta.concrete_fields} | {"run_id"}
    columns = tuple(c for c in CASE_COLUMNS if c in known)
    columns = CASE_COLUMNS if columns == CASE_COLUMNS else columns  # _Case fills what is missing otherwise
    for values in case_model.objects.filter(run__in=public_runs).values_list(*columns).iterator(
            chunk_size=batch_size):
        case = _Case(values, intern, columns)
        run = runs[case.run_id]
        grouped[(case.workload_key, run.system_key, case.case)].append(_case_figures(case, run))
        per_run[case.run_id].append(case)
        total += 1
    say(f"aggregating {total} case rows of {len(runs)} runs")
    entries = [_entry(w, s, c, figures, entry_model) for (w, s, c), figures in grouped.items() if w and s]
    grouped.clear()
    packs: dict[tuple[str, str], list[RunFigures]] = defaultdict(list)
    for run_id, run_cases in per_run.items():
        run = runs[run_id]
        packs[(run.pack_workload_key, run.system_key)].append(_pack_figures(run, run_cases))
    entries.extend(_entry(w, s, "", figs, entry_model) for (w, s), figs in packs.items() if w and s)
    _fill_system_fields(entries, run_model)
    _fill_workload_fields(entries, case_model)
    _complete_pack_workloads(entries, case_model)
    entry_model.objects.bulk_create(entries, batch_size=batch_size // 5)
    if models is None:  # a migration's historical models: the generation table may not exist yet
        cache.bump()
        run_counts.rebuild()  # nor the count table (migration 0015 fills it itself)
    return len(entries)


def _fill_system_fields(entries, run_model=PublishedRun) -> None:
    ids = sorted({e.representative_run_id for e in entries if e.system_fields is None})
    found = {}
    for start in range(0, len(ids), 500):
        found.update(run_model.objects.filter(pk__in=ids[start:start + 500]).values_list("id", "system_fields"))
    for entry in entries:
        if entry.system_fields is None:
            entry.system_fields = found.get(entry.representative_run_id)
            entry.system_complete = bool((entry.system_fields or {}).get("complete"))


def _workload_fields_of(keys, case_model=PublishedCase) -> dict[str, dict | None]:
    """One stored copy of each workload key's fields (every case row of a workload holds the same)."""
    found = {}
    for key in sorted(keys):
        first = (case_model.objects.filter(workload_key=key, workload_fields__isnull=False).order_by()
                 .values_list("workload_fields", flat=True)[:1])  # unordered: no sort of the workload's rows
        found[key] = next(iter(first), None)
    return found


def _fill_workload_fields(entries: list[LeaderboardEntry], case_model=PublishedCase) -> None:
    """rebuild_all drops the per-case JSON while streaming; one query per workload puts it back."""
    found = _workload_fields_of({e.workload_key for e in entries if e.case and not e.workload_fields}, case_model)
    for entry in entries:
        if entry.case and not entry.workload_fields:
            entry.workload_fields = found.get(entry.workload_key)
            entry.workload_complete = bool((entry.workload_fields or {}).get("complete"))


# --- queries ----------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """Leaderboard filters; every field optional. Build from request parameters with `from_params`."""

    model: str | None = None
    model_family: str | None = None
    quantization: str | None = None
    runtime: str | None = None  # runtime name
    runtime_version: str | None = None
    hardware_class: str | None = None
    accelerator: str | None = None  # substring, case-insensitive ("4090", "M5")
    provenance: str | None = None
    reproduced: bool | None = None
    since: dt.date | None = None  # the row has a run published on or after this date
    until: dt.date | None = None  # the row has a run published on or before this date

    @classmethod
    def params(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclass_fields(cls))

    @classmethod
    def from_params(cls, params) -> "Filters":
        """From a QueryDict/dict of strings; blank means unset; a bad value raises QueryError naming it."""
        values = {}
        for name in cls.params():
            raw = params.get(name)
            if raw is None or str(raw).strip() == "":
                continue
            raw = str(raw).strip()
            if name in ("since", "until"):
                try:
                    values[name] = dt.date.fromisoformat(raw)
                except ValueError:
                    raise QueryError(name, f"{raw!r} is not a date (YYYY-MM-DD)") from None
            elif name == "reproduced":
                if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise QueryError(name, f"{raw!r} is not true or false")
                values[name] = raw.lower() in ("true", "1", "yes")
            elif name == "provenance":
                if raw not in PROVENANCE_RANK:
                    raise QueryError(name, f"{raw!r} is not one of {', '.join(PROVENANCES)}")
                values[name] = raw
            else:
                values[name] = raw
        return cls(**values)

    def apply(self, entries: QuerySet) -> QuerySet:
        exact = {"model": "model", "model_family": "model_family", "quantization": "model_quantization",
                 "runtime": "runtime_name", "runtime_version": "runtime_version",
                 "hardware_class": "hardware_class", "provenance": "provenance", "reproduced": "reproduced"}
        conditions = {column: getattr(self, name) for name, column in exact.items() if getattr(self, name) is not None}
        entries = entries.filter(**conditions)
        if self.accelerator:
            entries = entries.filter(accelerator__icontains=self.accelerator)
        if self.since:
            entries = entries.filter(last_published_at__date__gte=self.since)
        if self.until:
            entries = entries.filter(first_published_at__date__lte=self.until)
        return entries


def ordering(order: str | None) -> list:
    """`decode_rate` ranks best first (desc for rates, asc for times); `-x` flips it. Nulls always last."""
    order = (order or DEFAULT_ORDER).strip()
    flip = order.startswith("-")
    name = order[1:] if flip else order
    if name not in SORTABLE:
        raise QueryError("order", f"{order!r} is not a sortable column; one of {', '.join(SORTABLE)} (prefix - to reverse)")
    base = name.removesuffix("_min").removesuffix("_max")
    descending = base in HIGHER_IS_BETTER or name in ("run_count", "answered", "correct", "last_published_at")
    descending = descending != flip
    column = F(name).desc(nulls_last=True) if descending else F(name).asc(nulls_last=True)
    return [column, "pk"]


@dataclass(frozen=True)
class Workload:
    key: str
    pack_id: str
    pack_version: str
    case: str
    fields: dict  # workload_key(...).to_dict(): the inputs, which are unknown, where each came from
    complete: bool
    systems: int  # entries (systems) ranked on it, demo rows left out when real ones exist
    demo_only: bool


@functools.cache
def runnable_versions() -> frozenset[tuple[str, str]]:
    """(pack id, version) of every pack version bundled here: what `benchpack run` measures today."""
    from benchpack.packs.catalogue import pack_versions

    return frozenset((v.id, v.version) for v in pack_versions())


def _runnable_first(rows: list[dict]) -> list[dict]:
    """A board opens on a version of the pack this registry can run (bundled) before one it cannot — the seed's
    runtime-sweep 0.1.0, whose content is not bundled (docs/packs.md), however many real rows it has; within
    each group the query's order (most real systems, most systems, newest) stands (a stable sort)."""
    bundled = runnable_versions()
    return sorted(rows, key=lambda r: (r["pack_id"], r["case"], (r["pack_id"], r["pack_version"]) not in bundled))


def workloads_of(pack_id: str, case: str = "") -> list[Workload]:
    """The workloads of a pack's case (case "" = whole-pack workloads): those of a bundled pack version first,
    then the most-populated real one first."""
    grouped = (LeaderboardEntry.objects.filter(pack_id=pack_id, case=case)
               .values("pack_id", "case", "pack_version", "workload_key")
               .annotate(total=Count("id"), real=Count("id", filter=Q(is_demo=False)), last=Max("last_published_at"))
               .order_by("-real", "-total", "-last", "workload_key"))
    rows = _runnable_first(list(grouped))
    if not rows:
        return []
    details = {}
    for entry in (LeaderboardEntry.objects.filter(pack_id=pack_id, case=case,
                                                  workload_key__in=[r["workload_key"] for r in rows])
                  .order_by("workload_key", "-last_published_at")
                  .values("workload_key", "pack_version", "workload_fields", "workload_complete")):
        details.setdefault(entry["workload_key"], entry)
    return [Workload(key=r["workload_key"], pack_id=pack_id, pack_version=details[r["workload_key"]]["pack_version"],
                     case=case, fields=details[r["workload_key"]]["workload_fields"] or {},
                     complete=details[r["workload_key"]]["workload_complete"],
                     systems=r["real"] or r["total"], demo_only=not r["real"]) for r in rows]


def leaderboard_entries(pack_id: str, case: str = "", workload_key: str | None = None,
                        filters: Filters | None = None, order: str | None = None) -> QuerySet:
    """The ranked rows of one workload of `pack_id`/`case` (the most-populated one when not given).

    One workload only: a leaderboard never mixes two. Demo rows are left out
    once real rows exist for it. Raises QueryError for an unknown workload or
    order. Page the result with Django's Paginator or DRF's pagination.
    """
    columns = ordering(order)
    if workload_key is None:
        found = workloads_of(pack_id, case)
        if not found:
            return LeaderboardEntry.objects.none()
        workload_key = found[0].key
    entries = LeaderboardEntry.objects.filter(pack_id=pack_id, case=case, workload_key=workload_key)
    if not entries.exists():
        raise QueryError("workload", f"no workload {workload_key!r} for pack {pack_id!r} case {case or '(whole pack)'!r}")
    if entries.filter(is_demo=False).exists():
        entries = entries.filter(is_demo=False)
    return (filters or Filters()).apply(entries).order_by(checked_first(), *columns)


def checked_first():
    """Rows whose runs were all judged plausible rank ahead of unchecked ones, implausible ones last
    (issue 30 item 5: an unchecked run with an invented GPU must not rank #1), whatever the order."""
    return Case(*(When(plausibility=status, then=tier) for status, tier in PLAUSIBILITY_TIER.items()),
                default=PLAUSIBILITY_TIER[UNCHECKED]).asc()


@dataclass(frozen=True)
class Leaderboard:
    pack_id: str
    case: str
    workload: Workload | None  # None: nothing published for this pack/case yet
    workloads: list[Workload]  # every workload of this pack/case, for a selector
    entries: QuerySet  # ranked, filtered, not yet paged
    order: str

    @property
    def order_label(self) -> str:
        return order_label(self.order)

    @property
    def figures_over(self) -> str:
        return figures_over(self.workload) if self.workload else ""


# The most base-case names a board's header spells out; a pack of more says how many.
NAMED_CASES = 6


def figures_over(workload: Workload) -> str:
    """What a board's speeds aggregate, in words (issue 32 item 4). A case or lane board: that case's
    rows. A whole-pack board: each run's median over its base cases — unlike work (a short and a long
    prompt) — whose names it says, lane levels left out (_pack_figures); each case has its own board."""
    if workload.case:
        return f"the median over case {workload.case}'s rows only"
    keys = (workload.fields or {}).get("cases") or []
    # The case boards' rows name the cases (a few hundred rows), not the case rows behind them: a DISTINCT over
    # every public case row of the pack read 1.7M index entries per whole-pack board at 10M case rows.
    names = sorted(set(LeaderboardEntry.objects.filter(workload_key__in=keys).exclude(case="").order_by()
                       .values_list("case", flat=True).distinct()))
    if not names:
        return "the median over the pack's base cases, lane levels left out"
    if len(names) == 1:
        return f"the median over the pack's one case ({names[0]})"
    shown = ", ".join(names[:NAMED_CASES]) + (f" and {len(names) - NAMED_CASES} more" if len(names) > NAMED_CASES else "")
    return (f"the median over the pack's {len(names)} base cases ({shown}) for each run — a summary across "
            f"different prompts, lane levels left out; each case's own board compares like with like")


# A whole-pack row's figures per base case (issue 32 item 4): TTFT and decode, the figures a prompt's length
# moves most. Pooled into one whole-pack median, a short prompt's TTFT and a long one's are unlike work.
PER_CASE_METRICS = ("ttft_s", "decode_rate")
# A pack of more base cases than this lists none per row (null): a run at the case limit (2,000 cases) would
# make each of a page's 500 rows a list of 2,000; each case's own board has its figures. Bundled packs have ≤ 4.
PER_CASE_MAX = 20


@dataclass(frozen=True)
class CaseFigures:
    """One base case's figures for one system: its row on that case's board, copied, never recomputed."""

    case: str
    workload_key: str  # the case board's workload (`?workload=` there)
    ttft_s: float | None
    decode_rate: float | None
    runs: int  # runs behind the case row: more than the whole-pack row's when some ran only some cases


def case_figures(entries: Iterable[LeaderboardEntry]) -> dict[int, list[CaseFigures] | None]:
    """For each whole-pack entry (by pk), the system's row on the board of each base case of its workload,
    by case name (None when the workload has more than PER_CASE_MAX base cases); case entries get none. The
    figures are the case boards' own stored ones (the same `refresh` wrote both in one transaction), so a
    whole-pack board and a case board never disagree.

    Two queries whatever the number of entries: the pack workloads' case keys (only for entries whose
    `workload_fields` were deferred), then every case row of those systems on those case workloads."""
    packs = [e for e in entries if not e.case]
    if not packs:
        return {}
    cases_of: dict[str, list[str]] = {}
    for e in packs:
        if "workload_fields" not in e.get_deferred_fields():
            cases_of[e.workload_key] = list((e.workload_fields or {}).get("cases") or [])
    missing = {e.workload_key for e in packs} - set(cases_of)
    if missing:
        first = (LeaderboardEntry.objects.filter(workload_key__in=missing, case="").order_by()
                 .values("workload_key").annotate(first=Min("pk")).values_list("first", flat=True))
        for key, fields in LeaderboardEntry.objects.filter(pk__in=list(first)).values_list("workload_key",
                                                                                           "workload_fields"):
            cases_of[key] = list((fields or {}).get("cases") or [])
    cases_of = {key: keys if len(keys) <= PER_CASE_MAX else None for key, keys in cases_of.items()}
    found: dict[tuple[str, str], list[CaseFigures]] = defaultdict(list)
    rows = (LeaderboardEntry.objects.filter(system_key__in={e.system_key for e in packs},
                                            workload_key__in={k for keys in cases_of.values() for k in keys or ()})
            .exclude(case="").order_by("case", "workload_key")
            .values_list("system_key", "case", "workload_key", "run_count", *PER_CASE_METRICS))
    for system, case, workload, runs, *figures in rows:
        found[(workload, system)].append(CaseFigures(case=case, workload_key=workload, runs=runs,
                                                     **dict(zip(PER_CASE_METRICS, figures))))
    return {e.pk: None if cases_of.get(e.workload_key) is None else
            sorted((f for key in cases_of[e.workload_key] for f in found.get((key, e.system_key), [])),
                   key=lambda f: (f.case, f.workload_key))
            for e in packs}


# What a board says when it is sorted by a column that is not a figure: words, never a field name.
COLUMN_WORDS = {
    "run_count": "runs", "answered": "answered rows", "correct": "correct answers", "model": "model",
    "model_family": "model family", "model_quantization": "quantization", "runtime_name": "runtime",
    "runtime_version": "runtime version", "hardware_class": "hardware class", "accelerator": "accelerator",
    "provenance": "provenance", "first_published_at": "first published", "last_published_at": "last published",
}


def order_label(order: str) -> str:
    """What a board says it ranks by: the figure's label, unit and formula from benchpack.results.metrics."""
    name = order.lstrip("-")
    reversed_ = " — reversed" if order.startswith("-") else ""
    base = name.removesuffix("_min").removesuffix("_max")
    if base not in metric_registry.METRICS:
        return COLUMN_WORDS.get(name, name.replace("_", " ")) + reversed_
    m = metric_registry.metric(base)
    end = " — the lowest run's" if name.endswith("_min") else " — the highest run's" if name.endswith("_max") else ""
    return f"{m.label}{' (' + m.unit + ')' if m.unit else ''}{end}: {m.formula}{reversed_}"


def leaderboard(pack_id: str, case: str = "", workload_key: str | None = None,
                filters: Filters | None = None, order: str | None = None) -> Leaderboard:
    """Everything a leaderboard page/endpoint shows, in one call."""
    workloads = workloads_of(pack_id, case)
    chosen = next((w for w in workloads if w.key == workload_key), None) if workload_key else \
        (workloads[0] if workloads else None)
    if workload_key and chosen is None:
        raise QueryError("workload", f"no workload {workload_key!r} for pack {pack_id!r} case {case or '(whole pack)'!r}")
    order = order or (board_order(pack_id, case, chosen.key) if chosen else DEFAULT_ORDER)
    entries = leaderboard_entries(pack_id, case, chosen.key, filters, order) if chosen else \
        LeaderboardEntry.objects.none()
    return Leaderboard(pack_id, case, chosen, workloads, entries, order)


def board_order(pack_id: str, case: str, workload_key: str) -> str:
    """What a board ranks by when the request names nothing: the first figure of
    metrics.DEFAULT_RANK_ORDER that every row of the board has (a smoke-chat board with
    no decode figure ranks by TTFT, never by an empty column)."""
    entries = LeaderboardEntry.objects.filter(pack_id=pack_id, case=case, workload_key=workload_key)
    if entries.filter(is_demo=False).exists():
        entries = entries.filter(is_demo=False)
    return metric_registry.board_default(
        lambda name: name in SORTABLE and not entries.filter(**{f"{name}__isnull": True}).exists())


# Which boards a list of boards shows (`?imported=`): imported results are measured by another tool, so the
# default lists only boards of Benchpack-measured runs (docs/interop.md, "In the registry").
IMPORTED_CHOICES = ("exclude", "include", "only")


def imported_choice(value: str | None) -> str:
    if value in (None, ""):
        return "exclude"
    if value not in IMPORTED_CHOICES:
        raise QueryError("imported", f"{value!r} is not one of {', '.join(IMPORTED_CHOICES)}")
    return value


def boards(imported: str = "include") -> list[dict]:
    """Every (pack, case) with a leaderboard: [{pack_id, case, workloads, systems, imported_from}] ("" = whole pack).

    `systems` is what the board itself shows when opened: the rows of its default workload
    (`workloads_of`'s first: a bundled pack version, then most real systems, most systems, newest), demo rows left
    out once real ones exist — one grouped query, the same order as `workloads_of`. `imported_from` is
    "imported from TOOL VERSION" for a board of imported runs (their pack is `imported-TOOL`, so such a board
    never holds a Benchpack-measured run), else ""; `imported` keeps them ("include"), leaves them out
    ("exclude") or keeps only them ("only")."""
    entries = LeaderboardEntry.objects.all()
    if imported == "exclude":
        entries = entries.filter(imported_from="")
    elif imported == "only":
        entries = entries.exclude(imported_from="")
    grouped = (entries.values("pack_id", "case", "pack_version", "workload_key")
               .annotate(total=Count("id"), real=Count("id", filter=Q(is_demo=False)), last=Max("last_published_at"),
                         imported_from=Max("imported_from"))
               .order_by("pack_id", "case", "-real", "-total", "-last", "workload_key"))
    found: dict[tuple[str, str], dict] = {}
    for row in _runnable_first(list(grouped)):
        key = (row["pack_id"], row["case"])
        if key not in found:
            found[key] = {"pack_id": key[0], "case": key[1], "workloads": 0, "systems": row["real"] or row["total"],
                          "imported_from": row["imported_from"] or ""}
        found[key]["workloads"] += 1
    return list(found.values())


# --- entities: model, runtime, hardware class ---------------------------------------

ENTITY_COLUMNS = {"model": "model", "runtime": "runtime_name", "hardware": "hardware_class"}


def _entity_column(kind: str) -> str:
    if kind not in ENTITY_COLUMNS:
        raise QueryError("kind", f"{kind!r} is not one of {', '.join(ENTITY_COLUMNS)}")
    return ENTITY_COLUMNS[kind]


def entity_entries(kind: str, value: str, *, runtime_version: str | None = None, case: str | None = None) -> QuerySet:
    """Every leaderboard row of a model / runtime (name, optionally version) / hardware class.

    `case=""` gives the whole-pack rows only; None gives all."""
    entries = LeaderboardEntry.objects.filter(**{_entity_column(kind): value})
    if runtime_version is not None:
        entries = entries.filter(runtime_version=runtime_version)
    if case is not None:
        entries = entries.filter(case=case)
    return entries.order_by("pack_id", "case", F(DEFAULT_ORDER).desc(nulls_last=True), "pk")


def entity_runs(kind: str, value: str) -> QuerySet:
    """Every public run of the entity, newest first."""
    column = {"model": "model", "runtime": "runtime_name", "hardware": "hardware_class"}[_entity_kind(kind)]
    return PublishedRun.objects.public().filter(**{column: value}).order_by("-published_at", "pk")


def _entity_kind(kind: str) -> str:
    _entity_column(kind)
    return kind


def best_per_pack(kind: str, value: str, metric: str = DEFAULT_ORDER) -> list[LeaderboardEntry]:
    """For each pack, the entity's best whole-pack row by `metric` (its most-populated workload)."""
    columns = ordering(metric)
    best = {}
    for entry in entity_entries(kind, value, case="").order_by("pack_id", *columns):
        best.setdefault(entry.pack_id, entry)
    return list(best.values())


def entities(kind: str) -> list[dict]:
    """The index of models / runtimes / hardware classes with how many rows and runs they have."""
    column = _entity_column(kind)
    extra = {"model": ("model_family", "model_quantization"), "runtime": ("runtime_version",),
             "hardware": ("accelerator",)}[kind]
    return list(LeaderboardEntry.objects.filter(case="").exclude(**{column: ""}).values(column, *extra)
                .annotate(rows=Count("id"), runs=Sum("run_count"),
                          demo=Max(Case(When(is_demo=True, then=1), default=0)))  # PostgreSQL has no MAX(boolean)
                .order_by(column, *extra))


# --- where a run is ranked -----------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """One board a run's system is ranked on because of this run."""

    pack_id: str
    case: str  # "" = the whole-pack board
    workload_key: str
    rank: int | None  # the system's place by the board's default order; None when its row is left out
    of: int  # rows on that board
    main: bool  # the workload a visitor opening the board sees first
    why_not: str = ""  # when rank is None: why the row is not in the ranking (demo rows, …)

    @property
    def url(self) -> str:
        from urllib.parse import urlencode

        from django.urls import reverse

        base = reverse("leaderboard_case", args=[self.pack_id, self.case]) if self.case else \
            reverse("leaderboard_pack", args=[self.pack_id])
        return base if self.main else f"{base}?{urlencode({'workload': self.workload_key})}"

    @property
    def board(self) -> str:
        return f"{self.pack_id} · {self.case or 'whole pack'}"


# A run page lists at most this many boards: a run at the case limit (2,000 cases) has a board per case,
# and listing every one took a query per board and a page of links nobody reads.
MAX_PLACEMENTS = 20


def placements(run: PublishedRun, limit: int = MAX_PLACEMENTS) -> tuple[list[Placement], int]:
    """The boards this run's system is ranked on for the workloads the run ran (issue 32 item 3: a run
    page says where the run is ranked, with links): the whole-pack board first, then each case and lane,
    at most `limit` of them; and how many boards of its cases were not looked at (0: the list is whole)."""
    if not run.system_key:
        return [], 0
    keys = [("", run.pack_workload_key)] + sorted(
        set(PublishedCase.objects.filter(run=run).exclude(workload_key="").values_list("case", "workload_key")))
    more = max(0, len(keys) - limit)
    keys = keys[:limit]
    found = []
    for case, workload in keys:
        if not workload or not LeaderboardEntry.objects.filter(workload_key=workload, system_key=run.system_key,
                                                               case=case).exists():
            continue
        default = workloads_of(run.pack_id, case)
        main = bool(default) and default[0].key == workload
        try:
            ranked = list(leaderboard_entries(run.pack_id, case, workload,
                                              order=board_order(run.pack_id, case, workload))
                          .values_list("system_key", flat=True))
        except QueryError:
            continue
        rank = ranked.index(run.system_key) + 1 if run.system_key in ranked else None
        why = "" if rank else "demo rows leave a board once real results exist for it"
        found.append(Placement(run.pack_id, case, workload, rank, len(ranked), main, why))
    return found, more
