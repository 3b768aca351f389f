"""Recovering runs whose worker went silent (called by the reaper task and by each host's heartbeat)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from submissions.runqueue import states
from submissions.runqueue.models import RunRequest
from submissions.runqueue.services import move, send

log = logging.getLogger(__name__)


def recover_lost_runs(host_id=None, now=None) -> list[tuple[str, str]]:
    """Requests whose worker went silent: retried while attempts are left, else failed.

    Also sends requests whose message never left (the process died between
    commit and send). Returns (request id, what happened) pairs.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT_S)
    silent = RunRequest.objects.silent_runs(cutoff)
    if host_id is not None:
        silent = silent.filter(host_id=host_id)
    done = []
    for lost in silent.select_related("host"):
        done.append((str(lost.pk), _recover(lost, cutoff, now)))
    never_sent = RunRequest.objects.never_sent(now - timedelta(seconds=60)).select_related("host")
    if host_id is not None:
        never_sent = never_sent.filter(host_id=host_id)
    for waiting in never_sent:
        send(waiting)
        done.append((str(waiting.pk), "sent"))
    return done


def _recover(lost: RunRequest, cutoff, now) -> str:
    silent_for = int((now - lost.heartbeat_at).total_seconds())
    who = f"{lost.claimed_by or 'the worker'} sent no heartbeat for {silent_for} s"
    still = Q(claim_token=lost.claim_token, heartbeat_at__lt=cutoff)
    if lost.cancel_requested_at:
        outcome, reason = states.CANCELLED, f"cancelled; the worker was lost before it stopped ({who})"
    elif lost.started_at and (now - lost.started_at).total_seconds() > lost.time_limit_s:
        outcome, reason = states.FAILED, f"time limit of {lost.time_limit_s} s passed and the worker was lost ({who})"
    elif lost.attempts < lost.max_attempts:
        reason = f"worker lost ({who}); retrying: attempt {lost.attempts + 1} of {lost.max_attempts}"
        if move(lost.pk, (states.RUNNING,), states.QUEUED, reason=reason, where=(still,), claim_token=None,
                sent_at=None, heartbeat_at=None, current="", failure_reason=""):
            try:
                send(lost)
            except Exception:  # the next reaper pass sends it (never_sent)
                log.exception("run request %s: retry not sent", lost.pk)
            return "retried"
        return "unchanged"
    else:
        outcome, reason = states.FAILED, f"worker lost ({who}) on attempt {lost.attempts} of {lost.max_attempts}; not retried"
    moved = move(lost.pk, (states.RUNNING,), outcome, reason=reason, where=(still,), finished_at=now, current="",
                 failure_reason=reason if outcome == states.FAILED else "")
    return outcome if moved else "unchanged"
