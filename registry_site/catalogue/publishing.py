"""Publish an approved submission's runs into the catalogue.

Called only inside the transaction that moved the submission to `approved`,
so a run is published exactly once (the conditional UPDATE decides who
publishes) and never half. The submissions app builds the `Publication`
(`submissions.publication.publication_of`) and hands it over; nothing here
imports `submissions`. Each run's rows arrive twice: as the row contract's
typed structs (`benchpack.results.contract.Row`), which every column below
is read from, and as the JSON objects kept verbatim (`PublishedRow.raw`, the
run's download) and read by the core's dict-based judges (plausibility,
workload keys).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from benchpack import ids
from benchpack.measurement import stats
from benchpack.results.cache_state import COLD, group_cache_state
from benchpack.lanes.aggregate import group_label
from benchpack.registry import fingerprint
from benchpack.packs import case_content
from benchpack.results.provenance import is_scripted
from benchpack.results import plausibility
from benchpack.results.contract import Row, Timing, Tokens
from benchpack.results.metrics import decode_rate_of
from benchpack.results.resultdir import ResultDir, field
from registry_site.catalogue.bulk import insert
from registry_site.catalogue.models import PublishedCase, PublishedRow, PublishedRun
from django.db.models.base import ModelState

_NO_TIMING = Timing()
_NO_TOKENS = Tokens()


def fingerprint_of(result: ResultDir, case: str) -> tuple[str, dict]:
    """The comparability fingerprint of one case group of a run (see `rows_by_case`), with its inputs."""
    first = next((r for r in result.rows if group_label(r) == case), {})
    return _case_fingerprint(fingerprint.run_inputs(result.run_metadata, result.hardware), first, case)


def case_fingerprints(result: ResultDir, run: tuple[dict, dict] | None = None,
                      memo: dict | None = None) -> dict[str, tuple[str, dict]]:
    """Every case's fingerprint in one pass over the rows (first row of each case), in row order.

    Calling `fingerprint_of` once per case rescans the rows for each case:
    quadratic, 16,000 cases took tens of seconds. `run`: the run's fingerprint inputs
    (`fingerprint.run_inputs`) when the caller has them; `memo`: answers kept for runs that share those
    inputs (publishing many runs of one system), keyed by the case's own inputs.
    """
    if run is None:
        run = fingerprint.run_inputs(result.run_metadata, result.hardware)
    firsts: dict[str, dict] = {}
    for row in result.rows:
        firsts.setdefault(group_label(row), row)
    if memo is None:
        return {case: _case_fingerprint(run, first, case) for case, first in firsts.items()}
    out = {}
    for case, first in firsts.items():
        inputs = (field(first, "pack.id"), field(first, "pack.version"), case, field(first, "model"))
        found = memo.get(inputs)
        if found is None:
            found = memo[inputs] = _case_fingerprint(run, first, case)
        out[case] = found
    return out


def _case_fingerprint(run: tuple[dict, dict], first: dict, case: str) -> tuple[str, dict]:
    fp = fingerprint.compute(
        fingerprint.case_inputs(run, field(first, "pack.id"), field(first, "pack.version"), case, field(first, "model"))
    )
    return fp.digest, fp.to_dict()


def rows_by_case(result: ResultDir) -> dict[str, list[dict]]:
    """Rows by case group: the case id, plus the lane level for a lane row (`short @depth=4096`,
    `short @concurrency=4`), as compare and report group them: a lane level's medians are never
    pooled with the base rows' or another level's, and each group has its own workload key."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in result.rows:
        grouped[group_label(row)].append(row)
    return grouped


def clip(value, model_field: str, model=None) -> str:
    """Display strings derived from metadata fit their column (PostgreSQL refuses longer ones)."""
    text = "" if value is None else str(value)
    most = (model or PublishedRun)._meta.get_field(model_field).max_length
    return text if len(text) <= most else text[: most - 1] + "…"


def hardware_class_of(result: ResultDir) -> str:
    return _routable("hardware class", fingerprint.hardware_class(result.hardware) or "")


def _routable(kind: str, value: str | None) -> str:
    """A derived name the pages link to, or "" (shown as "not recorded", never linked) when it is outside
    the identifier grammar (benchpack.ids): nothing is stored that cannot be served. Bundle validation
    refuses a bad runtime.name; this also holds for derived names (a clipped hardware class)."""
    return value if value and ids.is_valid(kind, value) else ""


