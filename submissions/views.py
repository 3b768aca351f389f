from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from benchpack.compare import compare_runs
from registry_site.models import PublishedCase
from registry_site.publishing import fingerprint_of, result_dirs_of
from submissions.forms import RejectForm, UploadForm
from submissions.intake import UploadRefused, receive_upload
from submissions.models import Submission
from submissions.review import approve, reject


@login_required
def my_submissions(request):
    submissions = Submission.objects.owned_by(request.user).defer("archive")
    return render(request, "submissions/list.html", {"submissions": submissions})


@login_required
def upload(request):
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        uploaded = form.cleaned_data["archive"]
        try:
            submission = receive_upload(request.user, uploaded.name, uploaded.read())
        except UploadRefused as refused:
            if refused.existing is not None:
                messages.info(request, refused.message)
                return redirect("submissions:detail", refused.existing.pk)
            form.add_error("archive", refused.message)
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
    return render(request, "submissions/detail.html", {"submission": submission, "events": submission.events.all()})


@login_required
def status_fragment(request, pk):
    submission = _visible_submission(request, pk)
    return render(request, "submissions/_status.html", {"submission": submission})


@permission_required("submissions.review_submission", raise_exception=True)
def review_queue(request):
    queue = Submission.objects.review_queue().defer("archive").select_related("submitter")
    return render(request, "submissions/review_queue.html", {"queue": queue})


@permission_required("submissions.review_submission", raise_exception=True)
def review_detail(request, pk):
    submission = get_object_or_404(Submission.objects.defer("archive"), pk=pk)
    results = result_dirs_of(submission)
    comparison = compare_runs(results) if results else None
    similar = []
    for result in results:
        for case in dict.fromkeys(str(r.get("case", "")) for r in result.rows):
            digest, fields = fingerprint_of(result, case)
            approved = PublishedCase.objects.filter(fingerprint=digest).select_related("run")[:5]
            similar.append({"run": str(result.path), "case": case, "fingerprint": digest, "fields": fields, "approved": approved})
    return render(
        request,
        "submissions/review_detail.html",
        {
            "submission": submission,
            "results": results,
            "comparison": comparison,
            "similar": similar,
            "reject_form": RejectForm(),
            "events": submission.events.all(),
        },
    )


@require_POST
@permission_required("submissions.review_submission", raise_exception=True)
def approve_view(request, pk):
    if approve(pk, request.user):
        messages.success(request, "Approved and published.")
    else:
        messages.warning(request, "Nothing changed: this submission is no longer waiting for review.")
    return redirect("submissions:review_queue")


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
