from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.core.paginator import Paginator
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from benchpack.reporting.compare import compare_runs
from benchpack.errors import BenchpackError
from benchpack.results.resultdir import ResultDir
from registry_site.limits import upload_refusal
from registry_site.catalogue.models import PublishedCase
from registry_site.catalogue.pages.lanes import lane_sections
from registry_site.catalogue.publishing import case_fingerprints, judge, rows_by_case
from submissions.publication import result_dirs_of
from submissions.forms import RejectForm, UploadForm
from submissions.intake import UploadRefused, receive_upload
from submissions.models import Submission
from submissions.review import (NEEDS_REASON, DecisionError, approve, override_plausibility, plausibility_override, reject,
                                self_approval_refusal)


@login_required
def my_submissions(request):
    submissions = Submission.objects.owned_by(request.user).defer("archive")
    return render(request, "submissions/list.html", {"submissions": submissions})


@login_required
def upload(request):
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and upload_refusal(request):
        form = UploadForm(data={}, files={})
        form.is_valid()
        form.errors["archive"] = form.error_class([upload_refusal(request)])
        return render(request, "submissions/upload.html", {"form": form}, status=413)
    if request.method == "POST" and form.is_valid():
        uploaded = form.cleaned_data["archive"]
        try:
            submission = receive_upload(request.user, uploaded.name, uploaded.read())
        except UploadRefused as refused:
            if refused.existing is not None:
                messages.info(request, refused.message)
                return redirect("submissions:detail", refused.existing.pk)
            form.add_error("archive", refused.message)
            return render(request, "submissions/upload.html", {"form": form}, status=refused.status)
        else:
            messages.success(request, "Received. A worker is validating your bundle now.")
            return redirect("submissions:detail", submission.pk)
    return render(request, "submissions/upload.html", {"form": form}, status=400 if form.errors else 200)


def _visible_submission(request, pk) -> Submission:
    submission = Submission.objects.visible_to(request.user).defer("archive").filter(pk=pk).first()
    if submission is None:
        raise Http404("no such submission")
    return submission


@login_required
def detail(request, pk):
    submission = _visible_submission(request, pk)
    return render(request, "submissions/detail.html", {"submission": submission, "events": submission.events.all(),
                                                       "is_submitter": submission.submitter_id == request.user.pk})


@login_required
def status_fragment(request, pk):
    submission = _visible_submission(request, pk)
    return render(request, "submissions/_status.html", {"submission": submission})


@permission_required("submissions.review_submission", raise_exception=True)
def review_queue(request):
    queue = Submission.objects.review_queue().defer("archive").select_related("submitter")
    return render(request, "submissions/review_queue.html", {"queue": queue})


REVIEW_CASES_PER_PAGE = 100
SIMILAR_PER_CASE = 5


def _run_facts(result) -> dict:
    """What the review page says about one run: the public run page's components (hardware in words,
    metadata as fields), plus the hostname, which an operator may see."""
    from registry_site.catalogue.pages.describe import hardware_in_words, metadata_fields

    hardware = hardware_in_words(result.hardware)
    host = (result.hardware or {}).get("hostname") if isinstance(result.hardware, dict) else None
    if host and not any(label == "Host label" for label, _ in hardware):
        hardware.append(("Hostname (operators only)", str(host)))
    return {"label": str(result.path), "hardware": hardware, "metadata": metadata_fields(result.run_metadata),
            "has_metadata": bool(result.run_metadata)}


def suspicious_answers(results) -> list[dict]:
    """Every row of the submission whose repo-task verdict is `suspicious` (benchpack.results.contract
    REPO_TASK_STATUSES), with the offending lines the verifier recorded (`path:line: what: code`), so the
    operator can judge them; over all rows, not one page of cases (such rows are few)."""
    found = []
    for result in results:
        for row in result.rows:
            repo = row.get("repo_task") if isinstance(row, dict) else None
            if isinstance(repo, dict) and repo.get("status") == "suspicious":
                lines = repo.get("suspicious")
                found.append({"run": str(result.path), "case": str(row.get("case", "")),
                              "repetition": row.get("repetition"),
                              "lines": [str(x) for x in lines] if isinstance(lines, list) else []})
    return found