def runtime_of(result: ResultDir) -> str:
    runtime = (result.run_metadata or {}).get("runtime")
    if not isinstance(runtime, dict):
        return ""
    return " ".join(str(runtime[k]) for k in ("name", "version") if runtime.get(k))


def case_keys(result: ResultDir) -> dict[str, fingerprint.Key]:
    """Every case's workload key, from its rows (and the bundled pack definition where known), remembered by
    its inputs (`WorkloadKeys`)."""
    return {case: _WORKLOAD_KEYS.key(rows) for case, rows in rows_by_case(result).items()}


def _workload_key(rows: list[dict], cache_state: str | None = None) -> fingerprint.Key:
    first = rows[0]
    spec = case_content.case_spec(field(first, "pack.id"), field(first, "pack.version"), str(first.get("case", "")))
    return fingerprint.workload_key(rows, spec, cache_state)


# What `fingerprint.workload_key` reads of a case's first row; the rest of it (timings, tokens, the answer)
# differs from run to run and does not enter the key. The ok rows enter through their cache state alone.
_WORKLOAD_INPUTS = ("pack", "case", "adapter", "request", "lane", "depth_tokens", "concurrency", "arrival_rate")


# The memo's key: the JSON text of those fields, which tells apart whatever `workload_key` can (1, 1.0 and true;
# NaN, Infinity and null) and, like the canonical text the key is a digest of, refuses what is not JSON.
_INPUTS_TEXT = json.JSONEncoder(separators=(",", ":")).encode


class WorkloadKeys:
    """`fingerprint.workload_key` of a case's rows, remembered by its inputs: the first row's fields it reads
    (`_WORKLOAD_INPUTS`, as JSON text) and the ok rows' cache state, which it is handed rather than working
    it out again. The bundled pack definition it also reads is a function of the pack id, version and case,
    which are in the inputs. A synthetic or sweep submission publishes the same cases of one system over and
    over: the key was a tenth of publish's Python a case row (docs/measurement.md, "Stop 41"). Bounded (a web
    worker approving submissions keeps it): a full memo starts again empty; a key is ~2-3 KB."""

    LIMIT = 4096

    def __init__(self):
        self.keys: dict = {}

    def key(self, rows: list[dict]) -> fingerprint.Key:
        ok_rows = [r for r in rows if r.get("ok") is True]
        cache_state = group_cache_state(ok_rows) if ok_rows else "unknown"
        first = rows[0]
        try:
            inputs = (cache_state, _INPUTS_TEXT([first.get(name) for name in _WORKLOAD_INPUTS]))
        except (TypeError, ValueError):  # a value that is not JSON (never from a bundle)
            return _workload_key(rows, cache_state)
        found = self.keys.get(inputs)
        if found is None:
            if len(self.keys) >= self.LIMIT:
                self.keys.clear()
            found = self.keys[inputs] = _workload_key(rows, cache_state)
        return found


_WORKLOAD_KEYS = WorkloadKeys()  # one per process: its answers depend on nothing but their inputs


def system_of(result: ResultDir) -> fingerprint.Key:
    first = result.rows[0] if result.rows else {}
    return fingerprint.system_key(result.run_metadata, result.hardware, field(first, "model"))


@dataclass(frozen=True)
class PublishedResult:
    """One run to publish: its files as read (`result`: rows as JSON objects) and the same rows typed."""

    result: ResultDir
    rows: list[Row]  # result.rows decoded with the row contract, in the same order


@dataclass(frozen=True)
class Publication:
    """What gets published for one approved submission: its runs and what the server decided about them."""

    submission_id: object
    results: list[PublishedResult]
    claimed_provenance: str  # the bundle's word, kept and shown as a claim
    provenance: str  # earned (submissions.publication.earned_of)
    provenance_basis: str
    is_demo: bool
    # The bundle manifest's `source` ({"kind": "imported", "tool", "tool_version", "label", …}; validated by the
    # bundle check `imported`), None for a run Benchpack measured.
    source: dict | None = None

    @property
    def imported_from(self) -> str:
        source = self.source if isinstance(self.source, dict) else {}
        return str(source.get("label") or "") if source.get("kind") == "imported" else ""


def judge(result: ResultDir, bounds: plausibility.RunBounds | None = None) -> tuple[list[plausibility.Verdict], dict]:
    """Each row's plausibility verdict and the run's summary (benchpack.results.plausibility)."""
    verdicts = plausibility.run_row_verdicts(result.rows, result.hardware, result.run_metadata, bounds)
    return verdicts, plausibility.summary(verdicts)


