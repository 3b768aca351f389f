"""Publish an approved submission's compact files into the catalogue.

Called only inside the transaction that moved the submission to `approved`,
so a run is published exactly once (the conditional UPDATE decides who
publishes) and never half.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath

from benchpack import ids
from benchpack.measurement import stats
from benchpack.results.cache_state import COLD
from benchpack.lanes.aggregate import group_label
from benchpack.registry import fingerprint
from benchpack.packs import case_content
from benchpack.results.provenance import earned_provenance, is_scripted
from benchpack.results import plausibility
from benchpack.results.metrics import decode_rate_of
from benchpack.results.resultdir import ResultDir, field
from registry_site.catalogue.models import PublishedCase, PublishedRow, PublishedRun
from submissions.models import Submission


def result_dirs_of(submission: Submission) -> list[ResultDir]:
    """Rebuild ResultDir objects from a submission's stored compact files."""
    grouped: dict[str, dict[str, str]] = defaultdict(dict)
    for f in submission.files.all():
        grouped[f.run_label][PurePosixPath(f.path).name] = f.content
    results = []
    for label in sorted(grouped):
        files = grouped[label]
        rows = [json.loads(line) for line in files.get("run.jsonl", "").splitlines() if line.strip()]
        hardware = json.loads(files["hardware.json"]) if "hardware.json" in files else None
        metadata = json.loads(files["run-metadata.json"]) if "run-metadata.json" in files else None
        results.append(ResultDir(path=PurePosixPath(label), rows=rows, hardware=hardware, run_metadata=metadata))
    return results


def fingerprint_of(result: ResultDir, case: str) -> tuple[str, dict]:
    """The comparability fingerprint of one case group of a run (see `rows_by_case`), with its inputs."""
    first = next((r for r in result.rows if group_label(r) == case), {})
    return _case_fingerprint(fingerprint.run_inputs(result.run_metadata, result.hardware), first, case)


def case_fingerprints(result: ResultDir) -> dict[str, tuple[str, dict]]:
    """Every case's fingerprint in one pass over the rows (first row of each case), in row order.

    Calling `fingerprint_of` once per case rescans the rows for each case:
    quadratic, 16,000 cases took tens of seconds.
    """
    run = fingerprint.run_inputs(result.run_metadata, result.hardware)
    firsts: dict[str, dict] = {}
    for row in result.rows:
        firsts.setdefault(group_label(row), row)
    return {case: _case_fingerprint(run, first, case) for case, first in firsts.items()}


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


def _clip(value, model_field: str, model=None) -> str:
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
    """Every case's workload key, from its rows (and the bundled pack definition where known)."""
    keys = {}
    for case, rows in rows_by_case(result).items():
        first = rows[0]
        spec = case_content.case_spec(field(first, "pack.id"), field(first, "pack.version"), str(first.get("case", "")))
        keys[case] = fingerprint.workload_key(rows, spec)
    return keys


def system_of(result: ResultDir) -> fingerprint.Key:
    first = result.rows[0] if result.rows else {}
    return fingerprint.system_key(result.run_metadata, result.hardware, field(first, "model"))


@dataclass(frozen=True)
class Publication:
    """What gets published for one approved submission: its runs and what the server decided about them."""

    submission_id: object
    results: list[ResultDir]
    claimed_provenance: str  # the bundle's word, kept and shown as a claim
    provenance: str  # earned (earned_of)
    provenance_basis: str
    is_demo: bool


def publication_of(submission: Submission) -> Publication:
    earned, basis = earned_of(submission)
    return Publication(submission_id=submission.pk, results=result_dirs_of(submission),
                       claimed_provenance=submission.provenance or "", provenance=earned, provenance_basis=basis,
                       is_demo=submission.is_demo)


def earned_of(submission: Submission) -> tuple[str, str]:
    """The provenance the server earns for a submission's runs, and why, from what it knows itself.

    Never the bundle's claim: an upload is self-reported (operator-curated when
    an operator uploaded it); a run executed by a registered runner host is
    runner-host (operator-curated when an operator queued it on a host an
    operator runs). Only the reproduction judge upgrades a run to
    independently-reproduced (catalogue.transitions.record_reproduction).
    """
    from accounts.operators import is_operator
    from submissions.runqueue.models import RunRequest

    request = (RunRequest.objects.filter(submission_id=submission.pk)
               .select_related("host__owner", "requested_by").first())
    if request is None:
        by_operator = is_operator(submission.submitter)
        earned = earned_provenance(uploaded_by_operator=by_operator)
        return earned, "uploaded by an operator" if by_operator else "uploaded; what the bundle says is not verified"
    queued_by_operator = is_operator(request.requested_by)
    host_by_operator = is_operator(request.host.owner)
    earned = earned_provenance(uploaded_by_operator=False, runner_host=request.host.name,
                               queued_by_operator=queued_by_operator, host_run_by_operator=host_by_operator)
    if request.requested_by_id == request.host.owner_id:
        who = "queued by its owner" + (" (an operator)" if queued_by_operator else "")
    else:
        who = "queued by an operator" if queued_by_operator else "queued by a user"
    return earned, _clip(f"runner host {request.host.name}, {who}", "provenance_basis")