@permission_required("submissions.review_submission", raise_exception=True)
def review_detail(request, pk):
    """One page of cases at a time: the per-case medians, fingerprints and approved
    matches of at most REVIEW_CASES_PER_PAGE cases, however many the run has."""
    submission = get_object_or_404(Submission.objects.defer("archive").select_related("submitter"), pk=pk)
    results = result_dirs_of(submission)
    grouped = [rows_by_case(result) for result in results]
    case_order = list(dict.fromkeys(case for by_case in grouped for case in by_case))
    page = Paginator(case_order, REVIEW_CASES_PER_PAGE).get_page(request.GET.get("page"))
    on_page = list(page.object_list)
    subset = [
        ResultDir(path=result.path, rows=[row for case in on_page for row in by_case.get(case, ())],
                  hardware=result.hardware, run_metadata=result.run_metadata)
        for result, by_case in zip(results, grouped)
    ]
    try:
        comparison = compare_runs(subset) if subset else None
    except BenchpackError:
        comparison = None  # rows the comparison cannot read; the report above says what the validator saw
    similar = []
    for result in results:
        fingerprints = case_fingerprints(result)
        for case in on_page:
            if case in fingerprints:
                digest, fields = fingerprints[case]
                similar.append({"run": str(result.path), "case": case, "fingerprint": digest, "fields": fields, "approved": []})
    approved = _approved_matches({item["fingerprint"] for item in similar})
    judged = [(str(result.path), judge(result)[1]) for result in results]  # unchecked runs shown too
    for item in similar:
        item["approved"] = approved.get(item["fingerprint"], [])
    return render(
        request,
        "submissions/review_detail.html",
        {
            "submission": submission,
            "results": results,
            "run_facts": [_run_facts(result) for result in results],
            "comparison": comparison,
            "lanes": lane_sections(results),
            "similar": similar,
            "suspicious": suspicious_answers(results),
            "page": page,
            "case_count": len(case_order),
            "reject_form": RejectForm(),
            "events": submission.events.select_related("actor"),
            "self_approval_refusal": self_approval_refusal(submission, request.user),
            "plausibility": judged,
            # Unchecked is not plausible: it needs the same written reason (submissions.review.NEEDS_REASON).
            "has_implausible": any(p["verdict"]["status"] in NEEDS_REASON for _, p in judged),
            "plausibility_override": plausibility_override(submission),
            "own_submission": submission.submitter_id == request.user.pk,
        },
    )


def _approved_matches(digests: set[str]) -> dict[str, list[PublishedCase]]:
    """Up to SIMILAR_PER_CASE newest approved cases per fingerprint, in one query."""
    if not digests:
        return {}
    ranked = (
        PublishedCase.objects.filter(fingerprint__in=digests)
        .annotate(rank=Window(RowNumber(), partition_by=F("fingerprint"), order_by=F("pk").desc()))
        .filter(rank__lte=SIMILAR_PER_CASE)
        .select_related("run")
    )
    found: dict[str, list[PublishedCase]] = defaultdict(list)
    for case in ranked:
        found[case.fingerprint].append(case)
    return found


@require_POST
@permission_required("submissions.review_submission", raise_exception=True)
def approve_view(request, pk):
    try:
        approved = approve(pk, request.user)
    except DecisionError as refused:
        messages.error(request, f"Not approved: {refused}.")
        return redirect("submissions:review_detail", pk)
    if approved:
        messages.success(request, "Approved and published.")
    else:
        messages.warning(request, "Nothing changed: this submission is no longer waiting for review.")
    return redirect("submissions:review_queue")


@require_POST
@permission_required("submissions.review_submission", raise_exception=True)
def override_plausibility_view(request, pk):
    try:
        recorded = override_plausibility(pk, request.user, request.POST.get("reason", ""))
    except DecisionError as refused:
        messages.error(request, f"Not recorded: {refused}.")
        return redirect("submissions:review_detail", pk)
    if recorded:
        messages.success(request, "Override recorded; the submission may now be approved.")
    else:
        messages.warning(request, "Nothing changed: this submission is no longer waiting for review.")
    return redirect("submissions:review_detail", pk)


@require_POST
@permission_required("submissions.review_submission", raise_exception=True)
def reject_view(request, pk):
    form = RejectForm(request.POST)
    if not form.is_valid():
        messages.error(request, "A rejection needs a reason; the submitter reads it.")
        return redirect("submissions:review_detail", pk)
    if reject(pk, request.user, form.cleaned_data["reason"]):
        messages.success(request, "Rejected; the submitter has been told why.")
    else:
        messages.warning(request, "Nothing changed: this submission is no longer waiting for review.")
    return redirect("submissions:review_queue")