# json.dumps(…, sort_keys=True) without building an encoder each call (json.dumps does, for any argument).
_SORTED_TEXT = json.JSONEncoder(sort_keys=True).encode


class _RunShared:
    """What a run's columns and verdicts take from its metadata, hardware and model name alone — system key,
    runtime, hardware class, plausibility bounds, fingerprint inputs — computed once for every run of one
    publication that has the same three (a synthetic or sweep submission sends hundreds of runs of one
    system; each run recomputed them: ~40 % of publish's Python per case row, docs/leaderboards.md "Import").
    Keyed by their JSON text, so equal values share, whatever objects hold them."""

    def __init__(self):
        self.runs: dict[str, tuple] = {}
        self.fingerprints: dict[str, dict] = {}
        self.pack_keys: dict[tuple, str] = {}  # the case keys' digests -> the pack workload key's
        self.workload_dicts: dict[str, dict] = {}  # a workload key's digest -> its to_dict(), one object
        self.verdict_dicts: dict[tuple, dict] = {}  # a verdict's values -> its to_dict(), one object

    def pack_workload_digest(self, workloads: list[fingerprint.Key]) -> str:
        """`fingerprint.pack_workload_key(workloads).digest`; the same case keys (a key's digest stands for
        its fields) give the same answer."""
        digests = tuple(k.digest for k in workloads)
        found = self.pack_keys.get(digests)
        if found is None:
            found = self.pack_keys[digests] = fingerprint.pack_workload_key(workloads).digest
        return found

    def workload_dict(self, workload: fingerprint.Key) -> dict:
        """One dict for every case row of this publication with this workload key: COPY encodes a shared
        object once (bulk._copy)."""
        found = self.workload_dicts.get(workload.digest)
        if found is None:
            found = self.workload_dicts[workload.digest] = workload.to_dict()
        return found

    def verdict_dict(self, verdict: plausibility.Verdict) -> dict:
        """`verdict.to_dict()`, one dict for equal verdicts (their reasons and rounded factors repeat across
        the rows of one system): built with asdict once, encoded once."""
        key = (verdict.status, verdict.reason, type(verdict.factor), verdict.factor, verdict.figure)
        try:
            found = self.verdict_dicts.get(key)
        except TypeError:
            return verdict.to_dict()
        if found is None:
            found = self.verdict_dicts[key] = verdict.to_dict()
        return found

    def of(self, result: ResultDir, first: Row | None) -> tuple[str | None, tuple]:
        model = first.model if first else ""
        try:
            key = _SORTED_TEXT([result.run_metadata, result.hardware, field(result.rows[0], "model")
                                if result.rows else None, plausibility.run_model_name(result.rows), model])
        except (TypeError, ValueError):  # not JSON (never from a bundle): computed for this run alone
            return None, self._compute(result, model)
        found = self.runs.get(key)
        if found is None:
            found = self.runs[key] = self._compute(result, model)
        return key, found

    @staticmethod
    def _compute(result: ResultDir, model: str) -> tuple:
        system = system_of(result)
        return (system, system_columns(system, result.hardware, model), runtime_of(result), hardware_class_of(result),
                plausibility.run_bounds(result.hardware, result.run_metadata, plausibility.run_model_name(result.rows)),
                fingerprint.run_inputs(result.run_metadata, result.hardware))

    def fingerprint_memo(self, key: str | None) -> dict | None:
        """The case fingerprints already computed for runs of this key (`case_fingerprints`' memo)."""
        return None if key is None else self.fingerprints.setdefault(key, {})


def case_decode_rate(ok_rows: list[dict]):
    """The decode figure of a case: median over its ok rows of 1/tpot_s (benchpack.results.metrics)."""
    return stats.median(decode_rate_of(r) for r in ok_rows)


