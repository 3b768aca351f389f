"""Run queue pages: runner hosts (online or not), run requests, live progress, cancel."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from registry_site.catalogue.models import PublishedRun
from submissions.runqueue import reproduction
from submissions.runqueue.forms import RunRequestForm
from submissions.runqueue.models import RunnerHost, RunRequest
from submissions.runqueue.services import RequestRefused, cancel_run_request, create_run_request

LIVE_ROWS = 50


@login_required
def hosts(request):
    visible = RunnerHost.objects.visible_to(request.user).select_related("owner").prefetch_related("endpoints", "packs")
    if not visible.exists() and not request.user.has_perm("submissions.review_submission"):
        raise Http404("no runner hosts")
    rows = []
    for host in visible:
        active = host.run_requests.active()
        rows.append({"host": host, "running": active.filter(state="running").first(),
                     "queued": active.filter(state="queued").count()})
    return render(request, "submissions/runs/hosts.html", {"rows": rows})


@login_required
def request_list(request):
    requests = (RunRequest.objects.visible_to(request.user)
                .select_related("host", "pack", "endpoint", "requested_by", "submission")[:200])
    hosts = RunnerHost.objects.requestable_by(request.user)
    if not requests and not hosts.exists():
        raise Http404("no run requests")
    return render(request, "submissions/runs/list.html", {"requests": requests, "hosts": hosts})


@login_required
def new_request(request):
    host = RunnerHost.objects.requestable_by(request.user).filter(name=request.GET.get("host", "")).first()
    if host is None:
        hosts = RunnerHost.objects.requestable_by(request.user)
        if not hosts.exists():
            raise Http404("no runner host you may queue runs on")
        return render(request, "submissions/runs/pick_host.html", {"hosts": hosts})
    form = RunRequestForm(host, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            created = create_run_request(request.user, **form.choice())
        except RequestRefused as refused:
            form.add_error(None, refused.message)
        else:
            messages.success(request, f"Queued on {host.queue}. This page follows it live.")
            return redirect("runqueue:detail", created.pk)
    return render(request, "submissions/runs/new.html", {"form": form, "host": host},
                  status=400 if form.errors else 200)


def _visible(request, pk) -> RunRequest:
    found = (RunRequest.objects.visible_to(request.user)
             .select_related("host", "pack", "endpoint", "requested_by", "submission", "reproduction_of")
             .filter(pk=pk).first())
    if found is None:
        raise Http404("no such run request")
    return found


def _live_context(run_request: RunRequest) -> dict:
    rows = list(run_request.rows.filter(attempt=run_request.attempts).order_by("-index")[:LIVE_ROWS])
    submission = run_request.submission
    settled = run_request.is_final and (submission is None or submission.state in ("quarantined", "approved",
                                                                                   "rejected", "invalid"))
    return {"run": run_request, "rows": rows[::-1], "row_count": run_request.rows.filter(attempt=run_request.attempts).count(),
            "settled": settled}


@login_required
def detail(request, pk):
    run_request = _visible(request, pk)
    return render(request, "submissions/runs/detail.html",
                  {**_live_context(run_request), "events": run_request.events.select_related("actor")})


@login_required
def live(request, pk):
    return render(request, "submissions/runs/_live.html", _live_context(_visible(request, pk)))


@require_POST
@login_required
def cancel(request, pk):
    run_request = _visible(request, pk)
    outcome = cancel_run_request(run_request.pk, request.user)
    text = {"cancelled": "Cancelled before it started.",
            "requested": "Cancel requested: the worker stops before its next request, within a second or two.",
            "final": "Nothing to cancel: the request has ended."}[outcome]
    messages.info(request, text)
    return redirect("runqueue:detail", run_request.pk)


@permission_required("submissions.review_submission", raise_exception=True)
def reproduce(request, pk):
    run = get_object_or_404(PublishedRun.objects.public().select_related("submission__submitter"), pk=pk)
    targets, misses = reproduction.matching_targets(run, request.user)
    error = ""
    if request.method == "POST":
        try:
            created = reproduction.reproduce(run, request.user, request.POST.get("target", ""))
        except RequestRefused as refused:
            error = refused.message
        else:
            messages.success(request, f"Reproduction of run #{run.pk} queued on {created.host.queue}.")
            return redirect("runqueue:detail", created.pk)
    return render(request, "submissions/runs/reproduce.html",
                  {"run": run, "targets": targets, "misses": misses, "error": error,
                   "system": reproduction.system_of(run), "repetitions": reproduction.repetitions_of(run)},
                  status=400 if error else 200)
