"""Withdraw (submitter), unpublish / republish / flag / unflag (operator): forms that call
`registry_site.catalogue.transitions`, which owns the rules, the events and the leaderboard rows.

Each is a POST from the run page or the submission page; the answer is a
redirect with a message saying what happened (or why nothing did). A user
who is not the run's submitter gets a 404 from withdraw, as if the run did
not exist: a guessed id reveals nothing.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from registry_site.catalogue import transitions
from registry_site.catalogue.models import PublishedRun


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=transitions.MAX_NOTE_CHARS, required=False, strip=True)


def _reason(request) -> str:
    form = ReasonForm(request.POST)
    return form.cleaned_data["reason"] if form.is_valid() else (request.POST.get("reason") or "")


def _back(run: PublishedRun):
    """To the public run page while it is public, else to its submission's page."""
    if PublishedRun.objects.public().filter(pk=run.pk).exists():
        return redirect("run_detail", run.pk)
    return redirect("submissions:detail", run.submission_id)


def _apply(request, run: PublishedRun, change, done: str, not_done: str):
    try:
        changed = change()
    except transitions.TransitionRefused as refused:
        messages.error(request, str(refused).capitalize() + ".")
    else:
        (messages.success if changed else messages.info)(request, done if changed else not_done)
    return _back(run)


@login_required
@require_POST
def withdraw(request, pk):
    run = PublishedRun.objects.filter(pk=pk, submission__submitter=request.user).first()
    if run is None:
        raise Http404("no such run of yours")
    return _apply(request, run, lambda: transitions.withdraw(run.pk, request.user, _reason(request)),
                  f"Run #{run.pk} is withdrawn: it is gone from the public pages, the API and the rankings.",
                  f"Run #{run.pk} was not published, so there was nothing to withdraw.")


def _operator_view(change_name: str, done: str, not_done: str):
    @permission_required("submissions.review_submission", raise_exception=True)
    @require_POST
    def view(request, pk):
        run = get_object_or_404(PublishedRun, pk=pk)
        change = getattr(transitions, change_name)
        return _apply(request, run, lambda: change(run.pk, request.user, _reason(request)),
                      done.format(pk=run.pk), not_done.format(pk=run.pk))

    view.__name__ = change_name
    return view


unpublish = _operator_view("unpublish", "Run #{pk} is unpublished.", "Run #{pk} was not published.")
republish = _operator_view("republish", "Run #{pk} is published again.", "Run #{pk} was not unpublished.")
flag = _operator_view("flag", "Run #{pk} is flagged; the note shows wherever it appears.",
                      "Run #{pk} is not published or already has this note.")
unflag = _operator_view("unflag", "Run #{pk} is no longer flagged.", "Run #{pk} had no flag.")