def publish(publication: Publication, *, refresh: bool = True) -> list[PublishedRun]:
    """Write the submission's runs into the catalogue and their leaderboard rows (same transaction).

    A run measured against the scripted endpoint is demo data whoever sent it
    (benchpack.results.provenance.is_scripted): labelled, never ranked with real systems.

    The runs, their rows and their cases are three bulk inserts whatever the number of runs (one INSERT per
    run made a 500-run submission 500 round trips). `refresh=False` leaves the leaderboard rows to the
    caller — a bulk import (`manage.py seed_catalogue`) publishes many submissions, then refreshes each
    touched (workload, system) pair once (`leaderboard.refresh_pairs`) instead of once per submission.
    """
    from registry_site.catalogue import leaderboard

    prepared = []
    shared = _RunShared()
    for item in publication.results:
        result, rows = item.result, item.rows
        if len(rows) != len(result.rows):
            raise ValueError(f"run {result.path}: {len(rows)} typed rows for {len(result.rows)} stored rows")
        first = rows[0] if rows else None
        key, (system, columns, runtime, hardware_class, bounds, run_inputs) = shared.of(result, first)
        workloads = case_keys(result)
        model = first.model if first else ""
        verdicts, judged = judge(result, bounds)
        run = PublishedRun(
            submission_id=publication.submission_id,
            label=clip(result.path, "label"),
            pack_id=clip(first.pack.id if first else "", "pack_id"),
            pack_version=clip(first.pack.version if first else "", "pack_version"),
            adapter=clip(first.adapter if first else "", "adapter"),
            model=clip(model, "model"),
            runtime=clip(runtime, "runtime"),
            hardware_class=clip(hardware_class, "hardware_class"),
            provenance=publication.provenance,
            claimed_provenance=publication.claimed_provenance,
            provenance_basis=publication.provenance_basis,
            is_demo=publication.is_demo or is_scripted(result.run_metadata),
            hardware=result.hardware,
            run_metadata=result.run_metadata,
            row_count=len(rows),
            ok_count=sum(1 for r in rows if r.ok),
            **columns,
            pack_workload_key=shared.pack_workload_digest(list(workloads.values())) if workloads else "",
            plausibility_status=judged["verdict"]["status"],
            plausibility=judged,
            imported_from=clip(publication.imported_from, "imported_from"),
        )
        fingerprints = case_fingerprints(result, run_inputs, shared.fingerprint_memo(key))
        prepared.append((run, item, workloads, system, verdicts, fingerprints))
    runs = [run for run, *_ in prepared]
    rows = (_new_of_run(PublishedRow, run, case=typed.case, repetition=_repetition(typed), ok=typed.ok,
                        raw=raw, plausibility=shared.verdict_dict(v))
            for run, item, _, _, verdicts, _ in prepared
            for typed, raw, v in zip(item.rows, item.result.rows, verdicts))
    cases = (case for run, item, workloads, system, _, fingerprints in prepared
             for case in _case_rows(run, item, workloads, system, fingerprints, shared.workload_dict))
    published = insert(PublishedRun, runs, with_ids=True)  # rows and cases point at the runs' ids
    insert(PublishedRow, rows)
    insert(PublishedCase, cases)
    if refresh:
        leaderboard.refresh_for_runs(published)
    return published


def _new_of_run(model, run: PublishedRun, **values):
    """`model(run=run, **values)` for a raw row or case row, without Model.__init__'s per-field walk (a
    quarter of publish's Python a case row went to building these instances, docs/leaderboards.md "Import").

    `values` must name every other column (`_check_complete` in the tests holds both call sites to it);
    the id is left to the database, as Model.__init__ leaves it. The catalogue's models have no pre_init or
    post_init receivers, which Model.__init__ would send. Called once `run` has its id (the runs are
    written first), as `run=run` would read it then too."""
    obj = model.__new__(model)
    obj._state = ModelState()
    obj.__dict__.update(values, id=None, run_id=run.pk)
    obj._state.fields_cache["run"] = run
    return obj


def _median_of_one(value):
    """stats.median of a one-value sequence: the value when it is a number, else None (one ok row a
    case is the common shape; the general median's generator and list per figure were 5 % of publish)."""
    return value if stats.is_number(value) else None


def is_suspicious(row: Row) -> bool:
    """The row's repo-task verdict is `suspicious` (contract.REPO_TASK_STATUSES): its answer introspects its
    caller or environment. Never passed (its scoring says failed); counted apart from wrong answers."""
    return row.repo_task is not None and row.repo_task.status == "suspicious"


def _repetition(row: Row) -> int | None:
    return row.repetition if isinstance(row.repetition, int) else None


def system_columns(system: fingerprint.Key, hardware: dict | None, model: str) -> dict:
    """The run's system key and the words the leaderboard filters on."""
    fields = system.fields
    return {
        "system_key": system.digest,
        "system_fields": system.to_dict(),
        "model_family": clip(fingerprint.model_family(fields.get("model_id") or model), "model_family"),
        "model_quantization": clip(fields.get("model_quantization"), "model_quantization"),
        "runtime_name": _routable("runtime name", clip(fields.get("runtime_name"), "runtime_name")),
        "runtime_version": clip(fields.get("runtime_version"), "runtime_version"),
        "accelerator": clip(fingerprint.accelerator(hardware), "accelerator"),
    }


