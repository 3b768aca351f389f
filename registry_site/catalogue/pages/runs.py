"""The public run page and its raw rows as JSONL and CSV downloads."""

from __future__ import annotations

import csv
import io
import json

from django.core.paginator import Paginator
from django.db.models import Sum
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from benchpack.lanes.aggregate import group_label
from registry_site.catalogue.models import PublishedRun
from registry_site.catalogue.pages.describe import hardware_in_words, metadata_fields

RUN_CASES_PER_PAGE = 100
LANE_MARK = " @"  # benchpack.lanes.aggregate.lane_suffix: `short @depth=4096`


def _public_run(pk) -> PublishedRun:
    return get_object_or_404(PublishedRun.objects.public().select_related("submission"), pk=pk)


def run_detail(request, pk):
    """A page of at most RUN_CASES_PER_PAGE cases, and the charts of those cases' rows only."""
    run = _public_run(pk)
    page = Paginator(run.cases.all(), RUN_CASES_PER_PAGE).get_page(request.GET.get("page"))
    cases = list(page.object_list)
    # A lane level's case row (`short @depth=4096`) is made of rows whose own case is `short`: select by base
    # case, keep the rows of this page's labels (a lane run's charts were empty when its rows were selected
    # by the label, issue 32 item 4).
    labels = {c.case for c in cases}
    page_rows = [row for row in run.rows.filter(case__in={label.split(LANE_MARK, 1)[0] for label in labels})
                 .only("raw") if isinstance(row.raw, dict) and group_label(row.raw) in labels]
    return render(request, "registry_site/run_detail.html", {
        "lanes": _lanes(run),
        # Over all the run's cases, not this page's: suspicious answers are failed and counted apart.
        "suspicious_answers": run.cases.aggregate(n=Sum("suspicious_rows"))["n"] or 0,
        "run": run, "cases": cases, "page": page, "page_rows": page_rows,
        "hardware_facts": hardware_in_words(run.hardware),
        "metadata": metadata_fields(run.run_metadata),
        "can_withdraw": request.user.is_authenticated and run.submission.submitter_id == request.user.pk,
        "can_moderate": request.user.has_perm("submissions.review_submission"),
    })


def _lanes(run: PublishedRun) -> list[dict]:
    """The review page's lane sections (depth and concurrency curves, per-level tables), for a run with
    lane rows (their cases read `short @depth=4096`); from all of the run's rows, as a level needs them."""
    from pathlib import PurePosixPath

    from benchpack.results.resultdir import ResultDir
    from registry_site.catalogue.pages.lanes import lane_sections

    if not run.cases.filter(case__contains=" @").exists():
        return []
    rows = list(run.rows.order_by("pk").values_list("raw", flat=True))
    return lane_sections([ResultDir(path=PurePosixPath(run.label), rows=rows, hardware=run.hardware,
                                    run_metadata=run.run_metadata)])


def _raw_rows(run: PublishedRun):
    return (raw for raw in run.rows.order_by("pk").values_list("raw", flat=True).iterator(chunk_size=500))


def _download(body, filename: str, content_type: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def rows_jsonl(request, pk):
    """The run's rows exactly as submitted (run.jsonl), one JSON object a line."""
    run = _public_run(pk)
    lines = (json.dumps(raw, ensure_ascii=False, sort_keys=False) + "\n" for raw in _raw_rows(run))
    return _download(lines, f"benchpack-run-{run.pk}.jsonl", "application/x-ndjson; charset=utf-8")


def flatten(row, prefix: str = "") -> dict:
    """{"timing": {"ttft_s": 0.1}} -> {"timing.ttft_s": 0.1}; lists stay JSON text in one cell."""
    flat = {}
    for key, value in (row.items() if isinstance(row, dict) else ()):
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            flat[name] = json.dumps(value, ensure_ascii=False)
        else:
            flat[name] = value
    return flat


def rows_csv(request, pk):
    """One CSV line per row, one column per dotted field (the union over the run's rows, first-seen order)."""
    run = _public_run(pk)
    columns: dict[str, None] = {}
    for raw in _raw_rows(run):
        columns.update(dict.fromkeys(flatten(raw)))

    def lines():
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for raw in _raw_rows(run):
            writer.writerow({k: _cell(v) for k, v in flatten(raw).items()})
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue()

    return _download(lines(), f"benchpack-run-{run.pk}.csv", "text/csv; charset=utf-8")


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    # A cell a spreadsheet would run as a formula is prefixed (CSV injection).
    return "'" + text if text[:1] in ("=", "+", "-", "@") and not _numeric(text) else text


def _numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