def judge(result: ResultDir) -> tuple[list[plausibility.Verdict], dict]:
    """Each row's plausibility verdict and the run's summary (benchpack.results.plausibility)."""
    verdicts = plausibility.run_row_verdicts(result.rows, result.hardware, result.run_metadata)
    return verdicts, plausibility.summary(verdicts)


def case_decode_rate(ok_rows: list[dict]):
    """The decode figure of a case: median over its ok rows of 1/tpot_s (benchpack.results.metrics)."""
    return stats.median(decode_rate_of(r) for r in ok_rows)


def publish(publication: Publication) -> list[PublishedRun]:
    """Write the submission's runs into the catalogue and their leaderboard rows (same transaction).

    A run measured against the scripted endpoint is demo data whoever sent it
    (benchpack.results.provenance.is_scripted): labelled, never ranked with real systems.
    """
    from registry_site.catalogue import leaderboard

    published = []
    for result in publication.results:
        rows = result.rows
        first = rows[0] if rows else {}
        system = system_of(result)
        workloads = case_keys(result)
        model = field(first, "model", "")
        verdicts, judged = judge(result)
        run = PublishedRun.objects.create(
            submission_id=publication.submission_id,
            label=_clip(result.path, "label"),
            pack_id=_clip(field(first, "pack.id", ""), "pack_id"),
            pack_version=_clip(field(first, "pack.version", ""), "pack_version"),
            adapter=_clip(field(first, "adapter", ""), "adapter"),
            model=_clip(field(first, "model", ""), "model"),
            runtime=_clip(runtime_of(result), "runtime"),
            hardware_class=_clip(hardware_class_of(result), "hardware_class"),
            provenance=publication.provenance,
            claimed_provenance=publication.claimed_provenance,
            provenance_basis=publication.provenance_basis,
            is_demo=publication.is_demo or is_scripted(result.run_metadata),
            hardware=result.hardware,
            run_metadata=result.run_metadata,
            row_count=len(rows),
            ok_count=sum(1 for r in rows if r.get("ok") is True),
            **system_columns(system, result.hardware, model),
            pack_workload_key=fingerprint.pack_workload_key(list(workloads.values())).digest if workloads else "",
            plausibility_status=judged["verdict"]["status"],
            plausibility=judged,
        )
        PublishedRow.objects.bulk_create(
            PublishedRow(run=run, case=str(r.get("case", "")), repetition=r.get("repetition"), ok=r.get("ok") is True,
                         raw=r, plausibility=v.to_dict())
            for r, v in zip(rows, verdicts)
        )
        PublishedCase.objects.bulk_create(_case_rows(run, result, workloads, system))
        published.append(run)
    leaderboard.refresh_for_runs(published)
    return published


def system_columns(system: fingerprint.Key, hardware: dict | None, model: str) -> dict:
    """The run's system key and the words the leaderboard filters on."""
    fields = system.fields
    return {
        "system_key": system.digest,
        "system_fields": system.to_dict(),
        "model_family": _clip(fingerprint.model_family(fields.get("model_id") or model), "model_family"),
        "model_quantization": _clip(fields.get("model_quantization"), "model_quantization"),
        "runtime_name": _routable("runtime name", _clip(fields.get("runtime_name"), "runtime_name")),
        "runtime_version": _clip(fields.get("runtime_version"), "runtime_version"),
        "accelerator": _clip(fingerprint.accelerator(hardware), "accelerator"),
    }


def _case_rows(run: PublishedRun, result: ResultDir, workloads: dict, system: fingerprint.Key) -> list[PublishedCase]:
    fingerprints = case_fingerprints(result)
    cases = []
    for case, rows in rows_by_case(result).items():
        ok_rows = [r for r in rows if r.get("ok") is True]
        scored = [field(r, "scoring.passed") for r in ok_rows if isinstance(field(r, "scoring.passed"), bool)]
        digest, fields = fingerprints[case]
        workload = workloads[case]
        cache_state = workload.fields["cache_state"]

        def med(dotted: str):
            return stats.median(field(r, dotted) for r in ok_rows)

        cases.append(
            PublishedCase(
                run=run,
                case=_clip(case, "case", PublishedCase),  # a 128-char case id plus its lane level
                fingerprint=digest,
                fingerprint_fields=fields,
                rows=len(rows),
                ok_rows=len(ok_rows),
                passed_rows=sum(scored) if scored else None,
                scored_rows=len(scored) if scored else None,
                workload_key=workload.digest,
                workload_fields=workload.to_dict(),
                system_key=system.digest,
                cache_state=cache_state,
                prefill_tps=med("timing.prefill_tps") if cache_state == COLD else None,
                wall_s=med("timing.wall_s"),
                ttft_s=med("timing.ttft_s"),
                tpot_s=med("timing.tpot_s"),
                decode_rate=case_decode_rate(ok_rows),
                decode_tps=med("timing.decode_tps"),
                total_tps=med("timing.total_tps"),
                prompt_tokens=med("tokens.prompt"),
                cached_prompt_tokens=med("tokens.cached_prompt"),
            )
        )
    return cases