def typed_rows_by_case(item: PublishedResult) -> dict[str, list[Row]]:
    """The typed rows grouped as `rows_by_case` groups the stored ones (the lane label is the core's)."""
    grouped: dict[str, list[Row]] = defaultdict(list)
    for typed, raw in zip(item.rows, item.result.rows):
        grouped[group_label(raw)].append(typed)
    return grouped


def _case_rows(run: PublishedRun, item: PublishedResult, workloads: dict, system: fingerprint.Key,
               fingerprints: dict[str, tuple[str, dict]], workload_dict) -> list[PublishedCase]:
    cases = []
    for case, rows in typed_rows_by_case(item).items():
        ok_rows = [r for r in rows if r.ok]
        scored = [r.scoring.passed for r in ok_rows if r.scoring is not None and isinstance(r.scoring.passed, bool)]
        digest, fields = fingerprints[case]
        workload = workloads[case]
        cache_state = workload.fields["cache_state"]
        timings = [r.timing or _NO_TIMING for r in ok_rows]
        tokens = [r.tokens or _NO_TOKENS for r in ok_rows]
        sessions = [r.agent_session for r in ok_rows if r.agent_session is not None]
        medians = (_one_row_medians(cache_state, timings[0], tokens[0], sessions[0] if sessions else None)
                   if len(ok_rows) == 1 else _medians(cache_state, timings, tokens, sessions))
        cases.append(
            _new_of_run(
                PublishedCase, run,
                case=clip(case, "case", PublishedCase),  # a 128-char case id plus its lane level
                fingerprint=digest,
                fingerprint_fields=fields,
                rows=len(rows),
                ok_rows=len(ok_rows),
                passed_rows=sum(scored) if scored else None,
                scored_rows=len(scored) if scored else None,
                suspicious_rows=sum(1 for r in ok_rows if is_suspicious(r)),
                workload_key=workload.digest,
                workload_fields=workload_dict(workload),
                system_key=system.digest,
                cache_state=cache_state,
                **medians,
            )
        )
    return cases


def _medians(cache_state: str, timings: list[Timing], tokens: list[Tokens], sessions: list) -> dict:
    """A case row's figures: medians over its ok rows."""
    return dict(
        prefill_tps=stats.median(t.prefill_tps for t in timings) if cache_state == COLD else None,
        wall_s=stats.median(t.wall_s for t in timings),
        ttft_s=stats.median(t.ttft_s for t in timings),
        tpot_s=stats.median(t.tpot_s for t in timings),
        decode_rate=stats.median(1 / t.tpot_s for t in timings if t.tpot_s),  # metrics.decode_rate_of, typed
        decode_tps=stats.median(t.decode_tps for t in timings),
        total_tps=stats.median(t.total_tps for t in timings),
        prompt_tokens=stats.median(k.prompt for k in tokens),
        cached_prompt_tokens=stats.median(k.cached_prompt for k in tokens),
        # metrics.AGENT_METRICS, typed: the agent's own speed beside the verdict (docs/agents.md)
        time_to_solution_s=stats.median(s.time_to_solution_s for s in sessions),
        agent_decode_rate=stats.median(s.decode_tps_p50 for s in sessions),
        agent_ttft_s=stats.median(s.ttft_p50_s for s in sessions),
    )


def _one_row_medians(cache_state: str, timing: Timing, tokens: Tokens, session) -> dict:
    """`_medians` when the case has one ok row: each figure is that row's (stats.median of one value),
    decode_rate 1/tpot_s when tpot_s is set, the agent figures None without a session."""
    one = _median_of_one
    tpot = timing.tpot_s
    return dict(
        prefill_tps=one(timing.prefill_tps) if cache_state == COLD else None,
        wall_s=one(timing.wall_s),
        ttft_s=one(timing.ttft_s),
        tpot_s=one(tpot),
        decode_rate=one(1 / tpot) if tpot else None,
        decode_tps=one(timing.decode_tps),
        total_tps=one(timing.total_tps),
        prompt_tokens=one(tokens.prompt),
        cached_prompt_tokens=one(tokens.cached_prompt),
        time_to_solution_s=one(session.time_to_solution_s) if session is not None else None,
        agent_decode_rate=one(session.decode_tps_p50) if session is not None else None,
        agent_ttft_s=one(session.ttft_p50_s) if session is not None else None,
    )
