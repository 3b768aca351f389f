"""Give runs published before a column existed its values, recomputed from what the catalogue stores.

The keys: migration 0003 (with the historical models) and
`manage.py rebuild_leaderboards --keys`. Decode rate and plausibility: migration 0005.
Suspicious answers per case: migration 0012 and `rebuild_leaderboards --suspicious`.
Every figure comes from what the catalogue already stores (each run's rows,
hardware and run metadata), so nothing needs the original upload.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

from benchpack.results.cache_state import COLD
from benchpack.registry import fingerprint
from benchpack.results.resultdir import ResultDir, field


def backfill_keys(run_model, case_model, row_model, only_missing: bool = True, say=lambda text: None) -> int:
    from registry_site.catalogue import publishing

    runs = run_model.objects.all()
    if only_missing:
        runs = runs.filter(system_key="")
    done = 0
    for run in runs.iterator(chunk_size=100):
        rows = [r.raw for r in row_model.objects.filter(run=run).order_by("pk")]
        result = ResultDir(path=PurePosixPath(run.label), rows=rows, hardware=run.hardware, run_metadata=run.run_metadata)
        system = publishing.system_of(result)
        workloads = publishing.case_keys(result)
        columns = publishing.system_columns(system, run.hardware, run.model)
        columns["pack_workload_key"] = fingerprint.pack_workload_key(list(workloads.values())).digest if workloads else ""
        run_model.objects.filter(pk=run.pk).update(**columns)
        by_case = publishing.rows_by_case(result)
        for case in case_model.objects.filter(run=run):
            workload = workloads.get(case.case)
            if workload is None:
                continue
            state = workload.fields["cache_state"]
            ok_rows = [r for r in by_case.get(case.case, []) if r.get("ok") is True]
            scored = [field(r, "scoring.passed") for r in ok_rows if isinstance(field(r, "scoring.passed"), bool)]
            from benchpack.measurement import stats

            case_model.objects.filter(pk=case.pk).update(
                workload_key=workload.digest, workload_fields=workload.to_dict(), system_key=system.digest,
                cache_state=state, scored_rows=len(scored) if scored else None,
                prefill_tps=stats.median(field(r, "timing.prefill_tps") for r in ok_rows) if state == COLD else None,
            )
        done += 1
    say(f"keys computed for {done} runs")
    return done


def backfill_decode_and_plausibility(run_model, case_model, row_model, say=lambda text: None) -> int:
    """Every published run: its cases' decode_rate (1/tpot_s) and its rows' and run's plausibility.

    Migration 0005 runs it with the historical models; the figures come from the
    stored rows, hardware and run metadata, exactly as publishing computes them.
    """
    from registry_site.catalogue import publishing

    done = 0
    for run in run_model.objects.all().iterator(chunk_size=100):
        stored = list(row_model.objects.filter(run=run).order_by("pk"))
        result = ResultDir(path=PurePosixPath(run.label), rows=[r.raw for r in stored], hardware=run.hardware,
                           run_metadata=run.run_metadata)
        verdicts, judged = publishing.judge(result)
        for row, verdict in zip(stored, verdicts):
            row.plausibility = verdict.to_dict()
        row_model.objects.bulk_update(stored, ["plausibility"], batch_size=500)
        run_model.objects.filter(pk=run.pk).update(plausibility=judged, plausibility_status=judged["verdict"]["status"])
        for case, rows in publishing.rows_by_case(result).items():
            rate = publishing.case_decode_rate([r for r in rows if r.get("ok") is True])
            case_model.objects.filter(run=run, case=publishing.clip(case, "case", case_model)).update(decode_rate=rate)
        done += 1
    say(f"judged {done} runs")
    return done


def backfill_suspicious(case_model, row_model, say=lambda text: None) -> int:
    """Every published case's count of suspicious answers (`PublishedCase.suspicious_rows`), from its stored rows.

    Runs published before migration 0011 read 0; their rows (`PublishedRow.raw`, kept verbatim) still hold
    each answer's `repo_task.status`, so the count is recomputed exactly as publishing counts it: ok rows
    whose verdict is `suspicious`, grouped by case and lane level (`publishing.rows_by_case`). Migration
    0012 runs it with the historical models; `rebuild_leaderboards --suspicious` runs it again. Returns the
    number of case rows whose count changed.
    """
    from benchpack.lanes.aggregate import group_label
    from registry_site.catalogue import publishing

    counts: dict[tuple[int, str], int] = defaultdict(int)
    # Such rows are few: one filtered query, not a pass over every stored row.
    for run_id, raw in row_model.objects.filter(ok=True, raw__repo_task__status="suspicious").values_list(
            "run_id", "raw").iterator(chunk_size=500):
        counts[(run_id, publishing.clip(group_label(raw), "case", case_model))] += 1
    changed = 0
    for (run_id, case), count in counts.items():
        changed += case_model.objects.filter(run_id=run_id, case=case).exclude(suspicious_rows=count).update(
            suspicious_rows=count)
    # A case counted before whose rows hold no such answer (none is published so; kept exact all the same).
    counted = case_model.objects.exclude(suspicious_rows=0).values_list("pk", "run_id", "case")
    stale = [pk for pk, run_id, case in counted if (run_id, case) not in counts]
    if stale:
        changed += case_model.objects.filter(pk__in=stale).update(suspicious_rows=0)
    say(f"suspicious answers recounted: {sum(counts.values())} in {len(counts)} cases, {changed} case rows changed")
    return changed
